package dense

import (
	"encoding/binary"
	"math"
	"testing"
)

func floatWords(vs ...float64) []uint64 {
	ws := make([]uint64, len(vs))
	for i, v := range vs {
		ws[i] = math.Float64bits(v)
	}
	return ws
}

func TestFloatColumnRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name     string
		words    []uint64
		maxBytes int // the column's size at most
	}{
		{"one", floatWords(42), 4}, // mode, exponent, no exception, mantissa
		{"counts", floatWords(20, 20, 20, 19, 20, 21, 20, 20), 8},
		{"decimals", floatWords(45.988, 45.99, 46.001, 45.97, 46.5), 16},
		{"times", floatWords(295001, 295003, 295000, 295004, 295002, 295001), 14},
		{"raw floats", floatWords(math.Pi, math.E, math.Sqrt2, 1/3.0), 40},
		{"NaN and Inf", floatWords(math.NaN(), math.Inf(1), math.Copysign(0, -1), 0, math.Inf(-1), 1e300), 60},
		{"stale NaN", []uint64{0x7ff0000000000002, 0x7ff8000000000001}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var enc, dec Codec
			b := enc.AppendFloats([]byte{0xEE}, c.words)
			if b[0] != 0xEE {
				t.Fatal("AppendFloats overwrote dst")
			}
			if len(b)-1 > c.maxBytes {
				t.Errorf("%d values in %d bytes, want at most %d", len(c.words), len(b)-1, c.maxBytes)
			}
			got := make([]uint64, len(c.words))
			n, err := dec.DecodeFloats(got, append(b[1:], 0xAB)) // a byte after the column
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b)-1 {
				t.Errorf("took %d bytes, want %d", n, len(b)-1)
			}
			for i := range got {
				if got[i] != c.words[i] {
					t.Errorf("value %d: %#x, want %#x", i, got[i], c.words[i])
				}
			}
		})
	}
}

// FuzzFloatColumn: DecodeFloats never panics, and every column
// AppendFloats writes decodes to its exact words.
func FuzzFloatColumn(f *testing.F) {
	var c Codec
	f.Add(c.AppendFloats(nil, floatWords(45.988, 45.99, 46.001)), uint8(3))
	f.Add(c.AppendFloats(nil, floatWords(math.Pi, math.NaN())), uint8(2))
	f.Add([]byte{0, 0, 0}, uint8(5))
	f.Fuzz(func(t *testing.T, src []byte, n uint8) {
		var c Codec
		words := make([]uint64, int(n%64)+1)
		if k, err := c.DecodeFloats(words, src); err == nil && (k < 1 || k > len(src)) {
			t.Fatalf("took %d bytes of %d", k, len(src))
		}
		// Words from the input bytes round-trip.
		for i := range words {
			if len(src) >= 8*(i+1) {
				words[i] = binary.BigEndian.Uint64(src[8*i:])
			}
		}
		b := c.AppendFloats(nil, words)
		got := make([]uint64, len(words))
		k, err := c.DecodeFloats(got, b)
		if err != nil || k != len(b) {
			t.Fatalf("decoding %x: %d bytes of %d, %v", b, k, len(b), err)
		}
		for i := range got {
			if got[i] != words[i] {
				t.Fatalf("value %d: %#x, want %#x", i, got[i], words[i])
			}
		}
	})
}
