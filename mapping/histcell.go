package mapping

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// Native histograms are stored as OpenTSDB 2.4 histogram cells in the
// series' own row of the data table, family t:
//
//	qualifier  06 ‖ u32 BE millisecond offset from the row's base time
//	           (5 bytes, as OpenTSDB's Internal.getQualifier builds it for a
//	           millisecond timestamp; OpenTSDB's 3-byte second form
//	           06 ‖ u16 BE seconds is read too)
//	value      codec id ‖ payload
//
// The codec id is HistogramCodecPrometheus (0x50). OpenTSDB maps codec ids
// to decoder classes only through tsd.core.histograms.config and reads the
// id as a signed byte, so an id in 1..127 that no decoder OpenTSDB ships
// claims (0 is the id users give its SimpleHistogramDecoder) keeps
// OpenTSDB's behaviour unchanged: its float queries skip odd-length
// columns, its histogram queries log "Failed to decode histogram data
// point" and skip the cell, its fsck counts a 5-byte 06 column as a
// "Possible Future Object" (a warning, not an error) and its compaction
// merges only even-length columns and leaves these cells where they are.
//
// Payload (version 0), every float64 as its raw IEEE-754 bits big-endian,
// so NaN payloads (Prometheus's staleness marker in Sum) and -0 survive:
//
//	header     1 byte: bits 0-1 counter-reset hint (0 unknown, 1 reset,
//	           2 not reset, 3 gauge), bit 2 set for a float histogram,
//	           bits 4-7 version (0); bit 3 is zero
//	schema     zig-zag varint (-4..8 exponential, -53 custom buckets)
//	zero threshold  8 bytes
//	count      uvarint (integer histogram) or 8 bytes (float)
//	zero count uvarint or 8 bytes
//	sum        8 bytes
//	positive spans  uvarint n, then n × (zig-zag varint offset, uvarint length)
//	negative spans  the same
//	positive buckets uvarint n, then n × zig-zag varint delta (integer:
//	           each bucket's count minus the previous bucket's, as
//	           Prometheus keeps them) or n × 8 bytes (float: absolute counts)
//	negative buckets the same
//	custom values   uvarint n, then n × 8 bytes (the upper bounds of schema
//	           -53's buckets)
//
// Nothing may follow. [DecodeHistogramValue] gives back every field exactly.

// HistogramCodecPrometheus is the codec id of promhbase's histogram cells.
const HistogramCodecPrometheus byte = 0x50

const (
	histFloatFlag   byte = 0x04
	histHintMask    byte = 0x03
	histReserved    byte = 0x08
	histVersionMask byte = 0xF0
)

// HistogramQualifierBytes is the length of a histogram cell's qualifier.
const HistogramQualifierBytes = 5

// AppendHistogramQualifier appends the 5-byte qualifier of a histogram cell
// at offsetMs past the row's base time: 06 ‖ u32 BE offsetMs.
func AppendHistogramQualifier(dst []byte, offsetMs uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, HistogramPrefix), offsetMs)
}

// ParseHistogramQualifier returns the millisecond offset of a histogram
// cell's qualifier: 06 ‖ u32 BE milliseconds, or OpenTSDB's second form
// 06 ‖ u16 BE seconds. ok is false for any other qualifier.
func ParseHistogramQualifier(q []byte) (offsetMs uint32, ok bool) {
	switch {
	case len(q) == 5 && q[0] == HistogramPrefix:
		return binary.BigEndian.Uint32(q[1:]), true
	case len(q) == 3 && q[0] == HistogramPrefix:
		return uint32(binary.BigEndian.Uint16(q[1:])) * 1000, true
	}
	return 0, false
}

// IsPromHistogramValue reports whether a histogram cell's value is one of
// promhbase's (codec HistogramCodecPrometheus); cells of other codecs, such
// as OpenTSDB's own histograms, are not Prometheus histograms.
func IsPromHistogramValue(v []byte) bool { return len(v) > 0 && v[0] == HistogramCodecPrometheus }

// AppendHistogramValue appends the value of a histogram cell holding h or,
// when h is nil, fh (see the layout above). It does not allocate when dst
// has room.
func AppendHistogramValue(dst []byte, h *histogram.Histogram, fh *histogram.FloatHistogram) []byte {
	dst = append(dst, HistogramCodecPrometheus)
	if h != nil {
		dst = append(dst, byte(h.CounterResetHint)&histHintMask)
		dst = binary.AppendVarint(dst, int64(h.Schema))
		dst = appendF64(dst, h.ZeroThreshold)
		dst = binary.AppendUvarint(dst, h.Count)
		dst = binary.AppendUvarint(dst, h.ZeroCount)
		dst = appendF64(dst, h.Sum)
		dst = appendSpans(dst, h.PositiveSpans)
		dst = appendSpans(dst, h.NegativeSpans)
		dst = appendDeltas(dst, h.PositiveBuckets)
		dst = appendDeltas(dst, h.NegativeBuckets)
		return appendFloats(dst, h.CustomValues)
	}
	dst = append(dst, byte(fh.CounterResetHint)&histHintMask|histFloatFlag)
	dst = binary.AppendVarint(dst, int64(fh.Schema))
	dst = appendF64(dst, fh.ZeroThreshold)
	dst = appendF64(dst, fh.Count)
	dst = appendF64(dst, fh.ZeroCount)
	dst = appendF64(dst, fh.Sum)
	dst = appendSpans(dst, fh.PositiveSpans)
	dst = appendSpans(dst, fh.NegativeSpans)
	dst = appendFloats(dst, fh.PositiveBuckets)
	dst = appendFloats(dst, fh.NegativeBuckets)
	return appendFloats(dst, fh.CustomValues)
}

func appendF64(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
}

func appendSpans(dst []byte, spans []histogram.Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendVarint(dst, int64(s.Offset))
		dst = binary.AppendUvarint(dst, uint64(s.Length))
	}
	return dst
}

func appendDeltas(dst []byte, ds []int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ds)))
	for _, d := range ds {
		dst = binary.AppendVarint(dst, d)
	}
	return dst
}

func appendFloats(dst []byte, fs []float64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(fs)))
	for _, f := range fs {
		dst = appendF64(dst, f)
	}
	return dst
}

// DecodeHistogramValue decodes a histogram cell's value into h (an integer
// histogram) or fh (a float histogram), whichever it holds, reusing the
// target's slices; isFloat says which. Every length is checked against the
// bytes left before anything is allocated. A value of another codec, an
// unknown version or a malformed payload gives an error wrapping
// [ErrMalformedCell].
func DecodeHistogramValue(b []byte, h *histogram.Histogram, fh *histogram.FloatHistogram) (isFloat bool, err error) {
	d := histDecoder{b: b}
	if len(b) < 2 {
		return false, fmt.Errorf("%w: histogram value of %d bytes", ErrMalformedCell, len(b))
	}
	if b[0] != HistogramCodecPrometheus {
		return false, fmt.Errorf("%w: histogram codec id %#02x, want %#02x", ErrMalformedCell, b[0], HistogramCodecPrometheus)
	}
	hdr := b[1]
	if hdr&(histVersionMask|histReserved) != 0 {
		return false, fmt.Errorf("%w: histogram header %#02x: unknown version or flags", ErrMalformedCell, hdr)
	}
	d.b = b[2:]
	hint := histogram.CounterResetHint(hdr & histHintMask)
	schema := d.varint()
	if schema < math.MinInt32 || schema > math.MaxInt32 {
		d.fail("schema %d", schema)
	}
	zt := d.f64()
	if hdr&histFloatFlag == 0 {
		*h = histogram.Histogram{
			CounterResetHint: hint, Schema: int32(schema), ZeroThreshold: zt,
			Count: d.uvarint(), ZeroCount: d.uvarint(), Sum: d.f64(),
			PositiveSpans: h.PositiveSpans, NegativeSpans: h.NegativeSpans,
			PositiveBuckets: h.PositiveBuckets, NegativeBuckets: h.NegativeBuckets,
			CustomValues: h.CustomValues,
		}
		h.PositiveSpans = d.spans(h.PositiveSpans)
		h.NegativeSpans = d.spans(h.NegativeSpans)
		h.PositiveBuckets = d.deltas(h.PositiveBuckets)
		h.NegativeBuckets = d.deltas(h.NegativeBuckets)
		h.CustomValues = d.floats(h.CustomValues)
		d.layout(h.Schema, h.PositiveSpans, h.NegativeSpans, len(h.PositiveBuckets), len(h.NegativeBuckets))
		return false, d.done()
	}
	*fh = histogram.FloatHistogram{
		CounterResetHint: hint, Schema: int32(schema), ZeroThreshold: zt,
		Count: d.f64(), ZeroCount: d.f64(), Sum: d.f64(),
		PositiveSpans: fh.PositiveSpans, NegativeSpans: fh.NegativeSpans,
		PositiveBuckets: fh.PositiveBuckets, NegativeBuckets: fh.NegativeBuckets,
		CustomValues: fh.CustomValues,
	}
	fh.PositiveSpans = d.spans(fh.PositiveSpans)
	fh.NegativeSpans = d.spans(fh.NegativeSpans)
	fh.PositiveBuckets = d.floats(fh.PositiveBuckets)
	fh.NegativeBuckets = d.floats(fh.NegativeBuckets)
	fh.CustomValues = d.floats(fh.CustomValues)
	d.layout(fh.Schema, fh.PositiveSpans, fh.NegativeSpans, len(fh.PositiveBuckets), len(fh.NegativeBuckets))
	return true, d.done()
}

// layout checks what Prometheus's chunk encodings rely on, and its
// receiver checks (so promhbase never stores anything else): a schema of
// -4..8 or -53 (custom bounds, with no negative buckets), span offsets
// after the first not negative, and as many buckets as the spans cover.
func (d *histDecoder) layout(schema int32, pos, neg []histogram.Span, nPos, nNeg int) {
	switch {
	case d.err != nil:
	case !histogram.IsValidSchema(schema):
		d.fail("schema %d is not one of -4..8 or -53", schema)
	case histogram.IsCustomBucketsSchema(schema) && (len(neg) > 0 || nNeg > 0):
		d.fail("custom-bucket histogram with negative buckets")
	default:
		for _, side := range []struct {
			spans []histogram.Span
			n     int
		}{{pos, nPos}, {neg, nNeg}} {
			covered := 0
			for i, sp := range side.spans {
				if i > 0 && sp.Offset < 0 {
					d.fail("span %d has offset %d: spans after the first go forward", i, sp.Offset)
					return
				}
				covered += int(sp.Length)
			}
			if covered != side.n {
				d.fail("%d buckets where the spans cover %d", side.n, covered)
				return
			}
		}
	}
}

// histDecoder reads a histogram payload; the first problem sticks and later
// reads return zeros.
type histDecoder struct {
	b   []byte
	err error
}

func (d *histDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: histogram value: %s", ErrMalformedCell, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *histDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// varint reads a zigzag-encoded signed varint, as binary.Varint does: the
// unsigned varint u holds |v|<<1, its low bit set for a negative v.
func (d *histDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *histDecoder) f64() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("%d bytes left, want a float64", len(d.b))
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// count reads a list length, at most the bytes left divided by the
// smallest size of one element.
func (d *histDecoder) count(minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail("list of %d elements in %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *histDecoder) spans(dst []histogram.Span) []histogram.Span {
	n := d.count(2)
	dst = grow(dst, n)
	for i := range dst {
		off := d.varint()
		l := d.uvarint()
		if off < math.MinInt32 || off > math.MaxInt32 || l > math.MaxUint32 {
			d.fail("span offset %d or length %d out of range", off, l)
		}
		dst[i] = histogram.Span{Offset: int32(off), Length: uint32(l)}
	}
	return dst
}

func (d *histDecoder) deltas(dst []int64) []int64 {
	n := d.count(1)
	dst = grow(dst, n)
	b := d.b
	for i := range dst {
		if len(b) > 0 && b[0] < 0x80 { // one byte: zigzag of -64..63
			dst[i] = int64(b[0]>>1) ^ -int64(b[0]&1)
			b = b[1:]
			continue
		}
		v, k := binary.Varint(b)
		if k <= 0 {
			d.fail("bad varint")
			return dst
		}
		dst[i], b = v, b[k:]
	}
	d.b = b
	return dst
}

func (d *histDecoder) floats(dst []float64) []float64 {
	n := d.count(8)
	dst = grow(dst, n)
	for i := range dst {
		dst[i] = d.f64()
	}
	return dst
}

func (d *histDecoder) done() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the custom values", len(d.b))
	}
	return d.err
}

// grow returns s resized to n, reusing its capacity; n == 0 gives nil so
// that an absent list decodes as it was encoded from a nil one.
func grow[T any](s []T, n int) []T {
	if n == 0 {
		return nil
	}
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
