package adapter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query"
)

// floatChunks cuts samples into XOR chunks of at most per samples each.
func floatChunks(t *testing.T, samples []prompb.Sample, per int) []query.Chunk {
	t.Helper()
	var out []query.Chunk
	for len(samples) > 0 {
		n := min(per, len(samples))
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples[:n] {
			app.Append(0, s.Timestamp, s.Value)
		}
		out = append(out, query.Chunk{MinT: samples[0].Timestamp, MaxT: samples[n-1].Timestamp, Enc: chunkenc.EncXOR, Data: c.Bytes()})
		samples = samples[n:]
	}
	return out
}

// marshalled is the reference for appendSeries: cs as the generated code
// marshals a prompb.TimeSeries built of it with prompb's own conversions,
// behind the QueryResult field's tag and length. In a series with
// histograms a float staleness marker becomes a histogram one, of the
// kind of the histogram before it.
func marshalled(t *testing.T, cs *query.ChunkSeries) []byte {
	t.Helper()
	var ts prompb.TimeSeries
	cs.Labels.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
	hasHist, lastFloatHist := false, false
	for _, c := range cs.Chunks {
		hasHist = hasHist || c.Enc != chunkenc.EncXOR
	}
	for _, f := range cs.Floats {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: f.T, Value: f.V})
	}
	var it chunkenc.Iterator
	for _, c := range cs.Chunks {
		var err error
		if it, err = c.Iterator(it); err != nil {
			t.Fatal(err)
		}
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts0, v := it.At()
				switch {
				case !hasHist || !value.IsStaleNaN(v):
					ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: ts0, Value: v})
				case lastFloatHist:
					ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(ts0, &histogram.FloatHistogram{Sum: v}))
				default:
					ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(ts0, &histogram.Histogram{Sum: v}))
				}
			case chunkenc.ValHistogram:
				ts0, h := it.AtHistogram(nil)
				ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(ts0, h))
				lastFloatHist = false
			case chunkenc.ValFloatHistogram:
				ts0, h := it.AtFloatHistogram(nil)
				ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(ts0, h))
				lastFloatHist = true
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	body, err := ts.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.AppendUvarint([]byte{0x0a}, uint64(len(body))), body...)
}

// checkAppendSeries compares appendSeries's bytes with marshalled's.
func checkAppendSeries(t *testing.T, cs *query.ChunkSeries) {
	t.Helper()
	ab := &answerBuf{b: query.NewBudget(1<<40, 1<<40)}
	defer ab.release()
	ab.data = append(ab.data, "before"...)
	if _, err := ab.appendSeries(cs, nil); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("before"), marshalled(t, cs)...)
	if !bytes.Equal(ab.data, want) {
		i := 0
		for i < min(len(ab.data), len(want)) && ab.data[i] == want[i] {
			i++
		}
		t.Fatalf("appendSeries: %d bytes, differing from the %d marshalled at byte %d:\n got %x\nwant %x", len(ab.data), len(want), i, ab.data[max(i-16, 0):min(i+16, len(ab.data))], want[max(i-16, 0):min(i+16, len(want))])
	}
}

// TestAppendSeriesFloats: a series of floats, zero values, negative
// timestamps, NaNs, empty label values and lengths of every varint size
// included.
func TestAppendSeriesFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	long := string(bytes.Repeat([]byte{'x'}, 300))
	cases := []struct {
		name    string
		lbls    labels.Labels
		samples []prompb.Sample
	}{
		{"zero values and timestamps", labels.FromStrings("__name__", "m", "a", ""),
			[]prompb.Sample{{Timestamp: 0, Value: 0}, {Timestamp: 1, Value: math.Copysign(0, -1)}, {Timestamp: 2, Value: 1.5}}},
		{"negative timestamps", labels.FromStrings("__name__", "m"),
			[]prompb.Sample{{Timestamp: -5_000, Value: -1}, {Timestamp: -1, Value: math.Inf(1)}, {Timestamp: 0, Value: math.NaN()}, {Timestamp: 7, Value: math.Float64frombits(value.StaleNaN)}}},
		{"no samples", labels.FromStrings("__name__", "m", "job", "j"), nil},
		{"long label", labels.FromStrings("__name__", "m", "long", long), []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 3}}},
	}
	var many []prompb.Sample
	ts := int64(1_700_000_000_000)
	for i := range 1000 {
		ts += int64(rng.IntN(30_000))
		v := float64(rng.IntN(5)) // zeros among them
		if i%7 == 0 {
			v = rng.NormFloat64() * 1e9
		}
		many = append(many, prompb.Sample{Timestamp: ts, Value: v})
	}
	cases = append(cases, struct {
		name    string
		lbls    labels.Labels
		samples []prompb.Sample
	}{"many chunks", labels.FromStrings("__name__", "m", "instance", "host:9100", "job", "node"), many})
	for _, tc := range cases {
		t.Run(tc.name+"/chunks", func(t *testing.T) {
			checkAppendSeries(t, &query.ChunkSeries{Labels: tc.lbls, Chunks: floatChunks(t, tc.samples, 120), Samples: len(tc.samples)})
		})
		// As query.StreamFloats hands them on.
		t.Run(tc.name+"/floats", func(t *testing.T) {
			var fs []query.Sample
			for _, s := range tc.samples {
				fs = append(fs, query.Sample{T: s.Timestamp, V: s.Value})
			}
			checkAppendSeries(t, &query.ChunkSeries{Labels: tc.lbls, Floats: fs, Samples: len(fs)})
		})
	}
}

// TestAppendSeriesHistograms: series of native histograms, integer and
// float, with floats and float staleness markers among them, fields at
// their zero values and at their longest.
func TestAppendSeriesHistograms(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	full := &histogram.Histogram{Schema: -4, Count: math.MaxUint64, ZeroCount: math.MaxUint64 - 1, Sum: -3.5, ZeroThreshold: 1e-300,
		CounterResetHint: histogram.GaugeType,
		PositiveSpans:    []histogram.Span{{Offset: math.MinInt32, Length: 2}, {Offset: 0, Length: 0}, {Offset: 7, Length: 1}},
		PositiveBuckets:  []int64{math.MinInt64, math.MaxInt64, -1},
		NegativeSpans:    []histogram.Span{{Offset: math.MaxInt32, Length: 1}}, NegativeBuckets: []int64{64}}
	custom := &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 4, Sum: 2,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 2}, CustomValues: []float64{0.5, 1, math.Inf(1)}}
	cases := []struct {
		name string
		fs   []query.Sample
		hs   []query.HistogramSample
	}{
		{"zero fields", nil, []query.HistogramSample{{T: 0, H: &histogram.Histogram{}}, {T: 1, H: &histogram.Histogram{Sum: math.Copysign(0, -1)}}}},
		{"longest fields", nil, []query.HistogramSample{{T: -1, H: full}}},
		{"float histogram", nil, []query.HistogramSample{{T: -1, FH: full.ToFloat(nil)}, {T: 5, FH: &histogram.FloatHistogram{Count: 1, Sum: 1}}}},
		{"custom bounds", nil, []query.HistogramSample{{T: 10, H: custom}, {T: 20, FH: custom.ToFloat(nil)}}},
		{"staleness markers", []query.Sample{{T: 3, V: stale}, {T: 5, V: 1}, {T: 7, V: stale}, {T: 30, V: stale}},
			[]query.HistogramSample{{T: 1, H: custom}, {T: 4, FH: custom.ToFloat(nil)}, {T: 6, H: &histogram.Histogram{Sum: stale}}, {T: 20, FH: &histogram.FloatHistogram{Sum: stale}}}},
		{"stale marker first", []query.Sample{{T: 1, V: stale}}, []query.HistogramSample{{T: 2, H: custom}}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 40 {
		var hs []query.HistogramSample
		var fs []query.Sample
		ts := int64(1_700_000_000_000)
		for j := range 300 {
			ts += 1 + rng.Int64N(20_000)
			spans := []histogram.Span{{Offset: int32(rng.IntN(9)) - 4, Length: uint32(rng.IntN(4))}, {Offset: int32(rng.IntN(3)), Length: uint32(1 + rng.IntN(20))}}
			h := &histogram.Histogram{Schema: int32(rng.IntN(9)) - 4, Count: uint64(j * 7), ZeroCount: uint64(j), Sum: float64(j) * 1.25,
				CounterResetHint: histogram.CounterResetHint(rng.IntN(4)), PositiveSpans: spans, NegativeSpans: spans[1:]}
			for range spans[0].Length + 2*spans[1].Length {
				h.PositiveBuckets = append(h.PositiveBuckets, rng.Int64N(1<<uint(rng.IntN(40)))-3)
			}
			h.NegativeBuckets, h.PositiveBuckets = h.PositiveBuckets[spans[0].Length+spans[1].Length:], h.PositiveBuckets[:spans[0].Length+spans[1].Length]
			switch r := rng.IntN(20); {
			case r < 2:
				fs = append(fs, query.Sample{T: ts, V: stale})
			case r < 3:
				fs = append(fs, query.Sample{T: ts, V: float64(j)})
			case r < 8:
				hs = append(hs, query.HistogramSample{T: ts, FH: h.ToFloat(nil)})
			default:
				hs = append(hs, query.HistogramSample{T: ts, H: h})
			}
		}
		cases = append(cases, struct {
			name string
			fs   []query.Sample
			hs   []query.HistogramSample
		}{fmt.Sprintf("random %d", i), fs, hs})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chunks, err := query.EncodeChunks(tc.fs, tc.hs)
			if err != nil {
				t.Fatal(err)
			}
			cs := &query.ChunkSeries{Labels: labels.FromStrings("__name__", "h", "le", ""), Chunks: chunks, Samples: len(tc.fs) + len(tc.hs)}
			checkAppendSeries(t, cs)
		})
	}
	t.Run("bound", func(t *testing.T) {
		for _, h := range []*histogram.Histogram{full, custom} {
			spans, buckets := len(h.PositiveSpans)+len(h.NegativeSpans), len(h.PositiveBuckets)+len(h.NegativeBuckets)
			if n, bound := len(wire.AppendHistogram(nil, math.MinInt64, h)), wire.MaxHistogramBytes(spans, buckets, len(h.CustomValues)); n > bound {
				t.Errorf("integer histogram of %d bytes, more than the bound %d", n, bound)
			}
			if n, bound := len(wire.AppendFloatHistogram(nil, math.MinInt64, h.ToFloat(nil))), wire.MaxHistogramBytes(spans, buckets, len(h.CustomValues)); n > bound {
				t.Errorf("float histogram of %d bytes, more than the bound %d", n, bound)
			}
		}
	})
}
