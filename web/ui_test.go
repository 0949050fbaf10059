package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUIRoutes: the root redirects to the query page (relatively, so a
// prefix holds), every page and file of the UI answers, and info.json
// carries the Info, the flags and the runtime.
func TestUIRoutes(t *testing.T) {
	h := New(Options{Remote: echo("remote"), API: echo("api"), Info: Info{Version: "1.2.3", Backend: "embedded (x)"},
		Flags: map[string]string{"web.listen-address": ":9201"}})
	for _, tc := range []struct {
		name, target string
		code         int
		header, want string // a header's value, or a piece of the body
	}{
		{"root redirects to the query page", "/", http.StatusFound, "Location", "graph"},
		{"query page", "/graph", http.StatusOK, "", `data-page="graph"`},
		{"query page loads uPlot", "/graph", http.StatusOK, "", "ui/vendor/uplot/uPlot.iife.min.js"},
		{"alerts", "/alerts", http.StatusOK, "", `data-page="alerts"`},
		{"rules", "/rules", http.StatusOK, "", `data-page="rules"`},
		{"cardinality", "/tsdb-status", http.StatusOK, "", `data-page="tsdb-status"`},
		{"status", "/status", http.StatusOK, "", `data-page="status"`},
		{"flags", "/flags", http.StatusOK, "", `data-page="flags"`},
		{"setup: the landing page", "/setup", http.StatusOK, "", "remote_write:"},
		{"script", "/ui/app.js", http.StatusOK, "", "window.promhbase"},
		{"the query page's script", "/graph", http.StatusOK, "", `src="ui/pages/graph.js"`},
		{"style", "/ui/style.css", http.StatusOK, "", "#graph"},
		{"uPlot's license", "/ui/vendor/uplot/LICENSE", http.StatusOK, "", "MIT"},
		{"no other file", "/ui/nothing.js", http.StatusNotFound, "", ""},
		{"no other page", "/targets", http.StatusNotFound, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, nil))
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			if tc.header != "" {
				if got := rec.Header().Get(tc.header); got != tc.want {
					t.Errorf("%s %q, want %q", tc.header, got, tc.want)
				}
			} else if !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("body lacks %q", tc.want)
			}
		})
	}
	t.Run("info.json", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/info.json", nil))
		var got uiInfo
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Version != "1.2.3" || got.Backend != "embedded (x)" || got.Flags["web.listen-address"] != ":9201" ||
			got.Goroutines == 0 || got.MemoryBytes == 0 || got.GOMAXPROCS == 0 || got.Started.IsZero() {
			t.Errorf("info %+v", got)
		}
	})
}

func TestUIPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/graph": true, "/tsdb-status": true, "/setup": true, "/ui/app.js": true, "/ui/info.json": true,
		"/ui/": false, "/api/v1/query": false, "/graphs": false, "/": false,
	} {
		t.Run(path, func(t *testing.T) {
			if got := UIPath(path); got != want {
				t.Errorf("UIPath(%q) = %v, want %v", path, got, want)
			}
		})
	}
}

// TestWithPrefix: below a route prefix every path is served stripped of
// it; / and the prefix redirect to the prefix's root, other paths get 404.
func TestWithPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, target string
		code                 int
		path, location       string
	}{
		{"no prefix", "", "/api/v1/query", 200, "/api/v1/query", ""},
		{"slash", "/", "/graph", 200, "/graph", ""},
		{"below the prefix", "/prom", "/prom/api/v1/query", 200, "/api/v1/query", ""},
		{"the prefix's root", "/prom/", "/prom/", 200, "/", ""},
		{"the prefix redirects", "/prom", "/prom", 302, "", "/prom/"},
		{"the root redirects", "/prom", "/", 302, "", "/prom/"},
		{"outside the prefix", "/prom", "/api/v1/query", 404, "", ""},
		{"a longer name", "/prom", "/promx/graph", 404, "", ""},
		{"without a leading slash", "a/b", "/a/b/graph", 200, "/graph", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WithPrefix(tc.prefix, echo("h")).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, nil))
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			if got := rec.Header().Get("X-Path"); got != tc.path {
				t.Errorf("path %q, want %q", got, tc.path)
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Errorf("location %q, want %q", got, tc.location)
			}
		})
	}
}

func TestRoutePrefix(t *testing.T) {
	for _, tc := range []struct{ flag, external, want string }{
		{"", "", ""},
		{"", "http://host:9201", ""},
		{"", "https://host/promhbase/", "/promhbase/"},
		{"/p", "https://host/promhbase", "/p"},
	} {
		t.Run(tc.flag+" "+tc.external, func(t *testing.T) {
			got, err := RoutePrefix(tc.flag, tc.external)
			if err != nil || got != tc.want {
				t.Errorf("RoutePrefix(%q, %q) = %q, %v; want %q", tc.flag, tc.external, got, err, tc.want)
			}
		})
	}
	if _, err := RoutePrefix("", "http://a b/%zz"); err == nil {
		t.Error("a URL that does not parse: no error")
	}
}

// TestUIPagesOneList: every page of UIPages but the setup page has its
// script (ui/pages/<page>.js, registering that page), which serves; the
// setup page's navigation links every other page, from the same list.
func TestUIPagesOneList(t *testing.T) {
	h := New(Options{Remote: echo("remote"), API: echo("api")})
	get := func(t *testing.T, target string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d", target, rec.Code)
		}
		return rec.Body.String()
	}
	setup := get(t, "/setup")
	for _, p := range UIPages() {
		if p.Path == "/setup" {
			continue
		}
		t.Run(p.Title, func(t *testing.T) {
			name := p.Path[1:]
			if js := get(t, "/ui/pages/"+name+".js"); !strings.Contains(js, "pages['"+name+"'] = ") {
				t.Errorf("ui/pages/%s.js registers no page %q", name, name)
			}
			if want := `<a href="` + name + `">` + p.Title + `</a>`; !strings.Contains(setup, want) {
				t.Errorf("the setup page lacks %s", want)
			}
		})
	}
}
