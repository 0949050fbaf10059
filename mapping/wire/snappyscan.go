package wire

import (
	"encoding/binary"
	"fmt"
)

// ScanSnappyBlock walks the elements of a snappy block (after its length
// header, whose value is claimed) without writing anything, and reports
// whether they decode to exactly claimed bytes: every literal within the
// block, every copy's offset within what precedes it. readBody runs it
// before it grows a buffer to claimed bytes, so that a buffer grows only
// for a body that really decodes to that size, not for a header's claim.
//
// The block format: each element starts with a tag byte whose low 2 bits
// say its kind. 00 literal: length-1 in the high 6 bits, or when those are
// 60..63, in the next 1..4 bytes (little-endian); the literal bytes
// follow. 01 copy: length-4 in bits 2..4, offset in bits 5..7 (high) and
// the next byte. 10 copy: length-1 in the high 6 bits, 2-byte offset. 11
// copy: length-1 in the high 6 bits, 4-byte offset.
func ScanSnappyBlock(block []byte, claimed int) error {
	_, n := binary.Uvarint(block)
	if n <= 0 {
		return fmt.Errorf("bad length header")
	}
	b := block[n:]
	produced := 0
	for len(b) > 0 {
		tag := b[0]
		var length, offset, size int
		switch tag & 3 {
		case 0:
			l := int(tag >> 2)
			size = 1
			if l >= 60 {
				extra := l - 59
				if len(b) < 1+extra {
					return fmt.Errorf("literal length past the end at decoded byte %d", produced)
				}
				var v uint32
				for i := range extra {
					v |= uint32(b[1+i]) << (8 * i)
				}
				l, size = int(v), 1+extra
			}
			length = l + 1
			if length <= 0 || length > len(b)-size {
				return fmt.Errorf("literal of %d bytes past the end at decoded byte %d", length, produced)
			}
			size += length
		case 1:
			if len(b) < 2 {
				return fmt.Errorf("copy past the end at decoded byte %d", produced)
			}
			length, offset, size = 4+int(tag>>2&7), int(tag&0xe0)<<3|int(b[1]), 2
		case 2:
			if len(b) < 3 {
				return fmt.Errorf("copy past the end at decoded byte %d", produced)
			}
			length, offset, size = 1+int(tag>>2), int(binary.LittleEndian.Uint16(b[1:])), 3
		case 3:
			if len(b) < 5 {
				return fmt.Errorf("copy past the end at decoded byte %d", produced)
			}
			length, offset, size = 1+int(tag>>2), int(binary.LittleEndian.Uint32(b[1:])), 5
		}
		if tag&3 != 0 && (offset <= 0 || offset > produced) {
			return fmt.Errorf("copy offset %d at decoded byte %d", offset, produced)
		}
		produced += length
		if produced > claimed {
			return fmt.Errorf("decodes to more than the %d bytes its header claims", claimed)
		}
		b = b[size:]
	}
	if produced != claimed {
		return fmt.Errorf("decodes to %d bytes, its header claims %d", produced, claimed)
	}
	return nil
}
