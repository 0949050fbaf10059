package wire

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
)

// MaxSampleBytes bounds the bytes of one Sample in a TimeSeries: tag,
// length, the value's tag and 8 bytes, the timestamp's tag and 10.
const MaxSampleBytes = 22

// AppendSample appends a TimeSeries' Sample (field 2):
//
//	0x12 len [0x09 value as 8 bytes little-endian] [0x10 uvarint(timestamp)]
//
// A value of 0 or -0 and a timestamp of 0 are left out, as the generated
// code leaves them out.
func AppendSample(dst []byte, t int64, v float64) []byte {
	dst = slices.Grow(dst, MaxSampleBytes)
	n := PutSample(dst[len(dst):len(dst)+MaxSampleBytes], t, v)
	return dst[:len(dst)+n]
}

// PutSample writes the Sample of t and v (see appendSample) at the start
// of b and returns its length, or 0 when b is too short for it.
func PutSample(b []byte, t int64, v float64) int {
	bv := math.Float64bits(v)
	m := 0
	if bv != 0 && bv != 1<<63 {
		m = 9
	}
	tl := 0 // the timestamp's varint bytes
	if t != 0 {
		tl = (bits.Len64(uint64(t)) + 6) / 7
		m += 1 + tl
	}
	if len(b) < 2+m {
		return 0
	}
	b[0], b[1] = 0x12, byte(m)
	i := 2
	if bv != 0 && bv != 1<<63 {
		b[i] = 0x09
		binary.LittleEndian.PutUint64(b[i+1:], bv)
		i += 9
	}
	if tl > 0 {
		b[i] = 0x10
		i++
		x := uint64(t)
		for range tl - 1 {
			b[i] = byte(x) | 0x80
			x >>= 7
			i++
		}
		b[i] = byte(x)
		i++
	}
	return i
}

// SamplesBound bounds the bytes of the Samples of fs at once, fs in time
// order: every value 9 bytes, every timestamp as long as the last one (the
// longest when none is negative) or 10 bytes. For millisecond timestamps
// of this century it is exact when no value is 0.
func SamplesBound(fs []mapping.Point) int {
	if len(fs) == 0 {
		return 0
	}
	tl := 10
	if first, last := fs[0].T, fs[len(fs)-1].T; first >= 0 {
		tl = (bits.Len64(uint64(last)|1) + 6) / 7
	}
	return len(fs) * (2 + 9 + 1 + tl)
}

// AppendSamples appends the Samples of fs (see appendSample) within room
// bytes, at least what they take (samplesBound is), growing dst when it
// has not that much room.
func AppendSamples(dst []byte, fs []mapping.Point, room int) []byte {
	n := len(dst)
	dst = slices.Grow(dst, room)
	b := dst[n : n+room]
	i := 0
	for _, f := range fs {
		w := PutSample(b[i:], f.T, f.V)
		if w == 0 {
			break // cannot happen: room holds the samples
		}
		i += w
	}
	return dst[:n+i]
}

// AppendLabels appends the labels of a TimeSeries (field 1).
func AppendLabels(dst []byte, lbls labels.Labels) []byte {
	lbls.Range(func(l labels.Label) { dst = AppendLabel(dst, l.Name, l.Value) })
	return dst
}

// AppendLabel appends one Label field of a TimeSeries (field 1): tag 0x0a,
// the Label's length, then its name (tag 0x0a) and value (tag 0x12), each
// left out when empty as Prometheus's generated code does. A series' Label
// fields in name order are its key (Series.Key).
func AppendLabel[S string | []byte](dst []byte, name, value S) []byte {
	n := 0
	if len(name) > 0 {
		n += 1 + mapping.UvarintLen(uint64(len(name))) + len(name)
	}
	if len(value) > 0 {
		n += 1 + mapping.UvarintLen(uint64(len(value))) + len(value)
	}
	dst = append(dst, 0x0a)
	dst = binary.AppendUvarint(dst, uint64(n))
	if len(name) > 0 {
		dst = append(dst, 0x0a)
		dst = binary.AppendUvarint(dst, uint64(len(name)))
		dst = append(dst, name...)
	}
	if len(value) > 0 {
		dst = append(dst, 0x12)
		dst = binary.AppendUvarint(dst, uint64(len(value)))
		dst = append(dst, value...)
	}
	return dst
}

// MaxHistogramBytes bounds what appendHistogram or appendFloatHistogram
// appends for a histogram of that many spans, buckets and custom bounds:
// tag and length (6), counts (2×11), sum and zero threshold (2×9), schema
// (6), reset hint (2), timestamp (11), two lists of buckets (2×6, and 10 a
// bucket), 14 a span, custom bounds (7, and 8 a bound).
func MaxHistogramBytes(spans, buckets, custom int) int {
	return 6 + 22 + 18 + 6 + 2 + 11 + 12 + 10*buckets + 14*spans + 7 + 8*custom
}

// AppendHistogram appends an integer histogram of a TimeSeries (field 4)
// as prompb.FromIntHistogram(t, h) marshals:
//
//	0x08 uvarint(count)             always
//	0x19 sum, 8 bytes LE            when not 0
//	0x20 zigzag32(schema)           when not 0
//	0x29 zero threshold, 8 bytes    when not 0
//	0x30 uvarint(zero count)        always
//	0x42 len BucketSpan             per negative span
//	0x4a len zigzag64 varints       negative deltas, when any
//	0x5a len BucketSpan             per positive span
//	0x62 len zigzag64 varints       positive deltas, when any
//	0x70 uvarint(reset hint)        when not 0
//	0x78 uvarint(timestamp)         when not 0
//	0x82 0x01 len 8 bytes LE each   custom bounds, when any
func AppendHistogram(dst []byte, t int64, h *histogram.Histogram) []byte {
	dst = append(dst, 0x22, 0)
	start := len(dst)
	dst = append(dst, 0x08)
	dst = binary.AppendUvarint(dst, h.Count)
	dst = appendHistogramScale(dst, h.Sum, h.Schema, h.ZeroThreshold)
	dst = append(dst, 0x30)
	dst = binary.AppendUvarint(dst, h.ZeroCount)
	dst = appendSpans(dst, 0x42, h.NegativeSpans)
	dst = appendDeltas(dst, 0x4a, h.NegativeBuckets)
	dst = appendSpans(dst, 0x5a, h.PositiveSpans)
	dst = appendDeltas(dst, 0x62, h.PositiveBuckets)
	dst = appendHistogramTail(dst, h.CounterResetHint, t, h.CustomValues)
	return putLengthAfter(dst, start-1)
}

// AppendFloatHistogram appends a float histogram of a TimeSeries (field
// 4) as prompb.FromFloatHistogram(t, h) marshals: as appendHistogram, but
// the counts as 8-byte floats (0x11 count, 0x39 zero count, always) and
// the buckets as packed 8-byte floats (0x52 negative, 0x6a positive).
func AppendFloatHistogram(dst []byte, t int64, h *histogram.FloatHistogram) []byte {
	dst = append(dst, 0x22, 0)
	start := len(dst)
	dst = append(dst, 0x11)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.Count))
	dst = appendHistogramScale(dst, h.Sum, h.Schema, h.ZeroThreshold)
	dst = append(dst, 0x39)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.ZeroCount))
	dst = appendSpans(dst, 0x42, h.NegativeSpans)
	dst = appendFloats(dst, 0x52, h.NegativeBuckets)
	dst = appendSpans(dst, 0x5a, h.PositiveSpans)
	dst = appendFloats(dst, 0x6a, h.PositiveBuckets)
	dst = appendHistogramTail(dst, h.CounterResetHint, t, h.CustomValues)
	return putLengthAfter(dst, start-1)
}

// appendHistogramScale appends a Histogram's sum (3), schema (4) and zero
// threshold (5), each when not 0.
func appendHistogramScale(dst []byte, sum float64, schema int32, zt float64) []byte {
	if sum != 0 {
		dst = append(dst, 0x19)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(sum))
	}
	if schema != 0 {
		dst = append(dst, 0x20)
		dst = binary.AppendUvarint(dst, uint64(uint32(schema)<<1^uint32(schema>>31)))
	}
	if zt != 0 {
		dst = append(dst, 0x29)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(zt))
	}
	return dst
}

// appendHistogramTail appends a Histogram's reset hint (14) and timestamp
// (15), each when not 0, and its custom bounds (16), when any.
func appendHistogramTail(dst []byte, hint histogram.CounterResetHint, t int64, custom []float64) []byte {
	if hint != 0 {
		dst = append(dst, 0x70)
		dst = binary.AppendUvarint(dst, uint64(hint))
	}
	if t != 0 {
		dst = append(dst, 0x78)
		dst = binary.AppendUvarint(dst, uint64(t))
	}
	return appendFloats(dst, 16<<3|2, custom)
}

// appendSpans appends one BucketSpan field per span: [0x08
// zigzag32(offset)] [0x10 uvarint(length)], each when not 0.
func appendSpans(dst []byte, tag byte, spans []histogram.Span) []byte {
	for _, s := range spans {
		n := 0
		off := uint64(uint32(s.Offset)<<1 ^ uint32(s.Offset>>31))
		if off != 0 {
			n += 1 + mapping.UvarintLen(off)
		}
		if s.Length != 0 {
			n += 1 + mapping.UvarintLen(uint64(s.Length))
		}
		dst = append(dst, tag, byte(n)) // n ≤ 12
		if off != 0 {
			dst = append(dst, 0x08)
			dst = binary.AppendUvarint(dst, off)
		}
		if s.Length != 0 {
			dst = append(dst, 0x10)
			dst = binary.AppendUvarint(dst, uint64(s.Length))
		}
	}
	return dst
}

// appendDeltas appends a packed field of zigzag64 varints, when vs is not
// empty.
func appendDeltas(dst []byte, tag byte, vs []int64) []byte {
	if len(vs) == 0 {
		return dst
	}
	dst = append(dst, tag, 0)
	start := len(dst)
	for _, v := range vs {
		dst = binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
	}
	return putLengthAfter(dst, start-1)
}

// appendFloats appends a packed field of 8-byte little-endian floats, when
// vs is not empty.
func appendFloats(dst []byte, tag uint64, vs []float64) []byte {
	if len(vs) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(8*len(vs)))
	for _, v := range vs {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

// putLengthAfter writes, at dst[at], the uvarint length of the bytes after
// it, the one byte kept there for it, moving those bytes up when the
// length takes more than one byte.
func putLengthAfter(dst []byte, at int) []byte {
	n := len(dst) - at - 1
	if n < 0x80 {
		dst[at] = byte(n)
		return dst
	}
	k := mapping.UvarintLen(uint64(n))
	dst = append(dst, make([]byte, k-1)...)
	copy(dst[at+k:], dst[at+1:at+1+n])
	binary.PutUvarint(dst[at:], uint64(n))
	return dst
}

// PutLength writes, at dst[at:], the uvarint length of the bytes that
// follow the reserved bytes kept there for it (at most reserved long), and
// moves those bytes up to follow it: a protobuf field's length, known only
// once its contents are appended.
func PutLength(dst []byte, at, reserved int) []byte {
	prefix := binary.AppendUvarint(dst[at:at], uint64(len(dst)-at-reserved))
	copy(dst[at+len(prefix):], dst[at+reserved:])
	return dst[:len(dst)-(reserved-len(prefix))]
}
