package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"
)

// TestScanSnappyBlock: blocks that snappy and s2 (in snappy mode) encode
// pass with their true length and fail with any other; broken blocks fail.
func TestScanSnappyBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		n := rng.IntN(1 << uint(rng.IntN(18)+1))
		data := make([]byte, n)
		for j := range data { // runs and noise, so every element kind occurs
			if rng.IntN(4) == 0 {
				data[j] = byte(rng.Uint32())
			} else if j > 0 {
				data[j] = data[j-1-rng.IntN(min(j, 70000))]
			}
		}
		for name, block := range map[string][]byte{"snappy": snappy.Encode(nil, data), "s2": s2.EncodeSnappy(nil, data)} {
			if err := ScanSnappyBlock(block, n); err != nil {
				t.Fatalf("case %d, %s, %d bytes: %v", i, name, n, err)
			}
			if err := ScanSnappyBlock(block, n+1); err == nil {
				t.Fatalf("case %d, %s: passes with a claim one too large", i, name)
			}
			if n > 0 && ScanSnappyBlock(block[:len(block)-1], n) == nil {
				t.Fatalf("case %d, %s: passes truncated", i, name)
			}
		}
	}
	for name, block := range map[string][]byte{
		"claim with nothing":      binary.AppendUvarint(nil, 32<<20),
		"copy before any literal": append(binary.AppendUvarint(nil, 10), 0x02<<2|2, 1, 0),
		"offset past the start":   append(binary.AppendUvarint(nil, 10), 0x00, 'a', 0x05<<2|2, 2, 0),
		"literal past the end":    append(binary.AppendUvarint(nil, 100), 60<<2, 99, 'a'),
	} {
		if err := ScanSnappyBlock(block, 32<<20); err == nil {
			t.Errorf("%s: passes", name)
		}
	}
}
