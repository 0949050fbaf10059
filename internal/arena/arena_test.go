package arena

import (
	"bytes"
	"testing"
)

// TestArena: slices do not overlap, keep their bytes while the arena
// grows, are capacity-clipped, fit in chunks or get one of their own;
// after Reset the chunks are reused.
func TestArena(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chunk int
		sizes []int
	}{
		{"default chunk", 0, []int{0, 1, 100, DefaultChunkSize, 7, DefaultChunkSize + 1, 3}},
		{"small chunk", 16, []int{5, 5, 5, 5, 17, 1, 16, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Arena{ChunkSize: tc.chunk}
			var chunks [2]int
			for round := range 2 {
				var got [][]byte
				var want [][]byte
				for i, n := range tc.sizes {
					w := bytes.Repeat([]byte{byte(i + 1 + 16*round)}, n)
					s := a.Copy(w)
					if cap(s) != n {
						t.Fatalf("slice %d: capacity %d, want %d", i, cap(s), n)
					}
					got, want = append(got, s), append(want, w)
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("round %d, slice %d overwritten", round, i)
					}
				}
				chunks[round] = len(a.chunks)
				a.Reset()
			}
			if chunks[1] != chunks[0] {
				t.Errorf("the same slices after a reset took %d chunks, want the %d kept", chunks[1], chunks[0])
			}
		})
	}
}
