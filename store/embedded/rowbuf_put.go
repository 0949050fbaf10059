package embedded

import (
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// put adds the cells of puts to the active buffer and its log (a cell
// without a timestamp takes now), and returns the log position that makes
// them durable. It waits while the buffer is twice its limit (see
// generation.limit) and a flush is under way, and fails when flushes fail and the buffer is full.
//
// The log record is encoded and the rows are looked up (probe, under the
// table buffer's read lock, the buffer found without rb.mu) before rb.mu
// is taken for the put, and the cells go into
// the buffer after rb.mu is released: only the record's copy into the log
// is made under it. The buffer's own lock (m.mu) is taken before
// rb.mu is released, so that puts enter the buffer in the order of their
// records in the log (a replay gives what was read), and a flush, which
// swaps the buffer out under rb.mu, takes m.mu before it reads it, after
// the puts that reached it are in.
func (rb *rowBuffer) put(table string, puts []store.Put, now uint64) (uint64, error) {
	bp := rb.recs.Get().(*[]byte)
	rec := appendPutRecord((*bp)[:0], table, puts, now)
	// The rows' hashes, taken before any lock, so that the table
	// buffer's lock is held for the inserts alone (every generation's
	// buffers hash with rb.seed).
	pr := rb.probes.Get().(*putProbes)
	hs := pr.hashes[:0]
	for _, p := range puts {
		hs = append(hs, maphash.Bytes(rb.seed, p.Row))
	}
	defer func() {
		if cap(rec) <= maxPooledRecord {
			*bp = rec[:0]
			rb.recs.Put(bp)
		}
		if cap(hs) <= maxPooledRecord/8 {
			pr.hashes, pr.rows = hs[:0], pr.rows[:0]
			rb.probes.Put(pr)
		}
	}()
	// The rows already in the table's active buffer, found under its
	// read lock, which puts share, before its write lock is taken: the
	// write lock is then held for the cells' appends and the new rows
	// alone, and the rows' memory is in this core's cache.
	pre := rb.probe(table, puts, hs, pr)
	if rb.afterProbe != nil {
		rb.afterProbe()
	}
	rb.mu.Lock()
	for {
		if rb.closed {
			rb.mu.Unlock()
			return 0, fmt.Errorf("row buffer closed: %w", store.ErrUnavailable)
		}
		// Writers wait for a flush under way when the buffer has grown to
		// twice its limit meanwhile; with none under way they go on
		// and leave the flusher to swap the buffer out.
		if rb.flushing == nil && rb.flushErr == nil || rb.size() < 2*rb.limit() {
			break
		}
		if rb.flushErr != nil {
			err := rb.flushErr
			rb.mu.Unlock()
			// The flusher tries again (space may be back): without a
			// kick it would wait for the next put that finds room.
			rb.signal()
			return 0, fmt.Errorf("row buffer full, flush failing: %w: %w", store.ErrUnavailable, err)
		}
		rb.signal()
		rb.cond.Wait()
	}
	m := rb.activeFor(table)
	// Rows are only ever appended to a buffer: an index found in it stays
	// its row's. A flush may have swapped the buffer out since.
	rows := pr.rows
	if m != pre {
		rows = nil
	}
	gen := rb.gen // replaced under rb.mu
	m.Lock()
	pos := rb.wal.Append(rec)
	rb.lastPut.Store(pos) // under rb.mu: in the log's order
	rb.mu.Unlock()
	if rb.afterLog != nil {
		rb.afterLog()
	}
	rowsBefore := m.Len()
	prev := gen.prev.Load()
	var added, continued int64 // sampled rows (see generation)
	for k, p := range puts {
		i := -1
		if rows != nil {
			i = int(rows[k])
		}
		if i < 0 {
			n := m.Len()
			i = m.RowForHash(hs[k], p.Row)
			if m.Len() > n && sampled(hs[k]) {
				added++
				if prev != nil && prev.Has(hs[k]) {
					continued++
				}
			}
		}
		for _, c := range p.Cells {
			ts := c.Timestamp
			if ts == 0 {
				ts = now
			}
			m.AddCell(i, c.Family, c.Qualifier, c.Value, ts)
		}
	}
	fresh := m.Len() > rowsBefore
	m.Unlock()
	gen.added(added, continued)
	if fresh {
		rb.lastFresh.Store(time.Now().UnixNano())
		if !rb.sortArmed.Load() {
			select {
			case rb.sortKick <- struct{}{}:
			default:
			}
		}
	}
	if gen.bytes.Load() >= gen.limit(rb.budget, rb.grown) {
		rb.signal()
	}
	return pos, nil
}

// putProbes are a put's rows' hashes and, from probe, their indices in
// the active buffer (-1: not found).
type putProbes struct {
	hashes []uint64
	rows   []int32
	// touched sums a byte of each found row's newest cell block, read so
	// that the block is in the cache when the cell is appended.
	touched uint32
}

// probe looks up the rows of puts (whose hashes are hs) in table's active
// buffer (found without rb.mu: activeRef) under the buffer's read lock,
// into pr.rows, and returns that buffer; nil
// (pr.rows not set) when the table has none yet or the buffer is too
// large for an index to fit an int32.
func (rb *rowBuffer) probe(table string, puts []store.Put, hs []uint64, pr *putProbes) *memrows.Rows {
	m := (*rb.activeRef.Load())[table]
	if m == nil {
		return nil
	}
	m.RLock()
	if m.Len() >= math.MaxInt32 {
		m.RUnlock()
		return nil
	}
	rows, touched := m.FindMany(pr.rows[:0], hs, func(k int) []byte { return puts[k].Row })
	m.RUnlock()
	pr.rows, pr.touched = rows, pr.touched+touched
	return m
}

// maxPooledRecord bounds the record buffers put keeps for reuse.
const maxPooledRecord = 4 << 20
