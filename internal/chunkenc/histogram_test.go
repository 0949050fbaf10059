package chunkenc

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

type histSample struct {
	t int64
	h *histogram.Histogram
}

// histReference encodes ss with Prometheus's own appender, the first sample
// after a chunk whose header becomes header.
func histReference(t *testing.T, header byte, ss []histSample) []byte {
	t.Helper()
	c := chunkenc.NewHistogramChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range ss {
		ch, _, next, err := app.AppendHistogram(nil, 0, s.t, s.h.Copy(), true)
		if err != nil || ch != nil {
			t.Fatalf("histSample %d: chunkenc cut or failed (%v): not appendable", i, err)
		}
		app = next
	}
	b := c.Bytes()
	b[2] = b[2]&^chunkenc.CounterResetHeaderMask | header
	return b
}

// check builds ss, which must each be Appendable after the one before,
// and compares the chunk with Prometheus's.
func checkHist(t *testing.T, header byte, ss []histSample) {
	t.Helper()
	var b HistogramBuilder
	if !HistogramStartable(ss[0].h) {
		t.Fatalf("first histSample not startable: %v", ss[0].h)
	}
	b.Start(nil, header, ss[0].t, ss[0].h)
	for i, s := range ss[1:] {
		if !b.Appendable(s.h) {
			t.Fatalf("histSample %d not appendable: count %d, buckets %v", i+1, s.h.Count, s.h.PositiveBuckets)
		}
		b.Append(s.t, s.h)
	}
	if b.NumSamples() != len(ss) || b.Len() != len(b.Bytes()) {
		t.Fatalf("NumSamples %d, Len %d of %d bytes", b.NumSamples(), b.Len(), len(b.Bytes()))
	}
	if got, want := b.Bytes(), histReference(t, header, ss); !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		lo := max(i-8, 0)
		t.Fatalf("%d samples: chunk of %d bytes differs at byte %d from chunkenc's of %d: %x, want %x", len(ss), len(got), i, len(want), got[lo:min(i+8, len(got))], want[lo:min(i+8, len(want))])
	}
}

// growing returns n histograms of the layout, 1 s apart with jitter,
// whose counts grow by steps drawn from steps (each step's dod then
// spans every varbit width).
func growing(rng *rand.Rand, n int, base histogram.Histogram, steps []int64) []histSample {
	pos := make([]int64, spanned(base.PositiveSpans))
	neg := make([]int64, spanned(base.NegativeSpans))
	var zero uint64
	t := int64(1_700_000_000_000)
	var out []histSample
	deltas := func(abs []int64) []int64 {
		d := make([]int64, len(abs))
		prev := int64(0)
		for i, v := range abs {
			d[i], prev = v-prev, v
		}
		return d
	}
	for range n {
		h := base.Copy()
		h.Count = 0
		for _, bs := range [][]int64{pos, neg} {
			for i := range bs {
				bs[i] += steps[rng.IntN(len(steps))]
				h.Count += uint64(bs[i])
			}
		}
		if !histogram.IsCustomBucketsSchema(base.Schema) { // which has no zero bucket
			zero += uint64(steps[rng.IntN(len(steps))])
		}
		h.ZeroCount = zero
		h.Count += zero
		h.Sum = float64(h.Count) * (0.1 + rng.Float64())
		if rng.IntN(5) == 0 {
			h.Sum = -h.Sum
		}
		h.PositiveBuckets, h.NegativeBuckets = deltas(pos), deltas(neg)
		out = append(out, histSample{t: t, h: h})
		t += 1000 + int64(rng.IntN(3))*rng.Int64N(1<<uint(rng.IntN(40)))
	}
	return out
}

// TestBuilderAsPrometheus: chunks of histograms that keep their layout
// are Prometheus's, byte for byte, for every schema kind, zero threshold
// encoding, custom bound encoding and varbit width.
func TestBuilderAsPrometheus(t *testing.T) {
	pos := []histogram.Span{{Offset: -3, Length: 2}, {Offset: 0, Length: 1}, {Offset: 5, Length: 4}}
	neg := []histogram.Span{{Offset: 2, Length: 3}}
	cases := []struct {
		name string
		base histogram.Histogram
	}{
		{"exponential", histogram.Histogram{Schema: 3, ZeroThreshold: math.Ldexp(0.5, -127), PositiveSpans: pos, NegativeSpans: neg}},
		{"no buckets", histogram.Histogram{Schema: 0}},
		{"zero threshold 0, schema -4", histogram.Histogram{Schema: -4, PositiveSpans: pos}},
		{"zero threshold 0.001", histogram.Histogram{Schema: 8, ZeroThreshold: 0.001, NegativeSpans: neg}},
		{"zero threshold 2^10", histogram.Histogram{Schema: 1, ZeroThreshold: 1024, PositiveSpans: pos}},
		{"zero threshold 2^-243", histogram.Histogram{Schema: 1, ZeroThreshold: math.Ldexp(0.5, -242), PositiveSpans: pos}},
		{"zero threshold 2^-244", histogram.Histogram{Schema: 1, ZeroThreshold: math.Ldexp(0.5, -243), PositiveSpans: pos}},
		{"custom bounds", histogram.Histogram{Schema: histogram.CustomBucketsSchema,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 7}},
			CustomValues:  []float64{0.001, 0.25, 1, 33554.43, 33554.431, -2, 0.1 + 0.2}}},
		{"zero-length span", histogram.Histogram{Schema: 2, PositiveSpans: []histogram.Span{{Offset: 1, Length: 0}, {Offset: 2, Length: 3}}}},
	}
	stepSets := [][]int64{
		{0},
		{0, 1, 2},
		{3, 4, 5, 31, 32, 33},
		{255, 256, 257, 2047, 2048, 2049},
		{131071, 131072, 131073, 16777215, 16777216, 16777217},
		{0, 1 << 40, 1 << 56}, // few samples: no count overflows
	}
	for _, c := range cases {
		for i, steps := range stepSets {
			for _, header := range []byte{UnknownCounterReset, CounterReset, NotCounterReset} {
				t.Run(fmt.Sprintf("%s/steps%d/%08b", c.name, i, header), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(i), uint64(header)))
					n := 150
					if i == len(stepSets)-1 {
						n = 8
					}
					checkHist(t, header, growing(rng, n, c.base, steps))
				})
			}
		}
	}
}

// TestHistogramAppendable: the samples Appendable refuses, each of which
// Prometheus's appender would put in a new chunk, recode the chunk for,
// or treat as a gauge or a staleness marker.
func TestHistogramAppendable(t *testing.T) {
	base := histogram.Histogram{Schema: 3, Count: 10, ZeroCount: 2, Sum: 5, ZeroThreshold: 0.001,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{3, 2},
		NegativeSpans: []histogram.Span{{Offset: 1, Length: 1}}, NegativeBuckets: []int64{0}}
	var b HistogramBuilder
	b.Start(nil, UnknownCounterReset, 1000, &base)
	same := base.Copy()
	if !b.Appendable(same) {
		t.Fatal("the same histogram again is not appendable")
	}
	cases := []struct {
		name   string
		change func(h *histogram.Histogram)
	}{
		{"counter reset hint", func(h *histogram.Histogram) { h.CounterResetHint = histogram.CounterReset }},
		{"gauge", func(h *histogram.Histogram) { h.CounterResetHint = histogram.GaugeType }},
		{"staleness marker", func(h *histogram.Histogram) { h.Sum = math.Float64frombits(0x7ff0000000000002) }},
		{"count down", func(h *histogram.Histogram) { h.Count-- }},
		{"zero count down", func(h *histogram.Histogram) { h.ZeroCount-- }},
		{"bucket down", func(h *histogram.Histogram) { h.PositiveBuckets = []int64{3, 1} }},
		{"first bucket down, second up", func(h *histogram.Histogram) { h.PositiveBuckets = []int64{2, 4} }},
		{"negative bucket down", func(h *histogram.Histogram) { h.NegativeBuckets = []int64{-1} }},
		{"schema", func(h *histogram.Histogram) { h.Schema = 2 }},
		{"zero threshold", func(h *histogram.Histogram) { h.ZeroThreshold = 0.002 }},
		{"new bucket", func(h *histogram.Histogram) {
			h.PositiveSpans = []histogram.Span{{Offset: 0, Length: 3}}
			h.PositiveBuckets = []int64{3, 2, 0}
		}},
		{"bucket gone", func(h *histogram.Histogram) { h.NegativeSpans, h.NegativeBuckets = nil, nil }},
		{"spans moved", func(h *histogram.Histogram) { h.PositiveSpans = []histogram.Span{{Offset: 1, Length: 2}} }},
		{"buckets not as spans say", func(h *histogram.Histogram) { h.PositiveBuckets = []int64{3, 2, 1} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := base.Copy()
			c.change(h)
			if b.Appendable(h) {
				t.Errorf("appendable: %v", h)
			}
		})
	}
	custom := histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 1,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}, CustomValues: []float64{1}}
	b.Start(nil, UnknownCounterReset, 1000, &custom)
	other := custom.Copy()
	other.CustomValues = []float64{2}
	if b.Appendable(other) {
		t.Error("other custom bounds appendable")
	}
	if !b.Appendable(custom.Copy()) {
		t.Error("the same custom bounds not appendable")
	}
}

// BenchmarkHistogramAppend: appending 120 histograms of 20 buckets that keep their
// layout, with the HistogramBuilder and with Prometheus's appender.
func BenchmarkHistogramAppend(b *testing.B) {
	base := histogram.Histogram{Schema: 3, ZeroThreshold: math.Ldexp(0.5, -127),
		PositiveSpans: []histogram.Span{{Offset: 5, Length: 12}, {Offset: 4, Length: 8}}}
	ss := growing(rand.New(rand.NewPCG(1, 2)), 120, base, []int64{0, 1, 2, 3})
	b.Run("promhbase", func(b *testing.B) {
		b.ReportAllocs()
		var bl HistogramBuilder
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			bl.Start(buf, UnknownCounterReset, ss[0].t, ss[0].h)
			for _, s := range ss[1:] {
				if !bl.Appendable(s.h) {
					b.Fatal("not appendable")
				}
				bl.Append(s.t, s.h)
			}
			buf = bl.Bytes()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/histogram")
	})
	b.Run("chunkenc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := chunkenc.NewHistogramChunk()
			app, _ := c.Appender()
			for _, s := range ss {
				if _, _, next, err := app.AppendHistogram(nil, 0, s.t, s.h, true); err != nil {
					b.Fatal(err)
				} else {
					app = next
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/histogram")
	})
}

// TestHistogramCutHeader: the samples after which Prometheus's appender starts a
// new chunk, and the header it gives it, as CutHeader tells them; and
// those it leaves to the appender.
func TestHistogramCutHeader(t *testing.T) {
	base := histogram.Histogram{Schema: 3, Count: 10, ZeroCount: 2, Sum: 5, ZeroThreshold: 0.001,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{3, 2},
		NegativeSpans: []histogram.Span{{Offset: 1, Length: 1}}, NegativeBuckets: []int64{3}}
	cases := []struct {
		name   string
		change func(h *histogram.Histogram)
		header byte
		cut    bool
	}{
		{"the same", func(*histogram.Histogram) {}, 0, false},
		{"counter reset hint", func(h *histogram.Histogram) { h.CounterResetHint = histogram.CounterReset }, CounterReset, true},
		{"count down", func(h *histogram.Histogram) { h.Count = 9 }, CounterReset, true},
		{"count down, new layout", func(h *histogram.Histogram) {
			h.Count, h.PositiveSpans, h.PositiveBuckets = 1, []histogram.Span{{Offset: 7, Length: 1}}, []int64{1}
		}, CounterReset, true},
		{"schema", func(h *histogram.Histogram) { h.Schema = 2 }, UnknownCounterReset, true},
		{"zero threshold", func(h *histogram.Histogram) { h.ZeroThreshold = 0.01 }, UnknownCounterReset, true},
		{"zero count down", func(h *histogram.Histogram) { h.ZeroCount = 1 }, CounterReset, true},
		{"bucket down", func(h *histogram.Histogram) { h.PositiveBuckets = []int64{2, 4} }, CounterReset, true},
		{"negative bucket down", func(h *histogram.Histogram) { h.NegativeBuckets = []int64{2} }, CounterReset, true},
		{"new bucket", func(h *histogram.Histogram) {
			h.PositiveSpans, h.PositiveBuckets = []histogram.Span{{Offset: 0, Length: 3}}, []int64{3, 2, -5}
		}, 0, false},
		{"gauge", func(h *histogram.Histogram) { h.CounterResetHint, h.Count = histogram.GaugeType, 1 }, 0, false},
		{"staleness marker", func(h *histogram.Histogram) { h.Sum, h.Count = math.Float64frombits(0x7ff0000000000002), 0 }, 0, false},
	}
	var b HistogramBuilder
	b.Start(nil, UnknownCounterReset, 1000, &base)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := base.Copy()
			c.change(h)
			if header, cut := b.CutHeader(h); header != c.header || cut != c.cut {
				t.Errorf("CutHeader = %08b, %v; want %08b, %v", header, cut, c.header, c.cut)
			}
			// Where CutHeader cuts, Prometheus's appender does, with that header.
			if c.cut {
				ch := chunkenc.NewHistogramChunk()
				app, _ := ch.Appender()
				if _, _, app, _ = app.AppendHistogram(nil, 0, 1000, base.Copy(), false); app == nil {
					t.Fatal("no appender")
				}
				next, _, _, err := app.AppendHistogram(nil, 0, 2000, h, false)
				if err != nil || next == nil {
					t.Fatalf("Prometheus's appender did not cut: %v", err)
				}
				if got := byte(next.(*chunkenc.HistogramChunk).GetCounterResetHeader()); got != c.header {
					t.Errorf("Prometheus's appender's header %08b, want %08b", got, c.header)
				}
			}
		})
	}
	custom := histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 1,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}, CustomValues: []float64{1}}
	b.Start(nil, UnknownCounterReset, 1000, &custom)
	other := custom.Copy()
	other.CustomValues = []float64{2}
	if header, cut := b.CutHeader(other); header != CounterReset || !cut {
		t.Errorf("other custom bounds: CutHeader = %08b, %v; want a counter reset", header, cut)
	}
}
