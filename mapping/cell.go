package mapping

import (
	"encoding/binary"
	"fmt"
)

// Point is one decoded data point.
type Point struct {
	T int64   // Unix milliseconds
	V float64 // the value; integers are converted to float64
}

// AppendPoints decodes one cell of a tsdb row, given the row's base time in
// seconds, appends its points to dst in the order the cell stores them and
// returns the extended slice. It accepts every data-point column OpenTSDB 2.4
// writes:
//
//   - a single point with a 2-byte second qualifier. OpenTSDB's read-side
//     fix-ups apply to these (and only these): a value flagged as a 4-byte
//     float (0xB) but stored on 8 bytes whose first 4 are zero is the float
//     in the last 4 bytes, and otherwise the value's length wins over the
//     length bits of the qualifier (the float bit is kept).
//   - a single point with a 4-byte millisecond qualifier (first nibble 0xF),
//     taken as is: the value must have the length its flags declare.
//   - a compacted column: 2- and 4-byte qualifiers concatenated (a 4-byte
//     qualifier whose first nibble is not 0xF is two second qualifiers), the
//     values concatenated in the same order, then one meta byte, 0x00 or
//     0x01 (mixed second and millisecond qualifiers). Only columns of more
//     than one point are compacted, so a compacted column always has it.
//   - the append column, qualifier 0x05 0x00 0x00, whose value is
//     (qualifier, value) pairs concatenated in arrival order with no meta
//     byte. Points come back in that order, duplicates included; OpenTSDB
//     keeps the last one appended for a timestamp.
//
// Annotations (prefix 0x01), histograms (0x06) and every other odd-length
// qualifier are not data points: AppendPoints returns dst unchanged and a nil
// error. Within a column every value must be an integer of 1, 2, 4 or 8
// bytes or a float of 4 or 8. Offsets are not range-checked: like OpenTSDB,
// AppendPoints adds whatever a qualifier holds (up to 4095 s or 4,194,303
// ms) to the base time, so a corrupt offset can put a point past the row's
// hour.
//
// A malformed cell gives an error wrapping [ErrMalformedCell] that names the
// problem, and dst with its original length. AppendPoints never panics, and
// unless it fails it does not allocate when dst has room for the cell's
// points.
func AppendPoints(dst []Point, baseTime uint32, qualifier, value []byte) ([]Point, error) {
	base := int64(baseTime) * 1000
	n := len(qualifier)
	switch {
	case n == 0:
		return dst, fmt.Errorf("%w: empty qualifier", ErrMalformedCell)
	case n&1 == 1:
		if IsAppendQualifier(qualifier) {
			return appendAppendColumn(dst, base, value)
		}
		return dst, nil
	case n == 2:
		return appendSecondCell(dst, base, qualifier, value)
	case n == 4 && InMilliseconds(qualifier[0]):
		u := binary.BigEndian.Uint32(qualifier)
		flags := byte(u) & FlagsMask
		if want := ValueLen(flags); len(value) != want {
			return dst, fmt.Errorf("%w: millisecond qualifier %X declares a %d-byte value, got %d bytes",
				ErrMalformedCell, qualifier, want, len(value))
		}
		v, ok := decodeFixed(flags, value)
		if !ok {
			return dst, fmt.Errorf("%w: millisecond qualifier %X: %s", ErrMalformedCell, qualifier, badLength(flags, len(value)))
		}
		return append(dst, Point{T: base + int64((u&0x0FFFFFC0)>>6), V: v}), nil
	}
	return appendCompacted(dst, base, qualifier, value)
}

// appendSecondCell decodes a single point with a 2-byte qualifier, applying
// OpenTSDB's fix-ups.
func appendSecondCell(dst []Point, base int64, q, value []byte) ([]Point, error) {
	if InMilliseconds(q[0]) {
		return dst, fmt.Errorf("%w: 2-byte qualifier %X has the millisecond marker", ErrMalformedCell, q)
	}
	flags := q[1] & FlagsMask
	if flags == FlagsFloat32 && len(value) == 8 {
		// Old TSDs stored 4-byte floats on 8 bytes behind 4 zero bytes.
		if value[0]|value[1]|value[2]|value[3] != 0 {
			return dst, fmt.Errorf("%w: qualifier %X: float flagged 4 bytes stored on 8 (%X) without 4 leading zero bytes",
				ErrMalformedCell, q, value)
		}
		value = value[4:]
	}
	v, ok := decodeFixed(flags, value)
	if !ok {
		return dst, fmt.Errorf("%w: qualifier %X: %s", ErrMalformedCell, q, badLength(flags, len(value)))
	}
	return append(dst, Point{T: base + int64(binary.BigEndian.Uint16(q)>>4)*1000, V: v}), nil
}

// appendCompacted decodes a compacted column of two or more points.
func appendCompacted(dst []Point, base int64, q, value []byte) ([]Point, error) {
	start := len(dst)
	vi := 0
	for qi := 0; qi < len(q); {
		var off int64
		var flags byte
		if InMilliseconds(q[qi]) {
			if len(q)-qi < 4 {
				return dst[:start], fmt.Errorf("%w: compacted qualifier of %d bytes ends inside a millisecond qualifier at byte %d",
					ErrMalformedCell, len(q), qi)
			}
			u := binary.BigEndian.Uint32(q[qi:])
			off, flags = int64((u&0x0FFFFFC0)>>6), byte(u)&FlagsMask
			qi += 4
		} else {
			if len(q)-qi < 2 {
				return dst[:start], fmt.Errorf("%w: compacted qualifier of %d bytes ends inside a second qualifier at byte %d",
					ErrMalformedCell, len(q), qi)
			}
			u := binary.BigEndian.Uint16(q[qi:])
			off, flags = int64(u>>4)*1000, byte(u)&FlagsMask
			qi += 2
		}
		vlen := ValueLen(flags)
		if len(value)-vi < vlen {
			return dst[:start], fmt.Errorf("%w: compacted column: point %d (flags %#x) needs %d value bytes at byte %d, value has %d bytes",
				ErrMalformedCell, len(dst)-start, flags, vlen, vi, len(value))
		}
		v, ok := decodeFixed(flags, value[vi:vi+vlen])
		if !ok {
			return dst[:start], fmt.Errorf("%w: compacted column: point %d: %s", ErrMalformedCell, len(dst)-start, badLength(flags, vlen))
		}
		vi += vlen
		dst = append(dst, Point{T: base + off, V: v})
	}
	if len(value) != vi+1 {
		return dst[:start], fmt.Errorf("%w: compacted column of %d points: values take %d bytes, so the value should be %d bytes with the meta byte, got %d",
			ErrMalformedCell, len(dst)-start, vi, vi+1, len(value))
	}
	if meta := value[vi]; meta > MetaMixed {
		return dst[:start], fmt.Errorf("%w: compacted column: meta byte %#02x, want 0x00 or 0x01", ErrMalformedCell, meta)
	}
	return dst, nil
}

// appendAppendColumn decodes the value of the append column: (qualifier,
// value) pairs, no meta byte.
func appendAppendColumn(dst []Point, base int64, b []byte) ([]Point, error) {
	start := len(dst)
	for i := 0; i < len(b); {
		off, flags, n, err := ParseQualifier(b[i:])
		if err != nil {
			kind, qlen := "second", 2
			if InMilliseconds(b[i]) {
				kind, qlen = "millisecond", 4
			}
			return dst[:start], fmt.Errorf("%w: append column of %d bytes: point %d: %s qualifier %X cut at %d bytes, want %d",
				ErrMalformedCell, len(b), len(dst)-start, kind, b[i:], len(b)-i, qlen)
		}
		i += n
		vlen := ValueLen(flags)
		if len(b)-i < vlen {
			return dst[:start], fmt.Errorf("%w: append column of %d bytes: point %d (flags %#x) needs %d value bytes at byte %d",
				ErrMalformedCell, len(b), len(dst)-start, flags, vlen, i)
		}
		v, ok := decodeFixed(flags, b[i:i+vlen])
		if !ok {
			return dst[:start], fmt.Errorf("%w: append column: point %d: %s", ErrMalformedCell, len(dst)-start, badLength(flags, vlen))
		}
		i += vlen
		dst = append(dst, Point{T: base + int64(off), V: v})
	}
	return dst, nil
}

// AppendCompacted builds the column OpenTSDB's compaction would build from
// promhbase's own cells: for each point the 4-byte millisecond qualifier
// (see [AppendMsQualifier]) is appended to qualDst and its value (see
// [AppendValue]) to valDst; when there is more than one point, the meta byte
// 0x00 follows the values (all qualifiers are in milliseconds, so the column
// is never mixed). A single point gives an ordinary single-point cell and no
// points give nothing.
//
// pts must be sorted by T with no T repeated, and every T must lie in the
// row's hour, [baseTime*1000, baseTime*1000+3,600,000); AppendCompacted does
// not check this. [AppendPoints] on the result returns pts bit for bit. It
// does not allocate when the buffers have room (4 and at most 8+1 bytes per
// point).
func AppendCompacted(qualDst, valDst []byte, baseTime uint32, pts []Point) (qual, val []byte) {
	base := int64(baseTime) * 1000
	for _, p := range pts {
		var flags byte
		valDst, flags = AppendValue(valDst, p.V)
		qualDst = AppendMsQualifier(qualDst, uint32(p.T-base), flags)
	}
	if len(pts) > 1 {
		valDst = append(valDst, MetaPlain)
	}
	return qualDst, valDst
}
