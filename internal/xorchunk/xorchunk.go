// Package xorchunk encodes float samples in Prometheus's XOR chunk format
// (chunkenc.EncXOR, "Gorilla" compression), producing the same bytes as
// Prometheus's own appender, but writing its bit stream through a 64-bit
// accumulator instead of a bit or a byte at a time.
//
// Layout of a chunk:
//
//	u16 big-endian   number of samples
//	sample 0         varint(t) ‖ 64 bits of the value
//	sample 1         uvarint(t − t₀) ‖ xor(value)
//	sample n ≥ 2     dod(t) ‖ xor(value), bit-packed, most significant bit first
//
// dod is the change of the time delta: '0' when it is 0, else '10' + 14
// bits, '110' + 17 bits, '1110' + 20 bits (two's complement, when it fits
// in −(2^(k−1)−1)..2^(k−1)) or '1111' + 64 bits. xor is the value's bits
// XORed with the previous value's: '0' when equal; '10' + the meaningful
// bits when they fit in the previous window of leading and trailing zero
// bits; else '11' + 5 bits of leading zeros (at most 31) + 6 bits of the
// meaningful bit count (64 written as 0) + those bits. The last byte is
// padded with zero bits. Both varints are byte-aligned: they follow the
// header and the first value's 64 bits.
package xorchunk

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Builder builds one chunk. The zero Builder is not ready: call Reset.
type Builder struct {
	buf      []byte // complete bytes, the 2-byte header first
	acc      uint64 // pending bits, most significant first
	nacc     uint   // pending bits in acc, < 64
	n        int
	t        int64
	tDelta   uint64
	v        uint64 // bits of the last value
	leading  uint8  // 0xff: no window yet
	trailing uint8
}

// Reset starts a new chunk in buf (its capacity is reused; its contents
// are overwritten).
func (b *Builder) Reset(buf []byte) {
	*b = Builder{buf: append(buf[:0], 0, 0), leading: 0xff}
}

// NumSamples returns the samples appended.
func (b *Builder) NumSamples() int { return b.n }

// Cap returns the capacity of the chunk's buffer.
func (b *Builder) Cap() int { return cap(b.buf) }

// Append adds the sample (t, v); t must be after the previous sample's.
// At most 65535 samples fit in a chunk.
func (b *Builder) Append(t int64, v float64) {
	vb := math.Float64bits(v)
	switch b.n {
	case 0:
		b.buf = binary.AppendVarint(b.buf, t)
		b.buf = binary.BigEndian.AppendUint64(b.buf, vb)
	case 1:
		tDelta := uint64(t - b.t)
		b.buf = binary.AppendUvarint(b.buf, tDelta)
		b.tDelta = tDelta
		b.xor(vb)
	default:
		tDelta := uint64(t - b.t)
		dod := int64(tDelta - b.tDelta)
		switch {
		case dod == 0:
			b.write(0, 1)
		case fits(dod, 14):
			b.write(0b10<<14|uint64(dod)&(1<<14-1), 16)
		case fits(dod, 17):
			b.write(0b110<<17|uint64(dod)&(1<<17-1), 20)
		case fits(dod, 20):
			b.write(0b1110<<20|uint64(dod)&(1<<20-1), 24)
		default:
			b.write(0b1111, 4)
			b.write(uint64(dod), 64)
		}
		b.tDelta = tDelta
		b.xor(vb)
	}
	b.t, b.v = t, vb
	b.n++
}

// fits reports whether x is in −(2^(n−1)−1)..2^(n−1).
func fits(x int64, n uint) bool {
	return -(int64(1)<<(n-1)-1) <= x && x <= int64(1)<<(n-1)
}

// xor writes the value bits vb against the last value's.
func (b *Builder) xor(vb uint64) {
	delta := vb ^ b.v
	if delta == 0 {
		b.write(0, 1)
		return
	}
	leading := uint8(bits.LeadingZeros64(delta))
	trailing := uint8(bits.TrailingZeros64(delta))
	if leading >= 32 {
		leading = 31
	}
	if b.leading != 0xff && leading >= b.leading && trailing >= b.trailing {
		b.write(0b10, 2)
		b.write(delta>>b.trailing, uint(64-b.leading-b.trailing))
		return
	}
	b.leading, b.trailing = leading, trailing
	sig := 64 - leading - trailing
	b.write(0b11<<11|uint64(leading)<<6|uint64(sig&63), 13)
	b.write(delta>>trailing, uint(sig))
}

// write appends the low n bits of x (1 ≤ n ≤ 64), most significant first.
func (b *Builder) write(x uint64, n uint) {
	if n < 64 {
		x &= 1<<n - 1
	}
	free := 64 - b.nacc
	if n < free {
		b.acc |= x << (free - n)
		b.nacc += n
		return
	}
	// Fill the accumulator, flush it, keep the rest.
	rest := n - free
	b.acc |= x >> rest
	b.buf = binary.BigEndian.AppendUint64(b.buf, b.acc)
	b.acc, b.nacc = 0, rest
	if rest > 0 {
		b.acc = x << (64 - rest)
	}
}

// Bytes returns the chunk: the bytes so far, the pending bits padded to a
// byte, and the sample count in the header. The Builder is done with the
// chunk; Reset it for the next.
func (b *Builder) Bytes() []byte {
	for i := uint(0); i < b.nacc; i += 8 {
		b.buf = append(b.buf, byte(b.acc>>(56-i)))
	}
	b.acc, b.nacc = 0, 0
	binary.BigEndian.PutUint16(b.buf, uint16(b.n))
	return b.buf
}
