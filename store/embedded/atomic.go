package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/promhbase/promhbase/store"
)

// Increment adds delta to an 8-byte big-endian counter cell. Like
// CheckAndPut it is not synced on its own: Pebble's WAL keeps the order of
// commits, so the next synced write (a Put, Sync or Close) makes it
// durable with everything before it. promhbase acknowledges nothing that
// depends on a UID or a metadata update before such a write (the data of
// a request comes after its UIDs), and a UID assignment costs no fsync.
func (s *Store) Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	if err := s.checkTable(table); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("increment %x in %s: %w", row, table, err)
	}
	return s.increment(table, row, family, qualifier, delta)
}

// increment is Increment on a checked table, under the row's stripe.
func (s *Store) increment(table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	defer s.lockRow(row).Unlock()
	v, found, err := s.getCell(table, row, family, qualifier)
	if err != nil {
		return 0, err
	}
	var cur int64
	if found {
		if len(v) != 8 {
			return 0, fmt.Errorf("increment %s:%s of row %x in %s: cell holds %d bytes, not 8: %w", family, qualifier, row, table, len(v), store.ErrInvalid)
		}
		cur = int64(binary.BigEndian.Uint64(v))
	}
	cur += delta
	err = s.apply(table, []store.Put{{Row: row, Cells: []store.Cell{{
		Family: []byte(family), Qualifier: []byte(qualifier), Value: binary.BigEndian.AppendUint64(nil, uint64(cur)),
	}}}})
	if err != nil {
		return 0, err
	}
	return cur, nil
}

// CheckAndPut writes put when the cell holds expected (absent when empty).
// Not synced on its own: see Increment.
func (s *Store) CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	if err := s.checkTable(table); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("check-and-put row %x in %s: %w", put.Row, table, err)
	}
	return s.checkAndPut(table, put, family, qualifier, expected)
}

// checkAndPut is CheckAndPut on a checked table, under the row's stripe.
func (s *Store) checkAndPut(table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	defer s.lockRow(put.Row).Unlock()
	v, found, err := s.getCell(table, put.Row, family, qualifier)
	if err != nil {
		return false, err
	}
	if !holds(expected, v, found) {
		return false, nil
	}
	if err := s.apply(table, []store.Put{put}); err != nil {
		return false, err
	}
	return true, nil
}

// holds reports whether a cell read as value v, found, holds expected as
// a check-and-put means it: absent when expected is empty.
func holds(expected, v []byte, found bool) bool {
	if len(expected) == 0 {
		return !found
	}
	return found && bytes.Equal(v, expected)
}

// CheckAndPutBatch runs the check-and-puts of ops in rounds of at most
// casRoundOps: each round under one lock round (the rows' stripes, taken
// exclusively) and one commit (store.BatchCheckAndPutter). Each check sees
// the puts before it in ops. written[i] reports whether ops[i] was
// written; all false on error. Not synced: see Increment.
func (s *Store) CheckAndPutBatch(ctx context.Context, table string, ops []store.CondPut, written []bool) (err error) {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if len(written) != len(ops) {
		return fmt.Errorf("check-and-put batch: %d results for %d ops: %w", len(written), len(ops), store.ErrInvalid)
	}
	clear(written)
	defer func() {
		if err != nil {
			clear(written)
		}
	}()
	for len(ops) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
		}
		n := min(len(ops), casRoundOps)
		if err := s.casRound(table, ops[:n], written[:n]); err != nil {
			return err
		}
		ops, written = ops[n:], written[n:]
	}
	return nil
}

// casRoundOps bounds the check-and-puts that hold their stripes together:
// a round of thousands would hold nearly every stripe, stalling every
// write while it runs.
const casRoundOps = 256

// casRound runs one round of check-and-puts under their rows' stripes,
// through one writer that reads back its own puts, so that each check
// sees the puts before it, and commits them together.
func (s *Store) casRound(table string, ops []store.CondPut, written []bool) error {
	var set stripeSet
	for i := range ops {
		set.add(s.stripe(ops[i].Put.Row), true)
	}
	set.lock(&s.locks)
	defer set.unlock(&s.locks)
	versioned := slices.ContainsFunc(ops, func(op store.CondPut) bool { return hasVersion(op.Put.Cells) })
	w := s.newWriter(table, true, versioned)
	defer w.close()
	one := make([]store.Put, 1) // the op's put, for write
	for i := range ops {
		op := &ops[i]
		v, found, err := w.read(op.Put.Row, op.Family, op.Qualifier)
		if err != nil {
			return fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", op.Family, op.Qualifier, op.Put.Row, table, err)
		}
		if !holds(op.Expected, v, found) {
			continue
		}
		one[0] = op.Put
		if err := w.write(one); err != nil {
			return err
		}
		written[i] = true
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
	}
	return nil
}
