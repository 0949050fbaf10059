package mapping

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Flag bits of a data-point qualifier (the low nibble of its last byte), as
// in OpenTSDB's Const.
const (
	// FlagFloat marks an IEEE-754 value; without it the value is a signed
	// big-endian integer.
	FlagFloat byte = 0x8
	// LengthMask selects the value length minus one.
	LengthMask byte = 0x7
	// FlagsMask selects all four flag bits.
	FlagsMask byte = 0xF

	// FlagsInt8, FlagsInt16, FlagsInt32 and FlagsInt64 are the flags of
	// 1-, 2-, 4- and 8-byte integers.
	FlagsInt8  byte = 0x0
	FlagsInt16 byte = 0x1
	FlagsInt32 byte = 0x3
	FlagsInt64 byte = 0x7
	// FlagsFloat32 and FlagsFloat64 are the flags of 4- and 8-byte floats.
	FlagsFloat32 byte = FlagFloat | 0x3
	FlagsFloat64 byte = FlagFloat | 0x7
)

// ValueLen returns the value length that flags declare, 1..8.
func ValueLen(flags byte) int { return int(flags&LengthMask) + 1 }

// AppendValue appends the encoding of v to dst and returns the extended
// slice and the flags for its qualifier. The encoding is the first that holds
// v exactly, bit for bit:
//
//   - v is integral, within int64 and not -0: a signed big-endian integer
//     on the fewest of 1, 2, 4 or 8 bytes (flags 0x0, 0x1, 0x3, 0x7);
//   - float64(float32(v)) has the same bits as v (±Inf, -0 and every
//     float32-exact value, but never NaN: converting a NaN to float32
//     changes its payload): a 4-byte float (flags 0xB);
//   - otherwise the raw IEEE-754 bits on 8 bytes (flags 0xF), so NaN
//     payloads such as Prometheus's staleness marker 0x7ff0000000000002
//     survive.
//
// [DecodeValue] returns v with identical bits. AppendValue does not allocate
// when dst has room for 8 more bytes.
func AppendValue(dst []byte, v float64) ([]byte, byte) {
	// The range test also rejects NaN and ±Inf; within range the
	// conversion is exact for integral v.
	if v >= -0x1p63 && v < 0x1p63 {
		if i := int64(v); float64(i) == v && (i != 0 || !math.Signbit(v)) {
			switch {
			case i == int64(int8(i)):
				return append(dst, byte(i)), FlagsInt8
			case i == int64(int16(i)):
				return binary.BigEndian.AppendUint16(dst, uint16(i)), FlagsInt16
			case i == int64(int32(i)):
				return binary.BigEndian.AppendUint32(dst, uint32(i)), FlagsInt32
			default:
				return binary.BigEndian.AppendUint64(dst, uint64(i)), FlagsInt64
			}
		}
	}
	bits := math.Float64bits(v)
	if v == v { // not NaN
		f := float32(v)
		if math.Float64bits(float64(f)) == bits {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(f)), FlagsFloat32
		}
	}
	return binary.BigEndian.AppendUint64(dst, bits), FlagsFloat64
}

// DecodeValue decodes a value stored with the given qualifier flags (only
// the low four bits are used). len(b) must be the length the flags declare,
// and that length must be one readers accept: 1, 2, 4 or 8 bytes for
// integers (sign-extended), 4 or 8 for floats. Otherwise it returns an error
// wrapping [ErrMalformedValue]. Integers beyond 2^53 round to the nearest
// float64.
func DecodeValue(flags byte, b []byte) (float64, error) {
	flags &= FlagsMask
	if want := ValueLen(flags); len(b) != want {
		return 0, fmt.Errorf("%w: flags %#x declare %d bytes, got %d", ErrMalformedValue, flags, want, len(b))
	}
	v, ok := decodeFixed(flags, b)
	if !ok {
		return 0, fmt.Errorf("%w: flags %#x: %s", ErrMalformedValue, flags, badLength(flags, len(b)))
	}
	return v, nil
}

// decodeFixed decodes b as the type in flags' float bit, taking the length
// from len(b) (not from the flags). ok is false for a length no reader
// accepts for that type.
func decodeFixed(flags byte, b []byte) (v float64, ok bool) {
	if flags&FlagFloat != 0 {
		switch len(b) {
		case 4:
			return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), true
		case 8:
			return math.Float64frombits(binary.BigEndian.Uint64(b)), true
		}
		return 0, false
	}
	switch len(b) {
	case 1:
		return float64(int8(b[0])), true
	case 2:
		return float64(int16(binary.BigEndian.Uint16(b))), true
	case 4:
		return float64(int32(binary.BigEndian.Uint32(b))), true
	case 8:
		return float64(int64(binary.BigEndian.Uint64(b))), true
	}
	return 0, false
}

// badLength describes why decodeFixed refused a value.
func badLength(flags byte, n int) string {
	if flags&FlagFloat != 0 {
		return fmt.Sprintf("float of %d bytes, want 4 or 8", n)
	}
	return fmt.Sprintf("integer of %d bytes, want 1, 2, 4 or 8", n)
}
