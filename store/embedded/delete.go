package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// Delete removes columns of a row, or the whole row, durable (fsync)
// before it returns. It holds the row's stripe exclusively while it
// compares the stored versions with the columns' bounds and applies the
// deletes, so that a version written after the comparison is never
// removed.
func (s *Store) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete row %x in %s: %w", row, table, err)
	}
	if err := s.delete(table, row, columns); err != nil {
		return err
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
	}
	return nil
}

// DeleteDeferred is Delete without the fsync (store.DeferredDeleter): the
// delete is visible at once and durable with the next Sync or durable
// write.
func (s *Store) DeleteDeferred(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete row %x in %s: %w", row, table, err)
	}
	return s.delete(table, row, columns)
}

// delete is Delete without the fsync: Pebble's tombstones (a range
// tombstone over the row when columns is empty), the rewrite of the runs
// that hold deleted columns, then for a buffered table the buffer's
// records marked dead, in that order (see rowBuffer). The row is noted
// for the next settle.
func (s *Store) delete(table string, row []byte, columns []store.Column) error {
	if s.buffered(table) {
		// No flush may run while a delete reaches into the row buffer:
		// see rowBuffer.
		s.rb.flushMu.Lock()
		defer s.rb.flushMu.Unlock()
	}
	defer s.lockRow(row).Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	if len(columns) == 0 {
		p := appendRowPrefix(nil, table, row)
		if err := b.DeleteRange(p, store.PrefixEnd(p), nil); err != nil {
			return fmt.Errorf("delete row %x in %s: %w", row, table, err)
		}
	}
	versions, err := s.versionsFor(table, row, columns)
	if err != nil {
		return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
	}
	// A buffered table's cells live in runs; cell keys of its rows are
	// left only from before it held runs. A point tombstone for each
	// deleted column of a row without any would be dead weight in
	// Pebble's log and level 0: the compaction of an hour deletes every
	// sample cell of every row of that hour (24 h × 2000 series: 11.5 M
	// tombstones, over 500 MB of log, 121 MB of it kept as recycled log
	// files).
	pointKeys := true
	if s.buffered(table) && len(columns) > 0 {
		if pointKeys, err = s.hasCellKeys(table, row); err != nil {
			return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
		}
	}
	var k []byte
	var killed []memrows.Column // the columns deleted, for the row buffer
	for _, c := range columns {
		if len(c.Family) == 0 || bytes.IndexByte(c.Family, 0) >= 0 {
			return fmt.Errorf("delete in row %x of %s: family %q: %w", row, table, c.Family, store.ErrInvalid)
		}
		k = appendCellKey(k[:0], table, row, c.Family, c.Qualifier)
		if c.Timestamp != 0 {
			var ts uint64
			var found bool
			if versions != nil {
				ts, found = versions.get(c.Family, c.Qualifier)
			} else if ts, found, err = s.storedVersion(s.db, table, row, c.Family, c.Qualifier, k); err != nil {
				return fmt.Errorf("delete %s:%x of row %x in %s: %w", c.Family, c.Qualifier, row, table, err)
			}
			if !found || ts > c.Timestamp {
				continue // nothing at or before the bound
			}
		}
		if pointKeys {
			if err := b.Delete(k, nil); err != nil {
				return fmt.Errorf("delete %s:%x of row %x in %s: %w", c.Family, c.Qualifier, row, table, err)
			}
		}
		killed = append(killed, memrows.Column{Family: c.Family, Qualifier: c.Qualifier})
	}
	if s.buffered(table) && len(killed) > 0 {
		if err := s.deleteFromRuns(b, table, row, killedSet(killed)); err != nil {
			return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
		}
	}
	if b.Empty() && len(killed) == 0 {
		return nil
	}
	if s.buffered(table) {
		// What a rewrite put before this delete (a compacted cell, a
		// column cut to its kept samples) is in the row buffer's log,
		// which with a sync interval is written but maybe not yet
		// fdatasynced: it goes to disk before the cells it replaces can
		// go, so that no crash keeps the delete and loses the put. Only
		// the puts: the delete records since the last (a compaction's
		// deletes one after the other) need no fdatasync of their own.
		if err := s.rb.wal.SyncTo(s.rb.lastPut.Load()); err != nil {
			s.noteLogErr(err)
			return fmt.Errorf("delete in row %x of %s: sync the row buffer's log first: %w: %w", row, table, store.ErrUnavailable, err)
		}
	}
	if !b.Empty() {
		if err := s.commit(b); err != nil {
			return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
		}
	}
	if s.buffered(table) && (len(columns) == 0 || len(killed) > 0) {
		// After Pebble's tombstones, so that a reader never sees an older
		// version come back between the two. No columns: the whole row.
		s.rb.kill(table, row, killed)
	}
	p := appendRowPrefix(nil, table, row)
	s.settler.noteDeleted(p, store.PrefixEnd(p))
	return nil
}

// columnVersions are the columns of a row with their versions, sorted by
// column, their names in one buffer.
type columnVersions struct {
	cols []columnVersion
}

type columnVersion struct {
	family, qualifier []byte
	ts                uint64
}

// get returns the version of column family:qualifier.
func (cv *columnVersions) get(family, qualifier []byte) (uint64, bool) {
	i, found := slices.BinarySearchFunc(cv.cols, columnVersion{family: family, qualifier: qualifier}, func(a, b columnVersion) int {
		return memrows.CompareColumns(a.family, a.qualifier, b.family, b.qualifier)
	})
	if !found {
		return 0, false
	}
	return cv.cols[i].ts, true
}

// versionsFor returns the stored versions of the row's columns when many
// columns have bounds, which one scan of the row reads faster than a
// point lookup each; nil when few do.
func (s *Store) versionsFor(table string, row []byte, columns []store.Column) (*columnVersions, error) {
	bounded := 0
	for _, c := range columns {
		if c.Timestamp != 0 {
			bounded++
		}
	}
	if bounded < 8 {
		return nil, nil
	}
	sc := s.scanRow(context.Background(), table, row, "")
	defer sc.Close()
	cv := &columnVersions{}
	if sc.Next() {
		cells := sc.Row().Cells // sorted by column
		n := 0
		for _, c := range cells {
			n += len(c.Family) + len(c.Qualifier)
		}
		names := make([]byte, 0, n)
		cv.cols = make([]columnVersion, len(cells))
		for i, c := range cells {
			at := len(names)
			names = append(append(names, c.Family...), c.Qualifier...)
			f := len(c.Family)
			cv.cols[i] = columnVersion{family: names[at : at+f : at+f], qualifier: names[at+f : len(names) : len(names)], ts: c.Timestamp}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read cell versions of row %x in %s: %w", row, table, err)
	}
	return cv, nil
}

// hasCellKeys reports whether Pebble holds a cell key (not a run) of row
// in table: one after the row's prefix whose next byte, the first of a
// family, is not 0x00.
func (s *Store) hasCellKeys(table string, row []byte) (bool, error) {
	p := appendRowPrefix(nil, table, row)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: append(slices.Clip(p), 0x01), UpperBound: store.PrefixEnd(p)})
	if err != nil {
		return false, fmt.Errorf("look for cell keys: %w", err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("look for cell keys: %w", err)
	}
	return found, nil
}
