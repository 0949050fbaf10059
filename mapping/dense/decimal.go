package dense

import (
	"math"
)

// Sample kinds, from a qualifier's flags (bit 3 float, bits 0..2 length-1).
const (
	kindInt = iota // signed big-endian integer of 1, 2, 4 or 8 bytes
	kindF32        // IEEE-754 binary32
	kindF64        // IEEE-754 binary64
)

// flagKind is what a flag nibble says of a sample's value.
type flagKind struct {
	kind, n uint8
	ok      bool
}

// flagInfo describes each of the 16 flag nibbles: its kind and value
// length, or ok false for a nibble no reader accepts (integers of 3, 5, 6
// or 7 bytes, floats other than 4 or 8 bytes).
var flagInfo = func() (t [16]flagKind) {
	for f := range t {
		n := f&7 + 1
		switch {
		case f&8 == 0 && (n == 1 || n == 2 || n == 4 || n == 8):
			t[f].kind, t[f].n, t[f].ok = kindInt, uint8(n), true
		case f&8 != 0 && n == 4:
			t[f].kind, t[f].n, t[f].ok = kindF32, 4, true
		case f&8 != 0 && n == 8:
			t[f].kind, t[f].n, t[f].ok = kindF64, 8, true
		}
	}
	return t
}()

// flagLen is the value length of each flag nibble (0 for those no reader
// accepts), flagInfo's n as a plain table for the decoder's loops.
var flagLen = func() (t [16]uint8) {
	for f := range t {
		t[f] = flagInfo[f].n
	}
	return t
}()

// maxK is the largest decimal exponent: 10^maxK is exact in a float64
// (every power of ten up to 10^22 is), and a value with more than 15
// decimals rarely has a mantissa below 2^53.
const maxK = 15

var (
	pow10f [maxK + 1]float64
	pow10i [maxK + 1]int64
)

func init() {
	p := int64(1)
	for k := range pow10i {
		pow10i[k] = p
		pow10f[k] = float64(p) // exact: p < 2^53
		p *= 10
	}
}

// Why decimals are exact. A value parsed from text, such as "0.25" or
// "1234.5", is the float64 nearest to m/10^k, m an integer. When |m| < 2^53
// and k <= 22, float64(m) and 10^k are exact and IEEE-754 division rounds
// the true quotient m/10^k once, to nearest: the result is that same
// nearest float64. So the decoder computes float64(m) / 10^k, one correctly
// rounded operation whose result every conforming machine agrees on bit for
// bit (Go may fuse a multiply and an add, never a lone division). The
// encoder does not rely on the argument: it keeps m only when that
// computation gives back the exact bits it started from (fromMantissa).
// Raising k by j multiplies m by 10^j and leaves the quotient unchanged, so
// a row can share the largest exponent its samples need as long as the
// mantissas stay below 2^53.

// fromMantissa returns the stored word of a sample of kind whose mantissa
// is m at exponent k (k <= maxK): the integer m/10^k, or the float nearest
// to m/10^k as float64 or (through float64) float32 bits.
func fromMantissa(kind uint8, m int64, k int) uint64 {
	switch kind {
	case kindInt:
		return uint64(m / pow10i[k])
	case kindF32:
		x := float64(m)
		if k > 0 {
			x /= pow10f[k]
		}
		return uint64(math.Float32bits(float32(x)))
	default:
		x := float64(m)
		if k > 0 {
			x /= pow10f[k]
		}
		return math.Float64bits(x)
	}
}

// toMantissa returns the mantissa of the stored word w of a sample of
// kind at exponent k, and whether fromMantissa gives w back from it.
// Integers are scaled by 10^k (refused when that overflows); floats must
// be exactly the decimal: for k > 0 their mantissa must be below 2^53, for
// k = 0 they must be integral and within int64.
func toMantissa(kind uint8, w uint64, k int) (int64, bool) {
	if kind == kindInt {
		v := int64(w)
		lim := math.MaxInt64 / pow10i[k]
		if v > lim || v < -lim {
			return 0, false
		}
		return v * pow10i[k], true
	}
	var x float64
	if kind == kindF32 {
		x = float64(math.Float32frombits(uint32(w)))
	} else {
		x = math.Float64frombits(w)
	}
	var m int64
	if k == 0 {
		// The range test refuses NaN and ±Inf too.
		if !(x >= -0x1p63 && x < 0x1p63) {
			return 0, false
		}
		m = int64(x)
	} else {
		y := x * pow10f[k]
		if !(y > -0x1p53 && y < 0x1p53) {
			return 0, false
		}
		r := math.Round(y)
		// x*10^k is within a few ulps of m when x is the decimal; skip
		// the division when it is clearly not (only a shortcut: the
		// check below decides).
		tol := 0x1p-40
		if kind == kindF32 {
			tol = 0x1p-20
		}
		if math.Abs(y-r) > tol*(math.Abs(y)+1) {
			return 0, false
		}
		m = int64(r)
	}
	return m, fromMantissa(kind, m, k) == w
}

// sampleK returns the smallest exponent at which the sample is a decimal,
// or -1.
func sampleK(kind uint8, w uint64) int {
	if kind == kindInt {
		return 0
	}
	for k := 0; k <= maxK; k++ {
		if _, ok := toMantissa(kind, w, k); ok {
			return k
		}
		if k > 0 {
			// Once the scaled value reaches 2^53 larger k only grow it.
			x := math.Float64frombits(w)
			if kind == kindF32 {
				x = float64(math.Float32frombits(uint32(w)))
			}
			if math.Abs(x*pow10f[k]) >= 0x1p53 || x != x {
				return -1
			}
		}
	}
	return -1
}
