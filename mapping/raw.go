package mapping

import (
	"encoding/binary"
	"fmt"
)

// RawPoint is one data point of a cell exactly as the cell stores it: its
// qualifier (2 bytes in the second form, 4 in the millisecond form) and its
// value bytes, which alias the cell's value. Compaction moves these bytes
// into a compacted column without decoding them, so that what OpenTSDB
// wrote (integers beyond 2^53, 2-byte second qualifiers, 8-byte doubles that
// a float32 holds, integral doubles) keeps every bit.
type RawPoint struct {
	// T is the point's time in Unix milliseconds.
	T int64
	// Qual holds the qualifier in its first QualLen bytes.
	Qual    [4]byte
	QualLen uint8
	// Value is the value bytes; it aliases the cell value.
	Value []byte
}

// Qualifier returns the point's qualifier bytes.
func (p *RawPoint) Qualifier() []byte { return p.Qual[:p.QualLen] }

// AppendRawPoints is [AppendPoints] without decoding the values: it appends
// the points of one cell to dst as stored, in the order the cell holds them,
// with the same validation (every value has a length readers accept) and
// the same OpenTSDB read-side fix-ups for a single point with a 2-byte
// qualifier: a 4-byte float stored on 8 bytes behind 4 zero bytes keeps its
// last 4 bytes, and the qualifier's length bits are set from the value's
// length (OpenTSDB's compaction writes the fixed form too). For every other
// point Qual and Value are the stored bytes. Odd-length qualifiers other
// than the append column add nothing.
func AppendRawPoints(dst []RawPoint, baseTime uint32, qualifier, value []byte) ([]RawPoint, error) {
	base := int64(baseTime) * 1000
	n := len(qualifier)
	switch {
	case n == 0:
		return dst, fmt.Errorf("%w: empty qualifier", ErrMalformedCell)
	case n&1 == 1:
		if IsAppendQualifier(qualifier) {
			return appendRawPairs(dst, base, value, false)
		}
		return dst, nil
	case n == 2:
		if InMilliseconds(qualifier[0]) {
			return dst, fmt.Errorf("%w: 2-byte qualifier %X has the millisecond marker", ErrMalformedCell, qualifier)
		}
		flags := qualifier[1] & FlagsMask
		if flags == FlagsFloat32 && len(value) == 8 {
			if value[0]|value[1]|value[2]|value[3] != 0 {
				return dst, fmt.Errorf("%w: qualifier %X: float flagged 4 bytes stored on 8 (%X) without 4 leading zero bytes",
					ErrMalformedCell, qualifier, value)
			}
			value = value[4:]
		}
		if _, ok := decodeFixed(flags, value); !ok {
			return dst, fmt.Errorf("%w: qualifier %X: %s", ErrMalformedCell, qualifier, badLength(flags, len(value)))
		}
		p := RawPoint{T: base + int64(binary.BigEndian.Uint16(qualifier)>>4)*1000, QualLen: 2, Value: value}
		p.Qual[0] = qualifier[0]
		p.Qual[1] = qualifier[1]&^LengthMask | byte(len(value)-1)
		return append(dst, p), nil
	case n == 4 && InMilliseconds(qualifier[0]):
		flags := qualifier[3] & FlagsMask
		if want := ValueLen(flags); len(value) != want {
			return dst, fmt.Errorf("%w: millisecond qualifier %X declares a %d-byte value, got %d bytes",
				ErrMalformedCell, qualifier, want, len(value))
		}
		if _, ok := decodeFixed(flags, value); !ok {
			return dst, fmt.Errorf("%w: millisecond qualifier %X: %s", ErrMalformedCell, qualifier, badLength(flags, len(value)))
		}
		p := RawPoint{T: base + int64((binary.BigEndian.Uint32(qualifier)&0x0FFFFFC0)>>6), QualLen: 4, Value: value}
		copy(p.Qual[:], qualifier)
		return append(dst, p), nil
	}
	// A compacted column: its qualifiers and values concatenated, then the
	// meta byte.
	start := len(dst)
	dst, err := appendRawPairs(dst, base, value, true, qualifier...)
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// appendRawPairs walks (qualifier, value) pairs. With compacted, the
// qualifiers come from quals and the values from b, which must end with one
// meta byte (0x00 or 0x01); otherwise b holds the pairs interleaved (the
// append column).
func appendRawPairs(dst []RawPoint, base int64, b []byte, compacted bool, quals ...byte) ([]RawPoint, error) {
	start := len(dst)
	q, vi := b, 0
	if compacted {
		q = quals
	}
	for qi := 0; qi < len(q); {
		off, flags, n, err := ParseQualifier(q[qi:])
		if err != nil {
			return dst[:start], fmt.Errorf("%w: point %d at byte %d", err, len(dst)-start, qi)
		}
		p := RawPoint{T: base + int64(off), QualLen: uint8(n)}
		copy(p.Qual[:], q[qi:qi+n])
		qi += n
		if !compacted {
			vi = qi
		}
		vlen := ValueLen(flags)
		if len(b)-vi < vlen {
			return dst[:start], fmt.Errorf("%w: point %d (flags %#x) needs %d value bytes at byte %d, value has %d bytes",
				ErrMalformedCell, len(dst)-start, flags, vlen, vi, len(b))
		}
		p.Value = b[vi : vi+vlen : vi+vlen]
		if _, ok := decodeFixed(flags, p.Value); !ok {
			return dst[:start], fmt.Errorf("%w: point %d: %s", ErrMalformedCell, len(dst)-start, badLength(flags, vlen))
		}
		vi += vlen
		if !compacted {
			qi = vi
		}
		dst = append(dst, p)
	}
	if compacted {
		if len(b) != vi+1 {
			return dst[:start], fmt.Errorf("%w: compacted column of %d points: values take %d bytes, so the value should be %d bytes with the meta byte, got %d",
				ErrMalformedCell, len(dst)-start, vi, vi+1, len(b))
		}
		if meta := b[vi]; meta > MetaMixed {
			return dst[:start], fmt.Errorf("%w: compacted column: meta byte %#02x, want 0x00 or 0x01", ErrMalformedCell, meta)
		}
	}
	return dst, nil
}

// AppendCompactedRaw builds OpenTSDB's compacted column from points as
// stored, sorted by T with no T repeated (as [RawMerger.Merge] returns
// them): each point's qualifier bytes are appended to qualDst and its value
// bytes to valDst, unchanged; when there is more than one point the meta
// byte follows the values: 0x01 when second (2-byte) and millisecond
// (4-byte) qualifiers are mixed, else 0x00. One point gives an ordinary
// single-point cell (no meta byte) and no points give nothing. This is the
// column OpenTSDB's own compaction builds from the same cells.
func AppendCompactedRaw(qualDst, valDst []byte, pts []RawPoint) (qual, val []byte) {
	var seconds, millis bool
	for i := range pts {
		p := &pts[i]
		qualDst = append(qualDst, p.Qualifier()...)
		valDst = append(valDst, p.Value...)
		if p.QualLen == 2 {
			seconds = true
		} else {
			millis = true
		}
	}
	if len(pts) > 1 {
		meta := MetaPlain
		if seconds && millis {
			meta = MetaMixed
		}
		valDst = append(valDst, meta)
	}
	return qualDst, valDst
}
