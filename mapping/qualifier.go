package mapping

import (
	"encoding/binary"
	"fmt"
)

// Qualifier constants, as in OpenTSDB's Const, AppendDataPoints, Annotation
// and HistogramDataPoint.
const (
	// MsByteFlag is the high nibble that marks the first byte of a 4-byte
	// millisecond qualifier.
	MsByteFlag byte = 0xF0
	// MsFlag is the same marker on the whole 4-byte qualifier.
	MsFlag uint32 = 0xF0000000
	// MaxOffsetMs is one past the largest millisecond offset in a row.
	MaxOffsetMs = MaxTimespan * 1000
	// MetaMixed is the meta byte of a compacted column that mixes second
	// and millisecond qualifiers; MetaPlain (0x00) is that of any other
	// compacted column of more than one point.
	MetaMixed byte = 0x01
	MetaPlain byte = 0x00

	// AnnotationPrefix, AppendPrefix and HistogramPrefix are the first
	// bytes of the odd-length qualifiers that are not single data points.
	AnnotationPrefix byte = 0x01
	AppendPrefix     byte = 0x05
	HistogramPrefix  byte = 0x06
)

// AppendColumnQualifier returns the qualifier of OpenTSDB's append column,
// 0x05 0x00 0x00. Each call returns a new slice.
func AppendColumnQualifier() []byte { return []byte{AppendPrefix, 0, 0} }

// IsAppendQualifier reports whether q is the append column's qualifier.
func IsAppendQualifier(q []byte) bool {
	return len(q) == 3 && q[0] == AppendPrefix && q[1] == 0 && q[2] == 0
}

// InMilliseconds reports whether b, the first byte of a data-point
// qualifier, starts a 4-byte millisecond qualifier.
func InMilliseconds(b byte) bool { return b&MsByteFlag == MsByteFlag }

// AppendMsQualifier appends the 4-byte millisecond qualifier
//
//	1111oooo oooooooo oooooooo oo00ffff
//
// to dst: the marker 0xF, offsetMs (the point's milliseconds past the row's
// base time, 0..3,599,999) on 22 bits, two zero bits and the four flag bits
// returned by [AppendValue]. Bits of offsetMs above 22 and of flags above 4
// are dropped, so the result is always a well-formed millisecond qualifier.
// It does not allocate when dst has room for 4 more bytes.
func AppendMsQualifier(dst []byte, offsetMs uint32, flags byte) []byte {
	return binary.BigEndian.AppendUint32(dst, MsFlag|(offsetMs&0x3FFFFF)<<6|uint32(flags&FlagsMask))
}

// ParseQualifier decodes the data-point qualifier at the start of q: a
// 4-byte millisecond qualifier when the first byte's high nibble is 0xF, else
// a 2-byte second qualifier. It returns the offset from the row's base time
// in milliseconds, the flags and the qualifier's length n. It returns an
// error wrapping [ErrMalformedCell] when q is shorter than n.
func ParseQualifier(q []byte) (offsetMs uint32, flags byte, n int, err error) {
	if len(q) >= 1 && InMilliseconds(q[0]) {
		if len(q) < 4 {
			return 0, 0, 0, fmt.Errorf("%w: millisecond qualifier %X cut at %d bytes", ErrMalformedCell, q, len(q))
		}
		u := binary.BigEndian.Uint32(q)
		return (u & 0x0FFFFFC0) >> 6, byte(u) & FlagsMask, 4, nil
	}
	if len(q) < 2 {
		return 0, 0, 0, fmt.Errorf("%w: second qualifier %X cut at %d bytes", ErrMalformedCell, q, len(q))
	}
	u := binary.BigEndian.Uint16(q)
	return uint32(u>>4) * 1000, byte(u) & FlagsMask, 2, nil
}

// MayHoldFirstInstant reports whether a data row's cell of qualifier q may
// hold a sample at the row's base time (offset 0): a data point or a
// compacted column with a point at offset 0, a histogram at offset 0, or
// the append column (whose points are in its value). An annotation, any
// other odd-length qualifier and a malformed one hold no sample there.
// A single point's qualifier is read inline (the write path asks of every
// row).
func MayHoldFirstInstant(q []byte) bool {
	if len(q) == 4 {
		if u := binary.BigEndian.Uint32(q); u&MsFlag == MsFlag { // 1111oooo oooooooo oooooooo oo00ffff
			return u&0x0FFFFFC0 == 0
		}
	}
	return mayHoldFirstInstant(q)
}

// mayHoldFirstInstant is MayHoldFirstInstant past a millisecond point.
func mayHoldFirstInstant(q []byte) bool {
	switch {
	case len(q) == 4 && InMilliseconds(q[0]):
		return false // not at offset 0 (MayHoldFirstInstant)
	case len(q) == 2:
		return q[0] == 0 && q[1]&0xF0 == 0
	case len(q)&1 == 1:
		if off, ok := ParseHistogramQualifier(q); ok {
			return off == 0
		}
		return IsAppendQualifier(q)
	}
	for len(q) > 0 { // a compacted column
		off, _, n, err := ParseQualifier(q)
		if err != nil {
			return false
		}
		if off == 0 {
			return true
		}
		q = q[n:]
	}
	return false
}
