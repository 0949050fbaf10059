package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// echo answers with the name of the handler and the path it was given.
func echo(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", name)
		w.Header().Set("X-Path", r.URL.Path)
		w.Header().Set("X-Query", r.URL.RawQuery)
	})
}

// TestPrometheusPrefix: the Prometheus API answers below Grafana Mimir's
// Prometheus prefix /prometheus as at the root (the paths and query
// strings Grafana sends to a data source whose URL ends in /prometheus),
// remote read too, and status/flags below the prefix answers 404 as
// Mimir's.
func TestPrometheusPrefix(t *testing.T) {
	h := New(Options{Remote: echo("remote"), API: echo("api")})
	for _, tc := range []struct {
		name, method, target string
		code                 int
		handler, path, query string
	}{
		{"rules at the root", "GET", "/api/v1/rules", 200, "api", "/api/v1/rules", ""},
		{"rules below the prefix", "GET", "/prometheus/api/v1/rules?group_limit=100&exclude_alerts=true", 200,
			"api", "/api/v1/rules", "group_limit=100&exclude_alerts=true"},
		{"alerts below the prefix", "GET", "/prometheus/api/v1/alerts", 200, "api", "/api/v1/alerts", ""},
		{"buildinfo below the prefix", "GET", "/prometheus/api/v1/status/buildinfo", 200, "api", "/api/v1/status/buildinfo", ""},
		{"query below the prefix", "POST", "/prometheus/api/v1/query", 200, "api", "/api/v1/query", ""},
		{"label values below the prefix", "GET", "/prometheus/api/v1/label/job/values", 200, "api", "/api/v1/label/job/values", ""},
		{"flags at the root", "GET", "/api/v1/status/flags", 200, "api", "/api/v1/status/flags", ""},
		{"flags below the prefix: 404 as Mimir's", "GET", "/prometheus/api/v1/status/flags", 404, "", "", ""},
		{"remote read below the prefix", "POST", "/prometheus/api/v1/read", 200, "remote", "/api/v1/read", ""},
		{"remote write only at the root", "POST", "/prometheus/api/v1/write", 200, "api", "/api/v1/write", ""},
		{"nothing else below /prometheus", "GET", "/prometheus/federate", 404, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			if got := rec.Header().Get("X-Handler"); got != tc.handler {
				t.Errorf("handler %q, want %q", got, tc.handler)
			}
			if got := rec.Header().Get("X-Path"); got != tc.path {
				t.Errorf("path %q, want %q", got, tc.path)
			}
			if got := rec.Header().Get("X-Query"); got != tc.query {
				t.Errorf("query %q, want %q", got, tc.query)
			}
		})
	}
}
