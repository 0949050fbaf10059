package dense

import "fmt"

// A float column is a run of float64 values in the values-section forms
// of a dense row, for packed forms other than a data row's (package
// rollup packs each aggregate of its windows as one):
//
//	u8  the mode: 0 decimal delta, 1 decimal delta-of-delta, 2 XOR
//	the values section of that mode (see the package's byte layout) of
//	    N float64 values, each one's word its IEEE-754 bits; N is kept by
//	    the caller
//
// The encoder picks the shortest mode, as for a row.

// AppendFloats appends the float column of words (float64 bits, at least
// one) to dst.
func (c *Codec) AppendFloats(dst []byte, words []uint64) []byte {
	c.words = append(c.words[:0], words...)
	c.flags = c.flags[:0]
	for range words {
		c.flags = append(c.flags, flagsF64)
	}
	at := len(dst)
	dst = append(dst, 0)
	dst, mode := c.appendValues(dst)
	dst[at] = mode
	return dst
}

// flagsF64 are the flags of an 8-byte float.
const flagsF64 = 0xF

// DecodeFloats decodes the float column at the start of src into words
// (len(words) values, float64 bits) and returns the bytes it took.
func (c *Codec) DecodeFloats(words []uint64, src []byte) (int, error) {
	if len(words) == 0 {
		return 0, nil
	}
	if len(src) == 0 {
		return 0, fmt.Errorf("%w: empty float column", ErrCorrupt)
	}
	switch mode := src[0]; mode {
	case valXOR:
		n, err := decodeXOR(words, src[1:])
		return n + 1, err
	case valDelta, valDelta2:
		n, err := c.decodeDecimal(words, src, 1, mode, nil, flagsF64, nil)
		return n + 1, err
	default:
		return 0, fmt.Errorf("%w: float column mode %d", ErrCorrupt, mode)
	}
}
