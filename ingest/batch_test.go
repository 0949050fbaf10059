package ingest

import (
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
		{"many new series' labels", func(b *writeBatch) { b.labelBuf = make([]mapping.Label, 0, 1<<20) }, false},
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
