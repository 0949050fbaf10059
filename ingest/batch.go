package ingest

import (
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/internal/arena"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/store"
)

// batchPool keeps the buffers of finished writes for the next ones: a
// bounded free list first, since a sync.Pool is emptied by every other
// garbage collection and a bulk import, which collects often, would grow
// a large batch's buffers again at nearly every write; then a sync.Pool
// for what the list has no room for. Batches holding more than
// maxKeptBytes (heldBytes) go only to the sync.Pool, so the list holds at
// most its length times that.
type batchPool struct {
	free chan *writeBatch
	pool sync.Pool
}

// maxKeptBytes bounds what a batch kept on the free list holds: an
// import's write of 50 000 samples (4 MB of cells, 0.6 MB of arena) with
// room to spare.
const maxKeptBytes = 12 << 20

// heldBytes estimates the memory b's buffers hold: their capacities, at
// their elements' sizes.
func (b *writeBatch) heldBytes() int {
	return b.arena.Size() + cap(b.scratch) +
		int(unsafe.Sizeof(store.Cell{}))*(cap(b.cells)+cap(b.exCells)) +
		int(unsafe.Sizeof(store.Put{}))*(cap(b.puts)+cap(b.exPuts)) + 8*cap(b.starts) +
		int(unsafe.Sizeof(mapping.Label{}))*labelChunk*len(b.labelChunks) +
		int(unsafe.Sizeof(missedSeries{}))*cap(b.missed) +
		int(unsafe.Sizeof(index.Entry{}))*cap(b.index)
}

func newBatchPool() batchPool {
	return batchPool{free: make(chan *writeBatch, min(max(runtime.GOMAXPROCS(0), 2), 8))}
}

// getBatch returns a batch for a write: a kept one, or a new one.
func (w *Writer) getBatch() *writeBatch {
	select {
	case b := <-w.batches.free:
		return b
	default:
	}
	if b, ok := w.batches.pool.Get().(*writeBatch); ok {
		return b
	}
	b := &writeBatch{reject: map[string]int{}, exSeen: map[string]struct{}{}}
	b.v2.SetNames(w.names)
	return b
}

// putBatch resets b and keeps it for a later write.
func (w *Writer) putBatch(b *writeBatch) {
	b.reset()
	if b.heldBytes() <= maxKeptBytes {
		select {
		case w.batches.free <- b:
			return
		default:
		}
	}
	w.batches.pool.Put(b)
}

// grow makes room for the cells of samples samples at once, rather than
// as appends double the arrays.
func (b *writeBatch) grow(samples int) {
	if samples > cap(b.cells) {
		b.cells = slices.Grow(b.cells, samples)
	}
}

// writeBatch holds the reusable buffers of one request.
type writeBatch struct {
	// deferSync: the data's write need not be durable yet
	// (store.WriteDeferred); bulk: the data is a bulk load's
	// (store.Batch.PutBulk; WriteSeries); translated: the body is another
	// protocol's, a TimeSeries a sample (WriteTranslated).
	deferSync, bulk, translated bool
	series                      wire.Series
	v2                          wire.V2State
	puts                        []store.Put
	starts                      []int // index in cells of each put's first cell
	cells                       []store.Cell
	arena                       arena.Arena
	rej                         *RejectError
	reject                      map[string]int
	cache                       series.SeriesCacheReader
	missed                      []missedSeries
	// resolveItems is resolveMissed's scratch.
	resolveItems []series.ResolveItem
	// labelsOf decodes the labels of missed series (its label slice is
	// reused; each series keeps a copy, keepLabels).
	labelsOf wire.Series
	// labelChunks hold the copies, labelChunk labels each, kept with the
	// batch; those before labelAt are done with for this request (a
	// series that does not fit in a chunk's rest goes to the next).
	labelChunks [][]mapping.Label
	labelAt     int
	sketch      *limits.Sketch // active series; nil without limits
	perMetric   bool           // the per-metric series limit is on
	// relabel is the metric relabeling the request started with; the
	// others are relabelSeries's scratch.
	relabel    *relabelState
	relabelSB  labels.ScratchBuilder
	relabelIn  labels.Labels
	relabelB   *labels.Builder
	relabelKey []byte // the rules' inputs
	relabeled  []mapping.Label
	// dropLabel is the replica label of an HA pair's request, left out
	// of the labels its new series are resolved with; nil: none.
	dropLabel []byte

	samples, histograms int
	// minT is the oldest timestamp kept (Options.Retention); expired
	// counts the samples and histograms older than it.
	minT        int64
	expired     int
	hist        wire.Histogram
	scratch     []byte
	exPuts      []store.Put
	exCells     []store.Cell
	exSeen      map[string]struct{} // row ‖ slot of this request's exemplars
	metas       []wire.Meta         // 1.0's metadata field
	pendingMeta []pendingMeta
	index       []index.Entry // series and days not yet indexed
	write       store.Batch   // commit's
}

func (b *writeBatch) reset() {
	b.deferSync, b.bulk, b.translated = false, false, false
	b.dropLabel = nil
	b.puts = b.puts[:0]
	b.starts = b.starts[:0]
	b.cells = b.cells[:0]
	b.arena.Reset()
	b.rej = nil
	clear(b.reject)
	clear(b.missed)
	b.missed = b.missed[:0]
	b.labelsOf.ForgetLabels() // no pointers into the last request's keys
	for i := range b.labelChunks[:min(b.labelAt+1, len(b.labelChunks))] {
		clear(b.labelChunks[i])
		b.labelChunks[i] = b.labelChunks[i][:0]
	}
	b.labelAt = 0
	b.samples, b.histograms = 0, 0
	b.minT, b.expired = 0, 0
	b.sketch, b.perMetric, b.relabel = nil, false, nil
	clear(b.relabeled)
	b.exPuts = b.exPuts[:0]
	b.exCells = b.exCells[:0]
	clear(b.exSeen)
	b.metas = b.metas[:0]
	b.pendingMeta = b.pendingMeta[:0]
	clear(b.index)
	b.index = b.index[:0]
}

func (b *writeBatch) rejectSeries(reason string, n int, msg string) {
	if b.rej == nil {
		b.rej = &RejectError{}
	}
	b.rej.count += n
	if len(b.rej.named) < maxNamedRejects {
		b.rej.named = append(b.rej.named, msg)
	}
	b.reject[reason] += n
}

// labelChunk is the number of labels of a chunk of a batch's label copies
// (192 KiB): the 2000 new series of a request of ten or eleven labels
// each fill five or six. Chunks, not one slice that appends grow, so that a batch made for
// a burst of new series allocates its copies once, not about twice over
// as a doubling slice does, and keeps them for the requests after it.
const labelChunk = 4096

// keepLabels returns a copy of lbls that lasts as long as the request:
// in the batch's current chunk, the next one when it is full, or a slice
// of its own for a series of more than labelChunk labels.
func (b *writeBatch) keepLabels(lbls []mapping.Label) []mapping.Label {
	if len(lbls) == 0 {
		return nil
	}
	if len(lbls) > labelChunk {
		c := make([]mapping.Label, len(lbls))
		copy(c, lbls)
		return c
	}
	for {
		if b.labelAt == len(b.labelChunks) {
			b.labelChunks = append(b.labelChunks, make([]mapping.Label, 0, labelChunk))
		}
		c := b.labelChunks[b.labelAt]
		if len(c)+len(lbls) <= cap(c) {
			c = append(c, lbls...)
			b.labelChunks[b.labelAt] = c
			return c[len(c)-len(lbls) : len(c) : len(c)]
		}
		b.labelAt++
	}
}
