package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"
)

// maxFuzzDecoded bounds the decoded size FuzzScanSnappyBlock lets the
// decoders allocate for: a header may claim up to 4 GiB.
const maxFuzzDecoded = 1 << 20

// FuzzScanSnappyBlock: ScanSnappyBlock never panics; a block it accepts
// with its header's length n decodes, by golang/snappy and by s2 (which
// readBody uses), to n bytes; a block golang/snappy decodes to n bytes it
// accepts with n, and with no other length. testdata keeps a header of 0
// as a 6-byte varint, which golang/snappy takes and s2 refuses.
func FuzzScanSnappyBlock(f *testing.F) {
	f.Add([]byte{0})                                                     // empty
	f.Add(snappy.Encode(nil, []byte("a")))                               // one literal
	f.Add(snappy.Encode(nil, bytes.Repeat([]byte("abcd"), 40)))          // copies
	f.Add(snappy.Encode(nil, bytes.Repeat([]byte{7}, 70000)))            // 2-byte offsets
	f.Add(s2.EncodeSnappy(nil, bytes.Repeat([]byte("xyz0123456"), 900))) // s2's snappy mode
	f.Add(append(binary.AppendUvarint(nil, 10), 0x00, 'a', 0x05<<2|2, 2, 0))
	f.Add(append(binary.AppendUvarint(nil, 100), 60<<2, 99, 'a'))
	f.Add(append(binary.AppendUvarint(nil, 5), 0x00, 'a', 0x00<<2|3, 1, 0, 0, 0)) // 4-byte offset copy
	f.Add(append(binary.AppendUvarint(nil, 65), 63<<2, 64, 0, 0, 0))              // 4-byte literal length
	f.Add(binary.AppendUvarint(nil, 32<<20))
	f.Fuzz(func(t *testing.T, block []byte) {
		claim, hn := binary.Uvarint(block)
		if hn <= 0 || claim > maxFuzzDecoded {
			// Never panics, whatever the claim; nothing to compare with.
			_ = ScanSnappyBlock(block, maxFuzzDecoded)
			return
		}
		n := int(claim)
		scanErr := ScanSnappyBlock(block, n)

		dec, decErr := snappy.Decode(nil, block)
		if decErr == nil && len(dec) != n {
			t.Fatalf("snappy decoded %d bytes, header says %d", len(dec), n)
		}
		switch {
		case scanErr == nil && decErr != nil:
			t.Fatalf("scan accepts %d bytes, snappy.Decode fails: %v", n, decErr)
		case scanErr != nil && decErr == nil:
			t.Fatalf("snappy decodes %d bytes, scan refuses: %v", n, scanErr)
		case scanErr != nil:
			return
		}

		// s2 refuses some headers golang/snappy takes (a varint of more
		// than 5 bytes); readBody asks s2.DecodedLen before it scans.
		if _, err := s2.DecodedLen(block); err != nil {
			return
		}
		s2dec, err := s2.Decode(nil, block)
		if err != nil {
			t.Fatalf("scan accepts %d bytes, s2.Decode fails: %v", n, err)
		}
		if !bytes.Equal(s2dec, dec) {
			t.Fatalf("s2 decodes %x, snappy %x", s2dec, dec)
		}
		// The elements decode to exactly n bytes: no other claim passes.
		for _, other := range []int{n - 1, n + 1, 2*n + 1} {
			if other >= 0 && ScanSnappyBlock(block, other) == nil {
				t.Fatalf("accepted with %d bytes and with %d", n, other)
			}
		}
	})
}
