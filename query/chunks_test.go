package query

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// referenceChunks cuts samples into chunks with Prometheus's appenders
// only, as chunkCutter did before it had its own histogram encoder: the
// oracle of TestHistogramChunksAsPrometheus.
func referenceChunks(t *testing.T, fs []Sample, hs []HistogramSample) []Chunk {
	t.Helper()
	var (
		out        []Chunk
		cur        chunkenc.Chunk
		app        chunkenc.Appender
		minT, maxT int64
		last       int64
		n          int
	)
	finish := func() {
		if cur != nil {
			out = append(out, Chunk{MinT: minT, MaxT: maxT, Enc: cur.Encoding(), Data: cur.Bytes()})
		}
		cur, app = nil, nil
	}
	start := func(ch chunkenc.Chunk, ts int64) {
		finish()
		a, err := ch.Appender()
		if err != nil {
			t.Fatal(err)
		}
		cur, app, minT = ch, a, ts
	}
	float := func(ts int64, v float64) {
		if cur == nil || cur.Encoding() != chunkenc.EncXOR || cur.NumSamples() >= MaxSamplesPerChunk {
			start(chunkenc.NewXORChunk(), ts)
		}
		app.Append(0, ts, v)
	}
	hist := func(s HistogramSample) {
		enc := chunkenc.EncHistogram
		if s.FH != nil {
			enc = chunkenc.EncFloatHistogram
		}
		var prev chunkenc.Appender
		if cur != nil && cur.Encoding() == enc {
			if !histogramChunkFull(cur.NumSamples(), len(cur.Bytes())) {
				prev = nil
				goto appendIt
			}
			prev = app
		}
		if s.FH != nil {
			start(chunkenc.NewFloatHistogramChunk(), s.T)
		} else {
			start(chunkenc.NewHistogramChunk(), s.T)
		}
	appendIt:
		var (
			ch      chunkenc.Chunk
			recoded bool
			next    chunkenc.Appender
			err     error
		)
		if s.FH != nil {
			ch, recoded, next, err = app.AppendFloatHistogram(prev, 0, s.T, s.FH.Copy(), false)
		} else {
			ch, recoded, next, err = app.AppendHistogram(prev, 0, s.T, s.H.Copy(), false)
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch != nil {
			if !recoded {
				finish()
				minT = s.T
			}
			cur = ch
		}
		app = next
	}
	for len(fs) > 0 || len(hs) > 0 {
		var ts int64
		switch {
		case len(hs) == 0 || (len(fs) > 0 && fs[0].T < hs[0].T):
			ts = fs[0].T
			if n == 0 || ts > last {
				float(ts, fs[0].V)
			}
			fs = fs[1:]
		case len(fs) > 0 && fs[0].T == hs[0].T:
			ts = fs[0].T
			if n == 0 || ts > last {
				if value.IsStaleNaN(fs[0].V) {
					hist(hs[0])
				} else {
					float(ts, fs[0].V)
				}
			}
			fs, hs = fs[1:], hs[1:]
		default:
			ts = hs[0].T
			if n == 0 || ts > last {
				hist(hs[0])
			}
			hs = hs[1:]
		}
		if n == 0 || ts > last {
			maxT, last = ts, ts
			n++
		}
	}
	finish()
	return out
}

// wildHistograms returns n samples of one series (floats and native
// histograms) that exercise every way a histogram chunk can go on or
// end: new and vanished buckets, negative buckets, counter resets with and
// without the hint, explicit hints, gauges, float histograms, schema and
// zero threshold changes, custom buckets with bounds of both encodings,
// staleness markers, NaN and large sums, counts that need every varbit
// width, many buckets (chunks cut by size), floats between and at the
// same time, and timestamps out of order.
func wildHistograms(rng *rand.Rand, n int) ([]Sample, []HistogramSample) {
	type bucket struct {
		idx int32
		n   int64
	}
	var (
		fs             []Sample
		hs             []HistogramSample
		pos, neg       []bucket
		zero           int64
		schema         = int32(3)
		zt             = math.Ldexp(0.5, -127)
		gauge, isFloat bool
		custom         []float64
		ts             = t0
		growth         = int64(3)
	)
	spread := func(width int, lo int32) []bucket {
		var bs []bucket
		idx := lo
		for range width {
			idx += 1 + int32(rng.IntN(2))*int32(rng.IntN(3))
			bs = append(bs, bucket{idx: idx})
		}
		return bs
	}
	pos = spread(8, -3)
	for i := range n {
		switch r := rng.IntN(200); {
		case r < 6: // a new bucket
			pos = append(pos, bucket{idx: pos[len(pos)-1].idx + 1 + int32(rng.IntN(3))})
		case r < 9: // a bucket inside
			if len(pos) > 1 && pos[1].idx-pos[0].idx > 1 {
				pos = append(pos[:1], append([]bucket{{idx: pos[0].idx + 1}}, pos[1:]...)...)
			}
		case r < 12: // a bucket vanishes
			if len(pos) > 1 {
				pos = pos[1:]
			}
		case r < 15: // counter reset
			for j := range pos {
				pos[j].n = 0
			}
			for j := range neg {
				neg[j].n = 0
			}
			zero = 0
		case r < 17:
			gauge = !gauge
		case r < 19:
			isFloat = !isFloat
		case r < 21:
			schema = int32(rng.IntN(9)) - 4
			custom = nil
		case r < 23:
			zt = []float64{0, math.Ldexp(0.5, -127), 0.001, 1024, math.Ldexp(0.5, -300)}[rng.IntN(5)]
		case r < 25: // custom buckets
			schema = histogram.CustomBucketsSchema
			custom = nil
			b := []float64{0.005, 0.25, 1, 2.5, 10, 33554.43, 40000, -3, 0.1 + 0.2}[rng.IntN(9)]
			for j := range len(pos) + 2 {
				custom = append(custom, b+float64(j))
			}
		case r < 28:
			neg = spread(1+rng.IntN(4), -2)
		case r < 30:
			neg = nil
		case r < 33: // many buckets
			pos = spread(30+rng.IntN(40), 0)
		case r < 36:
			growth = []int64{0, 1, 3, 40, 300, 5000, 200_000, 30_000_000, 1 << 40}[rng.IntN(9)]
		case r < 40: // observations move from the zero bucket: the count stays
			if k := int64(1 + rng.IntN(3)); zero >= k {
				zero -= k
				pos[0].n += k
			}
		case r < 44: // observations move between buckets: the count stays
			if j := rng.IntN(len(pos)); j+1 < len(pos) && pos[j].n > 0 {
				pos[j].n--
				pos[j+1].n++
			}
		}
		if schema == histogram.CustomBucketsSchema {
			neg = nil
			for len(custom) < len(pos)+1 {
				custom = append(custom, float64(len(custom))+0.5)
			}
			for j := range pos {
				pos[j].idx = int32(j)
			}
		}
		switch d := rng.IntN(20); {
		case d < 14:
			ts += 10_000
		case d < 17:
			ts += int64(rng.IntN(100_000))
		case d < 19:
			ts += int64(rng.IntN(10_000_000))
		default:
			ts -= int64(rng.IntN(20_000)) // out of order
		}
		h := &histogram.Histogram{Schema: schema, ZeroThreshold: zt, CustomValues: custom}
		if schema == histogram.CustomBucketsSchema {
			h.ZeroThreshold = 0
		}
		grow := func(bs []bucket) ([]histogram.Span, []int64) {
			var spans []histogram.Span
			var buckets []int64
			var prevN int64
			next := int32(math.MinInt32)
			for j := range bs {
				if growth > 0 {
					bs[j].n += rng.Int64N(growth + 1)
				}
				if gauge && rng.IntN(3) == 0 {
					bs[j].n /= 2
				}
				h.Count += uint64(bs[j].n)
				if len(spans) > 0 && bs[j].idx == next {
					spans[len(spans)-1].Length++
				} else {
					off := bs[j].idx
					if len(spans) > 0 {
						off -= next
					}
					spans = append(spans, histogram.Span{Offset: off, Length: 1})
				}
				next = bs[j].idx + 1
				buckets = append(buckets, bs[j].n-prevN)
				prevN = bs[j].n
			}
			return spans, buckets
		}
		if schema != histogram.CustomBucketsSchema {
			zero += rng.Int64N(growth + 1)
			h.ZeroCount = uint64(zero)
			h.Count = h.ZeroCount
		}
		h.PositiveSpans, h.PositiveBuckets = grow(pos)
		h.NegativeSpans, h.NegativeBuckets = grow(neg)
		h.Sum = float64(h.Count) * 0.37
		switch r := rng.IntN(100); {
		case r < 3:
			h.Sum = math.Float64frombits(value.StaleNaN)
		case r < 5:
			h.Sum = math.NaN()
		case r < 7:
			h.Sum = math.Inf(1)
		case r < 12:
			h.CounterResetHint = histogram.CounterReset
		case r < 17:
			h.CounterResetHint = histogram.NotCounterReset
		}
		if gauge {
			h.CounterResetHint = histogram.GaugeType
		}
		s := HistogramSample{T: ts, H: h}
		if isFloat {
			s = HistogramSample{T: ts, FH: h.ToFloat(nil)}
		}
		switch r := rng.IntN(100); {
		case r < 3: // a float instead
			fs = append(fs, Sample{T: ts, V: float64(i)})
			continue
		case r < 5: // a stale float at the same time: the histogram goes on
			fs = append(fs, Sample{T: ts, V: math.Float64frombits(value.StaleNaN)})
		}
		hs = append(hs, s)
	}
	sortSamples(fs, hs)
	return fs, hs
}

// sortSamples sorts both by time (stably: of equal times the first stays).
func sortSamples(fs []Sample, hs []HistogramSample) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].T < fs[j-1].T; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && hs[j].T < hs[j-1].T; j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
}

// TestHistogramChunksAsPrometheus: the chunks EncodeChunks cuts, with its
// own encoder for integer histograms that keep their layout, are those
// Prometheus's appenders alone make of the same samples, byte for byte.
func TestHistogramChunksAsPrometheus(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 12))
			var fs []Sample
			var hs []HistogramSample
			if seed%4 == 0 {
				hs = randomHistograms(rng, 600)
			} else {
				fs, hs = wildHistograms(rng, 600)
			}
			want := referenceChunks(t, fs, hs)
			got, err := EncodeChunks(fs, hs)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d chunks, want %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Enc != w.Enc || g.MinT != w.MinT || g.MaxT != w.MaxT || !bytes.Equal(g.Data, w.Data) {
					t.Fatalf("chunk %d of %d: %v [%d, %d]\n%x\nwant %v [%d, %d]\n%x", i, len(want), g.Enc, g.MinT, g.MaxT, g.Data, w.Enc, w.MinT, w.MaxT, w.Data)
				}
			}
		})
	}
}

// BenchmarkEncodeChunks: cutting an hour of one native histogram series
// (20 buckets, one every second) into chunks, the histograms keeping
// their layout, or with a counter reset every 300 (pods restarting, the
// layout kept) and a new bucket every 1 000.
func BenchmarkEncodeChunks(b *testing.B) {
	for _, resets := range []bool{false, true} {
		b.Run(fmt.Sprintf("resets=%v", resets), func(b *testing.B) {
			var hs []HistogramSample
			spans := []histogram.Span{{Offset: 5, Length: 12}, {Offset: 4, Length: 8}}
			counts := make([]int64, 20)
			for i := range 3600 {
				if resets && i%300 == 0 {
					clear(counts)
				}
				if resets && i%1000 == 999 {
					spans = []histogram.Span{spans[0], {Offset: spans[1].Offset, Length: spans[1].Length + 1}}
					counts = append(counts, 0)
				}
				h := &histogram.Histogram{Schema: 3, PositiveSpans: spans}
				prev := int64(0)
				for j := range counts {
					counts[j] += int64((i + j) % 3)
					h.PositiveBuckets = append(h.PositiveBuckets, counts[j]-prev)
					prev = counts[j]
					h.Count += uint64(counts[j])
				}
				h.Sum = float64(h.Count) / 3
				hs = append(hs, HistogramSample{T: t0 + int64(i)*1000, H: h})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeChunks(nil, hs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hs)), "ns/histogram")
		})
	}
}

// TestRawCutter: a cutter that keeps floats raw (StreamFloats) holds
// exactly the floats the chunks would hold, as long as no histogram comes;
// once one does, it cuts the very chunks EncodeChunks cuts. The samples
// arrive in parts, as rows do, some going back in time (dropped).
func TestRawCutter(t *testing.T) {
	floats := func(rng *rand.Rand, n int) (fs []Sample, _ []HistogramSample) {
		ts := t0
		for range n {
			ts += int64(rng.IntN(20_000)) + 1
			fs = append(fs, Sample{T: ts, V: rng.NormFloat64()})
		}
		return fs, nil
	}
	for seed := range uint64(60) {
		gen := floats
		if seed%3 == 0 {
			gen = wildHistograms
		}
		fs, hs := gen(rand.New(rand.NewPCG(seed, 99)), 400)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// Parts of the samples, each sorted, the third starting
			// before the end of the second.
			cuts := []int{0, len(fs) / 3, 2 * len(fs) / 3, len(fs)}
			hcuts := []int{0, len(hs) / 3, 2 * len(hs) / 3, len(hs)}
			raw, plain := chunkCutter{raw: true}, chunkCutter{}
			for i := range 3 {
				pf, ph := fs[cuts[i]:cuts[i+1]], hs[hcuts[i]:hcuts[i+1]]
				if i == 2 && len(pf) > 5 {
					pf = fs[cuts[i]-5 : cuts[i+1]]
				}
				for _, c := range []*chunkCutter{&raw, &plain} {
					if err := c.appendMerged(pf, ph); err != nil {
						t.Fatal(err)
					}
				}
			}
			raw.finish()
			plain.finish()
			if raw.n != plain.n {
				t.Fatalf("raw cutter kept %d samples, chunks %d", raw.n, plain.n)
			}
			if len(hs) == 0 {
				got, _, err := DecodeChunks(plain.chunks)
				if err != nil {
					t.Fatal(err)
				}
				if len(raw.chunks) != 0 || len(raw.floats) != len(got) {
					t.Fatalf("raw: %d chunks, %d floats; want 0 and %d", len(raw.chunks), len(raw.floats), len(got))
				}
				for i, f := range raw.floats {
					if f.T != got[i].T || math.Float64bits(f.V) != math.Float64bits(got[i].V) {
						t.Fatalf("float %d: %v, want %v", i, f, got[i])
					}
				}
				return
			}
			if len(raw.floats) != 0 || len(raw.chunks) != len(plain.chunks) {
				t.Fatalf("raw: %d floats, %d chunks; want 0 and %d", len(raw.floats), len(raw.chunks), len(plain.chunks))
			}
			for i, w := range plain.chunks {
				g := raw.chunks[i]
				if g.Enc != w.Enc || g.MinT != w.MinT || g.MaxT != w.MaxT || !bytes.Equal(g.Data, w.Data) {
					t.Fatalf("chunk %d: %v [%d, %d] %x\nwant %v [%d, %d] %x", i, g.Enc, g.MinT, g.MaxT, g.Data, w.Enc, w.MinT, w.MaxT, w.Data)
				}
			}
		})
	}
}

// TestJoinFloatSeries: parts of one series with raw floats are appended
// when in order, merged one per timestamp (the earlier part's sample kept)
// when not, and cut into chunks when the other part has histograms.
func TestJoinFloatSeries(t *testing.T) {
	lbls := labels.FromStrings("__name__", "m")
	fl := func(ts ...int64) []Sample {
		var out []Sample
		for _, x := range ts {
			out = append(out, Sample{T: x, V: float64(x)})
		}
		return out
	}
	t.Run("in order", func(t *testing.T) {
		got, err := joinChunkSeries([]*ChunkSeries{{Labels: lbls, Floats: fl(1, 2), Samples: 2, Bytes: 10}, {Labels: lbls, Floats: fl(3, 4), Samples: 2, Bytes: 5}})
		if err != nil || len(got) != 1 || !slices.Equal(got[0].Floats, fl(1, 2, 3, 4)) || got[0].Samples != 4 || got[0].Bytes != 15 {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("overlapping", func(t *testing.T) {
		b := fl(2, 5)
		b[0].V = -1 // the later part's sample at 2 is dropped
		got, err := joinChunkSeries([]*ChunkSeries{{Labels: lbls, Floats: fl(1, 2, 3), Samples: 3, Bytes: 10}, {Labels: lbls, Floats: b, Samples: 2, Bytes: 5}})
		if err != nil || len(got) != 1 || !slices.Equal(got[0].Floats, fl(1, 2, 3, 5)) || got[0].Samples != 4 || len(got[0].Chunks) != 0 || got[0].Bytes != 15 {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("with histograms", func(t *testing.T) {
		h := &histogram.Histogram{Schema: 0, Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}
		chunks, err := EncodeChunks(nil, []HistogramSample{{T: 2, H: h}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := joinChunkSeries([]*ChunkSeries{{Labels: lbls, Floats: fl(1, 3), Samples: 2}, {Labels: lbls, Chunks: chunks, Samples: 1}})
		if err != nil || len(got) != 1 || len(got[0].Floats) != 0 || got[0].Samples != 3 {
			t.Fatalf("%+v %v", got, err)
		}
		fs, hs, err := DecodeChunks(got[0].Chunks)
		if err != nil || !slices.Equal(fs, fl(1, 3)) || len(hs) != 1 || hs[0].T != 2 {
			t.Fatalf("floats %v, histograms %v: %v", fs, hs, err)
		}
	})
}
