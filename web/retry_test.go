package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// unavailable answers 503 as most handlers do, naming no Retry-After.
var unavailable = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "unavailable", http.StatusServiceUnavailable)
})

// TestRetryUnavailable: a 503 gets Retry-After unless its handler named
// one; other answers are left as they are.
func TestRetryUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve http.HandlerFunc
		code  int
		want  string // Retry-After
	}{
		{"503 by http.Error", unavailable, http.StatusServiceUnavailable, "1"},
		{"503 with its own Retry-After", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, http.StatusServiceUnavailable, "30"},
		{"200 by a write", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}, http.StatusOK, ""},
		{"429", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
		}, http.StatusTooManyRequests, ""},
		{"500", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusInternalServerError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			RetryUnavailable(tc.serve).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != tc.code || rec.Header().Get("Retry-After") != tc.want {
				t.Errorf("%d with Retry-After %q; want %d with %q", rec.Code, rec.Header().Get("Retry-After"), tc.code, tc.want)
			}
		})
	}
}

// TestRetryUnavailableWriter: the writer unwraps to the server's for
// http.ResponseController and flushes, and a wrap inside a wrap adds no
// second writer.
func TestRetryUnavailableWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	inner := RetryUnavailable(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok || u.Unwrap() != rec {
			t.Errorf("the handler's writer %T does not unwrap to the server's", w)
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through http.ResponseController: %v", err)
		}
		f, ok := w.(http.Flusher)
		if !ok {
			t.Fatalf("the handler's writer %T is no http.Flusher", w)
		}
		f.Flush()
	}))
	RetryUnavailable(inner).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if !rec.Flushed {
		t.Error("the answer was not flushed")
	}
}

// TestNewRetryAfter: every handler New routes to answers its 503s with
// Retry-After: the remote endpoints' (readiness), the query API's and the
// HA tracker page's.
func TestNewRetryAfter(t *testing.T) {
	h := New(Options{Remote: unavailable, API: unavailable, HATracker: unavailable})
	for _, path := range []string{"/-/ready", "/api/v1/write", "/api/v1/query", "/distributor/ha_tracker"} {
		t.Run(path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
				t.Errorf("%d with Retry-After %q; want 503 with 1", rec.Code, rec.Header().Get("Retry-After"))
			}
		})
	}
}
