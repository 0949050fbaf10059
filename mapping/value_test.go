package mapping

import (
	"math"
	"math/rand/v2"
	"testing"
)

// valueBitPatterns returns float64 bit patterns for round-trip tests: the
// special values, every power of two and its neighbours, integers around
// every width boundary, and random patterns (fixed seed).
func valueBitPatterns() []uint64 {
	pats := []uint64{
		0, 1 << 63, // ±0
		0x7FF0000000000000, 0xFFF0000000000000, // ±Inf
		0x7FF0000000000002, 0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000,
		0x7FF0000000000001, 0x7FF7FFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FF4000000000000,
		1, 0x000FFFFFFFFFFFFF, 0x8000000000000001, 0x800FFFFFFFFFFFFF, 0x0010000000000000,
		0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
	}
	for e := -1100; e <= 1100; e++ {
		b := math.Float64bits(math.Ldexp(1, e))
		pats = append(pats, b, b+1, b-1, b|1<<63, (b+1)|1<<63)
	}
	for _, edge := range []float64{1 << 7, 1 << 15, 1 << 31, 1 << 53, 1 << 63, 1 << 24} {
		for d := -3.0; d <= 3; d++ {
			pats = append(pats, math.Float64bits(edge+d), math.Float64bits(-edge+d))
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		pats = append(pats, rng.Uint64())
	}
	// Random float32 and int values, which take the short encodings.
	for range 50000 {
		pats = append(pats,
			math.Float64bits(float64(math.Float32frombits(rng.Uint32()))),
			math.Float64bits(float64(int64(rng.Uint64())>>rng.IntN(64))))
	}
	return pats
}

func TestValueRoundTrip(t *testing.T) {
	var buf []byte
	for _, bits := range valueBitPatterns() {
		v := math.Float64frombits(bits)
		var flags byte
		buf, flags = AppendValue(buf[:0], v)
		if len(buf) != ValueLen(flags) {
			t.Fatalf("%#016x: AppendValue wrote %d bytes, flags %#x say %d", bits, len(buf), flags, ValueLen(flags))
		}
		switch flags {
		case FlagsInt8, FlagsInt16, FlagsInt32, FlagsInt64, FlagsFloat32, FlagsFloat64:
		default:
			t.Fatalf("%#016x: flags %#x", bits, flags)
		}
		if math.IsNaN(v) && flags != FlagsFloat64 {
			t.Fatalf("%#016x: NaN stored with flags %#x, want 0xF", bits, flags)
		}
		got, err := DecodeValue(flags, buf)
		if err != nil {
			t.Fatalf("%#016x: DecodeValue(%#x, %X): %v", bits, flags, buf, err)
		}
		if math.Float64bits(got) != bits {
			t.Fatalf("%#016x: round trip gave %#016x (flags %#x, bytes %X)", bits, math.Float64bits(got), flags, buf)
		}
	}
}

// TestValueMinimalWidth checks that integers take the fewest bytes: each
// width's bounds, and one past them.
func TestValueMinimalWidth(t *testing.T) {
	for _, c := range []struct {
		name   string
		v      float64
		flags  byte
		length int
	}{
		{"int8 max", math.MaxInt8, FlagsInt8, 1},
		{"int8 min", math.MinInt8, FlagsInt8, 1},
		{"int8 max+1", math.MaxInt8 + 1, FlagsInt16, 2},
		{"int8 min-1", math.MinInt8 - 1, FlagsInt16, 2},
		{"int16 max", math.MaxInt16, FlagsInt16, 2},
		{"int16 min", math.MinInt16, FlagsInt16, 2},
		{"int16 max+1", math.MaxInt16 + 1, FlagsInt32, 4},
		{"int16 min-1", math.MinInt16 - 1, FlagsInt32, 4},
		{"int32 max", math.MaxInt32, FlagsInt32, 4},
		{"int32 min", math.MinInt32, FlagsInt32, 4},
		{"int32 max+1", math.MaxInt32 + 1, FlagsInt64, 8},
		{"int32 min-1", math.MinInt32 - 1, FlagsInt64, 8},
		{"int64 min", math.MinInt64, FlagsInt64, 8},
		{"2^63 is beyond int64", 1 << 63, FlagsFloat32, 4},
		{"-0 is not an integer", math.Copysign(0, -1), FlagsFloat32, 4},
		{"0.5", 0.5, FlagsFloat32, 4},
		{"0.1", 0.1, FlagsFloat64, 8},
		{"+Inf", math.Inf(1), FlagsFloat32, 4},
		{"-Inf", math.Inf(-1), FlagsFloat32, 4},
		{"NaN", math.NaN(), FlagsFloat64, 8},
		{"staleness marker", math.Float64frombits(0x7ff0000000000002), FlagsFloat64, 8},
		{"float64 denormal", math.SmallestNonzeroFloat64, FlagsFloat64, 8},
		{"float32 denormal", float64(math.SmallestNonzeroFloat32), FlagsFloat32, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, flags := AppendValue(nil, c.v)
			if flags != c.flags || len(b) != c.length {
				t.Fatalf("AppendValue(%v) = %X flags %#x, want %d bytes flags %#x", c.v, b, flags, c.length, c.flags)
			}
		})
	}
}

func TestAppendValueAppends(t *testing.T) {
	dst := []byte{0xAA, 0xBB}
	dst, _ = AppendValue(dst, 1)
	dst, _ = AppendValue(dst, 0.1)
	if want := []byte{0xAA, 0xBB, 0x01, 0x3F, 0xB9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A}; string(dst) != string(want) {
		t.Fatalf("AppendValue = %X, want %X", dst, want)
	}
}
