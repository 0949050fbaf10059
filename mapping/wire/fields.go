package wire

import (
	"fmt"
	"math"

	"github.com/promhbase/promhbase/mapping"
)

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// field is one field of a protobuf message as readField reads it:
//
//	tag   varint: num<<3 | wt (num >= 1)
//	value wireVarint: a varint; wireFixed64: 8 bytes little-endian;
//	      wireFixed32: 4 bytes little-endian; wireBytes: a varint length,
//	      then that many bytes
//
// It is 32 bytes so that the compiler keeps it in registers: a larger
// struct goes through memory, which costs the decoders' loops a quarter
// of their time.
type field struct {
	tag uint64 // num<<3 | wt
	// b is the value's bytes: a length-delimited field's contents, the 8
	// or 4 bytes of a fixed64 or fixed32, a varint's bytes. It aliases
	// the message, its capacity cut to its length.
	b []byte
}

// num is the field's number.
func (f field) num() uint64 { return f.tag >> 3 }

// wt is the field's wire type.
func (f field) wt() int { return int(f.tag & 7) }

// is reports whether the field is number num of wire type wt.
func (f field) is(num uint64, wt int) bool { return f.tag == num<<3|uint64(wt) }

// uint is the value of a varint field (readField has checked it).
func (f field) uint() uint64 {
	v, _ := readVarint(f.b)
	return v
}

// float64 is the value of a fixed64 field read as a double.
func (f field) float64() float64 { return math.Float64frombits(le64(f.b)) }

// readField reads the field at the start of b, a part of a message named
// msg (for errors), and returns it and its length n, tag included, without
// copying and without allocating unless it is malformed. Every length is
// checked before slicing. The decoders walk a message with it field by
// field and skip the unknown fields by ignoring them:
//
//	for rest := msg; len(rest) > 0; {
//		f, n, err := readField(rest, "Name")
//		if err != nil {
//			return err
//		}
//		rest = rest[n:]
//		... f.num(), f.wt(), f.uint(), f.float64(), f.b ...
//	}
//
// Wire types 3 and 4 (groups), 6 and 7 are malformed. The error wraps
// ErrMalformed and names msg and the field.
func readField(b []byte, msg string) (f field, n int, err error) {
	var tag uint64
	n = 1
	if len(b) > 0 && b[0] < 0x80 { // the common one-byte tag, inline
		tag = uint64(b[0])
	} else {
		tag, n = readVarintSlow(b)
	}
	if n <= 0 || tag>>3 == 0 {
		return f, 0, fieldError(msg, 0, badTag, 0, 0)
	}
	f.tag = tag
	var start, end int
	switch f.wt() {
	case wireVarint:
		_, m := readVarint(b[n:])
		if m <= 0 {
			return f, 0, fieldError(msg, tag, badVarint, 0, 0)
		}
		start, end = n, n+m
	case wireFixed64:
		if len(b)-n < 8 {
			return f, 0, fieldError(msg, tag, cutFixed, 8, uint64(len(b)-n))
		}
		start, end = n, n+8
	case wireBytes:
		var l uint64
		m := 1
		if n < len(b) && b[n] < 0x80 { // a length under 128, inline
			l = uint64(b[n])
		} else if l, m = readVarintSlow(b[n:]); m <= 0 {
			return f, 0, fieldError(msg, tag, badVarint, 0, 0)
		}
		n += m
		if l > uint64(len(b)-n) {
			return f, 0, fieldError(msg, tag, pastEnd, l, uint64(len(b)-n))
		}
		start, end = n, n+int(l)
	case wireFixed32:
		if len(b)-n < 4 {
			return f, 0, fieldError(msg, tag, cutFixed, 4, uint64(len(b)-n))
		}
		start, end = n, n+4
	default:
		return f, 0, fieldError(msg, tag, badWireType, 0, 0)
	}
	f.b = b[start:end:end]
	return f, end, nil
}

// What is wrong with a field, for fieldError.
const (
	badTag      = iota // the tag is not a varint or its number is 0
	badVarint          // a varint value or length runs past 10 bytes or the end
	cutFixed           // a fixed64 or fixed32 value of x bytes has only y left
	pastEnd            // a length x runs past the y bytes left
	badWireType        // the wire type is none of 0, 1, 2, 5
)

// fieldError is readField's error about the field of tag in msg. It is
// kept out of readField, whose hot path would otherwise pay for the
// stack frame the formatting needs.
//
//go:noinline
func fieldError(msg string, tag uint64, problem int, x, y uint64) error {
	var what string
	switch problem {
	case badTag:
		return fmt.Errorf("%w: bad tag in %s", ErrMalformed, msg)
	case badVarint:
		what = "bad varint"
	case cutFixed:
		what = fmt.Sprintf("%d-byte value cut at %d bytes", x, y)
	case pastEnd:
		what = fmt.Sprintf("length %d past the end (%d bytes left)", x, y)
	default:
		what = fmt.Sprintf("unsupported wire type %d", tag&7)
	}
	return fmt.Errorf("%w: %s field %d: %s", ErrMalformed, msg, tag>>3, what)
}

// readLenBytes reads a bare length-delimited value at the start of b (a
// varint length and that many bytes, no tag), its capacity cut to its
// length, and the n bytes it takes; n <= 0 when the length is bad or runs
// past the end.
func readLenBytes(b []byte) ([]byte, int) {
	l, n := readVarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, -1
	}
	end := n + int(l)
	return b[n:end:end], end
}

// addShortSample adds to s.Samples the Sample field at the start of b if
// it is one as Prometheus encodes it: 0x12 len 0x09 value(8) 0x10
// timestamp-varint, the length under 128. It returns the field's length, 0
// when b does not start with one.
func (s *Series) addShortSample(b []byte) int {
	if len(b) > 12 && b[0] == 0x12 && b[1] < 0x80 && b[2] == 0x09 && b[11] == 0x10 {
		n := 2 + int(b[1])
		if n <= len(b) && n > 12 {
			if t, m := readVarint(b[12:n]); m == n-12 {
				s.Samples = append(s.Samples, mapping.Point{T: int64(t), V: math.Float64frombits(le64(b[3:11]))})
				return n
			}
		}
	}
	return 0
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// readVarint decodes a varint; n <= 0 when it is truncated or too long.
func readVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return readVarintSlow(b)
}

func readVarintSlow(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		v |= uint64(c&0x7F) << (7 * i)
		if c < 0x80 {
			if i == 9 && c > 1 {
				return 0, -1
			}
			return v, i + 1
		}
	}
	return 0, -1
}

// zigzag decodes a sint32 or sint64 varint.
func zigzag(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }

// appendPackedUint32s appends the varints of a packed repeated uint32
// field's bytes to dst.
func appendPackedUint32s(dst []uint32, msg []byte) ([]uint32, error) {
	for i := 0; i < len(msg); {
		if c := msg[i]; c < 0x80 {
			dst = append(dst, uint32(c))
			i++
			continue
		}
		if i+1 < len(msg) && msg[i+1] < 0x80 {
			dst = append(dst, uint32(msg[i]&0x7F)|uint32(msg[i+1])<<7)
			i += 2
			continue
		}
		v, n := readVarintSlow(msg[i:])
		if n <= 0 || v > math.MaxUint32 {
			return dst, fmt.Errorf("bad packed uint32")
		}
		dst = append(dst, uint32(v))
		i += n
	}
	return dst, nil
}

// appendUint32s appends a repeated uint32 field, packed (wire type 2) or
// one varint, to dst.
func appendUint32s(dst []uint32, f field) ([]uint32, error) {
	switch f.wt() {
	case wireVarint:
		v := f.uint()
		if v > math.MaxUint32 {
			return dst, fmt.Errorf("uint32 %d out of range", v)
		}
		return append(dst, uint32(v)), nil
	case wireBytes:
		return appendPackedUint32s(dst, f.b)
	}
	return dst, fmt.Errorf("wire type %d for a repeated uint32", f.wt())
}

// appendSint64s appends a repeated sint64 field, packed or one varint, to
// dst.
func appendSint64s(dst []int64, f field) ([]int64, error) {
	switch f.wt() {
	case wireVarint:
		return append(dst, zigzag(f.uint())), nil
	case wireBytes:
		for msg := f.b; len(msg) > 0; {
			v, n := readVarint(msg)
			if n <= 0 {
				return dst, fmt.Errorf("bad packed varint")
			}
			dst = append(dst, zigzag(v))
			msg = msg[n:]
		}
		return dst, nil
	}
	return dst, fmt.Errorf("wire type %d for a repeated sint64", f.wt())
}

// appendDoubles appends a repeated double field, packed or one fixed64, to
// dst.
func appendDoubles(dst []float64, f field) ([]float64, error) {
	switch f.wt() {
	case wireFixed64:
		return append(dst, f.float64()), nil
	case wireBytes:
		msg := f.b
		if len(msg)%8 != 0 {
			return dst, fmt.Errorf("packed doubles of %d bytes", len(msg))
		}
		for ; len(msg) > 0; msg = msg[8:] {
			dst = append(dst, math.Float64frombits(le64(msg)))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("wire type %d for a repeated double", f.wt())
}
