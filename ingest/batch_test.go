package ingest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// TestBatchFreeList: a finished batch goes back on the free list unless
// any of its buffers makes it hold more than maxKeptBytes, so the list
// keeps at most its length times that.
func TestBatchFreeList(t *testing.T) {
	for _, tc := range []struct {
		name string
		grow func(b *writeBatch)
		kept bool
	}{
		{"an import's write", func(b *writeBatch) {
			b.cells = make([]store.Cell, 0, 50_000)
			b.arena.Alloc(50_000 * mapping.SampleCellBytes)
		}, true},
		{"many cells", func(b *writeBatch) { b.cells = make([]store.Cell, 0, 1<<20) }, false},
		{"a large arena", func(b *writeBatch) { b.arena.Alloc(64 << 20) }, false},
		{"many new series' labels", func(b *writeBatch) {
			for range 100 {
				b.keepLabels(make([]mapping.Label, labelChunk))
			}
		}, false},
		{"a request's new series' labels", func(b *writeBatch) {
			for range 2000 {
				b.keepLabels(make([]mapping.Label, 11))
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Writer{batches: newBatchPool()}
			b := w.getBatch()
			tc.grow(b)
			w.putBatch(b)
			if kept := len(w.batches.free) == 1; kept != tc.kept {
				t.Errorf("kept on the free list: %v, want %v (%d bytes held)", kept, tc.kept, b.heldBytes())
			}
		})
	}
}

func TestKeepLabels(t *testing.T) {
	label := func(i, j int) mapping.Label {
		return mapping.Label{Name: fmt.Appendf(nil, "n%d", j), Value: fmt.Appendf(nil, "v%d-%d", i, j)}
	}
	for _, tc := range []struct {
		name   string
		counts []int // labels of each series of a request
	}{
		{"a chunk's worth", []int{11, 11, 11}},
		{"across chunks", slices.Repeat([]int{11}, 2000)},
		{"series that fill a chunk exactly", []int{labelChunk / 2, labelChunk / 2, 3}},
		{"a series larger than a chunk", []int{5, labelChunk + 1, 5}},
		{"no labels", []int{0, 4, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Writer{batches: newBatchPool()}
			b := w.getBatch()
			for round := range 2 {
				var kept [][]mapping.Label
				in := make([]mapping.Label, 0, labelChunk+1)
				for i, n := range tc.counts {
					in = in[:0]
					for j := range n {
						in = append(in, label(i, j))
					}
					c := b.keepLabels(in)
					if len(c) != n || cap(c) != n {
						t.Fatalf("round %d, series %d: copy of len %d cap %d, want %d", round, i, len(c), cap(c), n)
					}
					kept = append(kept, c)
				}
				// Every copy still holds its own labels once the later
				// ones are made (no chunk moved or was written over).
				for i, c := range kept {
					for j, l := range c {
						if want := label(i, j); !bytes.Equal(l.Name, want.Name) || !bytes.Equal(l.Value, want.Value) {
							t.Fatalf("round %d, series %d, label %d: %s=%s, want %s=%s", round, i, j, l.Name, l.Value, want.Name, want.Value)
						}
					}
				}
				chunks := len(b.labelChunks)
				b.reset()
				for i, c := range b.labelChunks {
					if len(c) != 0 || slices.ContainsFunc(c[:cap(c)], func(l mapping.Label) bool { return l.Name != nil }) {
						t.Fatalf("round %d: chunk %d not emptied by reset", round, i)
					}
				}
				if round == 1 && len(b.labelChunks) != chunks {
					t.Errorf("the second request grew the chunks from %d to %d", chunks, len(b.labelChunks))
				}
			}
		})
	}
}
