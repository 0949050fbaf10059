// The bit streams of Prometheus's chunk
// encodings: bits most significant first, through a 64-bit accumulator
// rather than a bit or a byte at a time, the last byte padded with zero
// bits.

package chunkenc

import (
	"encoding/binary"
	"math/bits"
)

// bitWriter appends bits to a byte slice. The zero bitWriter writes into a nil
// slice.
type bitWriter struct {
	// Buf holds the complete bytes. A caller may append whole bytes to it
	// directly only while Pending is 0.
	Buf  []byte
	acc  uint64 // pending bits, most significant first
	nacc uint   // pending bits in acc, < 64
}

// Reset makes the bitWriter append after the bytes of buf.
func (w *bitWriter) Reset(buf []byte) { *w = bitWriter{Buf: buf} }

// Pending returns the bits written but not yet in Buf.
func (w *bitWriter) Pending() uint { return w.nacc }

// Len returns the length the stream's bytes have once padded.
func (w *bitWriter) Len() int { return len(w.Buf) + int(w.nacc+7)/8 }

// Write appends the low n bits of x (1 ≤ n ≤ 64), most significant first.
func (w *bitWriter) Write(x uint64, n uint) {
	if n < 64 {
		x &= 1<<n - 1
	}
	free := 64 - w.nacc
	if n < free {
		w.acc |= x << (free - n)
		w.nacc += n
		return
	}
	// Fill the accumulator, flush it, keep the rest.
	rest := n - free
	w.acc |= x >> rest
	w.Buf = binary.BigEndian.AppendUint64(w.Buf, w.acc)
	w.acc, w.nacc = 0, rest
	if rest > 0 {
		w.acc = x << (64 - rest)
	}
}

// Bytes moves the pending bits into Buf, padding the last byte with zero
// bits, and returns Buf. Writing after Bytes starts at a byte boundary.
func (w *bitWriter) Bytes() []byte {
	for i := uint(0); i < w.nacc; i += 8 {
		w.Buf = append(w.Buf, byte(w.acc>>(56-i)))
	}
	w.acc, w.nacc = 0, 0
	return w.Buf
}

// XOR writes the bits of a value XORed with the previous value's, delta,
// in the Gorilla encoding of Prometheus's chunks: '0' when delta is 0;
// '10' and the meaningful bits when they fit the window of *leading and
// *trailing zero bits (0xff *leading: no window yet); else '11', 5 bits
// of leading zeros (at most 31), 6 bits of the meaningful bit count (64
// written as 0) and those bits, which then become the window.
func (w *bitWriter) XOR(delta uint64, leading, trailing *uint8) {
	if delta == 0 {
		w.Write(0, 1)
		return
	}
	lead := uint8(bits.LeadingZeros64(delta))
	trail := uint8(bits.TrailingZeros64(delta))
	if lead >= 32 {
		lead = 31
	}
	if *leading != 0xff && lead >= *leading && trail >= *trailing {
		w.Write(0b10, 2)
		w.Write(delta>>*trailing, uint(64-*leading-*trailing))
		return
	}
	*leading, *trailing = lead, trail
	sig := 64 - lead - trail
	w.Write(0b11<<11|uint64(lead)<<6|uint64(sig&63), 13)
	w.Write(delta>>trail, uint(sig))
}

// fitsBits reports whether x is in −(2^(n−1)−1)..2^(n−1), the range of the
// n-bit two's complement fields of Prometheus's chunk encodings.
func fitsBits(x int64, n uint) bool {
	return -(int64(1)<<(n-1)-1) <= x && x <= int64(1)<<(n-1)
}
