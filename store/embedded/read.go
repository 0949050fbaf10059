package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
)

// Get returns the row's cells, restricted to family when not empty: a
// scan of the one row, which merges the row buffer's layers as every scan
// does.
func (s *Store) Get(ctx context.Context, table string, row []byte, family string) (store.Row, error) {
	if err := s.checkTable(table); err != nil {
		return store.Row{}, err
	}
	sc := s.scanRow(ctx, table, row, family)
	defer sc.Close()
	r := store.Row{Key: bytes.Clone(row)}
	if sc.Next() {
		for _, c := range sc.Row().Cells {
			r.Cells = append(r.Cells, store.Cell{
				Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier),
				Value: bytes.Clone(c.Value), Timestamp: c.Timestamp,
			})
		}
	}
	if err := sc.Err(); err != nil {
		return store.Row{}, fmt.Errorf("get row %x from %s: %w", row, table, err)
	}
	return r, nil
}

// scanRow returns a scan of the one row of table, of family's cells when
// family is not empty: row ‖ 0x00 is the first key after row.
func (s *Store) scanRow(ctx context.Context, table string, row []byte, family string) store.Scanner {
	return s.Scan(ctx, store.ScanRequest{Table: table, Start: row, Stop: append(bytes.Clone(row), 0), Family: family})
}

// GetCell returns the value of one cell, found false when it is absent: a
// point read, which the bloom filters answer without reading a table that
// cannot hold the cell (store.CellGetter).
func (s *Store) GetCell(ctx context.Context, table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	if err := s.checkTable(table); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("get cell of row %x in %s: %w", row, table, err)
	}
	return s.getCell(table, row, family, qualifier)
}

// getCell is GetCell on a checked table: the row buffer's newest record of
// the cell, else Pebble's (pebbleCell). The value is the caller's.
func (s *Store) getCell(table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	if s.buffered(table) {
		if c, ok := s.rb.lookup(table, row, []byte(family), []byte(qualifier)); ok {
			if c.Dead {
				return nil, false, nil
			}
			return c.Value, true, nil
		}
	}
	v, _, found, err := s.pebbleCell(table, row, []byte(family), []byte(qualifier))
	return v, found, err
}

// readCell reads the cell under the Pebble key k from r (the database or
// an indexed batch over it): its value (a copy) and version, found false
// when it is absent.
func readCell(r pebble.Reader, k []byte) (value []byte, ts uint64, found bool, err error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("read cell: %w", err)
	}
	defer closer.Close()
	ts, value, err = splitValue(v)
	if err != nil {
		return nil, 0, false, err
	}
	return bytes.Clone(value), ts, true, nil
}

// GetCells reads one cell (family:qualifier) of each of rows, in one pass
// of one iterator over the rows' keys in order: values[i] and found[i]
// answer rows[i] (both of len(rows)). Sorted seeks let the iterator move
// on from where it is, and a prefix seek consults the bloom filters,
// which a new name's absent forward row needs; many point reads cost
// about half what as many Gets do.
func (s *Store) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	if s.buffered(table) {
		// A point read each: the buffer's layers, then Pebble as it is
		// then (one iterator for all could predate a flush that moved a
		// cell from a layer into Pebble).
		for i, row := range rows {
			v, ok, err := s.getCell(table, row, family, qualifier)
			if err != nil {
				return err
			}
			values[i], found[i] = v, ok
		}
		return nil
	}
	keys := make([][]byte, len(rows))
	order := make([]int, len(rows))
	var buf []byte
	for i, row := range rows {
		at := len(buf)
		buf = appendCellKey(buf, table, row, []byte(family), []byte(qualifier))
		keys[i] = buf[at:len(buf):len(buf)]
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	defer it.Close()
	for n, i := range order {
		if n%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
			}
		}
		values[i], found[i] = nil, false
		if !it.SeekPrefixGE(keys[i]) || !bytes.Equal(it.Key(), keys[i]) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read cell %s:%s of row %x in %s: %w", family, qualifier, rows[i], table, err)
		}
		_, value, err := splitValue(v)
		if err != nil {
			return err
		}
		values[i], found[i] = bytes.Clone(value), true
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	return nil
}
