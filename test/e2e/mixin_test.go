package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage/remote"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/deploy/mixin"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// configMixin is the Prometheus of the mixin test: it scrapes promhbase
// every second as job "promhbase" (the job the alerts name), evaluates the
// mixin's rule files every second, and remote-writes what it scrapes and
// records back into promhbase, where promhbase's own ruler evaluates the
// same rules over it.
var configMixin = template.Must(template.New("mixin").Parse(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - '{{.Rules}}'
  - '{{.Alerts}}'
scrape_configs:
  - job_name: promhbase
    static_configs:
      - targets: ['{{.Promhbase}}']
remote_write:
  - url: '{{.WriteURL}}'
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
`))

// mixinRateInterval is what the test puts for the dashboard's
// $__rate_interval: Grafana's is at least four scrape intervals (here 4 s);
// wider, for scrapes that come late under load.
const mixinRateInterval = "15s"

// mixinNoData are the dashboard's queries (panel title, then the query's
// refId) that have no data on one serve on the embedded store, with the
// reason. Every other query must answer with at least one series
// somewhere in the test's range.
var mixinNoData = map[string]string{
	"Disk full in/A":                  "only while the free disk space goes down over the window; other processes share the test's filesystem",
	"HBase failures and retries/A":    "the HBase store's metric: not exported by the embedded store",
	"HBase failures and retries/B":    "the HBase store's metric: not exported by the embedded store",
	"HA elections/A":                  "the HA tracker's metric: off in the test (--ha-tracker.enable; test/e2e/ha_test.go drives it)",
	"HA elections/B":                  "the HA tracker's metric: off in the test (--ha-tracker.enable; test/e2e/ha_test.go drives it)",
	"Runtime configuration/A":         "exported only with --runtime-config.file, which takes tenants (test/e2e/tenants_test.go)",
	"Samples dropped by relabeling/A": "only with a tenant's metric_relabel_configs that drop series (test/e2e/tenantlimits_test.go)",
	"Queries refused by guardrail/A":  "only when a query guardrail refuses a query (test/e2e/tenantlimits_test.go)",
}

// mixinAbsent are the metrics the dashboard and the rules name that one
// serve on the embedded store does not export, with the reason. Every
// other metric named must be in the data Prometheus scraped.
var mixinAbsent = map[string]string{
	"promhbase_hbase_failures_total":                          "the HBase store's",
	"promhbase_hbase_retries_total":                           "the HBase store's",
	"promhbase_ha_tracker_elected_replica_changes_total":      "the HA tracker's (off)",
	"promhbase_ha_tracker_deduped_samples_total":              "the HA tracker's (off)",
	"promhbase_runtime_config_last_reload_successful":         "--runtime-config.file's (off)",
	"promhbase_query_results_cache_log_append_failures_total": "the results cache log's: HBase only",
	"promhbase_query_results_cache_log_poll_failures_total":   "the results cache log's: HBase only",
}

// mixinPanel is the part of a dashboard panel the test reads.
type mixinPanel struct {
	Type, Title string
	Targets     []struct {
		Expr  string
		RefID string `json:"refId"`
	}
	Panels []mixinPanel // a collapsed row's
}

// mixinQuery is one query of the mixin: a dashboard panel's (name "panel
// title/refId") or a rule's (name "file/group/rule").
type mixinQuery struct {
	name, expr string
	record     bool // a recording rule's: it must have data
	alert      bool // an alerting rule's: no data is its healthy state
}

// mixinQueries returns every dashboard query, its variables expanded for
// the job and instance given, and every rule's expression, with the
// recording rules' names.
func mixinQueries(t *testing.T, job, instance string) (qs []mixinQuery, records []string) {
	t.Helper()
	var d struct{ Panels []mixinPanel }
	if err := json.Unmarshal(mixin.Dashboard, &d); err != nil {
		t.Fatal(err)
	}
	expand := strings.NewReplacer("$__rate_interval", mixinRateInterval, "$__interval", "2s", "$__range", "5m",
		"${job}", job, "$job", job, "${instance}", instance, "$instance", instance)
	var walk func([]mixinPanel)
	walk = func(ps []mixinPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				qs = append(qs, mixinQuery{name: p.Title + "/" + tg.RefID, expr: expand.Replace(tg.Expr)})
			}
		}
	}
	walk(d.Panels)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"rules.yaml", mixin.Rules}, {"alerts.yaml", mixin.Alerts}} {
		rgs, errs := rulefmt.Parse(f.b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f.name, errs)
		}
		for _, g := range rgs.Groups {
			for _, r := range g.Rules {
				qs = append(qs, mixinQuery{name: f.name + "/" + g.Name + "/" + r.Record + r.Alert, expr: r.Expr, record: r.Record != "", alert: r.Alert != ""})
				if r.Record != "" {
					records = append(records, r.Record)
				}
			}
		}
	}
	return qs, records
}

// metricNames returns the metric names expr's selectors name.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	var names []string
	for _, sel := range parser.ExtractSelectors(e) {
		for _, m := range sel {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				names = append(names, m.Value)
			}
		}
	}
	return names, nil
}

// mixinGroups returns the groups of a rule file, each as the YAML of one
// group that the ruler's configuration API takes.
func mixinGroups(t *testing.T, file []byte) []string {
	t.Helper()
	var f struct{ Groups []yaml.Node }
	if err := yaml.Unmarshal(file, &f); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(f.Groups))
	for _, g := range f.Groups {
		b, err := yaml.Marshal(&g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// mixinDrive drives what the dashboard and the alerts watch through
// promhbase at base: writes (two hours of samples three hours old, for
// compaction and rollups; a native histogram and an exemplar now; a series
// rejected for a label value too long), queries (instant, range twice for
// the results cache, series, labels, label values, remote read) and a
// deletion.
func mixinDrive(t *testing.T, base string, now time.Time) {
	t.Helper()
	ctx := t.Context()
	hour := now.Truncate(time.Hour).Add(-3 * time.Hour)
	var old []prompb.TimeSeries
	for i := range 4 {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "mixin_old_total"}, {Name: "job", Value: "mixin"}, {Name: "i", Value: fmt.Sprint(i)}}}
		for m := range 120 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: hour.Add(time.Duration(m) * time.Minute).UnixMilli(), Value: float64(m * (i + 1))})
		}
		old = append(old, ts)
	}
	if err := remoteWrite(ctx, base, old); err != nil {
		t.Fatalf("old samples: %v", err)
	}
	nowMs := now.UnixMilli()
	h := &histogram.Histogram{Count: 3, Sum: 4.5, Schema: 0, ZeroThreshold: 1e-128,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}
	fresh := []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "mixin_latency_seconds"}, {Name: "job", Value: "mixin"}},
			Histograms: []prompb.Histogram{prompb.FromIntHistogram(nowMs, h)}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "mixin_requests_total"}, {Name: "job", Value: "mixin"}},
			Samples:   []prompb.Sample{{Timestamp: nowMs, Value: 1}},
			Exemplars: []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 1, Timestamp: nowMs}}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "mixin_doomed"}, {Name: "job", Value: "mixin"}},
			Samples: []prompb.Sample{{Timestamp: nowMs, Value: 1}}},
	}
	if err := remoteWrite(ctx, base, fresh); err != nil {
		t.Fatalf("histogram and exemplar: %v", err)
	}
	mixinReject(t, base)

	api := promAPI{name: "promhbase", base: base, client: &http.Client{Timeout: time.Minute}}
	start, end := hour, hour.Add(2*time.Hour)
	for _, q := range []promQuery{
		{expr: `sum(rate(mixin_old_total[5m]))`, at: end},
		{expr: `sum by (i) (rate(mixin_old_total[5m]))`, start: start, end: end, step: time.Minute},
		{expr: `sum by (i) (rate(mixin_old_total[5m]))`, start: start, end: end, step: time.Minute}, // from the results cache
	} {
		if _, err := api.query(ctx, q); err != nil {
			t.Fatalf("%s: %v", q.expr, err)
		}
	}
	if _, err := api.seriesSet(ctx, `{job="mixin"}`, start, now); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/labels", "/api/v1/label/job/values"} {
		if _, err := api.stringList(ctx, path, url.Values{}); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := promremote.NewReader("mixin", base, promremote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pq, err := remote.ToQuery(start.UnixMilli(), end.UnixMilli(), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "mixin_old_total")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rc.Read(ctx, pq, true)
	if err != nil {
		t.Fatalf("remote read: %v", err)
	}
	n := 0
	for ss.Next() {
		n++
	}
	if ss.Err() != nil || n != 4 {
		t.Fatalf("remote read: %d series, want 4 (%v)", n, ss.Err())
	}
	// A deletion, through the admin API.
	code, body := postAdmin(t, base+"/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {`mixin_doomed`}})
	if code != http.StatusNoContent {
		t.Fatalf("delete_series: HTTP %d: %s", code, body)
	}
}

// mixinReject writes a series with a label value past
// --limits.max-label-value-length into promhbase at base: answered 400,
// its sample counted rejected.
func mixinReject(t *testing.T, base string) {
	t.Helper()
	wc, err := promremote.NewWriter("mixin-rejected", base, promremote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "mixin_rejected"}, {Name: "v", Value: strings.Repeat("x", 1<<16)}},
		Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}}}
	if err := promremote.Store(t.Context(), wc, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{long}}); err == nil {
		t.Fatal("a label value of 64 KiB was written; want it rejected")
	}
}

// TestMixin proves the mixin (mixin/) against a live server: a real
// `promhbase serve` on the embedded store, with compaction, rollups,
// retention and the ruler on, takes writes, queries, a deletion, and the
// mixin's own rules in its ruler; a real Prometheus 3.15 scrapes it every
// second, evaluates the mixin's rule files and remote-writes back into it.
// Then every dashboard query (its variables expanded for the test's job
// and instance) and every rule's expression runs on Prometheus over the
// test's range: each is answered without error, each metric it names is in
// the scraped data (mixinAbsent lists those one embedded serve does not
// export), and each dashboard query and recording rule has data
// (mixinNoData lists the queries that cannot). The dashboard's variables
// find the job and the instance. Both rulers, Prometheus's and
// promhbase's, load every rule and evaluate each without error, and
// promhbase holds the recording rules' series its ruler wrote.
//
// The embedded run only: the panels of the HBase store (its failures and
// retries) are the difference, and the test is heavy (two servers, minutes).
func TestMixin(t *testing.T) {
	if testbackend.Name() != "embedded" {
		t.Skip("the mixin against a live server: the embedded run (PROMHBASE_TEST_BACKEND unset) runs this test")
	}
	t.Parallel()
	bin := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	promBin := prometheusBinary(t)
	began := time.Now()

	// An Alertmanager that takes every alert, so that the ruler's
	// notifier runs.
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(am.Close)
	_, base := testproc.StartServe(t, bin, "promhbase", 60, append([]string{
		"--storage.compaction.grace=0s",
		"--storage.compaction.check-interval=1s",
		"--rollup.grace=0s",
		"--rollup.check-interval=1s",
		"--storage.retention.time=30d",
		"--storage.retention.interval=1s",
		"--ruler.enabled",
		"--ruler.poll-interval=1s",
		"--ruler.evaluation-interval=1s",
		"--ruler.alertmanager-url=" + am.URL,
		"--query.slow-threshold=1ns",
		"--web.enable-admin-api",
		"--opentsdb.listen-address=127.0.0.1:0",
	}, testbackend.ServeFlags(t)...)...)
	instance := strings.TrimPrefix(base, "http://")

	// The mixin's rules into promhbase's ruler, one namespace per file.
	for _, f := range []struct {
		ns string
		b  []byte
	}{{"rules.yaml", mixin.Rules}, {"alerts.yaml", mixin.Alerts}} {
		for _, g := range mixinGroups(t, f.b) {
			postRuleGroup(t, base, f.ns, g)
		}
	}

	dir := t.TempDir()
	files := map[string]string{"Rules": filepath.Join(dir, "rules.yaml"), "Alerts": filepath.Join(dir, "alerts.yaml")}
	for name, b := range map[string][]byte{"Rules": mixin.Rules, "Alerts": mixin.Alerts} {
		if err := os.WriteFile(files[name], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prom := startPrometheus(t, promBin, "prometheus", configMixin, func(string) map[string]string {
		return map[string]string{"Rules": files["Rules"], "Alerts": files["Alerts"], "Promhbase": instance, "WriteURL": base + "/api/v1/write"}
	})
	t.Logf("promhbase %s, Prometheus %s, Alertmanager %s (started in %s)", base, prom.base, am.URL, time.Since(began).Round(time.Millisecond))

	mixinDrive(t, base, time.Now())
	ctx := t.Context()
	// Prometheus's first scrape may come after the first rejected
	// sample (the counter already 1 in its first sample): a rate sees
	// the second, once a scrape has seen the counter.
	poll.Until(t, 2*time.Minute, 250*time.Millisecond, "the first rejected sample scraped", func() (bool, string) {
		r, err := prom.api.query(ctx, promQuery{expr: `promhbase_samples_rejected_total{job="promhbase"}`, at: time.Now()})
		if err != nil {
			return false, err.Error()
		}
		return len(r.series) > 0, r.summary()
	})
	mixinReject(t, base)

	// Compaction, rollups, retention and both rulers have done their
	// work; every group of the mixin evaluated in promhbase's ruler.
	groups := len(mixinGroups(t, mixin.Rules)) + len(mixinGroups(t, mixin.Alerts))
	testproc.WaitMetrics(t, base, 3*time.Minute, "compacted, rolled up, retention cycled, rules evaluated", func(ms testproc.MetricPage) (bool, string) {
		evaluated := 0
		for _, s := range ms["prometheus_rule_group_iterations_total"] {
			if s.Value > 0 {
				evaluated++
			}
		}
		return ms.Sum("promhbase_compaction_rows_compacted_total") > 0 && ms.Sum("promhbase_rollup_hours_built_total") > 0 &&
				ms.Sum("promhbase_retention_cycles_total") > 0 && evaluated >= groups,
			fmt.Sprintf("rows compacted %v, rollup hours built %v, retention cycles %v, rule groups evaluated %d of %d",
				ms.Sum("promhbase_compaction_rows_compacted_total"), ms.Sum("promhbase_rollup_hours_built_total"),
				ms.Sum("promhbase_retention_cycles_total"), evaluated, groups)
	})
	done := time.Now()
	papi := promAPI{name: "promhbase", base: base, client: &http.Client{Timeout: time.Minute}}
	poll.Until(t, 2*time.Minute, 250*time.Millisecond, "every group of both rulers evaluated without error", func() (bool, string) {
		for _, api := range []promAPI{prom.api, papi} {
			gs, err := api.ruleGroups(ctx)
			if err != nil {
				return false, err.Error()
			}
			if len(gs) != groups {
				return false, fmt.Sprintf("%s: %d rule groups, want %d", api.name, len(gs), groups)
			}
			for _, g := range gs {
				if g.LastEvaluation.Before(done) {
					return false, fmt.Sprintf("%s: group %s last evaluated at %s", api.name, g.Name, g.LastEvaluation)
				}
				for _, r := range g.Rules {
					if r.Health != "ok" {
						return false, fmt.Sprintf("%s: group %s, rule %s: health %q: %s", api.name, g.Name, r.Name, r.Health, r.LastError)
					}
				}
			}
		}
		return true, ""
	})
	// Prometheus has scraped promhbase after all that, a few times (the
	// second rejected sample, the last rule evaluations into its rates).
	settled := time.Now().Add(5 * time.Second)
	poll.Until(t, 2*time.Minute, 250*time.Millisecond, "scraped after the work was done", func() (bool, string) {
		r, err := prom.api.query(ctx, promQuery{expr: `timestamp(up{job="promhbase"})`, at: time.Now()})
		if err != nil {
			return false, err.Error()
		}
		for _, pts := range r.series {
			if len(pts) > 0 && pts[0].v >= float64(settled.Unix()) {
				return true, ""
			}
		}
		return false, r.summary()
	})
	end := time.Now()

	// The dashboard's variables find the job and the instance.
	for _, v := range []struct{ label, match, want string }{
		{"job", "promhbase_build_info", "promhbase"},
		{"instance", `promhbase_build_info{job=~"promhbase"}`, instance},
	} {
		vals, err := prom.api.stringList(ctx, "/api/v1/label/"+v.label+"/values", url.Values{"match[]": {v.match}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(vals, v.want) {
			t.Errorf("variable %s: label_values(%s, %s) = %q, want %q among them", v.label, v.match, v.label, vals, v.want)
		}
	}

	checkRevision(t, bin, prom.api)

	names, err := prom.api.stringList(ctx, "/api/v1/label/__name__/values", url.Values{"start": {formatTime(began)}, "end": {formatTime(end)}})
	if err != nil {
		t.Fatal(err)
	}
	queries, records := mixinQueries(t, "promhbase", instance)
	for _, q := range queries {
		t.Run(q.name, func(t *testing.T) {
			ms, err := metricNames(q.expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				_, absent := mixinAbsent[m]
				if present := slices.Contains(names, m); present == absent {
					t.Errorf("%q names %s: in the scraped data %v, listed absent (mixinAbsent) %v", q.expr, m, present, absent)
				}
			}
			r, err := prom.api.query(ctx, promQuery{expr: q.expr, start: began, end: end, step: 2 * time.Second})
			if err != nil {
				t.Fatalf("%q: %v", q.expr, err)
			}
			_, noData := mixinNoData[q.name]
			switch {
			case q.alert:
				t.Logf("%s: %s", q.expr, r.summary())
			case len(r.series) == 0 && !noData:
				t.Errorf("%q: no data", q.expr)
			case len(r.series) > 0 && noData:
				t.Logf("%q has data though listed in mixinNoData (%s): %s", q.expr, mixinNoData[q.name], r.summary())
			}
		})
	}

	// promhbase's ruler wrote the recording rules' series; none of its
	// rule evaluations failed.
	for _, rec := range records {
		r, err := papi.query(ctx, promQuery{expr: rec, at: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.series) == 0 {
			t.Errorf("promhbase: no series %s: its ruler recorded nothing", rec)
		}
	}
	ms, err := testproc.FetchMetrics(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if n := ms.Sum("prometheus_rule_evaluation_failures_total"); n != 0 {
		t.Errorf("promhbase's ruler: %v rule evaluations failed", n)
	}
	if n := ms.Sum("prometheus_rule_evaluations_total"); n == 0 {
		t.Error("promhbase's ruler: no rule evaluated")
	}
	logFiring(t, prom.api)
}

// checkRevision checks the revision label of promhbase_build_info, as
// api scraped it, against the VCS revision go build recorded in bin (go
// version -m): the commit, "-modified" after it when the tree had
// changes; "unknown" when none was recorded (-buildvcs=false, no
// checkout).
func checkRevision(t *testing.T, bin string, api promAPI) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", bin, err)
	}
	want, modified := "unknown", false
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "build\tvcs.revision="); ok {
			want = v
		}
		modified = modified || strings.TrimSpace(line) == "build\tvcs.modified=true"
	}
	if modified && want != "unknown" {
		want += "-modified"
	}
	r, err := api.query(t.Context(), promQuery{expr: `promhbase_build_info{job="promhbase"}`, at: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	keys := r.seriesKeys()
	if len(keys) != 1 || !strings.Contains(keys[0], `revision="`+want+`"`) {
		t.Errorf("promhbase_build_info: %q, want one series with revision %q (go version -m)", keys, want)
	}
	t.Logf("promhbase_build_info: %s", keys)
}

// logFiring logs the alerts firing in Prometheus at the end of the test:
// the alerts of a healthy server, under the test's load.
func logFiring(t *testing.T, api promAPI) {
	t.Helper()
	alerts, err := api.alerts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, a := range alerts {
		fmt.Fprintf(&b, "\n  %s %s %v", a.State, a.Labels["alertname"], a.Labels)
	}
	t.Logf("Prometheus's alerts at the end: %d%s", len(alerts), b.String())
}
