// HistogramBuilder: integer native histograms in Prometheus's
// histogram chunk format (chunkenc.EncHistogram), producing the same bytes
// as Prometheus's own appender for the samples it takes: those that keep
// the chunk's bucket layout and do not reset its counters, which are most
// samples of most series. For those it replaces the appender's general
// check (which merges both layouts bucket by bucket, to find inserts) by
// a comparison of the layouts and one pass over the bucket counts. A
// sample it cannot append (Appendable false) starts a new chunk when
// CutHeader tells the header Prometheus's appender would give it (a
// counter reset, another schema); otherwise (a new bucket layout, a
// staleness marker, a gauge) the caller hands the chunk to Prometheus's
// appender.
//
// Layout of a chunk:
//
//	u16 big-endian   number of samples
//	byte             counter reset header in its top 2 bits: 10 reset,
//	                 01 no reset, 11 gauge, 00 unknown
//	zero threshold   byte 0 (0), byte e+243 (0.5·2^e, −242 ≤ e ≤ 11),
//	                 or byte 255 and the 64 bits of the float
//	varbit int       schema
//	spans ×2         varbit uint count, then per span varbit uint length
//	                 and varbit int offset; positive, then negative
//	custom bounds    custom-bucket schema only: varbit uint count, then per
//	                 bound varbit uint (1000·bound + 1) when that is whole
//	                 and ≤ 33554431, else bit 0 and the 64 bits of the float
//	sample 0         varbit int t, varbit uint count, varbit uint zero
//	                 count, 64 bits of the sum, varbit int per bucket
//	                 (positive, then negative; as the histogram holds
//	                 them: each the difference from the bucket before)
//	sample n ≥ 1     varbit int dod of t, of count, of zero count; the
//	                 sum XORed with the previous sum (Gorilla); varbit int
//	                 dod per bucket
//
// dod is the change of the delta from the previous sample (the delta
// before sample 1 is 0). A varbit int is '0' for 0, else a prefix of 1 to
// 8 one bits ended by a zero bit (no zero bit after 8 ones) and a two's
// complement value of 3, 6, 9, 12, 18, 25, 56 or 64 bits; a varbit uint
// the same with unsigned values. Everything after the header is one bit
// stream, the last byte padded with zero bits.

package chunkenc

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
)

// The counter reset headers, as chunkenc.CounterResetHeader.
const (
	UnknownCounterReset byte = 0b00000000
	CounterReset        byte = 0b10000000
	NotCounterReset     byte = 0b01000000
)

// headerSize is the bytes before the layout: sample count and flags.
const headerSize = 3

// HistogramBuilder builds one chunk. The zero HistogramBuilder is not ready: call Start.
type HistogramBuilder struct {
	w                   bitWriter
	n                   int
	schema              int32
	zeroThreshold       float64
	pSpans, nSpans      []histogram.Span
	custom              []float64
	t, tDelta           int64
	count, zeroCount    uint64
	countDelta, zcDelta int64
	sum                 uint64 // bits of the last sum
	leading, trailing   uint8
	// The last sample's buckets, as the histogram holds them, and their
	// change from the sample before.
	pBuckets, pDeltas, nBuckets, nDeltas []int64
}

// HistogramStartable reports whether a chunk may start with h: a counter
// histogram (not a gauge) that is not a staleness marker, with as many
// buckets as its spans say.
func HistogramStartable(h *histogram.Histogram) bool {
	return h.CounterResetHint != histogram.GaugeType && !value.IsStaleNaN(h.Sum) &&
		len(h.PositiveBuckets) == spanned(h.PositiveSpans) && len(h.NegativeBuckets) == spanned(h.NegativeSpans)
}

// spanned returns the number of buckets spans cover.
func spanned(spans []histogram.Span) int {
	n := 0
	for _, s := range spans {
		n += int(s.Length)
	}
	return n
}

// Start begins a chunk in buf (its capacity is reused) with the counter
// reset header and the first sample (t, h), which must be HistogramStartable.
func (b *HistogramBuilder) Start(buf []byte, header byte, t int64, h *histogram.Histogram) {
	*b = HistogramBuilder{
		schema: h.Schema, zeroThreshold: h.ZeroThreshold,
		pSpans: append(b.pSpans[:0], h.PositiveSpans...), nSpans: append(b.nSpans[:0], h.NegativeSpans...),
		custom:   append(b.custom[:0], h.CustomValues...),
		pBuckets: append(b.pBuckets[:0], h.PositiveBuckets...), nBuckets: append(b.nBuckets[:0], h.NegativeBuckets...),
		pDeltas: zeroed(b.pDeltas, len(h.PositiveBuckets)), nDeltas: zeroed(b.nDeltas, len(h.NegativeBuckets)),
		t: t, count: h.Count, zeroCount: h.ZeroCount, sum: math.Float64bits(h.Sum),
		leading: 0xff, n: 1,
	}
	b.w.Reset(append(buf[:0], 0, 0, header))
	w := &b.w
	b.putZeroThreshold(h.ZeroThreshold)
	putInt(w, int64(h.Schema))
	putSpans(w, h.PositiveSpans)
	putSpans(w, h.NegativeSpans)
	if histogram.IsCustomBucketsSchema(h.Schema) {
		putUint(w, uint64(len(h.CustomValues)))
		for _, v := range h.CustomValues {
			putCustomBound(w, v)
		}
	}
	putInt(w, t)
	putUint(w, h.Count)
	putUint(w, h.ZeroCount)
	w.Write(b.sum, 64)
	for _, v := range h.PositiveBuckets {
		putInt(w, v)
	}
	for _, v := range h.NegativeBuckets {
		putInt(w, v)
	}
}

func zeroed(s []int64, n int) []int64 {
	s = append(s[:0], make([]int64, n)...)
	return s
}

// NumSamples returns the samples in the chunk.
func (b *HistogramBuilder) NumSamples() int { return b.n }

// Len returns the length of the chunk's bytes.
func (b *HistogramBuilder) Len() int { return b.w.Len() }

// Cap returns the capacity of the chunk's buffer.
func (b *HistogramBuilder) Cap() int { return cap(b.w.Buf) }

// Appendable reports whether h may follow the chunk's last sample as
// Prometheus's appender would append it, without a new chunk or a
// recoding: h is a counter histogram without an explicit counter reset,
// not a staleness marker (nor is the last sample: Start and Append take
// none), and it has the same
// schema, zero threshold, custom bounds and spans, and none of its
// counts (count, zero count, each bucket) is below the last sample's.
func (b *HistogramBuilder) Appendable(h *histogram.Histogram) bool {
	if h.CounterResetHint == histogram.CounterReset || h.CounterResetHint == histogram.GaugeType ||
		value.IsStaleNaN(h.Sum) ||
		h.Count < b.count || h.ZeroCount < b.zeroCount ||
		h.Schema != b.schema || h.ZeroThreshold != b.zeroThreshold ||
		!sameSpans(h.PositiveSpans, b.pSpans) || !sameSpans(h.NegativeSpans, b.nSpans) ||
		(histogram.IsCustomBucketsSchema(h.Schema) && !histogram.CustomBucketBoundsMatch(h.CustomValues, b.custom)) {
		return false
	}
	return noneBelow(h.PositiveBuckets, b.pBuckets) && noneBelow(h.NegativeBuckets, b.nBuckets)
}

// CutHeader reports whether Prometheus's appender, given h after the
// chunk's last sample, would start a new chunk with h for a reason it
// tells before it compares bucket layouts, and the counter reset header
// it would give that chunk: an explicit counter reset, a count, zero count
// or (with the same spans) bucket below the last sample's, or other custom
// bounds (counter reset); another schema or zero threshold (unknown). A
// gauge or a staleness marker is never cut here. When CutHeader is false
// and Appendable too, only Prometheus's appender can tell: h changes the
// bucket layout, which it either recodes the chunk for or cuts on.
func (b *HistogramBuilder) CutHeader(h *histogram.Histogram) (byte, bool) {
	if h.CounterResetHint == histogram.GaugeType || value.IsStaleNaN(h.Sum) {
		return 0, false
	}
	switch {
	case h.CounterResetHint == histogram.CounterReset, h.Count < b.count:
		return CounterReset, true
	case h.Schema != b.schema || h.ZeroThreshold != b.zeroThreshold:
		return UnknownCounterReset, true
	case histogram.IsCustomBucketsSchema(h.Schema) && !histogram.CustomBucketBoundsMatch(h.CustomValues, b.custom),
		h.ZeroCount < b.zeroCount:
		return CounterReset, true
	case sameSpans(h.PositiveSpans, b.pSpans) && sameSpans(h.NegativeSpans, b.nSpans) &&
		len(h.PositiveBuckets) == len(b.pBuckets) && len(h.NegativeBuckets) == len(b.nBuckets) &&
		!(noneBelow(h.PositiveBuckets, b.pBuckets) && noneBelow(h.NegativeBuckets, b.nBuckets)):
		return CounterReset, true
	}
	return 0, false
}

func sameSpans(a, b []histogram.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// noneBelow reports whether h and last, buckets as differences from the
// bucket before, have the same number of buckets and no count of h is
// below last's.
func noneBelow(h, last []int64) bool {
	if len(h) != len(last) {
		return false
	}
	var ch, cl int64
	for i := range h {
		ch += h[i]
		cl += last[i]
		if ch < cl {
			return false
		}
	}
	return true
}

// Append adds the sample (t, h), for which Appendable must be true, at a t
// after the last sample's. At most 65535 samples fit in a chunk.
func (b *HistogramBuilder) Append(t int64, h *histogram.Histogram) {
	w := &b.w
	tDelta := t - b.t
	countDelta := int64(h.Count) - int64(b.count)
	zcDelta := int64(h.ZeroCount) - int64(b.zeroCount)
	putInt(w, tDelta-b.tDelta)
	putInt(w, countDelta-b.countDelta)
	putInt(w, zcDelta-b.zcDelta)
	sum := math.Float64bits(h.Sum)
	w.XOR(sum^b.sum, &b.leading, &b.trailing)
	appendBuckets(w, h.PositiveBuckets, b.pBuckets, b.pDeltas)
	appendBuckets(w, h.NegativeBuckets, b.nBuckets, b.nDeltas)
	b.t, b.tDelta = t, tDelta
	b.count, b.countDelta = h.Count, countDelta
	b.zeroCount, b.zcDelta = h.ZeroCount, zcDelta
	b.sum = sum
	b.n++
}

// appendBuckets writes the dod of each bucket and makes last and deltas
// the new bucket's. A run of zero dods (a '0' bit each) is written at once.
func appendBuckets(w *bitWriter, h, last, deltas []int64) {
	last, deltas = last[:len(h)], deltas[:len(h)]
	zeros := uint(0)
	for i, v := range h {
		d := v - last[i]
		if dod := d - deltas[i]; dod == 0 {
			if zeros++; zeros == 64 {
				w.Write(0, 64)
				zeros = 0
			}
		} else {
			if zeros > 0 {
				w.Write(0, zeros)
				zeros = 0
			}
			putInt(w, dod)
		}
		deltas[i], last[i] = d, v
	}
	if zeros > 0 {
		w.Write(0, zeros)
	}
}

// Bytes returns the chunk: the bytes so far, padded to a byte, with the
// sample count in the header. The HistogramBuilder is done with the chunk; Start
// the next.
func (b *HistogramBuilder) Bytes() []byte {
	buf := b.w.Bytes()
	binary.BigEndian.PutUint16(buf, uint16(b.n))
	return buf
}

func (b *HistogramBuilder) putZeroThreshold(zt float64) {
	if zt == 0 {
		b.w.Write(0, 8)
		return
	}
	frac, exp := math.Frexp(zt)
	if frac != 0.5 || exp < -242 || exp > 11 {
		b.w.Write(255, 8)
		b.w.Write(math.Float64bits(zt), 64)
		return
	}
	b.w.Write(uint64(exp+243), 8)
}

func putSpans(w *bitWriter, spans []histogram.Span) {
	putUint(w, uint64(len(spans)))
	for _, s := range spans {
		putUint(w, uint64(s.Length))
		putInt(w, int64(s.Offset))
	}
}

// putCustomBound writes a custom bucket bound: 1000·v + 1 as a varbit
// uint when 1000·v is whole and in 0..33554430, else bit 0 and the float.
func putCustomBound(w *bitWriter, v float64) {
	m := v * 1000
	if m < 0 || m > 33554430 || float64(uint(math.Round(m)))/1000 != v {
		w.Write(0, 1)
		w.Write(math.Float64bits(v), 64)
		return
	}
	putUint(w, uint64(math.Round(m))+1)
}

// varbitWidth returns the width of the value field of the varbit
// encoding with k one bits before its zero bit (k = 1..7): 3, 6, 9, 12,
// 18, 25, 56 bits. After 8 one bits come 64 bits.
func varbitWidth(k int) uint {
	switch {
	case k <= 4:
		return uint(3 * k)
	case k == 5:
		return 18
	case k == 6:
		return 25
	}
	return 56
}

// putInt writes v as a varbit int.
func putInt(w *bitWriter, v int64) {
	if v == 0 {
		w.Write(0, 1)
		return
	}
	for k := 1; k <= 7; k++ {
		if n := varbitWidth(k); fitsBits(v, n) {
			putVarbit(w, k, n, uint64(v))
			return
		}
	}
	w.Write(0xff, 8)
	w.Write(uint64(v), 64)
}

// putUint writes v as a varbit uint.
func putUint(w *bitWriter, v uint64) {
	if v == 0 {
		w.Write(0, 1)
		return
	}
	for k := 1; k <= 7; k++ {
		if n := varbitWidth(k); v < 1<<n {
			putVarbit(w, k, n, v)
			return
		}
	}
	w.Write(0xff, 8)
	w.Write(v, 64)
}

// putVarbit writes k one bits, a zero bit and the low n bits of v.
func putVarbit(w *bitWriter, k int, n uint, v uint64) {
	prefix := uint64(1)<<(k+1) - 2
	if n+uint(k)+1 <= 64 {
		w.Write(prefix<<n|v&(1<<n-1), n+uint(k)+1)
		return
	}
	w.Write(prefix, uint(k)+1)
	w.Write(v, n)
}
