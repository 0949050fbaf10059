// XORBuilder: float samples in Prometheus's XOR chunk format
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

package chunkenc

import (
	"encoding/binary"
	"math"
)

// XORBuilder builds one chunk. The zero XORBuilder is not ready: call Reset.
type XORBuilder struct {
	w        bitWriter // the 2-byte header first
	n        int
	t        int64
	tDelta   uint64
	v        uint64 // bits of the last value
	leading  uint8  // 0xff: no window yet
	trailing uint8
}

// Reset starts a new chunk in buf (its capacity is reused; its contents
// are overwritten).
func (b *XORBuilder) Reset(buf []byte) {
	*b = XORBuilder{leading: 0xff}
	b.w.Reset(append(buf[:0], 0, 0))
}

// NumSamples returns the samples appended.
func (b *XORBuilder) NumSamples() int { return b.n }

// Cap returns the capacity of the chunk's buffer.
func (b *XORBuilder) Cap() int { return cap(b.w.Buf) }

// Append adds the sample (t, v); t must be after the previous sample's.
// At most 65535 samples fit in a chunk.
func (b *XORBuilder) Append(t int64, v float64) {
	vb := math.Float64bits(v)
	switch b.n {
	case 0:
		b.w.Buf = binary.AppendVarint(b.w.Buf, t)
		b.w.Buf = binary.BigEndian.AppendUint64(b.w.Buf, vb)
	case 1:
		tDelta := uint64(t - b.t)
		b.w.Buf = binary.AppendUvarint(b.w.Buf, tDelta)
		b.tDelta = tDelta
		b.w.XOR(vb^b.v, &b.leading, &b.trailing)
	default:
		tDelta := uint64(t - b.t)
		dod := int64(tDelta - b.tDelta)
		switch {
		case dod == 0:
			b.w.Write(0, 1)
		case fitsBits(dod, 14):
			b.w.Write(0b10<<14|uint64(dod)&(1<<14-1), 16)
		case fitsBits(dod, 17):
			b.w.Write(0b110<<17|uint64(dod)&(1<<17-1), 20)
		case fitsBits(dod, 20):
			b.w.Write(0b1110<<20|uint64(dod)&(1<<20-1), 24)
		default:
			b.w.Write(0b1111, 4)
			b.w.Write(uint64(dod), 64)
		}
		b.tDelta = tDelta
		b.w.XOR(vb^b.v, &b.leading, &b.trailing)
	}
	b.t, b.v = t, vb
	b.n++
}

// Bytes returns the chunk: the bytes so far, the pending bits padded to a
// byte, and the sample count in the header. The XORBuilder is done with the
// chunk; Reset it for the next.
func (b *XORBuilder) Bytes() []byte {
	buf := b.w.Bytes()
	binary.BigEndian.PutUint16(buf, uint16(b.n))
	return buf
}
