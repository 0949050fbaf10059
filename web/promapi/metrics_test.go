package promapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/internal/httpmetrics"
)

// TestRequestMetrics: every request below /api/v1 is counted under its
// handler label and status code, unknown paths as "other", in the same
// metric the remote endpoints count into.
func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	// The remote endpoints' handler registers them first on a server.
	remote, err := httpmetrics.Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	api, err := New(Options{Queryable: noData{}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path, body string
		handler            string
		code               int
	}{
		{"POST", "/api/v1/query", "query=1%2B1&time=100", "query", http.StatusOK},
		{"POST", "/api/v1/query", "query=1%2B", "query", http.StatusBadRequest},
		{"GET", "/api/v1/query_range?query=1&start=0&end=60&step=15", "", "query_range", http.StatusOK},
		{"GET", "/api/v1/labels", "", "labels", http.StatusOK},
		{"GET", "/api/v1/label/job/values", "", "label_values", http.StatusOK},
		{"GET", "/api/v1/status/buildinfo", "", "status_buildinfo", http.StatusOK},
		{"GET", "/api/v1/targets", "", "other", http.StatusNotFound},
		{"POST", "/api/v1/admin/tsdb/delete_series", "", "admin_tsdb_delete_series", http.StatusInternalServerError},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			if h := handlerOf(strings.SplitN(tc.path, "?", 2)[0]); h != tc.handler {
				t.Fatalf("handlerOf = %q, want %q", h, tc.handler)
			}
			before := testutil.ToFloat64(remote.Requests(tc.handler, tc.code))
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("answered %d %s, want %d", rec.Code, rec.Body, tc.code)
			}
			if got := testutil.ToFloat64(remote.Requests(tc.handler, tc.code)) - before; got != 1 {
				t.Errorf("promhbase_http_requests_total{handler=%q,code=\"%d\"} rose by %v, want 1", tc.handler, tc.code, got)
			}
		})
	}
	if n := testutil.CollectAndCount(reg, httpmetrics.DurationName); n == 0 {
		t.Errorf("no %s series", httpmetrics.DurationName)
	}
}

// TestSlowQueries: a query slower than the threshold is counted and
// logged once with its query; with the threshold at 0 none is.
func TestSlowQueries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold time.Duration
		slow      float64
	}{
		{"slower than the threshold", time.Nanosecond, 1},
		{"threshold off", 0, 0},
		{"faster than the threshold", time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			api, err := New(Options{Queryable: noData{}, Registerer: prometheus.NewRegistry(), SlowQueryThreshold: tc.threshold,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "/api/v1/query_range", strings.NewReader(url.Values{
				"query": {"vector(1) + 1"}, "start": {"0"}, "end": {"60"}, "step": {"15"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("answered %d %s", rec.Code, rec.Body)
			}
			if got := testutil.ToFloat64(api.slow.count); got != tc.slow {
				t.Errorf("promhbase_query_slow_total = %v, want %v", got, tc.slow)
			}
			logged := strings.Count(log.String(), `msg="slow query"`)
			if float64(logged) != tc.slow || (logged > 0 && !strings.Contains(log.String(), `query="vector(1) + 1"`)) {
				t.Errorf("log %q: want %v slow query lines naming the query", log.String(), tc.slow)
			}
		})
	}
}
