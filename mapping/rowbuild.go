package mapping

import "encoding/binary"

// The row builder: where a sample goes in the data table. Every package
// that writes rows or reads their base time asks these functions, so the
// hour rows and qualifier widths are decided here only.

// HourBase returns the base time (Unix seconds, a multiple of
// MaxTimespan) of the row that holds a sample at tMs milliseconds. tMs must
// be at least 0 (see SplitMs for the checked form).
func HourBase(tMs int64) int64 {
	sec := tMs / 1000
	return sec - sec%MaxTimespan
}

// RowKeyBytes is the length of the row key of a series whose metric UID
// and tag pairs take metric and tags bytes: salt ‖ metric ‖ base time ‖
// tags.
func (l Layout) RowKeyBytes(metric, tags int) int {
	return l.SaltWidth + metric + TimestampBytes + tags
}

// BaseTimeOf returns the base time of a row key of this layout (Unix
// seconds); ok is false when the key is too short to hold one.
func (l Layout) BaseTimeOf(key []byte) (base uint32, ok bool) {
	off := l.SaltWidth + l.MetricWidth
	if len(key) < off+TimestampBytes {
		return 0, false
	}
	return binary.BigEndian.Uint32(key[off:]), true
}

// MetricOf returns the metric UID of a row key of this layout, nil when
// the key is too short to hold one.
func (l Layout) MetricOf(key []byte) []byte {
	if len(key) < l.SaltWidth+l.MetricWidth {
		return nil
	}
	return key[l.SaltWidth : l.SaltWidth+l.MetricWidth]
}

// SampleCellBytes is the most bytes AppendSampleCell appends: a 4-byte
// qualifier and an 8-byte value.
const SampleCellBytes = 12

// AppendSampleCell appends the cell of a float sample at tMs (ms) in the
// row of base (seconds, see HourBase) to dst: the 4-byte millisecond
// qualifier, then the value in its shortest exact form (see AppendValue).
// It returns the qualifier and the value, each capacity-clipped within
// dst's new bytes; it does not allocate when dst has SampleCellBytes of
// room.
func AppendSampleCell(dst []byte, base, tMs int64, v float64) (qual, val []byte) {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, flags := AppendValue(dst, v)
	AppendMsQualifier(dst[at:at], uint32(tMs-base*1000), flags)
	return dst[at : at+4 : at+4], dst[at+4 : len(dst) : len(dst)]
}

// AppendHistogramCell appends the cell of a native histogram sample at
// tMs (ms) in the row of base (seconds): its 5-byte qualifier (see
// AppendHistogramQualifier), then value, an encoded histogram (see
// AppendHistogramValue). It returns the qualifier and the value,
// capacity-clipped within dst's new bytes.
func AppendHistogramCell(dst []byte, base, tMs int64, value []byte) (qual, val []byte) {
	at := len(dst)
	dst = AppendHistogramQualifier(dst, uint32(tMs-base*1000))
	q := len(dst)
	dst = append(dst, value...)
	return dst[at:q:q], dst[q:len(dst):len(dst)]
}
