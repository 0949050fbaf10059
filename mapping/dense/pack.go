package dense

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/promhbase/promhbase/mapping"
)

// A packed stream holds a sequence of int64 values whose count the reader
// knows. It is empty when the count is zero, else
//
//	uvarint g     every value is a multiple of g (>= 1) and is stored as
//	              its quotient by g
//
// followed by the quotients in blocks of blockLen (the last block may be
// shorter):
//
//	u8      header: bits 0-5 width w (0..63), bit 6 patched, bit 7 frame
//	        of reference
//	[varint base]       with the frame-of-reference bit only
//	[patches]           with the patched bit only: u8 count P (1..32),
//	                    then P times u8 index in the block (increasing)
//	                    and uvarint high, the word's bits above w
//	ceil(count*w/8) bytes: the low w bits of each word, least significant
//	                    bit first
//
// A quotient q is the word q - base (mod 2^64) with a frame of reference,
// else zigzag(q). The writer chooses, per block, the form and the width
// that take the fewest bytes: words wider than w (a counter reset, a late
// scrape) are patched rather than widening the whole block.
const (
	blockLen   = 32
	forBit     = 0x80
	patchedBit = 0x40
	widthMask  = 0x3F
)

// zigzag maps signed to unsigned so that small magnitudes stay small.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// unzigzag inverts zigzag.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// absU returns |v| as an unsigned number (exact for math.MinInt64 too).
func absU(v int64) uint64 {
	if v < 0 {
		return -uint64(v)
	}
	return uint64(v)
}

// gcd returns the greatest common divisor of a and b, gcd(0, b) = b.
func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// appendPacked appends the packed stream of vs to dst. It overwrites vs
// with the quotients it stores.
func appendPacked(dst []byte, vs []int64) []byte {
	if len(vs) == 0 {
		return dst
	}
	var g uint64
	for _, v := range vs {
		g = gcd(g, absU(v))
		if g == 1 {
			break
		}
	}
	if g == 0 || g > math.MaxInt64 {
		g = 1
	}
	dst = binary.AppendUvarint(dst, g)
	if g > 1 {
		for i := range vs {
			vs[i] /= int64(g)
		}
	}
	var words [blockLen]uint64
	for len(vs) > 0 {
		blk := vs[:min(blockLen, len(vs))]
		vs = vs[len(blk):]
		lo := blk[0]
		for _, v := range blk {
			lo = min(lo, v)
		}
		zw := words[:len(blk)]
		for j, v := range blk {
			zw[j] = zigzag(v)
		}
		wz, costZ := bestWidth(zw)
		var fw [blockLen]uint64
		for j, v := range blk {
			fw[j] = uint64(v) - uint64(lo)
		}
		wf, costF := bestWidth(fw[:len(blk)])
		costF += mapping.UvarintLen(zigzag(lo))
		if costF < costZ {
			dst = appendBlock(dst, fw[:len(blk)], wf, true, lo)
		} else {
			dst = appendBlock(dst, zw, wz, false, 0)
		}
	}
	return dst
}

// bestWidth returns the width w (0..63) that stores ws in the fewest
// bytes, words above w patched, and that number of bytes (without the
// header byte and base).
func bestWidth(ws []uint64) (w, cost int) {
	var hist [65]int
	maxL := 0
	for _, u := range ws {
		l := bits.Len64(u)
		hist[l]++
		maxL = max(maxL, l)
	}
	// The lengths present, longest first.
	var lens [65]uint8
	nl := 0
	for l := maxL; l >= 0; l-- {
		if hist[l] > 0 {
			lens[nl] = uint8(l)
			nl++
		}
	}
	cost = math.MaxInt
	// From the widest down, so that a tie keeps fewer patches.
	for c := min(maxL, 63); c >= 0; c-- {
		b := (len(ws)*c + 7) / 8
		patches := 0
		for _, l := range lens[:nl] {
			if int(l) <= c {
				break
			}
			patches += hist[l]
			b += hist[l] * (1 + (int(l)-c+6)/7)
		}
		if patches > 0 {
			b++
		}
		if b < cost {
			w, cost = c, b
		}
	}
	return w, cost
}

// appendBlock appends one block of words at width w.
func appendBlock(dst []byte, ws []uint64, w int, fr bool, base int64) []byte {
	hdr := byte(w)
	if fr {
		hdr |= forBit
	}
	patches := 0
	for _, u := range ws {
		if bits.Len64(u) > w {
			patches++
		}
	}
	if patches > 0 {
		hdr |= patchedBit
	}
	dst = append(dst, hdr)
	if fr {
		dst = binary.AppendVarint(dst, base)
	}
	if patches > 0 {
		dst = append(dst, byte(patches))
		for j, u := range ws {
			if bits.Len64(u) > w {
				dst = append(dst, byte(j))
				dst = binary.AppendUvarint(dst, u>>w)
			}
		}
	}
	return packBits(dst, ws, w)
}

// packBits appends the low w bits of every word, least significant bit
// first, padded with zero bits to a whole byte.
func packBits(dst []byte, ws []uint64, w int) []byte {
	if w == 0 {
		return dst
	}
	mask := uint64(1)<<w - 1
	var acc uint64 // pending bits, nacc of them (always < 8 between words)
	nacc := 0
	for _, u := range ws {
		u &= mask
		acc |= u << nacc
		var spill uint64 // bits of u that did not fit in acc
		if nacc > 0 {
			spill = u >> (64 - nacc)
		}
		total := nacc + w
		for total >= 8 {
			dst = append(dst, byte(acc))
			acc = acc>>8 | spill<<56
			spill >>= 8
			total -= 8
		}
		nacc = total
	}
	if nacc > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// padBuf holds a block's packed bytes with room to read 8 bytes at any
// word's first byte.
type padBuf [blockLen*8 + 8]byte

// readPacked decodes n values of the packed stream at the start of src
// into dst[:n] (dst must hold n) and returns how many bytes it took. pad
// is scratch memory.
func readPacked(dst []int64, src []byte, n int, pad *padBuf) (int, error) {
	var r packedReader
	if err := r.start(src, n, pad); err != nil {
		return 0, err
	}
	for i := 0; i < n; {
		cnt, err := r.next(dst[i:])
		if err != nil {
			return 0, err
		}
		i += cnt
	}
	return r.pos, nil
}

// packedReader reads a packed stream block by block, so that a decoder
// can use each block's values while they are in cache: start, then next
// until the stream's n values are read; pos is then the bytes it took.
type packedReader struct {
	src  []byte
	pos  int
	g    uint64 // the stream's multiple
	done int    // values read
	n    int
	pad  *padBuf
	// A block's patches (scratch, not cleared between blocks).
	patchIdx  [blockLen]uint8
	patchHigh [blockLen]uint64
}

// start reads the header of a stream of n values at the start of src.
func (r *packedReader) start(src []byte, n int, pad *padBuf) error {
	r.src, r.pos, r.g, r.done, r.n, r.pad = src, 0, 1, 0, n, pad
	if n == 0 {
		return nil
	}
	g, pos := binary.Uvarint(src)
	if pos <= 0 || g == 0 {
		return fmt.Errorf("%w: packed stream of %d values: bad multiple", ErrCorrupt, n)
	}
	r.g, r.pos = g, pos
	return nil
}

// next decodes the next block (up to blockLen values, fewer at the
// stream's end; out must hold them) into out and returns its count.
// long: a decoder of one block's fields in their order (header, base, patches, bits), each checked against the bytes left and named in its error.
func (r *packedReader) next(out []int64) (int, error) {
	src, pos, i := r.src, r.pos, r.done
	cnt := min(blockLen, r.n-i)
	if pos >= len(src) {
		return 0, fmt.Errorf("%w: packed stream of %d values ends at value %d (byte %d)", ErrCorrupt, r.n, i, pos)
	}
	hdr := src[pos]
	pos++
	w := uint(hdr & widthMask)
	fr := hdr&forBit != 0
	var base int64
	if fr {
		b, k := binary.Varint(src[pos:])
		if k <= 0 {
			return 0, fmt.Errorf("%w: packed block at value %d: bad base varint at byte %d", ErrCorrupt, i, pos)
		}
		base = b
		pos += k
	}
	np := 0
	patchIdx, patchHigh := &r.patchIdx, &r.patchHigh
	if hdr&patchedBit != 0 {
		if pos >= len(src) || src[pos] == 0 || int(src[pos]) > cnt {
			return 0, fmt.Errorf("%w: packed block at value %d: bad patch count at byte %d", ErrCorrupt, i, pos)
		}
		np = int(src[pos])
		pos++
		for p := range np {
			if pos >= len(src) || int(src[pos]) >= cnt || (p > 0 && src[pos] <= patchIdx[p-1]) {
				return 0, fmt.Errorf("%w: packed block at value %d: bad patch index at byte %d", ErrCorrupt, i, pos)
			}
			patchIdx[p] = src[pos]
			pos++
			h, k := binary.Uvarint(src[pos:])
			if k <= 0 {
				return 0, fmt.Errorf("%w: packed block at value %d: bad patch varint at byte %d", ErrCorrupt, i, pos)
			}
			patchHigh[p] = h
			pos += k
		}
	}
	nb := (cnt*int(w) + 7) / 8
	if len(src)-pos < nb {
		return 0, fmt.Errorf("%w: packed block at value %d needs %d bytes at byte %d, %d left", ErrCorrupt, i, nb, pos, len(src)-pos)
	}
	out = out[:cnt]
	blk := src[pos : pos+nb]
	unpackBits(out, blk, w, src[pos:], fr, uint64(base), r.pad)
	for p := range np {
		// The word is its low bits, read again, and its high bits.
		j := uint(patchIdx[p])
		u := lowBits(blk, j*w, w) | patchHigh[p]<<w
		if fr {
			out[j] = int64(u + uint64(base))
		} else {
			out[j] = unzigzag(u)
		}
	}
	if g := r.g; g > 1 {
		for j, q := range out {
			out[j] = int64(uint64(q) * g)
		}
	}
	r.pos, r.done = pos+nb, i+cnt
	return cnt, nil
}

// unpackNarrow is unpackBits of a whole block of words of w <= 8 bits:
// each 8 words take exactly w bytes, read as one little-endian word.
// src holds at least 3w+8 bytes.
func unpackNarrow(out []int64, src []byte, w uint, fr bool, base uint64) {
	mask := uint64(1)<<w - 1
	s1, s2, s3, s4, s5, s6, s7 := w, 2*w, 3*w, 4*w, 5*w, 6*w, 7*w
	for g := 0; g < blockLen/8; g++ {
		i := uint(g) * w
		x := binary.LittleEndian.Uint64(src[i : i+8])
		o := (*[8]int64)(out[8*g : 8*g+8])
		if fr {
			o[0] = int64(x&mask + base)
			o[1] = int64(x>>s1&mask + base)
			o[2] = int64(x>>s2&mask + base)
			o[3] = int64(x>>s3&mask + base)
			o[4] = int64(x>>s4&mask + base)
			o[5] = int64(x>>s5&mask + base)
			o[6] = int64(x>>s6&mask + base)
			o[7] = int64(x>>s7&mask + base)
		} else {
			o[0] = unzigzag(x & mask)
			o[1] = unzigzag(x >> s1 & mask)
			o[2] = unzigzag(x >> s2 & mask)
			o[3] = unzigzag(x >> s3 & mask)
			o[4] = unzigzag(x >> s4 & mask)
			o[5] = unzigzag(x >> s5 & mask)
			o[6] = unzigzag(x >> s6 & mask)
			o[7] = unzigzag(x >> s7 & mask)
		}
	}
}

// lowBits returns the w bits of blk that start at bit.
func lowBits(blk []byte, bit, w uint) uint64 {
	var u uint64
	for got := uint(0); got < w; {
		b := uint64(blk[bit>>3]) >> (bit & 7)
		take := min(8-(bit&7), w-got)
		u |= (b & (1<<take - 1)) << got
		got += take
		bit += take
	}
	return u
}

// unpackBits reads len(out) words of w bits (w < 64) from blk (exactly
// their bytes) into out: base plus the word when fr (frame of reference),
// else the word unzigzagged. tail is blk extended to the end of the input:
// when it has room the fast path reads 8 bytes at every word's first byte
// there, else in a copy of blk in pad.
func unpackBits(out []int64, blk []byte, w uint, tail []byte, fr bool, base uint64, pad *padBuf) {
	if w == 0 {
		v := int64(base)
		if !fr {
			v = 0
		}
		for j := range out {
			out[j] = v
		}
		return
	}
	if w <= 8 && len(out) == blockLen && len(tail) >= 3*int(w)+8 {
		unpackNarrow(out, tail, w, fr, base)
		return
	}
	if w <= 56 {
		// The bytes past blk that the 8-byte reads take in are shifted or
		// masked away.
		var src *padBuf
		if len(tail) >= len(padBuf{}) {
			src = (*padBuf)(tail)
		} else {
			copy(pad[:], blk)
			src = pad
		}
		mask := uint64(1)<<w - 1
		bit := uint(0)
		// A word starts at byte (len(out)-1)*w/8 <= 31*56/8 < 256, so
		// masking with 255 changes nothing and lets the compiler drop
		// the bounds checks.
		if fr {
			for j := range out {
				i := bit >> 3 & 255
				x := binary.LittleEndian.Uint64(src[i : i+8])
				out[j] = int64(x>>(bit&7)&mask + base)
				bit += w
			}
		} else {
			for j := range out {
				i := bit >> 3 & 255
				x := binary.LittleEndian.Uint64(src[i : i+8])
				out[j] = unzigzag(x >> (bit & 7) & mask)
				bit += w
			}
		}
		return
	}
	// Wide words: assemble each from its bytes.
	for j := range out {
		u := lowBits(blk, uint(j)*w, w)
		if fr {
			out[j] = int64(u + base)
		} else {
			out[j] = unzigzag(u)
		}
	}
}
