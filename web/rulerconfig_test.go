package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRulerConfigRoutes: Mimir's ruler configuration API reaches
// Options.RulerConfig at the root and below /prometheus, the path whole
// and escaped as sent; without a ruler those paths answer 404, as Mimir
// without its ruler does.
func TestRulerConfigRoutes(t *testing.T) {
	ruler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "ruler")
		w.Header().Set("X-Path", r.URL.EscapedPath())
	})
	h := New(Options{Remote: http.NotFoundHandler(), API: http.NotFoundHandler(), RulerConfig: ruler})
	off := New(Options{Remote: http.NotFoundHandler(), API: http.NotFoundHandler()})
	for _, tc := range []struct {
		name, method, target string
		path                 string // what the ruler's handler sees; "" when it gets nothing
	}{
		{"list", "GET", "/config/v1/rules", "/config/v1/rules"},
		{"list below /prometheus", "GET", "/prometheus/config/v1/rules", "/prometheus/config/v1/rules"},
		{"namespace", "GET", "/config/v1/rules/ns", "/config/v1/rules/ns"},
		{"group below /prometheus", "GET", "/prometheus/config/v1/rules/ns/g", "/prometheus/config/v1/rules/ns/g"},
		{"post", "POST", "/prometheus/config/v1/rules/ns", "/prometheus/config/v1/rules/ns"},
		{"delete group", "DELETE", "/config/v1/rules/ns/g", "/config/v1/rules/ns/g"},
		{"escaped names stay escaped", "GET", "/config/v1/rules/a%2Fb/c%20d", "/config/v1/rules/a%2Fb/c%20d"},
		{"trailing slash reaches the API (its 404)", "GET", "/config/v1/rules/", "/config/v1/rules/"},
		{"another path is not the API", "GET", "/config/v1/rulesx", ""},
		{"the legacy /api/v1/rules is not the config API", "GET", "/api/v1/rules/ns", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if tc.path == "" {
				if rec.Header().Get("X-Handler") == "ruler" {
					t.Fatalf("%s %s reached the ruler", tc.method, tc.target)
				}
				return
			}
			if rec.Code != http.StatusOK || rec.Header().Get("X-Handler") != "ruler" {
				t.Fatalf("%s %s: %d, handler %q", tc.method, tc.target, rec.Code, rec.Header().Get("X-Handler"))
			}
			if got := rec.Header().Get("X-Path"); got != tc.path {
				t.Errorf("path %q, want %q", got, tc.path)
			}
			rec = httptest.NewRecorder()
			off.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != http.StatusNotFound {
				t.Errorf("ruler off: %d, want 404", rec.Code)
			}
		})
	}
}
