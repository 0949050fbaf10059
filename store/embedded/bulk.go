package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// PutBulk writes puts as Put does, for a bulk load (store.BulkPutter). In
// a buffered table, the puts whose rows no layer of the row buffer holds
// go straight into Pebble as runs (runs.go) of a sequence number of their
// own, in one sorted sstable that is ingested: no log record, no buffer
// memory, no flush, no rewrite of the run before it settles. The others
// go through Put: a row the buffer holds (its cells there must stay the
// newer ones), a row put twice in the call, a put with cells that carry
// explicit timestamps or are not one a column in ascending column order,
// or that Put would refuse (it says why).
//
// Why the runs are exact: the rows are checked absent from the buffer
// and their sequence number taken under flushMu (as a flush and a delete
// take it), so a later put of such a row is flushed under a larger
// sequence number and stays the newer, whenever the runs land; the rows'
// stripes, taken after flushMu as a delete takes them, are held until
// the runs are in, so a delete of such a row waits for them (and then
// rewrites them) rather than missing them; and the runs' sequence number
// is durable before they are (nextSeq). PutBulk syncs before it returns:
// what it depends on (the UIDs and index entries of its series, written
// deferred by this or another request) must not be lost while its runs
// stay.
func (s *Store) PutBulk(ctx context.Context, table string, puts []store.Put) error {
	if err := s.checkPut(ctx, table); err != nil || len(puts) == 0 {
		return err
	}
	if !s.buffered(table) {
		return s.Put(ctx, table, puts)
	}
	set := s.putStripes(puts)
	rest, err := s.rb.putRuns(table, puts, uint64(s.now().UnixMilli()), func() { set.lock(&s.locks) })
	if err == nil && len(rest) > 0 {
		err = s.apply(table, rest)
	}
	set.unlock(&s.locks)
	if err != nil {
		return err
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), table, err)
	}
	return nil
}

// putRuns writes the puts that can go straight into Pebble as runs of one
// sequence number (see PutBulk), a cell without a timestamp taking now,
// and returns the others, in their order, for the caller to put through
// the buffer. lockRows takes the puts' row stripes: putRuns calls it once,
// under flushMu, whatever it returns (the caller releases them).
func (rb *rowBuffer) putRuns(table string, puts []store.Put, now uint64, lockRows func()) ([]store.Put, error) {
	direct := make([]int, len(puts))
	for i := range puts {
		direct[i] = i
	}
	slices.SortFunc(direct, func(a, b int) int { return bytes.Compare(puts[a].Row, puts[b].Row) })
	// A row put twice goes through the buffer, every put of it, which
	// keeps the later put's cells the newer.
	out := make([]bool, len(puts))
	for k := range direct {
		i := direct[k]
		if !bulkable(&puts[i]) {
			out[i] = true
		}
		if k > 0 && bytes.Equal(puts[direct[k-1]].Row, puts[i].Row) {
			out[direct[k-1]], out[i] = true, true
		}
	}
	seq, direct, rest, err := rb.reserveRuns(table, puts, direct, out, lockRows)
	if err != nil || len(direct) == 0 {
		return rest, err
	}
	defer rb.bulks.Done()
	codec := codecFor(rb.codecs, table)
	err = rb.ingestTable(fmt.Sprintf("bulk-%d.sst", seq), "bulk put", rb.bulkWopts, func(w *sstable.Writer) (int, error) {
		var key, val []byte
		var cells []store.Cell
		for _, i := range direct {
			p := &puts[i]
			cells = append(cells[:0], p.Cells...)
			for j := range cells {
				cells[j].Timestamp = now
			}
			val = appendRun(val[:0], cells, codec, p.Row)
			key = appendRunKey(key[:0], table, p.Row, seq)
			if err := w.Set(key, val); err != nil {
				return 0, err
			}
		}
		return len(direct), nil
	})
	if err != nil {
		return nil, fmt.Errorf("put %d rows into %s: %w", len(direct), table, err)
	}
	return rest, nil
}

// reserveRuns takes, under flushMu, the rows of direct (indices of puts,
// in row order; out marks those that go through the buffer) that no layer
// of the buffer holds, and a sequence number for their runs, and returns
// them with the other puts. Once it returns, a flush that takes any of
// those rows (put since) writes them under a larger sequence number, so
// that the runs can be written and ingested without flushMu, at the same
// time as other bulk puts, flushes and puts. When direct is not empty
// the caller calls rb.bulks.Done once the runs are ingested (close waits
// for them). lockRows is putRuns's.
func (rb *rowBuffer) reserveRuns(table string, puts []store.Put, direct []int, out []bool, lockRows func()) (uint64, []int, []store.Put, error) {
	rb.flushMu.Lock()
	defer rb.flushMu.Unlock()
	lockRows()
	rb.mu.Lock()
	if rb.closed {
		rb.mu.Unlock()
		return 0, nil, nil, fmt.Errorf("row buffer closed: %w", store.ErrUnavailable)
	}
	// Counted now, while not closed: close waits for it from here on.
	rb.bulks.Add(1)
	layers := rb.layersLocked(table)
	rb.mu.Unlock()
	done := true
	defer func() {
		if done {
			rb.bulks.Done()
		}
	}()
	for _, m := range layers {
		m.RLock()
		for _, i := range direct {
			if !out[i] && m.Find(m.Hash(puts[i].Row), puts[i].Row) >= 0 {
				out[i] = true
			}
		}
		m.RUnlock()
	}
	direct = slices.DeleteFunc(direct, func(i int) bool { return out[i] })
	var rest []store.Put
	for i := range puts {
		if out[i] {
			rest = append(rest, puts[i])
		}
	}
	if len(direct) == 0 {
		return 0, nil, rest, nil
	}
	seq, err := rb.nextSeq([]string{table}, true)
	if err != nil {
		return 0, nil, nil, err
	}
	rb.bulkPuts.Add(1)
	done = false
	return seq, direct, rest, nil
}

// bulkable reports whether p can be written as a run of its own: a row
// key, cells without explicit timestamps, one a column in ascending column
// order (a run's form), each one the row buffer would take.
func bulkable(p *store.Put) bool {
	if checkRow(p.Row) != nil || len(p.Cells) == 0 {
		return false
	}
	for j := range p.Cells {
		c := &p.Cells[j]
		if c.Timestamp != 0 || checkCell(p.Row, c, true) != nil {
			return false
		}
		if j > 0 && memrows.CompareColumns(p.Cells[j-1].Family, p.Cells[j-1].Qualifier, c.Family, c.Qualifier) >= 0 {
			return false
		}
	}
	return true
}
