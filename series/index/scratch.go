package index

import "github.com/promhbase/promhbase/store"

// cellScratch holds the buffers of one writeCells call: the pending cells
// and their rows, the keys to remember, the call's sets of keys and
// tuples, a cell's key and row as they are built, and what group hands
// the store. A first contact of 2000 series
// takes about 1.7 MB of them (BenchmarkWriteNewSeries); kept between
// calls (Writer.scratch), a burst of new series no longer allocates them
// request after request, nor does the collector run for them.
type cellScratch struct {
	pending []pendingCell
	rowBuf  []byte
	keys    []seenKey
	done    map[seenKey]struct{}
	tuples  map[cellTuple]struct{}
	kbuf    []byte
	buf     []byte
	idx     []uint32
	out     []store.Cell
	puts    []store.Put
}

// maxScratchCells bounds the cells a kept scratch has room for: about
// the first contact of a request of 20 000 series. A larger one (a bulk
// import's) is dropped after its call rather than held.
const maxScratchCells = 1 << 16

// getScratch returns a kept scratch or a new one.
func (w *Writer) getScratch() *cellScratch {
	if sc, ok := w.scratch.Get().(*cellScratch); ok {
		return sc
	}
	return &cellScratch{}
}

// putScratch keeps sc for a later call, emptied, unless it is too large.
// The caller no longer uses anything of it, and the store has answered
// the put of its rows without error: a failed put may leave RPCs queued
// that still read them.
func (w *Writer) putScratch(sc *cellScratch) {
	if cap(sc.pending) > maxScratchCells || cap(sc.out) > maxScratchCells || len(sc.done) > 2*maxScratchCells || len(sc.tuples) > 2*maxScratchCells {
		return
	}
	// No pointers into the call's entries or rows are kept alive (what
	// lies past each length was cleared by the calls before).
	clear(sc.pending)
	clear(sc.out)
	clear(sc.puts)
	clear(sc.done)
	clear(sc.tuples)
	sc.pending, sc.rowBuf, sc.keys = sc.pending[:0], sc.rowBuf[:0], sc.keys[:0]
	sc.idx, sc.out, sc.puts = sc.idx[:0], sc.out[:0], sc.puts[:0]
	w.scratch.Put(sc)
}
