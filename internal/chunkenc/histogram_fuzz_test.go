package chunkenc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// maxFuzzBuckets bounds the buckets a fuzzed chunk's layout may have:
// Prometheus's iterator allocates them before it reads a sample, and a
// span of a few bits may claim 2^32 of them.
const maxFuzzBuckets = 1 << 12

var errShort = errors.New("chunk ends in its layout")

// bitReader reads a chunk's bit stream, most significant bit first.
type bitReader struct {
	b   []byte
	pos int
}

func (r *bitReader) read(n int) (uint64, error) {
	if r.pos+n > len(r.b)*8 {
		return 0, errShort
	}
	var x uint64
	for range n {
		x = x<<1 | uint64(r.b[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return x, nil
}

// varbit reads a varbit uint (the bitReader of a varbit int alike).
func (r *bitReader) varbit() (uint64, error) {
	k := 0
	for k < 8 {
		bit, err := r.read(1)
		if err != nil {
			return 0, err
		}
		if bit == 0 {
			break
		}
		k++
	}
	switch k {
	case 0:
		return 0, nil
	case 8:
		return r.read(64)
	}
	return r.read(int(varbitWidth(k)))
}

// layoutBuckets returns the schema and the buckets a chunk's layout
// claims, read as Prometheus's iterator reads it (span lengths are
// uint32), or an error where the iterator would fail before it allocates
// them.
func layoutBuckets(chunk []byte) (schema int32, buckets int, err error) {
	if len(chunk) < headerSize {
		return 0, 0, errShort
	}
	r := bitReader{b: chunk[headerSize:]}
	zt, err := r.read(8)
	if err != nil {
		return 0, 0, err
	}
	if zt == 255 {
		if _, err := r.read(64); err != nil {
			return 0, 0, err
		}
	}
	v, err := r.varbit()
	if err != nil {
		return 0, 0, err
	}
	schema = int32(v)
	total := 0
	for range 2 {
		spans, err := r.varbit()
		if err != nil {
			return 0, 0, err
		}
		for i := 0; i < int(spans); i++ { // as Prometheus: none for a count ≥ 2^63
			length, err := r.varbit()
			if err != nil {
				return 0, 0, err
			}
			if _, err := r.varbit(); err != nil { // offset
				return 0, 0, err
			}
			total += int(uint32(length))
			if total > maxFuzzBuckets {
				return schema, total, nil
			}
		}
	}
	return schema, total, nil
}

// decode returns the samples of a histogram chunk that Prometheus's
// iterator reads before it ends or fails.
func decode(chunk []byte) []histSample {
	c, err := chunkenc.FromData(chunkenc.EncHistogram, chunk)
	if err != nil {
		return nil
	}
	var ss []histSample
	it := c.Iterator(nil)
	for it.Next() == chunkenc.ValHistogram {
		// Not AtHistogram(nil), whose buckets are the iterator's own.
		t, h := it.AtHistogram(&histogram.Histogram{})
		ss = append(ss, histSample{t, h})
	}
	return ss
}

// buildable returns the longest prefix of ss that a HistogramBuilder takes: a
// Startable first sample, then samples Appendable after the one before at
// later times; all of them histograms that Copy keeps whole (so that
// check's reference sees them): custom buckets without a zero bucket or
// negative buckets, which only an invalid histogram has.
func buildable(ss []histSample) []histSample {
	if len(ss) == 0 || !HistogramStartable(ss[0].h) || !copyKeeps(ss[0].h) {
		return nil
	}
	var b HistogramBuilder
	b.Start(nil, UnknownCounterReset, ss[0].t, ss[0].h)
	for i, s := range ss[1:] {
		if s.t <= ss[i].t || !b.Appendable(s.h) || !copyKeeps(s.h) {
			return ss[:i+1]
		}
		b.Append(s.t, s.h)
	}
	return ss
}

func copyKeeps(h *histogram.Histogram) bool {
	return !h.UsesCustomBuckets() ||
		h.ZeroThreshold == 0 && h.ZeroCount == 0 && len(h.NegativeSpans) == 0 && len(h.NegativeBuckets) == 0
}

// sameBound reports whether custom bucket bounds are equal: -0 comes back
// as 0 (the format writes both as the whole number 0, as Prometheus's
// appender does; testdata keeps such a chunk), NaN as the same NaN.
func sameBound(u, v float64) bool {
	return u == v || math.Float64bits(u) == math.Float64bits(v)
}

// sameSample reports how a and b differ, bit for bit in the other
// floats; the counter reset hint is the chunk header's, not the sample's.
func sameSample(a, b histSample) error {
	x, y := a.h, b.h
	switch {
	case a.t != b.t:
		return fmt.Errorf("t %d, want %d", a.t, b.t)
	case x.Schema != y.Schema, math.Float64bits(x.ZeroThreshold) != math.Float64bits(y.ZeroThreshold):
		return fmt.Errorf("schema %d zero threshold %v, want %d %v", x.Schema, x.ZeroThreshold, y.Schema, y.ZeroThreshold)
	case x.Count != y.Count, x.ZeroCount != y.ZeroCount, math.Float64bits(x.Sum) != math.Float64bits(y.Sum):
		return fmt.Errorf("count %d zero count %d sum %v, want %d %d %v", x.Count, x.ZeroCount, x.Sum, y.Count, y.ZeroCount, y.Sum)
	case !slices.Equal(x.PositiveSpans, y.PositiveSpans), !slices.Equal(x.NegativeSpans, y.NegativeSpans):
		return fmt.Errorf("spans %v %v, want %v %v", x.PositiveSpans, x.NegativeSpans, y.PositiveSpans, y.NegativeSpans)
	case !slices.Equal(x.PositiveBuckets, y.PositiveBuckets), !slices.Equal(x.NegativeBuckets, y.NegativeBuckets):
		return fmt.Errorf("buckets %v %v, want %v %v", x.PositiveBuckets, x.NegativeBuckets, y.PositiveBuckets, y.NegativeBuckets)
	case !slices.EqualFunc(x.CustomValues, y.CustomValues, sameBound):
		return fmt.Errorf("custom bounds %v, want %v", x.CustomValues, y.CustomValues)
	}
	return nil
}

// FuzzDecodeReencode: Prometheus's iterator reads arbitrary bytes as a
// histogram chunk without panicking. The samples it reads that a HistogramBuilder
// takes re-encode to the bytes Prometheus's appender writes for them
// (check), and those bytes decode to the same samples. The input's own
// bytes need not come back: a chunk may spend more bitReader than needed on a
// varbit value or a zero threshold, claim fewer samples than it holds,
// or pad with ones; the HistogramBuilder writes the one canonical chunk.
func FuzzDecodeReencode(f *testing.F) {
	seed := func(header byte, ss []histSample) {
		var b HistogramBuilder
		b.Start(nil, header, ss[0].t, ss[0].h)
		for _, s := range ss[1:] {
			b.Append(s.t, s.h)
		}
		f.Add(slices.Clone(b.Bytes()))
	}
	h := &histogram.Histogram{Schema: 3, Count: 10, ZeroCount: 2, Sum: 5, ZeroThreshold: 0.001,
		PositiveSpans: []histogram.Span{{Offset: -2, Length: 2}}, PositiveBuckets: []int64{3, 2},
		NegativeSpans: []histogram.Span{{Offset: 1, Length: 1}}, NegativeBuckets: []int64{3}}
	h2 := h.Copy()
	h2.Count, h2.Sum, h2.PositiveBuckets = 1<<40, 1e9, []int64{3, 1 << 39}
	seed(UnknownCounterReset, []histSample{{1000, h}, {2000, h}, {3005, h2}})
	seed(CounterReset, []histSample{{-5, &histogram.Histogram{Schema: -4}}})
	custom := &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 3, Sum: math.NaN(),
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 0, 0},
		CustomValues: []float64{0.25, 33554.431, math.Inf(1)}}
	seed(NotCounterReset, []histSample{{0, custom}, {math.MaxInt64 / 2, custom}})
	f.Add([]byte{0, 1, 0})
	f.Add([]byte{0xff, 0xff, 0x40, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 1, 0, 0x74, 0x7f, 0xff, 0xff, 0xff}) // a span claiming 2^32-ish buckets
	f.Fuzz(func(t *testing.T, chunk []byte) {
		if len(chunk) < headerSize {
			// Prometheus's iterator slices the header without a check
			// (FromData takes any bytes): it panics, as it never gets
			// fewer from a chunk an appender wrote. testdata keeps the
			// empty chunk that showed it.
			return
		}
		schema, n, err := layoutBuckets(chunk)
		switch {
		case err != nil:
			// Prometheus's reader does not always fail where the
			// stream ends: a read of several bitReader across its last
			// buffer returns made-up bitReader (testdata keeps a layout
			// that claims 2^32 buckets that way), so a layout cut
			// short may claim any number of buckets.
			t.Skip(err)
		case n > maxFuzzBuckets:
			t.Skipf("layout of %d buckets", n)
		case schema > histogram.ExponentialSchemaMax && schema <= histogram.ExponentialSchemaMaxReserved:
			// Prometheus's iterator reduces such a resolution as it
			// reads, and panics where the buckets do not allow it.
			t.Skipf("schema %d", schema)
		}
		ss := buildable(decode(chunk))
		if len(ss) == 0 {
			return
		}
		header := chunk[2] & chunkenc.CounterResetHeaderMask
		checkHist(t, header, ss) // the HistogramBuilder's bytes are Prometheus's appender's
		var b HistogramBuilder
		b.Start(nil, header, ss[0].t, ss[0].h)
		for _, s := range ss[1:] {
			b.Append(s.t, s.h)
		}
		again := decode(b.Bytes())
		if len(again) != len(ss) {
			t.Fatalf("%d samples re-encoded, %d decoded", len(ss), len(again))
		}
		for i := range ss {
			if err := sameSample(again[i], ss[i]); err != nil {
				t.Fatalf("histSample %d: %v", i, err)
			}
		}
	})
}
