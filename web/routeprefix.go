package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// WithPrefix serves h below prefix (--web.route-prefix, as Prometheus's
// flag): a request to prefix/p reaches h as /p, prefix itself and / are
// redirected to prefix/, and every other path gets 404. A prefix of "" or
// "/" returns h. prefix is cleaned of a trailing slash and given a
// leading one.
func WithPrefix(prefix string, h http.Handler) http.Handler {
	prefix = strings.TrimRight(prefix, "/")
	if prefix == "" {
		return h
	}
	if !strings.HasPrefix(prefix, "/") {
		prefix = "/" + prefix
	}
	strip := http.StripPrefix(prefix, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, prefix+"/"):
			strip.ServeHTTP(w, r)
		case p == prefix || p == "/":
			http.Redirect(w, r, prefix+"/", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
}

// RoutePrefix returns the route prefix of --web.route-prefix (flag) and
// --web.external-url (externalURL): the flag when set, else the path of
// the external URL, as Prometheus's default; an error for an external URL
// that does not parse.
func RoutePrefix(flag, externalURL string) (string, error) {
	if flag != "" || externalURL == "" {
		return flag, nil
	}
	u, err := url.Parse(externalURL)
	if err != nil {
		return "", fmt.Errorf("--web.external-url=%q: %w", externalURL, err)
	}
	return u.Path, nil
}
