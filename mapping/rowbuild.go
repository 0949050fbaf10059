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

// EncodedSample is a float sample whose cell the sender chose, as an
// OpenTSDB TSD chooses it for a put: the resolution it was sent in (a
// 2-byte second qualifier, or a 4-byte millisecond one) and the value's
// type and width (an integer on 1, 2, 4 or 8 bytes, a 4- or 8-byte
// float). promhbase's own samples are always in milliseconds and in their
// shortest exact form (AppendSampleCell); a put's are stored as the TSD
// stores them, so that both write the same bytes.
type EncodedSample struct {
	// T is the time in milliseconds; a multiple of 1000 when Seconds.
	T int64
	// Seconds selects the 2-byte second qualifier.
	Seconds bool
	// Flags are the qualifier's four flag bits: FlagsInt8, FlagsInt16,
	// FlagsInt32, FlagsInt64, FlagsFloat32 or FlagsFloat64.
	Flags byte
	// Bits holds the value's ValueLen(Flags) bytes, big-endian, in its low
	// bytes: a two's-complement integer or IEEE-754 bits.
	Bits uint64
}

// AppendEncodedCell appends the cell of s in the row of base (seconds,
// see HourBase) to dst: the qualifier (2 bytes oooooooo oooofff f: the
// offset in seconds on 12 bits and the flags; or the 4-byte millisecond
// one, see AppendMsQualifier), then the value's ValueLen(s.Flags) bytes.
// It returns the qualifier and the value, each capacity-clipped within
// dst's new bytes; it does not allocate when dst has SampleCellBytes of
// room.
func AppendEncodedCell(dst []byte, base int64, s EncodedSample) (qual, val []byte) {
	at := len(dst)
	if s.Seconds {
		dst = binary.BigEndian.AppendUint16(dst, uint16(s.T/1000-base)<<4|uint16(s.Flags&FlagsMask))
	} else {
		dst = AppendMsQualifier(dst, uint32(s.T-base*1000), s.Flags)
	}
	q := len(dst)
	n := ValueLen(s.Flags)
	var word [8]byte
	binary.BigEndian.PutUint64(word[:], s.Bits)
	dst = append(dst, word[8-n:]...)
	return dst[at:q:q], dst[q:len(dst):len(dst)]
}
