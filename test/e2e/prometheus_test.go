package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// configA is Prometheus A: it scrapes itself, promhbase and the synthetic
// exporters every second, keeps its own TSDB (with an out-of-order window
// wide enough for the historical data) and remote-writes everything to
// promhbase twice, with remote write 2.0 and 1.0 (the two queues' settings
// are the template "queue"). NoScrape drops the scrape configurations and
// keeps the rest, the remote-write queues included.
var configA = template.Must(template.New("A").Parse(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
storage:
  tsdb:
    out_of_order_time_window: 3h
{{if not .NoScrape}}scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ['{{.Self}}']
  - job_name: promhbase
    static_configs:
      - targets: ['{{.Promhbase}}']
  - job_name: exporter
    scrape_native_histograms: true
    convert_classic_histograms_to_nhcb: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: ['{{.Exporter1}}', '{{.Exporter2}}']
{{end}}remote_write:
  - name: promhbase-v2
    url: '{{.WriteURL}}'
    protobuf_message: io.prometheus.write.v2.Request
{{template "queue"}}  - name: promhbase-v1
    url: '{{.WriteURL}}'
    protobuf_message: prometheus.WriteRequest
{{template "queue"}}{{define "queue"}}    send_native_histograms: true
    send_exemplars: true
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
{{end}}`))

// configB is Prometheus B: it scrapes nothing and reads everything through
// promhbase, recent data included.
var configB = template.Must(template.New("B").Parse(`global:
  evaluation_interval: 1m
remote_read:
  - name: promhbase
    url: '{{.ReadURL}}'
    read_recent: true
`))

// TestPrometheus runs real Prometheus servers against promhbase: A scrapes
// synthetic exporters, itself and promhbase and remote-writes to promhbase;
// B has no data of its own and reads only through promhbase's remote read
// (once with streamed answers, once with SAMPLES answers). The same PromQL
// queries at fixed times must give the same answers on A and on both Bs.
func TestPrometheus(t *testing.T) {
	t.Parallel()
	const (
		beforeStop = 35 * time.Second // both exporters up
		afterStop  = 30 * time.Second // exporter 2 gone
	)
	began := time.Now()
	bin := prometheusBinary(t)
	t.Logf("backend %s, Prometheus %s", testbackend.Name(), bin)

	h := newHarness(t, mapping.DefaultLayout())
	exp1 := startExporter(t, 150)
	exp2 := startExporter(t, 0)
	samplesFront := samplesOnlyFront(t, h.url)
	hostOf := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return u.Host
	}

	a := startPrometheus(t, bin, "A", configA, func(listen string) map[string]string {
		return map[string]string{
			"Self": listen, "Promhbase": hostOf(h.url), "Exporter1": exp1.host, "Exporter2": exp2.host,
			"WriteURL": h.url + "/api/v1/write",
		}
	}, "--web.enable-remote-write-receiver", "--enable-feature=exemplar-storage,metadata-wal-records")
	bStreamed := startPrometheus(t, bin, "B-streamed", configB, func(string) map[string]string {
		return map[string]string{"ReadURL": h.url + "/api/v1/read"}
	})
	bSamples := startPrometheus(t, bin, "B-samples", configB, func(string) map[string]string {
		return map[string]string{"ReadURL": samplesFront.URL + "/api/v1/read"}
	})
	t.Logf("A %s, B-streamed %s, B-samples %s, promhbase %s, exporters %s %s (started in %s)",
		a.base, bStreamed.base, bSamples.base, h.url, exp1.host, exp2.host, time.Since(began).Round(time.Millisecond))

	// Historical data across an hour boundary, identical on both sides: into
	// A through its remote-write receiver (out of order for A's head), into
	// promhbase through the remote-write client. A does not forward it:
	// its remote-write queue skips samples older than the queue's start.
	hist := makeHistory(began)
	ctx := t.Context()
	if err := remoteWrite(ctx, a.base, hist.series); err != nil {
		t.Fatalf("historical data into A: %v", err)
	}
	h.send(hist.series)
	t.Logf("historical data: %d series, %s .. %s, hour boundary %s", len(hist.series),
		hist.start.UTC().Format(time.TimeOnly), hist.end.UTC().Format(time.TimeOnly), hist.hour.UTC().Format(time.TimeOnly))

	// The timeline is the subject: wall time passes while A scrapes both
	// exporters, then only the first (the series of the second end).
	time.Sleep(beforeStop)
	exp2.stop()
	stopped := time.Now()
	t.Logf("exporter 2 (%s) stopped at %s", exp2.host, stopped.UTC().Format(time.StampMilli))
	time.Sleep(afterStop)

	// Stop A's scrapes, so that its queues can empty for good: with
	// scrapes every second a loaded HBase may take each batch longer than
	// a scrape interval, and the queues are never empty at one moment.
	// The targets' end-of-run staleness markers come up to two scrape
	// intervals after the reload; the queries end before them.
	scrapesEnd := time.Now()
	aMeta := fetchMetadata(t, a.api)
	a.reload(t, "NoScrape", "true")
	// Kept: the markers come at no moment the test can see (A's metrics
	// do not count them apart), within two scrape intervals.
	time.Sleep(3 * time.Second)
	// The last scrapes began within a scrape interval of scrapesEnd.
	sent := waitDrained(t, a, scrapesEnd.Add(-3*time.Second))
	// Every sample at or before end has reached promhbase: the queues
	// are empty and A appends nothing more.
	end := time.Unix(min(sent.Unix(), scrapesEnd.Unix())-5, 0)
	t.Logf("A's queue drained up to %s; queries end at %s", sent.UTC().Format(time.StampMilli), end.UTC().Format(time.StampMilli))

	tl := timeline{end: end, stopped: stopped, hist: hist, exp2: exp2.host}
	queries := promQueries(tl)
	if len(queries) < 30 {
		t.Fatalf("only %d queries", len(queries))
	}
	// B-streamed and B-samples evaluate over remote read; promhbase
	// evaluates itself, through its own Prometheus query API.
	readers := []promAPI{bStreamed.api, bSamples.api, {name: "promhbase", base: h.url, client: &http.Client{Timeout: 2 * time.Minute}}}
	agreed := make([]int, len(readers))
	t.Logf("%-3s %-7s %-11s %-11s %-11s %-38s %s", "#", "kind", "B-streamed", "B-samples", "promhbase", "A's answer", "query")
	for i, q := range queries {
		want, err := a.api.query(ctx, q)
		if err != nil {
			t.Fatalf("query %d %s: %v", i, q.expr, err)
		}
		var problems []string
		if q.wantEmpty && len(want.series) > 0 {
			problems = append(problems, fmt.Sprintf("A: want no series, got %s", want.summary()))
		}
		if !q.wantEmpty && len(want.series) == 0 {
			problems = append(problems, "A: no series: the query checks nothing")
		}
		if q.check != nil {
			if err := q.check(want); err != nil {
				problems = append(problems, fmt.Sprintf("A: %v", err))
			}
		}
		verdicts := make([]string, len(readers))
		for j, b := range readers {
			got, err := b.query(ctx, q)
			if err != nil {
				t.Fatalf("query %d %s: %v", i, q.expr, err)
			}
			diff := diffResults(want, got)
			if len(diff) == 0 {
				agreed[j]++
				verdicts[j] = "agree"
				continue
			}
			verdicts[j] = "DIFFER"
			for _, d := range diff {
				problems = append(problems, b.name+": "+d)
			}
		}
		t.Logf("%-3d %-7s %-11s %-11s %-11s %-38s %s", i, q.kind(), verdicts[0], verdicts[1], verdicts[2], want.summary(), q.expr)
		for _, p := range problems {
			t.Errorf("query %d %s: %s", i, q.expr, p)
		}
	}
	for j, b := range readers {
		t.Logf("%s agreed with A on %d of %d queries", b.name, agreed[j], len(queries))
	}

	checkLabelAPIs(t, a.api, readers[2], aMeta, began.Add(-2*time.Hour), end)

	// Each B really used the response type it stands for.
	for _, tc := range []struct {
		p          *promProcess
		used, none string
	}{{bStreamed, "chunked", "sampled"}, {bSamples, "sampled", "chunked"}} {
		ms, err := testproc.FetchMetrics(ctx, tc.p.base)
		if err != nil {
			t.Fatal(err)
		}
		used := ms.Sum("prometheus_remote_read_client_queries_total", "response_type", tc.used)
		none := ms.Sum("prometheus_remote_read_client_queries_total", "response_type", tc.none)
		t.Logf("%s: %v remote reads answered %s, %v %s", tc.p.name, used, tc.used, none, tc.none)
		if used == 0 || none != 0 {
			t.Errorf("%s: %v remote reads answered %s and %v %s; want only %s", tc.p.name, used, tc.used, none, tc.none, tc.used)
		}
	}

	// A's queues, their scrapes stopped above, end healthy.
	checkQueueHealthy(t, a)
	ms, err := testproc.FetchMetrics(ctx, h.url)
	if err != nil {
		t.Fatal(err)
	}
	if n := ms.Sum("promhbase_samples_rejected_total"); n != 0 {
		t.Errorf("promhbase rejected %v samples", n)
	}
	t.Logf("promhbase: %v samples written, %v series and %v samples read",
		ms.Sum("promhbase_samples_written_total"), ms.Sum("promhbase_read_series_total"), ms.Sum("promhbase_read_samples_total"))
	t.Logf("total %s", time.Since(began).Round(time.Second))
}

// timeline holds the fixed times and targets the queries refer to.
type timeline struct {
	end, stopped time.Time
	hist         history
	exp2         string // instance label of the exporter that goes away
}

// promQueries is the query table. Instant queries run at tl.end unless
// they say otherwise; range queries cover the last minute every 2s.
func promQueries(tl timeline) []promQuery {
	at := func(expr string) promQuery { return promQuery{expr: expr, at: tl.end} }
	rng := func(expr string) promQuery {
		return promQuery{expr: expr, start: tl.end.Add(-time.Minute), end: tl.end, step: 2 * time.Second}
	}
	around := func(expr string, t time.Time, half, step time.Duration) promQuery {
		return promQuery{expr: expr, start: t.Add(-half), end: t.Add(half), step: step}
	}
	atTime := func(expr string, t time.Time) promQuery { return promQuery{expr: expr, at: t} }
	empty := func(q promQuery) promQuery { q.wantEmpty = true; return q }
	checked := func(q promQuery, check func(promResult) error) promQuery { q.check = check; return q }

	stopped := tl.stopped.Truncate(time.Second)
	hs, he, hh := tl.hist.start, tl.hist.end, tl.hist.hour
	exp2 := fmt.Sprintf("{instance=%q}", tl.exp2)
	samplesTo := func(t time.Time) float64 { return float64(t.Sub(hs)/histStep) + 1 }

	return []promQuery{
		// Counters, one of them resetting.
		rng(`rate(e2e_events_total[10s])`),
		at(`irate(e2e_events_total[5s])`),
		rng(`increase(e2e_resetting_total[15s])`),
		checked(at(`resets(e2e_resetting_total[1m])`), atLeast(1)),
		rng(`rate(e2e_resetting_total[20s])`),
		// Aggregations.
		rng(`sum by (method) (rate(e2e_http_requests_total[10s]))`),
		rng(`avg by (sensor) (e2e_temperature_celsius)`),
		rng(`max by (job) (e2e_wave)`),
		at(`min by (instance) (e2e_temperature_celsius)`),
		checked(at(`count by (method) (e2e_http_requests_total)`), allValues(150)),
		checked(at(`topk(5, rate(e2e_http_requests_total[30s]))`), seriesCount(5)),
		at(`bottomk(3, e2e_http_requests_total{method="POST"})`),
		at(`quantile(0.9, rate(e2e_http_requests_total[30s]))`),
		at(`count_values("value", e2e_resetting_total)`),
		at(`label_replace(e2e_temperature_celsius, "direction", "$1", "sensor", "(no|so).*")`),
		// Classic histogram and summary.
		rng(`histogram_quantile(0.9, sum by (le) (rate(e2e_latency_seconds_bucket[20s])))`),
		at(`histogram_quantile(0.5, rate(e2e_latency_seconds_bucket[30s]))`),
		rng(`e2e_rpc_duration_seconds{quantile="0.9"}`),
		at(`rate(e2e_rpc_duration_seconds_sum[30s]) / rate(e2e_rpc_duration_seconds_count[30s])`),
		// absent, offset, subquery.
		checked(at(`absent(e2e_no_such_metric{job="exporter"})`), allValues(1)),
		empty(at(`absent(e2e_wave{job="exporter"})`)),
		at(`e2e_events_total offset 30s`),
		at(`max_over_time(rate(e2e_events_total[5s])[40s:5s])`),
		// Matchers.
		checked(at(`e2e_http_requests_total{path=~"/api/v1/item/1[0-4]."}`), seriesCount(100)),
		checked(at(`e2e_http_requests_total{method!="GET", path!~"/api/v1/item/0.*"}`), seriesCount(50)),
		at(`{__name__=~"e2e_(temperature_celsius|wave)"}`),
		at(`{job="exporter"}`),
		at(`{__name__=~"e2e_wave|up", job="exporter"}`),
		at(`count by (job) ({__name__=~".+", job=~"prometheus|promhbase"})`),
		at(`count by (__name__) ({__name__!~"promhbase_http.*", job="promhbase"})`),
		checked(at(`e2e_temperature_celsius{no_such_label=""}`), seriesCount(2)),
		checked(at(`e2e_temperature_celsius{sensor=~"north|"}`), seriesCount(1)),
		empty(at(`e2e_temperature_celsius{sensor=""}`)),
		checked(at(`e2e_labels_info{text="ünïcødé ✓"}`), seriesCount(1)),
		checked(at(`e2e_labels_info{quote=~".*\"hi\".*"}`), seriesCount(1)),
		checked(at(`e2e_labels_info{path="C:\\dir\\file"}`), seriesCount(1)),
		checked(at(`e2e_labels_info{path=~"\\\\.*", text!~"line.*"}`), seriesCount(1)),
		checked(at(`e2e_labels_info{text="line\nbreak"}`), seriesCount(1)),
		// Staleness: exporter 2 went away.
		checked(around(`up{job="exporter"}`, stopped, 20*time.Second, time.Second), upThenDown(tl.exp2, stopped)),
		checked(around(`e2e_wave`+exp2, stopped, 20*time.Second, time.Second), endsBy(stopped.Add(2*time.Second))),
		checked(at(`e2e_wave`), seriesCount(1)),
		atTime(`count_over_time(e2e_wave[30s])`, stopped.Add(15*time.Second)),
		at(`count_over_time(up{job="exporter"}[1m])`),
		at(`timestamp(e2e_wave)`),
		// Prometheus's and promhbase's own metrics, written by A's self-scrape.
		at(`sum by (handler, code) (promhbase_http_requests_total)`),
		at(`rate(prometheus_tsdb_head_samples_appended_total[30s])`),
		at(`scrape_samples_scraped`),
		rng(`up`),
		// Historical data across the hour boundary.
		around(`rate(e2e_hist_counter_total[5m])`, hh, 20*time.Minute, time.Minute),
		atTime(`increase(e2e_hist_counter_total[1h])`, he),
		checked(atTime(`resets(e2e_hist_counter_total{series="a"}[2h])`, he), allValues(1)),
		{expr: `sum by (job) (e2e_hist_gauge)`, start: hs, end: he.Add(5 * time.Minute), step: 5 * time.Minute},
		atTime(`avg_over_time(e2e_hist_gauge[10m:1m])`, hh.Add(2*time.Minute)),
		checked(atTime(`count_over_time(e2e_hist_gauge[2h])`, hh), allValues(samplesTo(hh))),
		checked(atTime(`count_over_time(e2e_hist_gauge[2h])`, he.Add(time.Minute)), allValues(samplesTo(he))),
		at(`e2e_hist_gauge offset 1h`),
		around(`e2e_hist_counter_total`, hh, 2*time.Minute, 15*time.Second),
		checked(atTime(`e2e_hist_counter_total[2m]`, hh.Add(30*time.Second)), pointsPerSeries(8)),
		around(`deriv(e2e_hist_gauge[10m])`, hh, 15*time.Minute, time.Minute),
		// Native histograms (exponential, with negative buckets and the zero
		// bucket), one that resets, and the classic histogram converted to
		// custom buckets (NHCB) by A's scrape.
		at(`e2e_native_seconds`),
		at(`e2e_native_seconds[10s]`),
		rng(`rate(e2e_native_seconds[10s])`),
		at(`increase(e2e_native_seconds[30s])`),
		rng(`histogram_quantile(0.9, rate(e2e_native_seconds[10s]))`),
		at(`histogram_quantile(0.5, sum by (job) (rate(e2e_native_seconds[20s])))`),
		rng(`histogram_count(rate(e2e_native_seconds[10s]))`),
		at(`histogram_sum(rate(e2e_native_seconds[15s]))`),
		at(`histogram_avg(rate(e2e_native_seconds[15s]))`),
		rng(`histogram_fraction(0, 0.5, rate(e2e_native_seconds[10s]))`),
		at(`histogram_fraction(-1, 0, e2e_native_seconds)`),
		at(`histogram_stddev(rate(e2e_native_seconds[20s]))`),
		at(`histogram_stdvar(e2e_native_seconds)`),
		rng(`sum by (instance) (rate(e2e_native_seconds[10s]))`),
		at(`histogram_count(e2e_native_seconds) - histogram_count(e2e_native_seconds offset 20s)`),
		checked(at(`resets(e2e_native_resetting_seconds[1m])`), atLeast(1)),
		rng(`increase(e2e_native_resetting_seconds[20s])`),
		rng(`histogram_quantile(0.99, rate(e2e_native_resetting_seconds[15s]))`),
		at(`e2e_latency_seconds`),
		rng(`histogram_quantile(0.9, rate(e2e_latency_seconds[20s]))`),
		at(`histogram_count(rate(e2e_latency_seconds[30s]))`),
		at(`histogram_fraction(0, 0.25, rate(e2e_latency_seconds[30s]))`),
		at(`sum(rate(e2e_latency_seconds[20s]))`),
	}
}

// Checks of the reference's answer, so that agreement is about something.

func seriesCount(n int) func(promResult) error {
	return func(r promResult) error {
		if len(r.series) != n {
			return fmt.Errorf("%d series, want %d: %v", len(r.series), n, r.seriesKeys())
		}
		return nil
	}
}

func allValues(v float64) func(promResult) error {
	return func(r promResult) error {
		for k, pts := range r.series {
			for _, p := range pts {
				if p.v != v {
					return fmt.Errorf("series %s: value %v at %d, want %v", k, p.v, p.t, v)
				}
			}
		}
		return nil
	}
}

func atLeast(v float64) func(promResult) error {
	return func(r promResult) error {
		for _, pts := range r.series {
			for _, p := range pts {
				if p.v >= v {
					return nil
				}
			}
		}
		return fmt.Errorf("no value reaches %v", v)
	}
}

func pointsPerSeries(n int) func(promResult) error {
	return func(r promResult) error {
		for k, pts := range r.series {
			if len(pts) != n {
				return fmt.Errorf("series %s: %d points, want %d", k, len(pts), n)
			}
		}
		return nil
	}
}

// endsBy: every series has its last point at or before t (staleness
// markers end it; without them it would go on for the lookback delta).
func endsBy(t time.Time) func(promResult) error {
	return func(r promResult) error {
		for k, pts := range r.series {
			if l := pts[len(pts)-1].t; l > t.UnixMilli() {
				return fmt.Errorf("series %s goes on until %s, past %s", k, time.UnixMilli(l).UTC().Format(time.StampMilli), t.UTC().Format(time.StampMilli))
			}
		}
		return nil
	}
}

// upThenDown: the exporter's up series is 1 before it stopped and 0 a few
// seconds after.
func upThenDown(instance string, stopped time.Time) func(promResult) error {
	return func(r promResult) error {
		key := labels.FromStrings("__name__", "up", "job", "exporter", "instance", instance).String()
		pts := r.series[key]
		if len(pts) == 0 {
			return fmt.Errorf("no series %s", key)
		}
		if pts[0].v != 1 || pts[len(pts)-1].v != 0 {
			return fmt.Errorf("series %s goes from %v to %v, want 1 to 0", key, pts[0].v, pts[len(pts)-1].v)
		}
		return nil
	}
}

// histStep is the interval of the historical samples.
const histStep = 15 * time.Second

// history is historical data spanning an hour boundary.
type history struct {
	start, end, hour time.Time // first and last sample, the hour boundary inside
	series           []prompb.TimeSeries
}

// makeHistory returns 65 minutes of samples every 15 s from 100 to 105
// minutes before now (so that an hour boundary lies at least 5 minutes
// after the first sample): two counters (one with a reset) and three gauges
// with negative and fractional values that binary floats hold exactly,
// sorted by labels.
func makeHistory(now time.Time) history {
	startSec := (now.Add(-100*time.Minute).Unix() / 15) * 15
	if next := (startSec/3600 + 1) * 3600; next-startSec < 300 {
		// The hour boundary at least 5 minutes in, so that the queries
		// that look 2 minutes back from it find history there (a run
		// started at xx:39 would otherwise begin at xx:59).
		startSec -= 300
	}
	const steps = 65*4 + 1
	hist := history{
		start: time.Unix(startSec, 0),
		end:   time.Unix(startSec+(steps-1)*15, 0),
		hour:  time.Unix((startSec/3600+1)*3600, 0),
	}
	gen := []struct {
		lbls []string
		val  func(k int) float64
	}{
		{[]string{"__name__", "e2e_hist_counter_total", "job", "history", "series", "a"}, func(k int) float64 {
			if k >= 200 {
				return float64(3 * (k - 200)) // reset
			}
			return float64(3 * k)
		}},
		{[]string{"__name__", "e2e_hist_counter_total", "job", "history", "series", "b"}, func(k int) float64 { return float64(k*k) / 8 }},
		{[]string{"__name__", "e2e_hist_gauge", "job", "history", "series", "a"}, func(k int) float64 { return -100 + 0.25*float64(k) }},
		{[]string{"__name__", "e2e_hist_gauge", "job", "history", "series", "b"}, func(k int) float64 { return float64(k%17)*0.125 - 1 }},
		{[]string{"__name__", "e2e_hist_gauge", "job", "history", "series", "c"}, func(k int) float64 { return -1.5 * float64(k%7) }},
	}
	for _, g := range gen {
		ts := prompb.TimeSeries{Labels: lbl(g.lbls...)}
		for k := range steps {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: (startSec + int64(k)*15) * 1000, Value: g.val(k)})
		}
		hist.series = append(hist.series, ts)
	}
	return hist
}

// remoteWrite sends series in one remote-write 1.0 request through
// Prometheus's client to the server at base (http://host:port).
func remoteWrite(ctx context.Context, base string, series []prompb.TimeSeries) error {
	wc, err := promremote.NewWriter("e2e-history", base, promremote.Options{})
	if err != nil {
		return err
	}
	if err := promremote.Store(ctx, wc, &prompb.WriteRequest{Timeseries: series}); err != nil {
		return fmt.Errorf("to %s: %w", base, err)
	}
	return nil
}

// samplesOnlyFront serves promhbase's remote read, restricted to SAMPLES
// answers. Prometheus 3.15's remote_read configuration cannot choose the
// response type: its client always accepts STREAMED_XOR_CHUNKS first, then
// SAMPLES, and decodes whichever the server answers with. So the front
// rewrites each ReadRequest to accept SAMPLES only, which makes promhbase
// answer as it would to a client that does not stream, and passes the
// answer back unchanged.
func samplesOnlyFront(t *testing.T, backend string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/read" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if err := forwardSamplesOnly(w, r, backend); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func forwardSamplesOnly(w http.ResponseWriter, r *http.Request, backend string) error {
	comp, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	var req prompb.ReadRequest
	if err := promremote.Decode(comp, &req); err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	req.AcceptedResponseTypes = []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}
	body, err := promremote.Body(&req)
	if err != nil {
		return err
	}
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, backend+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("new request: %w", err)
	}
	for _, k := range []string{"Content-Encoding", "Content-Type", "User-Agent", "X-Prometheus-Remote-Read-Version"} {
		out.Header.Set(k, r.Header.Get(k))
	}
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, resp.Body)
	return err
}

// prometheusBinary returns the project's Prometheus binary (see
// testproc.PrometheusBinary).
func prometheusBinary(t *testing.T) string {
	t.Helper()
	return testproc.PrometheusBinary(t, testproc.Root(t, "tools/scripts/prometheus.sh"))
}

// promProcess is a Prometheus server started by the test.
type promProcess struct {
	name string
	base string // http://127.0.0.1:port
	api  promAPI
	proc *testproc.Process

	cfgPath string
	tmpl    *template.Template
	vars    map[string]string
}

// writeConfig renders the configuration file.
func (p *promProcess) writeConfig() error {
	var cfg bytes.Buffer
	if err := p.tmpl.Execute(&cfg, p.vars); err != nil {
		return fmt.Errorf("render config: %w", err)
	}
	if err := os.WriteFile(p.cfgPath, cfg.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// reload renders the configuration with the given template variables
// (name, value pairs) changed, sends SIGHUP and waits until Prometheus
// reports a successful reload.
func (p *promProcess) reload(t *testing.T, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		p.vars[kv[i]] = kv[i+1]
	}
	if err := p.writeConfig(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	before := time.Now()
	if err := p.proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("%s: SIGHUP: %v", p.name, err)
	}
	testproc.WaitMetrics(t, p.base, 30*time.Second, p.name+" reloaded", func(ms testproc.MetricPage) (bool, string) {
		return ms.Sum("prometheus_config_last_reload_successful") == 1 &&
				ms.Sum("prometheus_config_last_reload_success_timestamp_seconds") >= float64(before.Unix()),
			"the configuration reload did not succeed; log:\n" + testproc.Tail(p.proc.LogPath, 20)
	})
}

// startPrometheus starts Prometheus with the configuration tmpl renders
// from vars(listen address), its TSDB and log in fresh temporary
// directories, and waits until it is ready. It is stopped (its process
// group terminated, then killed) when the test ends; on failure the tail
// of its log is printed.
func startPrometheus(t *testing.T, bin, name string, tmpl *template.Template, vars func(listen string) map[string]string, args ...string) *promProcess {
	t.Helper()
	dir := t.TempDir()
	p := &promProcess{name: name, cfgPath: filepath.Join(dir, "prometheus.yml"), tmpl: tmpl}
	proc, listen := testproc.StartServer(t, testproc.ServerSpec{
		Name:   name,
		LogDir: t.TempDir(),
		Command: func(listen string) *exec.Cmd {
			p.vars = vars(listen)
			if err := p.writeConfig(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return exec.Command(bin, append([]string{
				"--config.file=" + p.cfgPath,
				"--storage.tsdb.path=" + filepath.Join(dir, "data"),
				"--web.listen-address=" + listen,
			}, args...)...)
		},
		ReadyPath:    "/-/ready",
		ReadyTimeout: time.Minute,
		LogTail:      40,
	})
	p.proc, p.base = proc, "http://"+listen
	p.api = promAPI{name: name, base: p.base, client: &http.Client{Timeout: 2 * time.Minute}}
	return p
}

// Remote-write queue metrics of Prometheus 3.15.
const (
	mPending     = "prometheus_remote_storage_samples_pending"
	mHighestIn   = "prometheus_remote_storage_highest_timestamp_in_seconds"
	mHighestSent = "prometheus_remote_storage_queue_highest_sent_timestamp_seconds"
)

// waitDrained waits until A's remote-write queue has nothing pending and
// has sent samples stamped at or after `after` and within a second of the
// newest sample A appended; it returns the highest sent timestamp.
func waitDrained(t *testing.T, a *promProcess, after time.Time) time.Time {
	t.Helper()
	// Generous: in make test's HBase pass other packages' tests create
	// and drop tables (tenants' namespaces among them) on the same
	// standalone HBase meanwhile, which can hold its writes for a minute.
	ms := testproc.WaitMetrics(t, a.base, 3*time.Minute, "drained (A's remote-write queue)", func(ms testproc.MetricPage) (bool, string) {
		pending := ms.Sum(mPending)
		in, okIn := ms.MaxOf(mHighestIn)
		sent, okSent := ms.MaxOf(mHighestSent)
		return okIn && okSent && pending == 0 && sent >= in-1 && sent >= float64(after.Unix()),
			fmt.Sprintf("pending %v, highest in %v, highest sent %v", pending, in, sent)
	})
	sent, _ := ms.MaxOf(mHighestSent)
	return time.Unix(int64(sent), 0)
}

// checkQueueHealthy checks that A's remote write, once A takes in no more
// samples, sends all it has and has failed and dropped nothing.
func checkQueueHealthy(t *testing.T, a *promProcess) {
	t.Helper()
	var ms testproc.MetricPage
	if err := poll.Wait(t.Context(), 30*time.Second, 250*time.Millisecond, "caught up (A's remote-write queue)", func() (bool, string, error) {
		var err error
		if ms, err = testproc.FetchMetrics(t.Context(), a.base); err != nil {
			return false, "", err
		}
		in, _ := ms.MaxOf(mHighestIn)
		sent, _ := ms.MaxOf(mHighestSent)
		if ms.Sum(mPending) == 0 && sent >= in {
			t.Logf("A: highest sample timestamp taken in and sent: %s", time.Unix(int64(sent), 0).UTC().Format(time.TimeOnly))
			return true, "", nil
		}
		return false, fmt.Sprintf("%v pending, highest in %v, highest sent %v", ms.Sum(mPending), in, sent), nil
	}); err != nil {
		t.Errorf("A: remote-write queue: %v", err)
	}
	// The dropped counters have a reason label: they appear with the first
	// drop.
	for _, name := range []string{"prometheus_remote_storage_samples_failed_total", "prometheus_remote_storage_samples_dropped_total"} {
		if _, ok := ms[name]; !ok {
			t.Logf("A: %s absent: none counted", name)
		}
	}
	var names []string
	for name := range ms {
		if strings.HasPrefix(name, "prometheus_remote_storage_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		v := ms.Sum(name)
		if name == "prometheus_remote_storage_histograms_dropped_total" {
			// Prometheus's 1.0 queue drops custom-bucket histograms itself
			// (1.0 cannot carry them); the 2.0 queue sends them.
			nhcb := ms.Sum(name, "remote_name", "promhbase-v1", "reason", "nhcb_in_rw1_not_supported")
			t.Logf("A: %v custom-bucket histograms dropped by the 1.0 queue itself", nhcb)
			v -= nhcb
		}
		switch {
		case strings.HasSuffix(name, "_failed_total"), strings.HasSuffix(name, "_dropped_total"), strings.HasSuffix(name, "_pending"):
			if v != 0 {
				t.Errorf("A: %s = %v, want 0", name, v)
			} else {
				t.Logf("A: %s = 0", name)
			}
		case strings.HasSuffix(name, "_total"):
			t.Logf("A: %s = %v", name, v)
		}
	}
	if ms.Sum("prometheus_remote_storage_samples_total") == 0 {
		t.Errorf("A: prometheus_remote_storage_samples_total is 0: nothing was sent")
	}
}

// metadataEntry is one entry of /api/v1/metadata.
type metadataEntry struct{ Type, Help, Unit string }

// promMetadata is what A's metadata APIs answered while it scraped its
// targets (A forgets a target's metadata when it stops scraping it).
type promMetadata struct {
	families map[string][]metadataEntry
	exporter []string // the exporters' metric families, sorted
}

// fetchMetadata asks A for its metadata and its exporters' families.
func fetchMetadata(t *testing.T, a promAPI) promMetadata {
	t.Helper()
	ctx := t.Context()
	var m promMetadata
	if err := a.getData(ctx, "/api/v1/metadata", url.Values{}, &m.families); err != nil {
		t.Fatal(err)
	}
	var tm []struct{ Metric string }
	if err := a.getData(ctx, "/api/v1/targets/metadata", url.Values{"match_target": {`{job="exporter"}`}}, &tm); err != nil {
		t.Fatal(err)
	}
	for _, e := range tm {
		m.exporter = append(m.exporter, e.Metric)
	}
	slices.Sort(m.exporter)
	m.exporter = slices.Compact(m.exporter)
	return m
}

// checkLabelAPIs compares promhbase's series, label and metadata APIs with
// A's over [start, end]: for the exporter's and the historical series, the
// same sets; for everything, promhbase's answer within A's (A may hold
// series created after its queue was drained); every metadata entry
// promhbase keeps is one A served for that family (am, asked while A
// scraped), and A's exporter families all have one.
func checkLabelAPIs(t *testing.T, a, p promAPI, am promMetadata, start, end time.Time) {
	t.Helper()
	ctx := t.Context()
	rng := url.Values{"start": {formatTime(start)}, "end": {formatTime(end)}}
	with := func(kv ...string) url.Values {
		v := url.Values{}
		for k, vs := range rng {
			v[k] = vs
		}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		what  string
		fetch func(promAPI) ([]string, error)
		equal bool
		min   int
	}{
		{`series {job="exporter"}`, func(x promAPI) ([]string, error) { return x.seriesSet(ctx, `{job="exporter"}`, start, end) }, true, 20},
		{`series {job="history"}`, func(x promAPI) ([]string, error) { return x.seriesSet(ctx, `{job="history"}`, start, end) }, true, 5},
		{`series {__name__=~".+"}`, func(x promAPI) ([]string, error) { return x.seriesSet(ctx, `{__name__=~".+"}`, start, end) }, false, 100},
		{"labels", func(x promAPI) ([]string, error) { return x.stringList(ctx, "/api/v1/labels", with()) }, false, 5},
		{`labels {job="exporter"}`, func(x promAPI) ([]string, error) {
			return x.stringList(ctx, "/api/v1/labels", with("match[]", `{job="exporter"}`))
		}, true, 3},
		{"job values", func(x promAPI) ([]string, error) { return x.stringList(ctx, "/api/v1/label/job/values", with()) }, true, 4},
		{`__name__ values {job="exporter"}`, func(x promAPI) ([]string, error) {
			return x.stringList(ctx, "/api/v1/label/__name__/values", with("match[]", `{job="exporter"}`))
		}, true, 10},
		{"__name__ values", func(x promAPI) ([]string, error) {
			return x.stringList(ctx, "/api/v1/label/__name__/values", with())
		}, false, 50},
	} {
		want, err := tc.fetch(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.fetch(p)
		if err != nil {
			t.Fatal(err)
		}
		extra := missingFrom(got, want)
		missing := missingFrom(want, got)
		t.Logf("%-36s A %5d, promhbase %5d, only in promhbase %d, only in A %d", tc.what, len(want), len(got), len(extra), len(missing))
		if len(got) < tc.min {
			t.Errorf("%s: promhbase answered %d, want at least %d: %.300q", tc.what, len(got), tc.min, got)
		}
		if len(extra) > 0 {
			t.Errorf("%s: promhbase answered %d that A does not have: %.500q", tc.what, len(extra), extra)
		}
		if tc.equal && len(missing) > 0 {
			t.Errorf("%s: promhbase lacks %d of A's: %.500q", tc.what, len(missing), missing)
		}
	}

	var pm map[string][]metadataEntry
	if err := p.getData(ctx, "/api/v1/metadata", url.Values{}, &pm); err != nil {
		t.Fatal(err)
	}
	same := 0
	for fam, es := range pm {
		if len(es) != 1 {
			t.Errorf("metadata %s: promhbase has %d entries, want 1", fam, len(es))
			continue
		}
		if aes, ok := am.families[fam]; ok {
			if !slices.Contains(aes, es[0]) {
				t.Errorf("metadata %s: promhbase has %+v, A %+v", fam, es[0], aes)
				continue
			}
			same++
		}
	}
	exporterFams := am.exporter
	var lacking []string
	for _, f := range exporterFams {
		if _, ok := pm[f]; !ok {
			lacking = append(lacking, f)
		}
	}
	t.Logf("metadata: A %d families, promhbase %d, %d agree; exporter families %d, %d lacking in promhbase", len(am.families), len(pm), same, len(exporterFams), len(lacking))
	if same == 0 || len(exporterFams) == 0 {
		t.Errorf("metadata: nothing compared (A %d, promhbase %d, exporter %d)", len(am.families), len(pm), len(exporterFams))
	}
	if len(lacking) > 0 {
		t.Errorf("metadata: promhbase lacks the exporter's families %q", lacking)
	}
}
