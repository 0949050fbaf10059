package adapter

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/query"
)

// floatOnly reports whether every chunk of cs is an XOR chunk: a series of
// floats only, which appendFloatSeries encodes.
func floatOnly(cs *query.ChunkSeries) bool {
	for _, c := range cs.Chunks {
		if c.Enc != chunkenc.EncXOR {
			return false
		}
	}
	return true
}

// maxFloatSeriesBytes bounds what appendFloatSeries appends for cs: the
// field's tag and length, the labels, and at most 22 bytes a sample (tag,
// length, the value's tag and 8 bytes, the timestamp's tag and 10).
func maxFloatSeriesBytes(cs *query.ChunkSeries) int {
	n := 1 + 5 + 22*cs.Samples
	cs.Labels.Range(func(l labels.Label) { n += 3*(1+5) + len(l.Name) + len(l.Value) })
	return n
}

// appendFloatSeries appends cs, a series of floats only (floatOnly), to
// dst as a QueryResult's timeseries field (1), with the bytes the
// generated code of prompb.TimeSeries{Labels, Samples} marshals, decoding
// the chunks straight into them instead of into a []prompb.Sample first:
//
//	0x0a uvarint(len) TimeSeries
//	TimeSeries: per label   0x0a uvarint(len) [0x0a uvarint(len) name] [0x12 uvarint(len) value]
//	            per sample  0x12 len [0x09 value as 8 bytes little-endian] [0x10 uvarint(timestamp)]
//
// A field holding its zero value is left out, as the generated code does
// (a value of 0 or -0, a timestamp of 0, an empty name or value). The
// series' length goes into 5 bytes kept for it, and the series moves up
// when it takes fewer. it is reused and returned.
func appendFloatSeries(dst []byte, cs *query.ChunkSeries, it chunkenc.Iterator) ([]byte, chunkenc.Iterator, error) {
	dst = append(dst, 0x0a, 0, 0, 0, 0, 0)
	start := len(dst)
	cs.Labels.Range(func(l labels.Label) {
		n := 0
		if len(l.Name) > 0 {
			n += 1 + uvarintLen(uint64(len(l.Name))) + len(l.Name)
		}
		if len(l.Value) > 0 {
			n += 1 + uvarintLen(uint64(len(l.Value))) + len(l.Value)
		}
		dst = append(dst, 0x0a)
		dst = binary.AppendUvarint(dst, uint64(n))
		if len(l.Name) > 0 {
			dst = append(dst, 0x0a)
			dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
			dst = append(dst, l.Name...)
		}
		if len(l.Value) > 0 {
			dst = append(dst, 0x12)
			dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
			dst = append(dst, l.Value...)
		}
	})
	for _, c := range cs.Chunks {
		var err error
		if it, err = c.Iterator(it); err != nil {
			return dst, it, fmt.Errorf("series %s: %w", cs.Labels, err)
		}
		for vt := it.Next(); vt == chunkenc.ValFloat; vt = it.Next() {
			t, v := it.At()
			n := 0
			if v != 0 {
				n += 9
			}
			if t != 0 {
				n += 1 + uvarintLen(uint64(t))
			}
			dst = append(dst, 0x12, byte(n)) // n < 128
			if v != 0 {
				dst = append(dst, 0x09)
				dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
			}
			if t != 0 {
				dst = append(dst, 0x10)
				dst = binary.AppendUvarint(dst, uint64(t))
			}
		}
		if err := it.Err(); err != nil {
			return dst, it, fmt.Errorf("series %s: chunk [%d, %d]: %w", cs.Labels, c.MinT, c.MaxT, err)
		}
	}
	return putLength(dst, start-5, 5), it, nil
}

// putLength writes, at dst[at:], the uvarint length of the bytes that
// follow the reserved bytes kept there for it (at most reserved long), and
// moves those bytes up to follow it: a protobuf field's length, known only
// once its contents are appended.
func putLength(dst []byte, at, reserved int) []byte {
	prefix := binary.AppendUvarint(dst[at:at], uint64(len(dst)-at-reserved))
	copy(dst[at+len(prefix):], dst[at+reserved:])
	return dst[:len(dst)-(reserved-len(prefix))]
}
