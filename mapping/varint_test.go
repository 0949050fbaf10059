package mapping

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestUvarintLen(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		t.Run("", func(t *testing.T) {
			if got, want := UvarintLen(v), len(binary.AppendUvarint(nil, v)); got != want {
				t.Errorf("UvarintLen(%d) = %d, want %d", v, got, want)
			}
		})
	}
}
