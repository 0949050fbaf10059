package otlp

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// gen makes random export requests: resources with and without
// service.*, attributes of every value type (names that sanitize alike
// or to a reserved name among them), gauges, sums and histograms of
// random points; rough also makes what the fast path leaves to the
// general one (deltas, exemplars, summaries, exponential histograms,
// histograms whose counts disagree, points without a time or a day
// old, scope attributes, duplicate attributes).
type gen struct {
	rng   *rand.Rand
	rough bool
	t0    time.Time
}

var (
	genKeys = []string{"host.name", "k8s.pod.name", "job", "instance", "le", "__name__", "http.method",
		"region", "env", "a.b", "a_b", "_private", "__double", "0lead", "ünï", "service.version", "x--y",
		"otel_scope_name", "otel_scope_region", "otel.scope.version", "quantile"}
	genNames = []string{"http.server.duration", "queue.depth", "jobs_done", "requests", "cpu.utilization",
		"process.runtime.go.mem.heap_alloc", "up", "target_info", "foo_total", "bar.count"}
	genUnits = []string{"", "s", "ms", "By", "1", "{requests}", "%", "bytes/s"}
)

func (g *gen) maybe(p float64) bool { return g.rng.Float64() < p }

// attrs fills m with up to n random attributes.
func (g *gen) attrs(m pcommon.Map, n int) {
	for range g.rng.IntN(n + 1) {
		k := genKeys[g.rng.IntN(len(genKeys))]
		if _, dup := m.Get(k); dup {
			continue
		}
		switch g.rng.IntN(6) {
		case 0:
			m.PutInt(k, g.rng.Int64N(2000)-1000)
		case 1:
			m.PutBool(k, g.maybe(0.5))
		case 2:
			m.PutDouble(k, []float64{0.5, 1e21, 1e-7, -3, 100}[g.rng.IntN(5)])
		case 3:
			m.PutStr(k, "")
		default:
			m.PutStr(k, fmt.Sprintf("v%d", g.rng.IntN(5)))
		}
	}
	if g.maybe(0.05) {
		l := m.PutEmptySlice("list")
		l.AppendEmpty().SetStr("x<&>")
		l.AppendEmpty().SetInt(3)
		l.AppendEmpty().SetDouble(1e21)
		l.AppendEmpty().SetEmptyMap().PutBool("b", true)
		l.AppendEmpty()
	}
	if g.maybe(0.03) {
		m.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 0xff})
	}
	if g.maybe(0.03) {
		kv := m.PutEmptyMap("map")
		kv.PutStr("z", "1")
		kv.PutStr("a", "2")
		kv.PutEmptySlice("empty")
	}
}

// when is a point's time: within the last hours of t0, or (rough) none
// or two days before.
func (g *gen) when() pcommon.Timestamp {
	if g.rough && g.maybe(0.03) {
		return 0
	}
	t := g.t0.Add(-time.Duration(g.rng.Int64N(int64(3 * time.Hour))))
	if g.rough && g.maybe(0.03) {
		t = t.Add(-48 * time.Hour)
	}
	return pcommon.NewTimestampFromTime(t)
}

// request returns a random request.
func (g *gen) request() pmetric.Metrics {
	md := pmetric.NewMetrics()
	for range 1 + g.rng.IntN(3) {
		rm := md.ResourceMetrics().AppendEmpty()
		ra := rm.Resource().Attributes()
		if g.maybe(0.8) {
			ra.PutStr("service.name", []string{"api", "db", ""}[g.rng.IntN(3)])
		}
		if g.maybe(0.4) {
			ra.PutStr("service.namespace", "shop")
		}
		if g.maybe(0.7) {
			ra.PutStr("service.instance.id", fmt.Sprintf("i-%d", g.rng.IntN(3)))
		}
		g.attrs(ra, 3)
		for range 1 + g.rng.IntN(2) {
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName([]string{"lib", "lib", ""}[g.rng.IntN(3)])
			sm.Scope().SetVersion([]string{"1.0", ""}[g.rng.IntN(2)])
			if g.maybe(0.3) {
				sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			}
			if g.maybe(0.1) {
				g.attrs(sm.Scope().Attributes(), 4)
			}
			for range 1 + g.rng.IntN(4) {
				g.metric(sm.Metrics().AppendEmpty())
			}
		}
	}
	return md
}

// metric fills m with a random metric.
func (g *gen) metric(m pmetric.Metric) {
	m.SetName(genNames[g.rng.IntN(len(genNames))])
	m.SetUnit(genUnits[g.rng.IntN(len(genUnits))])
	if g.maybe(0.5) {
		m.SetDescription("help text")
	}
	temporality := pmetric.AggregationTemporalityCumulative
	if g.rough && g.maybe(0.1) {
		temporality = pmetric.AggregationTemporalityDelta
	}
	points := 1 + g.rng.IntN(3)
	kinds := 4
	if g.rough {
		kinds = 5
	}
	switch g.rng.IntN(kinds) {
	case 0:
		dps := m.SetEmptyGauge().DataPoints()
		for range points {
			g.number(dps.AppendEmpty())
		}
	case 1:
		s := m.SetEmptySum()
		s.SetIsMonotonic(g.maybe(0.7))
		s.SetAggregationTemporality(temporality)
		for range points {
			g.number(s.DataPoints().AppendEmpty())
		}
	case 2:
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(temporality)
		for range points {
			g.histogram(h.DataPoints().AppendEmpty())
		}
	case 3:
		dps := m.SetEmptySummary().DataPoints()
		for range points {
			p := dps.AppendEmpty()
			p.SetTimestamp(g.when())
			p.SetCount(g.rng.Uint64N(100))
			if g.maybe(0.8) {
				p.SetSum(g.rng.Float64() * 100)
			}
			for _, q := range []float64{0, 0.5, 0.9, 0.99, 1}[:g.rng.IntN(6)] {
				qv := p.QuantileValues().AppendEmpty()
				qv.SetQuantile(q)
				qv.SetValue(g.rng.Float64())
			}
			if g.maybe(0.1) {
				p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			}
			g.attrs(p.Attributes(), 3)
		}
	default:
		e := m.SetEmptyExponentialHistogram()
		e.SetAggregationTemporality(temporality)
		p := e.DataPoints().AppendEmpty()
		p.SetTimestamp(g.when())
		p.SetScale(2)
		p.Positive().BucketCounts().FromRaw([]uint64{1, 2})
		p.SetCount(3)
	}
}

// number fills a number data point.
func (g *gen) number(p pmetric.NumberDataPoint) {
	p.SetTimestamp(g.when())
	p.SetStartTimestamp(p.Timestamp() - 1e9)
	if g.maybe(0.5) {
		p.SetIntValue(g.rng.Int64N(1000))
	} else {
		p.SetDoubleValue(g.rng.NormFloat64() * 100)
	}
	if g.maybe(0.1) {
		p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	}
	g.attrs(p.Attributes(), 4)
	g.exemplars(p.Exemplars(), p.Timestamp())
}

// exemplars appends 0-2 random exemplars (rough: some without a value).
func (g *gen) exemplars(es pmetric.ExemplarSlice, ts pcommon.Timestamp) {
	if !g.maybe(0.3) {
		return
	}
	for range 1 + g.rng.IntN(2) {
		e := es.AppendEmpty()
		switch {
		case g.rough && g.maybe(0.1):
		case g.maybe(0.5):
			e.SetIntValue(g.rng.Int64N(20))
		default:
			e.SetDoubleValue([]float64{0.001, 0.5, 3, 1e7}[g.rng.IntN(4)])
		}
		if g.maybe(0.8) {
			e.SetTimestamp(ts)
		}
		if g.maybe(0.7) {
			e.SetTraceID(pcommon.TraceID{0: byte(g.rng.IntN(256)), 15: 1})
		}
		if g.maybe(0.7) {
			e.SetSpanID(pcommon.SpanID{7: byte(g.rng.IntN(256))})
		}
		if g.maybe(0.5) {
			e.FilteredAttributes().PutStr("user", strings.Repeat("u", g.rng.IntN(120)))
		}
	}
}

// histogram fills a histogram data point.
func (g *gen) histogram(p pmetric.HistogramDataPoint) {
	p.SetTimestamp(g.when())
	bounds := []float64{0.005, 0.1, 1, 2.5, 5, 10, 25, 50, 100, 1e6}[:g.rng.IntN(11)]
	counts := make([]uint64, len(bounds)+1)
	var total uint64
	for i := range counts {
		if g.maybe(0.5) { // runs of zeros: the native layout's gaps
			counts[i] = g.rng.Uint64N(10)
		}
		total += counts[i]
	}
	if g.maybe(0.1) {
		counts = nil // count only
	}
	if g.rough && g.maybe(0.1) {
		total++
	}
	p.ExplicitBounds().FromRaw(bounds)
	p.BucketCounts().FromRaw(counts)
	p.SetCount(total)
	if g.maybe(0.7) {
		p.SetSum(float64(total) * 0.3)
	}
	if g.maybe(0.1) {
		p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	}
	g.attrs(p.Attributes(), 3)
	g.exemplars(p.Exemplars(), p.Timestamp())
}

// fastConfigs are the configurations the differential test runs under:
// every translation strategy and naming option the fast path takes, and
// one it leaves to the general path.
func fastConfigs() map[string]Config {
	cfgs := map[string]Config{}
	for _, s := range []otlptranslator.TranslationStrategyOption{otlptranslator.UnderscoreEscapingWithSuffixes,
		otlptranslator.UnderscoreEscapingWithoutSuffixes, otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation} {
		c := DefaultConfig()
		c.TranslationStrategy = s
		cfgs[string(s)] = c
	}
	c := DefaultConfig()
	c.KeepIdentifyingResourceAttributes, c.LabelNameUnderscoreSanitization, c.LabelNamePreserveMultipleUnderscores = true, true, true
	c.LookbackDelta = 2 * time.Minute
	cfgs["keep identifying, underscores"] = c
	c = DefaultConfig()
	c.MaxAttributes = 3
	cfgs["max attributes 3"] = c
	c = DefaultConfig()
	c.PromoteResourceAttributes = []string{"host.name", "service.name", "a.b", "a_b", "le", "job"}
	cfgs["promoted"] = c
	c = DefaultConfig()
	c.PromoteAllResourceAttributes, c.IgnoreResourceAttributes = true, []string{"region"}
	c.TranslationStrategy = otlptranslator.NoUTF8EscapingWithSuffixes
	cfgs["all promoted but one, UTF-8"] = c
	c = DefaultConfig()
	c.PromoteScopeMetadata = true
	cfgs["scope labels"] = c
	c = DefaultConfig()
	c.PromoteScopeMetadata, c.TranslationStrategy = true, otlptranslator.NoTranslation
	cfgs["scope labels, no translation"] = c
	c = DefaultConfig()
	c.ConvertHistogramsToNHCB = true
	cfgs["custom-bucket native histograms"] = c
	return cfgs
}

// checkSame translates body along ConvertBody and along Decode and
// Convert and fails unless both give the same result; it reports whether
// the fast path took it.
func checkSame(t *testing.T, fast, general *Converter, body []byte, cfg Config) bool {
	t.Helper()
	before := fast.fastTaken.Load()
	got, gerr := fast.ConvertBody(t.Context(), body, Protobuf, cfg, nil)
	taken := fast.fastTaken.Load() > before
	md, derr := Decode(body, Protobuf)
	if derr != nil {
		if taken || gerr == nil {
			t.Fatalf("the general path refuses the body (%v), ConvertBody gives %v (fast path %v)", derr, gerr, taken)
		}
		return false
	}
	want, werr := general.Convert(t.Context(), md, cfg, nil)
	if gerr != nil || werr != nil {
		t.Fatalf("ConvertBody: %v; Convert: %v", gerr, werr)
	}
	if !bytes.Equal(got.Body, want.Body) || got.Points != want.Points || got.Samples != want.Samples ||
		got.Rejected != want.Rejected || got.Reason != want.Reason || len(got.Warnings) != len(want.Warnings) {
		t.Fatalf("fast path %v: got %d points, %d samples, %d rejected (%q), %d warnings, body\n%x\nwant %d, %d, %d (%q), %v, body\n%x",
			taken, got.Points, got.Samples, got.Rejected, got.Reason, len(got.Warnings), got.Body,
			want.Points, want.Samples, want.Rejected, want.Reason, want.Warnings, want.Body)
	}
	return taken
}

// TestFastPathDifferential: on random requests, under every configuration
// of fastConfigs, ConvertBody's result (the body byte for byte, the
// counts, the refusals) is the general path's, Prometheus's converter;
// requests of the shapes the fast path takes all take it.
func TestFastPathDifferential(t *testing.T) {
	requests := 400
	if testing.Short() {
		requests = 100
	}
	for name, cfg := range fastConfigs() {
		t.Run(name, func(t *testing.T) {
			var fast, general Converter
			for _, rough := range []bool{false, true} {
				g := gen{rng: rand.New(rand.NewPCG(uint64(len(name)), 1)), rough: rough, t0: time.UnixMilli(1_700_000_000_123)}
				taken := 0
				for range requests {
					body, err := pmetricotlp.NewExportRequestFromMetrics(g.request()).MarshalProto()
					if err != nil {
						t.Fatal(err)
					}
					if checkSame(t, &fast, &general, body, cfg) {
						taken++
					}
				}
				t.Logf("rough %v: %d of %d requests along the fast path", rough, taken, requests)
				if !rough && fastConfig(cfg) && cfg.MaxAttributes == 0 && taken < requests*3/4 {
					t.Errorf("%d of %d plain requests along the fast path, want at least 3/4", taken, requests)
				}
			}
		})
	}
}

// TestFastPathTakes: requests the fast path must take, and ones it must
// leave to the general path, checked against it either way.
func TestFastPathTakes(t *testing.T) {
	plain := func() pmetric.Metrics {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "api")
		rm.Resource().Attributes().PutStr("host.name", "h1")
		m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("requests")
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		p := s.DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.NewTimestampFromTime(time.UnixMilli(1_700_000_000_000)))
		p.SetIntValue(7)
		p.Attributes().PutStr("code", "200")
		return md
	}
	point := func(md pmetric.Metrics) pmetric.NumberDataPoint {
		return md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
	}
	// exemplarOf adds an exemplar of value v with a trace ID and an
	// attribute attr.
	exemplarOf := func(v int64, attr string) func(pmetric.Metrics) {
		return func(md pmetric.Metrics) {
			e := point(md).Exemplars().AppendEmpty()
			e.SetIntValue(v)
			e.SetTraceID(pcommon.TraceID{1: 1})
			e.FilteredAttributes().PutStr(attr, "u1")
		}
	}
	for _, tc := range []struct {
		name   string
		change func(pmetric.Metrics)
		fast   bool
	}{
		{"plain counter", func(pmetric.Metrics) {}, true},
		{"colliding attribute names", func(md pmetric.Metrics) {
			point(md).Attributes().PutStr("co.de", "x")
			point(md).Attributes().PutStr("co_de", "y")
		}, false},
		{"an exemplar", exemplarOf(1, "user"), true},
		{"an exemplar without a value", func(md pmetric.Metrics) { point(md).Exemplars().AppendEmpty() }, false},
		{"an exemplar attribute named trace_id", exemplarOf(2, "trace_id"), false},
		{"delta", func(md pmetric.Metrics) {
			md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		}, false},
		{"a list attribute", func(md pmetric.Metrics) { point(md).Attributes().PutEmptySlice("l").AppendEmpty().SetStr("x") }, true},
		{"a scope attribute", func(md pmetric.Metrics) {
			md.ResourceMetrics().At(0).ScopeMetrics().At(0).Scope().Attributes().PutStr("s", "x")
		}, true},
		{"no timestamp", func(md pmetric.Metrics) { point(md).SetTimestamp(0) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := plain()
			tc.change(md)
			body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
			if err != nil {
				t.Fatal(err)
			}
			var fast, general Converter
			if got := checkSame(t, &fast, &general, body, DefaultConfig()); got != tc.fast {
				t.Errorf("fast path taken %v, want %v", got, tc.fast)
			}
		})
	}
}

// FuzzFastPath: any protobuf body, under any configuration of
// fastConfigs, gives ConvertBody the general path's result, starting from
// random requests' bytes.
func FuzzFastPath(f *testing.F) {
	g := gen{rng: rand.New(rand.NewPCG(9, 9)), t0: time.UnixMilli(1_700_000_000_000)}
	for range 8 {
		body, err := pmetricotlp.NewExportRequestFromMetrics(g.request()).MarshalProto()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(body)), body)
	}
	cfgs := fastConfigs()
	names := slices.Sorted(maps.Keys(cfgs))
	var fast, general Converter
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		checkSame(t, &fast, &general, slices.Clip(body), cfgs[names[int(which)%len(names)]])
	})
}

// BenchmarkConvertBody: a request of 2000 plain points (a third each
// gauges, counters and histograms of three bounds, 10 attributes each)
// along the fast path and along the general one (pdata and the
// converter), per point.
func BenchmarkConvertBody(b *testing.B) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "api")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	t := pcommon.NewTimestampFromTime(time.UnixMilli(1_700_000_000_000))
	for k := range 30 {
		m := ms.AppendEmpty()
		m.SetName(fmt.Sprintf("metric.%d", k))
		for i := range 2000 / 30 {
			var attrs pcommon.Map
			switch k % 3 {
			case 0:
				if i == 0 {
					m.SetEmptyGauge()
				}
				p := m.Gauge().DataPoints().AppendEmpty()
				p.SetTimestamp(t)
				p.SetDoubleValue(float64(i))
				attrs = p.Attributes()
			case 1:
				if i == 0 {
					m.SetEmptySum().SetIsMonotonic(true)
					m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				}
				p := m.Sum().DataPoints().AppendEmpty()
				p.SetTimestamp(t)
				p.SetIntValue(int64(i))
				attrs = p.Attributes()
			default:
				if i == 0 {
					m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				}
				p := m.Histogram().DataPoints().AppendEmpty()
				p.SetTimestamp(t)
				p.ExplicitBounds().FromRaw([]float64{0.1, 1, 10})
				p.BucketCounts().FromRaw([]uint64{1, 2, 3, 4})
				p.SetCount(10)
				p.SetSum(5)
				attrs = p.Attributes()
			}
			for a := range 10 {
				attrs.PutStr(fmt.Sprintf("label_%d", a), fmt.Sprintf("value-%d-%d", a, i))
			}
		}
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	points := md.DataPointCount()
	for _, fast := range []bool{true, false} {
		b.Run(fmt.Sprintf("fast=%v", fast), func(b *testing.B) {
			var c Converter
			cfg := DefaultConfig()
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				var res Result
				var err error
				if fast {
					res, err = c.ConvertBody(b.Context(), body, Protobuf, cfg, dst)
				} else {
					md, derr := Decode(body, Protobuf) // the general path: pdata and the converter
					if derr != nil {
						b.Fatal(derr)
					}
					res, err = c.Convert(b.Context(), md, cfg, dst)
				}
				if err != nil || res.Fast != fast {
					b.Fatalf("fast %v, err %v", res.Fast, err)
				}
				dst = res.Body
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
		})
	}
}
