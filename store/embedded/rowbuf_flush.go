package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// Flushes of the row buffer into Pebble: the flusher goroutine runs one
// when a put finds the buffer at its budget (signal), CompactAll and close
// run one at once.

// flusher runs a flush each time it is kicked, until stopFlush is closed
// or the buffer is closed; stopped is closed when it returns. kick itself
// is never closed: a put signals after it let go of rb.mu, and may do so
// after close.
func (rb *rowBuffer) flusher() {
	defer close(rb.stopped)
	for {
		select {
		case <-rb.stopFlush:
			return
		case <-rb.kick:
		}
		rb.mu.Lock()
		closed := rb.closed
		// A put that saw the buffer at its budget may wake it after
		// another flush swapped that buffer out: a young one waits.
		due := rb.flushing != nil || rb.flushErr != nil || rb.size() >= rb.limit()
		rb.mu.Unlock()
		if closed {
			return
		}
		if !due {
			continue
		}
		rb.flushMu.Lock()
		if err := rb.flushLocked(); err != nil {
			rb.flushErrors.Add(1)
		}
		rb.flushMu.Unlock()
	}
}

// flush writes the active buffer into Pebble now.
func (rb *rowBuffer) flush() error {
	rb.flushMu.Lock()
	defer rb.flushMu.Unlock()
	return rb.flushLocked()
}

// flushTrim flushes the buffer and then trims its log (wlog.Log.Trim), no
// other flush retiring segments meanwhile.
func (rb *rowBuffer) flushTrim() error {
	rb.flushMu.Lock()
	defer rb.flushMu.Unlock()
	if err := rb.flushLocked(); err != nil {
		return err
	}
	return rb.wal.Trim()
}

// flushLocked swaps the active buffer out and ingests it; a buffer whose
// ingest failed before is retried first. The caller holds flushMu.
func (rb *rowBuffer) flushLocked() error {
	var swapped *generation // the new active buffer's, when this flush swapped
	rb.mu.Lock()
	if rb.flushing == nil {
		// Each buffer's lock is taken before it is swapped out: a put
		// that reached it under rb.mu holds it until its cells are in
		// (see put), so nothing writes a buffer once it is flushing.
		empty := true
		for _, m := range rb.active {
			m.RLock()
			if m.Len() > 0 {
				empty = false
			}
			m.RUnlock()
		}
		if empty {
			rb.mu.Unlock()
			return nil
		}
		seg, err := rb.wal.Rotate()
		if err != nil {
			rb.flushErr = err
			rb.cond.Broadcast()
			rb.mu.Unlock()
			if rb.onErr != nil {
				rb.onErr(err)
			}
			return err
		}
		rb.flushing, rb.flushSeg = rb.active, seg
		rb.setActive(rb.fresh())
		swapped = rb.gen
	}
	flushing, seg := rb.flushing, rb.flushSeg
	rb.mu.Unlock()
	if swapped != nil {
		// The new buffer's rows are told continued by the old one's.
		swapped.prev.Store(newHashSet(flushing))
	}

	err := rb.ingest(flushing)
	if err == nil {
		err = rb.wal.RemoveThrough(seg)
	}
	rb.mu.Lock()
	if err == nil {
		for _, m := range rb.flushing {
			m.Release()
		}
		rb.flushing = nil
		rb.flushes.Add(1)
	}
	rb.flushErr = err
	rb.cond.Broadcast()
	rb.mu.Unlock()
	if err != nil && rb.onErr != nil {
		rb.onErr(err)
	}
	return err
}

// ingest writes the live cells of bufs into one sstable, in key order, and
// ingests it into Pebble. The cells of a buffered table go in as one run a
// row (runs.go; packed by the table's RowCodec when it has one and the
// codec takes the row), under the next flush sequence number (nextSeq),
// which is made durable first, with the table's mark, so that no later
// flush reuses it; those of a table the log named but this session does
// not buffer go in as a key a cell. The caller holds flushMu (nothing
// changes bufs).
func (rb *rowBuffer) ingest(bufs map[string]*memrows.Rows) error {
	tables := sortedTables(bufs)
	var runTables []string
	for _, table := range tables {
		if !rb.writesRuns(table) {
			continue
		}
		m := bufs[table]
		m.RLock()
		empty := m.Len() == 0
		m.RUnlock()
		if !empty {
			runTables = append(runTables, table)
		}
	}
	var seq uint64
	if len(runTables) > 0 {
		var err error
		if seq, err = rb.nextSeq(runTables, false); err != nil {
			return err
		}
	}
	return rb.ingestTable("ingest.sst", "row buffer", rb.wopts, func(w *sstable.Writer) (n int, err error) {
		var key, val []byte
		var cells []memrows.Cell
		var live []store.Cell // a row's live cells, for a codec
		for _, table := range tables {
			m := bufs[table]
			runs := rb.writesRuns(table)
			codec := codecFor(rb.codecs, table)
			srt := m.Sorted()
			m.RLock()
			for _, i := range srt.Order {
				row := srt.Key(i)
				cells, _ = m.RowCells(cells[:0], int(i))
				if runs && codec != nil {
					live = live[:0]
					for _, c := range cells {
						if !c.Dead { // deleted: Pebble has the tombstone already
							live = append(live, store.Cell{Family: c.Family, Qualifier: c.Qualifier, Value: c.Value, Timestamp: c.TS})
						}
					}
					if len(live) > 0 {
						val = appendRun(val[:0], live, codec, row)
						key = appendRunKey(key[:0], table, row, seq)
						if err = w.Set(key, val); err == nil {
							n++
						}
					}
				} else if runs {
					val = append(val[:0], runFormat)
					var prev []byte
					live := 0
					for _, c := range cells {
						if c.Dead {
							continue // deleted: Pebble has the tombstone already
						}
						val = appendRunCell(val, prev, c.Family, c.Qualifier, c.Value, c.TS)
						prev = c.Family
						live++
					}
					if live > 0 {
						key = appendRunKey(key[:0], table, row, seq)
						if err = w.Set(key, val); err == nil {
							n++
						}
					}
				} else {
					for _, c := range cells {
						if c.Dead {
							continue
						}
						key = appendCellKey(key[:0], table, row, c.Family, c.Qualifier)
						val = appendCellValue(val[:0], c.TS, c.Value)
						if err = w.Set(key, val); err != nil {
							break
						}
						n++
					}
				}
				if err != nil {
					break
				}
			}
			m.RUnlock()
			if err != nil {
				break
			}
		}
		return n, err
	})
}

// seqReserve is how many sequence numbers a bulk put's nextSeq makes
// durable at once: a bulk load (PutBulk) takes one a call, and needs no
// write of its own for most.
const seqReserve = 64

// nextSeq returns the sequence number of the next write of runs into
// tables: a flush's, or with bulk PutBulk's. Before it returns, that
// number is durable (runSeqKey holds it or a larger one, so that no
// session reuses it: lastRunSeq starts above it) and so are the tables'
// marks (which buffer them in every later session). A flush writes both
// each time, so that they stay in the tables that flushes write (and
// settle with them); a bulk put writes them only when its number is past
// those reserved (seqReserve) or a table is not marked yet. The caller
// holds flushMu.
func (rb *rowBuffer) nextSeq(tables []string, bulk bool) (uint64, error) {
	seq := rb.seq + 1
	var mark []string // the tables whose marks are written
	for _, t := range tables {
		if !rb.marked[t] || !bulk {
			mark = append(mark, t)
		}
	}
	if bulk && seq <= rb.seqDurable && len(mark) == 0 {
		rb.seq = seq
		return seq, nil
	}
	reserved := max(rb.seqDurable, seq)
	if bulk {
		reserved = max(reserved, seq+seqReserve-1)
	}
	b := rb.db.NewBatch()
	defer b.Close()
	if err := b.Set(runSeqKey, binary.BigEndian.AppendUint64(nil, reserved), nil); err != nil {
		return 0, fmt.Errorf("row buffer flush sequence: %w", err)
	}
	for _, t := range mark {
		if err := b.Set(append(append([]byte(nil), runsTablePrefix...), t...), nil, nil); err != nil {
			return 0, fmt.Errorf("row buffer table mark: %w", err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("row buffer flush sequence: %w: %w", store.ErrUnavailable, err)
	}
	if rb.marked == nil {
		rb.marked = map[string]bool{}
	}
	for _, t := range mark {
		rb.marked[t] = true
	}
	rb.seq, rb.seqDurable = seq, reserved
	return seq, nil
}

// ingestTable writes one sstable with fill, in key order, into the file
// name of the buffer's directory (one no other writer uses meanwhile),
// and ingests it into Pebble when fill wrote any key (n); what names the
// writer in errors.
func (rb *rowBuffer) ingestTable(name, what string, wopts sstable.WriterOptions, fill func(w *sstable.Writer) (n int, err error)) error {
	path := filepath.Join(rb.dir, name)
	f, err := rb.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create %s sstable: %w", what, err)
	}
	defer rb.fs.Remove(path) //nolint:errcheck // ingested: linked into Pebble's directory; failed: removed at the next open
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wopts)
	n, err := fill(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s sstable: %w: %w", what, store.ErrUnavailable, err)
	}
	if n == 0 {
		return nil
	}
	if err := rb.db.Ingest(context.Background(), []string{path}); err != nil {
		return fmt.Errorf("ingest %s: %w: %w", what, store.ErrUnavailable, err)
	}
	return nil
}

// sortedTables returns the keys of m in order.
func sortedTables[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
