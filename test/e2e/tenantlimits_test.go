package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/test/testkit/fixture"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// relabelRuntime is a runtime configuration whose tenant id relabels
// (drops debug_ metrics, drops request_id, rewrites env=staging to env,
// shards by instance) and allows perMetric series per metric.
func relabelRuntime(id, env string, perMetric int) string {
	return fmt.Sprintf(`overrides:
  %q:
    max_global_series_per_metric: %d
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: debug_.*
        action: drop
      - regex: request_id
        action: labeldrop
      - source_labels: [env]
        regex: staging
        target_label: env
        replacement: %s
      - source_labels: [instance]
        modulus: 2
        target_label: shard
        action: hashmod
`, id, perMetric, env)
}

// TestTenantRelabelAndSeriesPerMetric: a tenant's metric_relabel_configs
// and max_global_series_per_metric from the runtime configuration, on
// every input path the writer takes (remote write here; the writer's
// tests cover the rest): dropped series are not stored and leave no
// metric name behind, rewritten ones are stored rewritten; the metric's
// fourth series gets 400 naming the limit and the metric while other
// metrics write; another tenant is untouched. /runtime_config shows the
// overrides (mode=diff only what differs from the defaults). A changed
// file takes effect without a restart while writes go on, none failing.
func TestTenantRelabelAndSeriesPerMetric(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	sfx := fmt.Sprint(time.Now().UnixNano() % 1e9)
	relabeled, plain := "relabeled-"+sfx, "plain-"+sfx
	runtime := filepath.Join(t.TempDir(), "runtime.yaml")
	fixture.WriteAtomic(t, runtime, relabelRuntime(relabeled, "stage", 3))
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Tenants: &testserver.TenantOptions{
		AutoCreate: true, RuntimeFile: runtime, ReloadPeriod: 50 * time.Millisecond}})
	cr, cp := tenantClient{t: t, base: srv.URL, org: relabeled}, tenantClient{t: t, base: srv.URL, org: plain}
	sample := func(v float64, kv ...string) prompb.TimeSeries {
		return prompb.TimeSeries{Labels: lbl(kv...), Samples: []prompb.Sample{{Timestamp: t0 + int64(v)*1000, Value: v}}}
	}
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		sample(1, "__name__", "debug_heap", "job", "x"),
		sample(1, "__name__", "up", "job", "a", "env", "staging", "request_id", "r-1", "instance", "h1"),
		sample(1, "__name__", "up", "job", "b", "instance", "h2"),
	}}
	for _, c := range []tenantClient{cr, cp} {
		if code, msg := c.write(req); code != http.StatusNoContent {
			t.Fatalf("%s: write %d %s", c.org, code, msg)
		}
	}
	series := func(c tenantClient, match string) string {
		t.Helper()
		code, got := c.api("/api/v1/series", url.Values{"match[]": {match}, "start": {apiTime(t0)}, "end": {apiTime(t0 + 3600_000)}})
		if code != http.StatusOK {
			t.Fatalf("%s: series %d %s", c.org, code, got)
		}
		return got
	}
	if got := series(cr, `{__name__=~".+"}`); strings.Contains(got, "debug_heap") || strings.Contains(got, "request_id") ||
		!strings.Contains(got, `"env":"stage"`) || !strings.Contains(got, `"shard":`) {
		t.Errorf("the relabeling tenant's series: %s", got)
	}
	if got := series(cp, `{__name__=~".+"}`); !strings.Contains(got, "debug_heap") || !strings.Contains(got, `"request_id":"r-1"`) || strings.Contains(got, "shard") {
		t.Errorf("the other tenant's series (stored as sent): %s", got)
	}
	if code, got := cr.api("/api/v1/label/__name__/values", nil); code != http.StatusOK || strings.Contains(got, "debug") {
		t.Errorf("the relabeling tenant's metric names: %d %s, want no debug_heap", code, got)
	}

	// Per metric: up has two series; two more, one refused.
	code, msg := cr.write(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		sample(2, "__name__", "up", "job", "c"), sample(2, "__name__", "up", "job", "d"), sample(2, "__name__", "other", "job", "d")}})
	if code != http.StatusBadRequest || !strings.Contains(msg, "per-metric series limit of 3 exceeded") || !strings.Contains(msg, `metric \"up\"`) && !strings.Contains(msg, `metric "up"`) {
		t.Errorf("the metric's fourth series: %d %s, want 400 naming the limit and the metric", code, msg)
	}
	if got := series(cr, "other"); !strings.Contains(got, `"job":"d"`) {
		t.Errorf("another metric in the same request: %s", got)
	}
	if got := series(cr, "up"); strings.Count(got, `"__name__":"up"`) != 3 {
		t.Errorf("up's series: %s, want 3", got)
	}

	checkRuntimeConfig(t, srv.URL, relabeled)

	// The file changes while two writers write; none fails, and the new
	// relabeling and limit apply within a few reload periods.
	var stop atomic.Bool
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				code, msg := cr.write(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{sample(float64(10+i%100), "__name__", "steady", "w", fmt.Sprint(w), "env", "staging")}})
				if code != http.StatusNoContent {
					failed.Store(fmt.Sprintf("%d %s", code, msg))
				}
			}
		})
	}
	fixture.WriteAtomic(t, runtime, relabelRuntime(relabeled, "pre", 10))
	poll.Until(t, 10*time.Second, 50*time.Millisecond, "the changed relabeling applied", func() (bool, string) {
		got := series(cr, "steady")
		return strings.Contains(got, `"env":"pre"`), got
	})
	stop.Store(true)
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Errorf("a write failed while the configuration changed: %v", f)
	}
	if code, msg := cr.write(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{sample(3, "__name__", "up", "job", "d")}}); code != http.StatusNoContent {
		t.Errorf("up's fourth series once the limit is 10: %d %s", code, msg)
	}
}

// checkRuntimeConfig checks /runtime_config on base: the tenant id's
// overrides in full, with the defaults; with mode=diff only the keys it
// sets; no tenant header needed.
func checkRuntimeConfig(t *testing.T, base, id string) {
	t.Helper()
	code, full, _ := testhttp.Do(t, testhttp.Request{Method: "GET", URL: base + server.RuntimeConfigPath})
	if code != http.StatusOK || !strings.Contains(string(full), "defaults:") || !strings.Contains(string(full), id) ||
		!strings.Contains(string(full), "max_global_series_per_metric: 3") || !strings.Contains(string(full), "max_active_series:") {
		t.Errorf("/runtime_config: %d\n%s", code, full)
	}
	code, diff, _ := testhttp.Do(t, testhttp.Request{Method: "GET", URL: base + server.RuntimeConfigPath + "?mode=diff"})
	if code != http.StatusOK || strings.Contains(string(diff), "defaults:") || strings.Contains(string(diff), "max_active_series") ||
		!strings.Contains(string(diff), "max_global_series_per_metric: 3") || !strings.Contains(string(diff), "hashmod") {
		t.Errorf("/runtime_config?mode=diff: %d\n%s", code, diff)
	}
	if code, b, _ := testhttp.Do(t, testhttp.Request{Method: "GET", URL: base + server.RuntimeConfigPath + "?mode=nope"}); code != http.StatusBadRequest {
		t.Errorf("an unknown mode: %d %s, want 400", code, b)
	}
}

// TestTenantQueryGuards: a tenant's query guardrails from the runtime
// configuration answer as Mimir's (400 for a range too long and a
// blocked query, 422 for too many series fetched), remote read too;
// another tenant, without them, is answered.
func TestTenantQueryGuards(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	sfx := fmt.Sprint(time.Now().UnixNano() % 1e9)
	guarded, free := "guarded-"+sfx, "free-"+sfx
	runtime := filepath.Join(t.TempDir(), "runtime.yaml")
	fixture.WriteAtomic(t, runtime, fmt.Sprintf(`overrides:
  %q:
    max_total_query_length: 1h
    max_fetched_series_per_query: 2
    blocked_queries:
      - pattern: count(up)
      - pattern: 'rate\(.*\[1s\]\)'
        regex: true
`, guarded))
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Tenants: &testserver.TenantOptions{
		AutoCreate: true, RuntimeFile: runtime, ReloadPeriod: 50 * time.Millisecond}})
	req := &prompb.WriteRequest{}
	for i := range 3 {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: lbl("__name__", "up", "i", fmt.Sprint(i)), Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}})
	}
	cg, cf := tenantClient{t: t, base: srv.URL, org: guarded}, tenantClient{t: t, base: srv.URL, org: free}
	for _, c := range []tenantClient{cg, cf} {
		if code, msg := c.write(req); code != http.StatusNoContent {
			t.Fatalf("%s: write %d %s", c.org, code, msg)
		}
	}
	rangeQ := func(q string, hours int64) url.Values {
		return url.Values{"query": {q}, "start": {apiTime(t0)}, "end": {apiTime(t0 + hours*3600_000)}, "step": {"60"}}
	}
	for _, tc := range []struct {
		name, path string
		params     url.Values
		code       int
		text       string
	}{
		{"range too long", "/api/v1/query_range", rangeQ("sum(up)", 2), http.StatusBadRequest, "the total query time range exceeds the limit (query length: 2h0m0s, limit: 1h0m0s)"},
		{"blocked", "/api/v1/query", url.Values{"query": {"count(up)"}, "time": {apiTime(t0)}}, http.StatusBadRequest, "blocked by the cluster administrator"},
		{"blocked by a regex", "/api/v1/query", url.Values{"query": {"rate(up[1s])"}, "time": {apiTime(t0)}}, http.StatusBadRequest, "err-mimir-query-blocked"},
		{"too many series", "/api/v1/query", url.Values{"query": {"up"}, "time": {apiTime(t0)}}, http.StatusUnprocessableEntity, "the query exceeded the maximum number of series (limit: 2 series)"},
		{"within", "/api/v1/query_range", rangeQ(`up{i!="0"}`, 1), http.StatusOK, `"i":"1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, got := cg.api(tc.path, tc.params); code != tc.code || !strings.Contains(got, tc.text) {
				t.Errorf("guarded tenant: %d %s, want %d with %q", code, got, tc.code, tc.text)
			}
			if code, got := cf.api(tc.path, tc.params); code != http.StatusOK {
				t.Errorf("the other tenant: %d %s, want 200", code, got)
			}
		})
	}
	code, metrics, _ := testhttp.Do(t, testhttp.Request{Method: "GET", URL: srv.URL + "/metrics"})
	for _, want := range []string{
		fmt.Sprintf(`promhbase_query_refused_total{guardrail="blocked_queries",tenant=%q} 2`, guarded),
		fmt.Sprintf(`promhbase_query_refused_total{guardrail="max_fetched_series_per_query",tenant=%q} 1`, guarded),
		fmt.Sprintf(`promhbase_query_refused_total{guardrail="max_total_query_length",tenant=%q} 1`, guarded),
	} {
		if code != http.StatusOK || !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// tenantClient.read asks 2h.
	if code, got := cg.read(nameEq("up")); code != http.StatusBadRequest || !strings.Contains(strings.Join(got, ""), "err-mimir-max-total-query-length") {
		t.Errorf("guarded tenant's remote read of 2h: %d %v, want 400", code, got)
	}
	if code, got := cf.read(nameEq("up")); code != http.StatusOK || len(got) != 3 {
		t.Errorf("the other tenant's remote read: %d %v", code, got)
	}
}

// nameEq is a remote-read matcher of a metric name.
func nameEq(name string) *prompb.LabelMatcher {
	return &prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name}
}
