package testhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDo: the request goes out with its method, body, headers (none for
// an empty value) and basic auth; the answer comes back whole.
func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		_, empty := r.Header["X-Empty"]
		w.Header().Set("X-Seen", r.Method+" "+string(b)+" "+r.Header.Get("X-Scope-OrgID")+" "+user+":"+pass)
		if empty {
			w.WriteHeader(http.StatusBadRequest)
		}
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("answer"))
	}))
	defer srv.Close()
	code, body, hdr := Do(t, Request{Method: http.MethodPost, URL: srv.URL, Body: []byte("q"),
		Header: map[string]string{"X-Scope-OrgID": "a", "X-Empty": ""}, User: "u", Password: "p"})
	if code != http.StatusTeapot || string(body) != "answer" || hdr.Get("X-Seen") != "POST q a u:p" {
		t.Errorf("Do = %d %q, server saw %q; want 418 \"answer\", \"POST q a u:p\"", code, body, hdr.Get("X-Seen"))
	}
	if b := Expect(t, Request{URL: srv.URL}, http.StatusTeapot); string(b) != "answer" {
		t.Errorf("Expect = %q", b)
	}
}
