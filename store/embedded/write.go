package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/wlog"
)

// Put writes every put in one batch, durable (fsync) before it returns.
func (s *Store) Put(ctx context.Context, table string, puts []store.Put) error {
	if err := s.PutDeferred(ctx, table, puts); err != nil || len(puts) == 0 {
		return err
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), table, err)
	}
	return nil
}

// PutDeferred is Put without the fsync (store.DeferredPutter): the puts are
// visible at once and durable with the next Put, Sync or Close.
func (s *Store) PutDeferred(ctx context.Context, table string, puts []store.Put) error {
	if err := s.checkPut(ctx, table); err != nil || len(puts) == 0 {
		return err
	}
	set := s.putStripes(puts)
	set.lock(&s.locks)
	err := s.apply(table, puts)
	set.unlock(&s.locks)
	return err
}

// checkPut reports why a put into table cannot go on: the table is not
// one of the store's, ctx is done, or the store is read-only (diskguard.go:
// puts are refused; increments and check-and-puts, a few bytes each, go
// on, so that rules keep their leases).
func (s *Store) checkPut(ctx context.Context, table string) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := s.guard.writable(); err != nil {
		return fmt.Errorf("put into %s: %w", table, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put into %s: %w", table, err)
	}
	return nil
}

// putStripes returns the stripes of the puts' rows, each exclusive when
// a put of it carries explicit timestamps (see writer).
func (s *Store) putStripes(puts []store.Put) stripeSet {
	var set stripeSet
	for _, p := range puts {
		set.add(s.stripe(p.Row), hasVersion(p.Cells))
	}
	return set
}

// hasVersion reports whether any of cells carries an explicit timestamp.
func hasVersion(cells []store.Cell) bool {
	for _, c := range cells {
		if c.Timestamp != 0 {
			return true
		}
	}
	return false
}

// apply commits the puts without fsync: to the memtable and Pebble's WAL,
// or to the row buffer and its log for a buffered table. The caller holds
// the stripes of their rows, exclusively for those with explicit
// timestamps (see writer).
func (s *Store) apply(table string, puts []store.Put) error {
	w := s.newWriter(table, false, false)
	defer w.close()
	if err := w.write(puts); err != nil {
		return err
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), table, err)
	}
	return nil
}

// A writer applies the puts of one operation on one table (a Put, an
// Increment, a round of check-and-puts): pebbleWriter into a batch of cell
// keys that commit applies, bufWriter into the row buffer at once. Either
// checks each put (checkRow, checkCell) and leaves out the cells that
// carry an explicit timestamp older than the version stored for their
// column (hidden), as HBase keeps such a cell hidden behind the newer
// version. The caller holds the stripes of the puts' rows, exclusively
// for those with explicit timestamps, until commit has returned.
type writer interface {
	// write adds puts; a later put's cell replaces an earlier one's of
	// the same column.
	write(puts []store.Put) error
	// read returns the value of a cell with the puts written so far
	// applied, found false when it is absent. Only a writer made to read
	// back (newWriter) sees its uncommitted puts.
	read(row []byte, family, qualifier string) ([]byte, bool, error)
	// commit applies what write added and is not applied yet.
	commit() error
	// close releases the writer; nothing uncommitted is applied.
	close()
}

// newWriter returns a writer of table. readBack makes its read see its
// uncommitted puts (a round of check-and-puts): a pebbleWriter then reads
// through an indexed batch when versioned (some put carries explicit
// timestamps, whose comparison with the stored versions must see the
// earlier puts too), else it remembers the values it wrote, as a point
// read of the database costs less than one through an indexed batch.
func (s *Store) newWriter(table string, readBack, versioned bool) writer {
	if s.buffered(table) {
		return &bufWriter{s: s, table: table}
	}
	w := &pebbleWriter{s: s, table: table, r: s.db}
	if readBack && versioned {
		w.b = s.db.NewIndexedBatch()
		w.r = w.b
	} else {
		w.b = s.db.NewBatch()
		w.remember = readBack
	}
	return w
}

// pebbleWriter writes the cells of an unbuffered table into a Pebble batch
// under their cell keys, a write's puts in row order (rowOrder).
type pebbleWriter struct {
	s     *Store
	table string
	b     *pebble.Batch
	// r is where stored versions and read's cells are read: the database,
	// or b when it is indexed.
	r pebble.Reader
	// remember, when set, keeps the value of every cell written in mine
	// (by Pebble key), for read.
	remember   bool
	mine       map[string][]byte
	kbuf, vbuf []byte
	now        uint64 // the batch's write time (appendValue)
}

func (w *pebbleWriter) write(puts []store.Put) error {
	order := rowOrder(puts)
	for j := range puts {
		i := j
		if order != nil {
			i = order[j]
		}
		if err := w.put(&puts[i]); err != nil {
			return err
		}
	}
	return nil
}

// put adds the cells of p that are not hidden to the batch.
func (w *pebbleWriter) put(p *store.Put) error {
	if err := checkRow(p.Row); err != nil {
		return err
	}
	for i := range p.Cells {
		c := &p.Cells[i]
		if err := checkCell(p.Row, c, false); err != nil {
			return err
		}
		w.kbuf = appendCellKey(w.kbuf[:0], w.table, p.Row, c.Family, c.Qualifier)
		if hide, err := w.s.hidden(w.r, w.table, p.Row, c, w.kbuf); err != nil || hide {
			if err != nil {
				return err
			}
			continue
		}
		w.vbuf = w.s.appendValue(w.vbuf[:0], c, &w.now)
		if err := w.b.Set(w.kbuf, w.vbuf, nil); err != nil {
			return fmt.Errorf("batch set row %x: %w", p.Row, err)
		}
	}
	if w.remember {
		if w.mine == nil {
			w.mine = map[string][]byte{}
		}
		for _, c := range p.Cells {
			w.mine[string(appendCellKey(nil, w.table, p.Row, c.Family, c.Qualifier))] = c.Value
		}
	}
	return nil
}

func (w *pebbleWriter) read(row []byte, family, qualifier string) ([]byte, bool, error) {
	w.kbuf = appendCellKey(w.kbuf[:0], w.table, row, []byte(family), []byte(qualifier))
	if v, ok := w.mine[string(w.kbuf)]; ok {
		return v, true, nil
	}
	v, _, found, err := readCell(w.r, w.kbuf)
	return v, found, err
}

func (w *pebbleWriter) commit() error { return w.s.commit(w.b) }

func (w *pebbleWriter) close() { w.b.Close() }

// bufWriter writes the cells of a buffered table into the row buffer, each
// write at once (its puts one record of the buffer's log).
type bufWriter struct {
	s     *Store
	table string
}

// write adds puts to the row buffer. Cells written without a timestamp
// take the write's time. puts is left as it is: when cells are hidden,
// the buffer gets a copy of it without them.
func (w *bufWriter) write(puts []store.Put) error {
	out := puts
	copied := false
	size := 0
	for i, p := range puts {
		if err := checkRow(p.Row); err != nil {
			return err
		}
		size += len(p.Row) + 16
		for _, c := range p.Cells {
			size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 32
		}
		if size > maxBufferedPut {
			return fmt.Errorf("put of more than %d bytes into %s: %w", maxBufferedPut, w.table, store.ErrInvalid)
		}
		var keep []store.Cell
		dropped := false
		for j := range p.Cells {
			c := &p.Cells[j]
			if err := checkCell(p.Row, c, true); err != nil {
				return err
			}
			drop, err := w.s.hidden(nil, w.table, p.Row, c, nil)
			if err != nil {
				return err
			}
			if drop && !dropped {
				dropped = true
				keep = append(keep, p.Cells[:j]...)
			}
			if dropped && !drop {
				keep = append(keep, *c)
			}
		}
		if dropped {
			if !copied {
				out = slices.Clone(puts)
				copied = true
			}
			out[i].Cells = keep
		}
	}
	if _, err := w.s.rb.put(w.table, out, uint64(w.s.now().UnixMilli())); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), w.table, err)
	}
	return nil
}

func (w *bufWriter) read(row []byte, family, qualifier string) ([]byte, bool, error) {
	return w.s.getCell(w.table, row, family, qualifier)
}

func (w *bufWriter) commit() error { return nil }

func (w *bufWriter) close() {}

// Bounds of what the row buffer takes: a put is one record of its log
// (wlog.MaxRecord), a cell's value one record of a block (sizes are u32).
// Remote write requests are far smaller (--web.max-request-bytes).
const (
	maxBufferedPut   = wlog.MaxRecord / 2
	maxBufferedValue = 64 << 20
)

// checkRow reports an error for an empty row key, which no table holds.
func checkRow(row []byte) error {
	if len(row) == 0 {
		return fmt.Errorf("put with an empty row key: %w", store.ErrInvalid)
	}
	return nil
}

// checkCell reports an error for a cell of row that a table cannot hold:
// a family empty or holding 0x00 (the keys' separator), and in the row
// buffer (buffered) one beyond what its records hold (checkColumn,
// maxBufferedValue).
func checkCell(row []byte, c *store.Cell, buffered bool) error {
	if buffered {
		if err := checkColumn(c.Family, c.Qualifier); err != nil {
			return fmt.Errorf("row %x: %w", row, err)
		}
		if len(c.Value) > maxBufferedValue {
			return fmt.Errorf("row %x: value of %d bytes, more than %d: %w", row, len(c.Value), maxBufferedValue, store.ErrInvalid)
		}
		return nil
	}
	if len(c.Family) == 0 || bytes.IndexByte(c.Family, 0) >= 0 {
		return fmt.Errorf("row %x: family %q: %w", row, c.Family, store.ErrInvalid)
	}
	return nil
}

// hidden reports whether cell c of row carries an explicit timestamp older
// than the version stored for its column (storedVersion, with r and key
// as there), which hides it: a write leaves it out. The caller holds the
// row's stripe exclusively when c carries a timestamp.
func (s *Store) hidden(r pebble.Reader, table string, row []byte, c *store.Cell, key []byte) (bool, error) {
	if c.Timestamp == 0 {
		return false, nil
	}
	ts, found, err := s.storedVersion(r, table, row, c.Family, c.Qualifier, key)
	if err != nil {
		return false, fmt.Errorf("put row %x: %w", row, err)
	}
	return found && ts > c.Timestamp, nil
}

// storedVersion returns the version of row's cell family:qualifier in
// table, found false when the cell is absent: for a buffered table the row
// buffer's newest record of it, else Pebble's (pebbleCell); for another
// the version under its Pebble key, key, read from r (the database, or an
// indexed batch over it).
func (s *Store) storedVersion(r pebble.Reader, table string, row, family, qualifier, key []byte) (uint64, bool, error) {
	if s.buffered(table) {
		if c, ok := s.rb.lookup(table, row, family, qualifier); ok {
			return c.TS, !c.Dead, nil
		}
		_, ts, found, err := s.pebbleCell(table, row, family, qualifier)
		return ts, found, err
	}
	_, ts, found, err := readCell(r, key)
	return ts, found, err
}

// appendValue appends the stored form of c's value (appendCellValue): its
// version is the cell's timestamp, or *now, the batch's write time in
// milliseconds, read from the clock once a batch and kept there.
func (s *Store) appendValue(dst []byte, c *store.Cell, now *uint64) []byte {
	ts := c.Timestamp
	if ts == 0 {
		if *now == 0 {
			*now = uint64(s.now().UnixMilli())
		}
		ts = *now
	}
	return appendCellValue(dst, ts, c.Value)
}

// rowOrder returns the indexes of puts in ascending row order, puts of
// one row in their given order (a later one's cells replace an earlier
// one's), or nil when puts are in that order already. Pebble inserts a
// batch into its memtable key by key, each search starting from where the
// last one ended: in key order a search covers the keys between two of
// the batch's, not the whole memtable, as the random keys of a first
// contact's UID, TSMeta and index rows would.
func rowOrder(puts []store.Put) []int {
	sorted := true
	for i := 1; i < len(puts) && sorted; i++ {
		sorted = bytes.Compare(puts[i-1].Row, puts[i].Row) <= 0
	}
	if sorted {
		return nil
	}
	idx := make([]int, len(puts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(puts[a].Row, puts[b].Row) })
	return idx
}
