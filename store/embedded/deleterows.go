package embedded

import (
	"context"
	"fmt"

	"github.com/promhbase/promhbase/store"
)

var _ store.RowRangeDeleter = (*Store)(nil)

// DeleteRows removes every row of table in [start, stop) (stop empty: to
// the table's end) in one step (store.RowRangeDeleter), durable (fsync)
// before it returns: one range tombstone over the rows' keys in Pebble
// (cells and runs), and for a buffered table the rows marked deleted in
// the row buffer and a record in its log that kills them again when the
// log is replayed after a crash (the records before it, that is; the
// rows' puts logged after it survive). The range is noted for the next
// settle, which gives its space back.
//
// It holds every row stripe while it applies the tombstone and marks the
// buffer, so that no Increment or check-and-put of a row in the range
// straddles it (writes wait that long: a few milliseconds, and one pass
// over the rows the buffer holds); a row written after it returned is
// kept. A scan that began before it may still return rows of the range.
func (s *Store) DeleteRows(ctx context.Context, table string, start, stop []byte) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete rows [%x, %x) of %s: %w", start, stop, table, err)
	}
	lower, upper, ok := rowRange(table, start, stop)
	if !ok {
		return nil
	}
	if err := s.deleteRows(table, start, stop, lower, upper); err != nil {
		return fmt.Errorf("delete rows [%x, %x) of %s: %w", start, stop, table, err)
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("delete rows [%x, %x) of %s: %w", start, stop, table, err)
	}
	return nil
}

// deleteRows is DeleteRows without the fsync: the tombstone over the
// Pebble keys [lower, upper) first, then the row buffer (as delete orders
// them, for the same reasons: see rowBuffer).
func (s *Store) deleteRows(table string, start, stop, lower, upper []byte) error {
	buffered := s.buffered(table)
	if buffered {
		s.rb.flushMu.Lock()
		defer s.rb.flushMu.Unlock()
	}
	var all stripeSet
	for i := range rowLocks {
		all.add(i, true)
	}
	all.lock(&s.locks)
	defer all.unlock(&s.locks)
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return fmt.Errorf("range tombstone: %w", err)
	}
	if err := s.commit(b); err != nil {
		return err
	}
	if buffered {
		s.rb.killRows(table, start, stop)
	}
	s.settler.noteDeleted(lower, upper)
	return nil
}
