package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/otlpgen"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// otlpVariant is one translation setup, given alike to Prometheus (its
// configuration file's otlp section) and to promhbase (otlp.Config).
type otlpVariant struct {
	name string
	yaml string // the otlp section's body, indented two spaces
	cfg  func(*otlp.Config)
	// delta adds delta temporality sums and histograms to the requests,
	// stored as they come (Prometheus's otlp-native-delta-ingestion).
	delta bool
	// plain leaves out of the requests what promhbase's fast path leaves
	// to the general one (exponential histograms), and requires that the
	// fast path took them all.
	plain bool
}

// TestOTLPAgainstPrometheus sends the same generated OTLP requests (every
// metric type, two resources, counter resets, a no-recorded-value point,
// dotted names with units, exemplars) to a real Prometheus 3.15 with
// --web.enable-otlp-receiver and to promhbase, and requires the same
// series (/api/v1/series) and the same values of each metric at every
// step (/api/v1/query_range), native histograms included, under the
// default translation and under another with its options turned, along
// promhbase's fast path (plain requests) and its general one. The
// generator's seed is logged; OTLP_SEED replays one.
func TestOTLPAgainstPrometheus(t *testing.T) {
	t.Parallel()
	bin := prometheusBinary(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OTLP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (OTLP_SEED replays it)", seed)
	for _, v := range []otlpVariant{
		{name: "default", cfg: func(*otlp.Config) {}},
		{name: "default, plain", plain: true, cfg: func(*otlp.Config) {}},
		{name: "native histograms of custom buckets, plain", plain: true, yaml: "  convert_histograms_to_nhcb: true\n",
			cfg: func(c *otlp.Config) { c.ConvertHistogramsToNHCB = true }},
		{name: "scope labels, plain", plain: true, yaml: "  promote_scope_metadata: true\n",
			cfg: func(c *otlp.Config) { c.PromoteScopeMetadata = true }},
		{name: "promoted, plain", plain: true, yaml: "  promote_resource_attributes: [host.name, k8s.pod.name]\n",
			cfg: func(c *otlp.Config) { c.PromoteResourceAttributes = []string{"host.name", "k8s.pod.name"} }},
		{name: "no translation, plain", plain: true, yaml: "  translation_strategy: NoTranslation\n  keep_identifying_resource_attributes: true\n",
			cfg: func(c *otlp.Config) {
				c.TranslationStrategy, c.KeepIdentifyingResourceAttributes = otlptranslator.NoTranslation, true
			}},
		{name: "promoted, NHCB, scope, no suffixes",
			yaml: "  promote_resource_attributes: [host.name, k8s.pod.name]\n  keep_identifying_resource_attributes: true\n" +
				"  convert_histograms_to_nhcb: true\n  promote_scope_metadata: true\n  translation_strategy: UnderscoreEscapingWithoutSuffixes\n",
			cfg: func(c *otlp.Config) {
				c.PromoteResourceAttributes = []string{"host.name", "k8s.pod.name"}
				c.KeepIdentifyingResourceAttributes, c.ConvertHistogramsToNHCB, c.PromoteScopeMetadata = true, true, true
				c.TranslationStrategy = otlptranslator.UnderscoreEscapingWithoutSuffixes
			}},
		{name: "native delta ingestion", delta: true, cfg: func(c *otlp.Config) { c.NativeDelta = true }},
		{name: "UTF-8 names with suffixes", yaml: "  translation_strategy: NoUTF8EscapingWithSuffixes\n  promote_all_resource_attributes: true\n",
			cfg: func(c *otlp.Config) {
				c.TranslationStrategy, c.PromoteAllResourceAttributes = otlptranslator.NoUTF8EscapingWithSuffixes, true
			}},
		{name: "no translation", yaml: "  translation_strategy: NoTranslation\n",
			cfg: func(c *otlp.Config) { c.TranslationStrategy = otlptranslator.NoTranslation }},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			testOTLPVariant(t, bin, v, seed, postOTLP)
		})
	}
}

// otlpSender sends md to the OTLP/HTTP metrics endpoint url, failing t
// unless it was taken.
type otlpSender func(t *testing.T, url string, md pmetric.Metrics)

// testOTLPVariant sends the generator's requests to Prometheus (POSTed)
// and to promhbase (with send), and compares what both stored.
func testOTLPVariant(t *testing.T, bin string, v otlpVariant, seed uint64, send otlpSender) {
	ctx := t.Context()
	prom := startOTLPPrometheus(t, bin, v.yaml, v.delta)
	cfg := otlp.DefaultConfig()
	v.cfg(&cfg)
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{
		Adapter: adapter.Options{OTLP: func() otlp.Config { return cfg }}})
	ph := promAPI{name: "promhbase", base: srv.URL, client: &http.Client{Timeout: time.Minute}}

	// Eight requests 15 s apart, ending a minute ago.
	const requests, step = 8, 15 * time.Second
	end := time.Now().Add(-time.Minute).Truncate(time.Second)
	start := end.Add(-(requests - 1) * step)
	gen := newOTLPGen(seed)
	gen.delta, gen.plain = v.delta, v.plain
	for i := range requests {
		md := gen.request(i, start.Add(time.Duration(i)*step))
		postOTLP(t, prom.base+"/api/v1/otlp/v1/metrics", md)
		send(t, srv.URL+"/otlp/v1/metrics", md)
	}
	qEnd := end.Add(5 * time.Minute)
	want, err := prom.api.seriesSet(ctx, `{__name__=~".+"}`, start, qEnd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ph.seriesSet(ctx, `{__name__=~".+"}`, start, qEnd)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d series", len(want))
	if len(want) < 20 || !slices.Equal(got, want) {
		t.Fatalf("series differ: missing %q, unexpected %q (Prometheus has %d)", missingFrom(want, got), missingFrom(got, want), len(want))
	}
	if v.plain {
		if fast := testproc.GatherSum(t, srv.Registry, "promhbase_otlp_requests_translated_total", "path", "fast"); fast != requests {
			t.Errorf("%v of %d plain requests along the fast path", fast, requests)
		}
	}
	want2, got2 := otlpExemplars(t, prom.api, start, qEnd), otlpExemplars(t, ph, start, qEnd)
	if len(want2) == 0 || !reflect.DeepEqual(got2, want2) {
		t.Errorf("exemplars differ from Prometheus's (%d series with exemplars):\n got %v\nwant %v", len(want2), got2, want2)
	}
	names, err := prom.api.stringList(ctx, "/api/v1/label/__name__/values", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		q := promQuery{expr: fmt.Sprintf("{__name__=%q}", name), start: start.Add(-step), end: qEnd, step: step / 3}
		w, err := prom.api.query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		g, err := ph.query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.series) == 0 {
			t.Fatalf("%s: Prometheus answered no series", q.expr)
		}
		if d := diffResults(w, g); len(d) > 0 {
			t.Errorf("%s differs from Prometheus:\n%s", q.expr, joinLines(d))
		}
	}
}

// otlpExemplars returns the exemplars p answers for every series in
// [start, end], by series, each series' as "labels value@ms" strings.
func otlpExemplars(t *testing.T, p promAPI, start, end time.Time) map[string][]string {
	t.Helper()
	var data []struct {
		SeriesLabels map[string]string `json:"seriesLabels"`
		Exemplars    []struct {
			Labels    map[string]string `json:"labels"`
			Value     string            `json:"value"`
			Timestamp float64           `json:"timestamp"`
		} `json:"exemplars"`
	}
	form := url.Values{"query": {`{__name__=~".+"}`}, "start": {formatTime(start)}, "end": {formatTime(end)}}
	if err := p.getData(t.Context(), "/api/v1/query_exemplars", form, &data); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, s := range data {
		key := labels.FromMap(s.SeriesLabels).String()
		for _, e := range s.Exemplars {
			out[key] = append(out[key], fmt.Sprintf("%s %s@%d", labels.FromMap(e.Labels), e.Value, int64(math.Round(e.Timestamp*1000))))
		}
		slices.Sort(out[key])
	}
	return out
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// startOTLPPrometheus starts Prometheus with its OTLP receiver, the otlp
// section otlpYAML, exemplar storage and an out-of-order window (the
// OTLP receiver's target_info may go back in time).
func startOTLPPrometheus(t *testing.T, bin, otlpYAML string, delta bool) *promProcess {
	t.Helper()
	cfg := "global:\n  scrape_interval: 15s\nstorage:\n  tsdb:\n    out_of_order_time_window: 1h\n"
	if otlpYAML != "" {
		cfg += "otlp:\n" + otlpYAML
	}
	tmpl := template.Must(template.New("prometheus.yml").Parse(cfg))
	features := "--enable-feature=exemplar-storage"
	if delta {
		features += ",otlp-native-delta-ingestion"
	}
	return startPrometheus(t, bin, "prometheus-otlp", tmpl, func(string) map[string]string { return nil },
		"--web.enable-otlp-receiver", features)
}

// postOTLP posts md as an OTLP protobuf body, failing t unless it
// answers 200.
func postOTLP(t *testing.T, url string, md pmetric.Metrics) {
	t.Helper()
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("POST %s: status %d: %s", url, resp.StatusCode, b.String())
	}
}

// otlpGen generates OTLP requests: two resources, each with every metric
// type on a few attribute sets, their values moving from request to
// request (cumulative ones growing, and reset at one request).
type otlpGen struct {
	rng   *rand.Rand
	reset int // the request at which cumulative values start over
	stale int // the request whose gauge point has no recorded value
	delta bool
	plain bool // no exponential histograms
}

func newOTLPGen(seed uint64) *otlpGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &otlpGen{rng: rng, reset: 3 + rng.IntN(3), stale: 2 + rng.IntN(4)}
}

// request is the i-th request, its points at t.
func (g *otlpGen) request(i int, t time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for r, svc := range []string{"checkout", "payments"} {
		rm := md.ResourceMetrics().AppendEmpty()
		attrs := rm.Resource().Attributes()
		attrs.PutStr("service.namespace", "shop")
		attrs.PutStr("service.name", svc)
		attrs.PutStr("service.instance.id", fmt.Sprintf("%s-%d", svc, r))
		attrs.PutStr("host.name", fmt.Sprintf("host-%d", r))
		attrs.PutStr("k8s.pod.name", fmt.Sprintf("pod-%d", r))
		attrs.PutStr("deployment.environment", "prod")
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("io.opentelemetry.contrib.shop")
		sm.Scope().SetVersion("1.2.3")
		sm.Scope().Attributes().PutStr("library.language", "go")
		g.metrics(sm.Metrics(), i, t)
	}
	return md
}

// cum is a cumulative value at request i: growing, and started over at
// the reset request.
func (g *otlpGen) cum(i int, per float64) float64 {
	n := i + 1
	if i >= g.reset {
		n = i - g.reset + 1
	}
	return float64(n) * per
}

// metrics appends the request's metrics: a double and an int gauge (one
// point of the stale request flagged no-recorded-value), a monotonic and
// a non-monotonic sum, an explicit-bucket histogram with exemplars, an
// exponential histogram (scale up to 10, downscaled past 8), a summary.
func (g *otlpGen) metrics(ms pmetric.MetricSlice, i int, t time.Time) {
	ts := pcommon.NewTimestampFromTime(t)
	startTS := pcommon.NewTimestampFromTime(t.Add(-time.Hour))
	attrSets := []string{"GET", "POST", "PUT"}

	gauge := ms.AppendEmpty()
	gauge.SetName("memory.usage")
	gauge.SetUnit("By")
	gauge.SetDescription("Memory in use.")
	gpts := gauge.SetEmptyGauge().DataPoints()
	for k, m := range attrSets {
		p := gpts.AppendEmpty()
		p.SetTimestamp(ts)
		p.Attributes().PutStr("http.request.method", m)
		p.SetDoubleValue(math.Round(g.rng.Float64()*1e6) / 8)
		if i == g.stale && k == 1 {
			p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
	}
	ig := ms.AppendEmpty()
	ig.SetName("cpu.utilization")
	ig.SetUnit("1")
	ip := ig.SetEmptyGauge().DataPoints().AppendEmpty()
	ip.SetTimestamp(ts)
	ip.SetIntValue(int64(g.rng.IntN(100)))

	for _, mono := range []bool{true, false} {
		s := ms.AppendEmpty()
		s.SetName("http.server.requests")
		if !mono {
			s.SetName("queue.items")
		}
		s.SetUnit("{request}")
		sum := s.SetEmptySum()
		sum.SetIsMonotonic(mono)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for _, m := range attrSets {
			p := sum.DataPoints().AppendEmpty()
			p.SetStartTimestamp(startTS)
			p.SetTimestamp(ts)
			p.Attributes().PutStr("http.request.method", m)
			p.SetDoubleValue(g.cum(i, float64(1+g.rng.IntN(5))))
		}
	}

	h := ms.AppendEmpty()
	h.SetName("http.server.request.duration")
	h.SetUnit("s")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	bounds := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
	for _, m := range attrSets[:2] {
		p := hist.DataPoints().AppendEmpty()
		p.SetStartTimestamp(startTS)
		p.SetTimestamp(ts)
		p.Attributes().PutStr("http.request.method", m)
		p.ExplicitBounds().FromRaw(bounds)
		counts := make([]uint64, len(bounds)+1)
		var total uint64
		for b := range counts {
			counts[b] = uint64(g.cum(i, float64(g.rng.IntN(7))))
			total += counts[b]
		}
		p.BucketCounts().FromRaw(counts)
		p.SetCount(total)
		p.SetSum(float64(total) * 0.0625)
		ex := p.Exemplars().AppendEmpty()
		ex.SetTimestamp(ts)
		ex.SetDoubleValue(0.03)
		ex.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, byte(i)})
		ex.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, byte(i)})
	}

	if !g.plain {
		g.exponential(ms, i, ts, startTS)
	}

	if g.delta {
		g.deltas(ms, t)
	}

	sm := ms.AppendEmpty()
	sm.SetName("db.query.latency")
	sm.SetUnit("s")
	sp := sm.SetEmptySummary().DataPoints().AppendEmpty()
	sp.SetStartTimestamp(startTS)
	sp.SetTimestamp(ts)
	sp.SetCount(uint64(g.cum(i, 10)))
	sp.SetSum(g.cum(i, 2.5))
	for _, q := range []float64{0.5, 0.9, 0.99} {
		qv := sp.QuantileValues().AppendEmpty()
		qv.SetQuantile(q)
		qv.SetValue(q * float64(1+g.rng.IntN(10)))
	}
}

// exponential appends an exponential histogram (scale up to 10,
// downscaled past 8) of two points: promhbase's fast path leaves it to
// the general one.
func (g *otlpGen) exponential(ms pmetric.MetricSlice, i int, ts, startTS pcommon.Timestamp) {
	e := ms.AppendEmpty()
	e.SetName("rpc.client.duration")
	e.SetUnit("ms")
	eh := e.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for k, scale := range []int32{int32(g.rng.IntN(11)), -2} {
		p := eh.DataPoints().AppendEmpty()
		p.SetStartTimestamp(startTS)
		p.SetTimestamp(ts)
		p.Attributes().PutStr("rpc.method", fmt.Sprintf("m%d", k))
		p.SetScale(scale)
		p.Positive().SetOffset(int32(g.rng.IntN(6)) - 2)
		p.Negative().SetOffset(int32(g.rng.IntN(3)))
		var total uint64
		var pos, neg []uint64
		for range 1 + g.rng.IntN(6) {
			c := uint64(g.cum(i, float64(g.rng.IntN(4))))
			pos, total = append(pos, c), total+c
		}
		if k == 1 {
			c := uint64(g.cum(i, 1))
			neg, total = append(neg, c), total+c
		}
		p.Positive().BucketCounts().FromRaw(pos)
		p.Negative().BucketCounts().FromRaw(neg)
		zc := uint64(g.cum(i, float64(g.rng.IntN(2))))
		p.SetZeroCount(zc)
		p.SetCount(total + zc)
		p.SetSum(float64(total) * 3.5)
	}
}

// deltas appends a delta sum and a delta histogram, each point the
// increase since the previous request.
func (g *otlpGen) deltas(ms pmetric.MetricSlice, t time.Time) {
	otlpgen.Sum(ms, "jobs.processed", "", true, pmetric.AggregationTemporalityDelta, otlpgen.Point{T: t, V: float64(g.rng.IntN(20))})
	counts := []uint64{uint64(g.rng.IntN(5)), uint64(g.rng.IntN(5)), uint64(g.rng.IntN(5))}
	total := counts[0] + counts[1] + counts[2]
	h := otlpgen.Histogram(ms, "job.duration", "s", t, []float64{1, 10}, counts, total, float64(total)*2.5)
	h.Histogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
}
