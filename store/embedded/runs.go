package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// A run is the cells of one row that one flush of the row buffer wrote,
// packed into one Pebble key instead of a key per cell: a read of the row
// then steps over one key a flush, not one a sample.
//
// Key of a run:
//
//	table 0x00 escape(row) 0x00 0x01 0x00 seq
//
// seq is the flush's sequence number, u64 big-endian, larger for every
// later flush (runSeqKey keeps the last one across restarts). A family
// is never empty, so the 0x00 after the row's terminator tells a run from
// a cell key, and a row's runs sort before its cell keys, oldest first.
//
// Value of a run, in one of two formats told apart by its first byte:
//
//	u8 runFormat (1)
//	per cell, in ascending column order (family, then qualifier, bytewise),
//	one cell a column:
//	  uvarint len(family) ‖ family   0: the family of the cell before
//	  uvarint len(qualifier) ‖ qualifier
//	  u64 big-endian timestamp (Unix ms)
//	  uvarint len(value) ‖ value
//
//	u8 runFormatCodec (2) ‖ the bytes the table's RowCodec packed the
//	cells into (codec.go; Options.RowCodecs)
//
// A flush writes a run of format 2 when the table has a codec and it
// packs the run's cells, else format 1; every reader of runs takes both,
// and a rewrite of a run (a delete of some of its columns) packs what is
// left again when it can.
//
// A run holds only live cells: a flush leaves deleted ones out, and a
// delete rewrites the runs that held its columns.
//
// Which is newer: a table that holds runs is buffered in every later
// session that opens it (Open buffers the tables runsTablePrefix names),
// so all its puts go through the row buffer, and a flush writes runs for
// it even in a session that does not open it (its log replayed there);
// so every cell key of it predates every run of it, and of two runs the
// later seq is newer. A read lays the runs over the cell keys, oldest
// first, each newer cell replacing its column.
const (
	runFormat      = 1
	runFormatCodec = 2
)

// runSeqKey holds the sequence number of the last flush that wrote runs
// (u64 big-endian); runsTablePrefix ‖ table marks a table that holds runs.
// Both start with 0x00, which no table's key does.
var (
	runSeqKey       = []byte("\x00runseq")
	runsTablePrefix = []byte("\x00runs\x00")
)

// appendRunKey appends the key of row's run of flush seq.
func appendRunKey(dst []byte, table string, row []byte, seq uint64) []byte {
	dst = appendRowPrefix(dst, table, row)
	dst = append(dst, 0x00)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// isRunColumn reports whether col, a key's bytes after its row prefix,
// is a run's: 0x00 seq.
func isRunColumn(col []byte) bool { return len(col) > 0 && col[0] == 0 }

// errCorruptRun is wrapped by every decoding error of a run.
var errCorruptRun = errors.New("corrupt embedded run")

// appendRunCell appends one cell to a run value started with runFormat;
// prevFamily is the family of the cell before (nil for the first). Cells
// must come in ascending column order, one per column.
func appendRunCell(dst, prevFamily, family, qualifier, value []byte, ts uint64) []byte {
	if prevFamily != nil && bytes.Equal(prevFamily, family) {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(family)))
		dst = append(dst, family...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(qualifier)))
	dst = append(dst, qualifier...)
	dst = binary.BigEndian.AppendUint64(dst, ts)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// runReader steps through a run value's cells. Its slices point into the
// value. Cells must ascend strictly by column; a value that breaks that or
// ends inside a cell stops the reader with an error.
type runReader struct {
	b    []byte
	prev struct{ family, qualifier []byte }
	n    int
	err  error
}

// newRunReader returns a reader of run value v, failed when v does not
// start with runFormat.
func newRunReader(v []byte) runReader {
	if len(v) == 0 || v[0] != runFormat {
		return runReader{err: fmt.Errorf("%w: format byte of a %d-byte value", errCorruptRun, len(v))}
	}
	return runReader{b: v[1:]}
}

// bytes reads uvarint n ‖ n bytes: a length below 128 (every qualifier
// and most values) is one byte, read without the varint loop.
func (r *runReader) bytes(what string) ([]byte, bool) {
	if len(r.b) > 0 && r.b[0] < 0x80 {
		n := int(r.b[0])
		if n < len(r.b) {
			v := r.b[1 : 1+n : 1+n]
			r.b = r.b[1+n:]
			return v, true
		}
	} else if n, k := binary.Uvarint(r.b); k > 0 && n <= uint64(len(r.b)-k) {
		v := r.b[k : k+int(n) : k+int(n)]
		r.b = r.b[k+int(n):]
		return v, true
	}
	r.err = fmt.Errorf("%w: %s of cell %d: length past the value's %d bytes", errCorruptRun, what, r.n, len(r.b))
	return nil, false
}

// next returns the next cell; false at the end or on an error (Err).
func (r *runReader) next() (family, qualifier, value []byte, ts uint64, ok bool) {
	if r.err != nil || len(r.b) == 0 {
		return nil, nil, nil, 0, false
	}
	same := r.b[0] == 0 // the family of the cell before
	if same {
		if r.n == 0 {
			r.err = fmt.Errorf("%w: first cell without a family", errCorruptRun)
			return nil, nil, nil, 0, false
		}
		family, r.b = r.prev.family, r.b[1:]
	} else if family, ok = r.bytes("family"); !ok {
		return nil, nil, nil, 0, false
	} else if len(family) == 0 || bytes.IndexByte(family, 0) >= 0 {
		r.err = fmt.Errorf("%w: cell %d: family %q", errCorruptRun, r.n, family)
		return nil, nil, nil, 0, false
	}
	if qualifier, ok = r.bytes("qualifier"); !ok {
		return nil, nil, nil, 0, false
	}
	if len(r.b) < 8 {
		r.err = fmt.Errorf("%w: timestamp of cell %d past the value", errCorruptRun, r.n)
		return nil, nil, nil, 0, false
	}
	ts, r.b = binary.BigEndian.Uint64(r.b), r.b[8:]
	if value, ok = r.bytes("value"); !ok {
		return nil, nil, nil, 0, false
	}
	if r.n > 0 {
		if memrows.CompareColumns(r.prev.family, r.prev.qualifier, family, qualifier) >= 0 {
			r.err = fmt.Errorf("%w: cell %d not after the one before it", errCorruptRun, r.n)
			return nil, nil, nil, 0, false
		}
	}
	r.prev.family, r.prev.qualifier = family, qualifier
	r.n++
	return family, qualifier, value, ts, true
}

// appendRunCells appends the cells of run v of row (of family only, when
// not nil) to dst, their slices pointing into v or, for a run of format
// 2, into buf, which the table's codec (nil: none) grows and which is
// returned. Bytes of buf below its length are left as they are.
func appendRunCells(dst []store.Cell, buf, v, family []byte, codec RowCodec, row []byte) ([]store.Cell, []byte, error) {
	if len(v) > 0 && v[0] == runFormatCodec {
		return decodeCodecRun(dst, buf, codec, row, v[1:], family)
	}
	r := newRunReader(v)
	for {
		f, q, val, ts, ok := r.next()
		if !ok {
			return dst, buf, r.err
		}
		if family != nil && !bytes.Equal(f, family) {
			continue
		}
		dst = append(dst, store.Cell{Family: f, Qualifier: q, Value: val, Timestamp: ts})
	}
}

// findRunCell returns the cell family:qualifier of run v of row, reading
// its cells up to that column (they ascend); the value points into v or
// into memory of its own.
func findRunCell(v, family, qualifier []byte, codec RowCodec, row []byte) (value []byte, ts uint64, found bool, err error) {
	if len(v) > 0 && v[0] == runFormatCodec {
		cells, _, err := decodeCodecRun(nil, nil, codec, row, v[1:], family)
		if err != nil {
			return nil, 0, false, err
		}
		i, found := slices.BinarySearchFunc(cells, qualifier, func(c store.Cell, q []byte) int {
			return memrows.CompareColumns(c.Family, c.Qualifier, family, q)
		})
		if !found {
			return nil, 0, false, nil
		}
		return cells[i].Value, cells[i].Timestamp, true, nil
	}
	r := newRunReader(v)
	for {
		f, q, val, t, ok := r.next()
		if !ok {
			return nil, 0, false, r.err
		}
		switch c := memrows.CompareColumns(f, q, family, qualifier); {
		case c == 0:
			return val, t, true, nil
		case c > 0:
			return nil, 0, false, nil // past the column
		}
	}
}

// runWithout appends to dst run v of row without the cells kill reports
// true for, and reports whether it left any out and how many cells it
// kept. A run of format 2 is packed again by codec when it packs what is
// left, else written in format 1.
func runWithout(dst, v []byte, kill func(family, qualifier []byte) bool, codec RowCodec, row []byte) (out []byte, changed bool, kept int, err error) {
	if len(v) > 0 && v[0] == runFormatCodec {
		cells, _, err := decodeCodecRun(nil, nil, codec, row, v[1:], nil)
		if err != nil {
			return dst, false, 0, err
		}
		live := cells[:0]
		for _, c := range cells {
			if kill(c.Family, c.Qualifier) {
				changed = true
				continue
			}
			live = append(live, c)
		}
		return appendRun(dst, live, codec, row), changed, len(live), nil
	}
	r := newRunReader(v)
	dst = append(dst, runFormat)
	var prev []byte
	for {
		f, q, val, ts, ok := r.next()
		if !ok {
			return dst, changed, kept, r.err
		}
		if kill(f, q) {
			changed = true
			continue
		}
		dst = appendRunCell(dst, prev, f, q, val, ts)
		prev = f
		kept++
	}
}

// appendRun appends the run value of cells (ascending by column, one a
// column) of row: packed by codec in format 2 when there is one and it
// packs them, else in format 1.
func appendRun(dst []byte, cells []store.Cell, codec RowCodec, row []byte) []byte {
	start := len(dst)
	if codec != nil && len(cells) > 0 {
		if out, ok := codec.Encode(append(dst, runFormatCodec), row, cells); ok {
			return out
		}
	}
	dst = append(dst[:start], runFormat)
	var prev []byte
	for _, c := range cells {
		dst = appendRunCell(dst, prev, c.Family, c.Qualifier, c.Value, c.Timestamp)
		prev = c.Family
	}
	return dst
}

// runBounds returns the bounds of the keys of row's runs.
func runBounds(table string, row []byte) (lower, upper []byte) {
	lower = appendRowPrefix(nil, table, row)
	upper = bytes.Clone(lower)
	lower = append(lower, 0x00)
	upper = append(upper, 0x01)
	return lower, upper
}

// pebbleCell returns the cell family:qualifier of row as Pebble holds it:
// from the newest run that has it, else from its cell key.
func (s *Store) pebbleCell(table string, row, family, qualifier []byte) (value []byte, ts uint64, found bool, err error) {
	if s.buffered(table) {
		codec := codecFor(s.codecs, table)
		lower, upper := runBounds(table, row)
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return nil, 0, false, fmt.Errorf("read runs of row %x in %s: %w", row, table, err)
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return nil, 0, false, fmt.Errorf("read run of row %x in %s: %w", row, table, err)
			}
			val, t, found, err := findRunCell(v, family, qualifier, codec, row)
			if err != nil || found {
				val = bytes.Clone(val)
				if cerr := it.Close(); err == nil {
					err = cerr
				}
				return val, t, found && err == nil, err
			}
		}
		if err := it.Close(); err != nil {
			return nil, 0, false, fmt.Errorf("read runs of row %x in %s: %w", row, table, err)
		}
	}
	k := appendCellKey(nil, table, row, family, qualifier)
	if value, ts, found, err = readCell(s.db, k); err != nil {
		return nil, 0, false, fmt.Errorf("cell %s:%x of row %x in %s: %w", family, qualifier, row, table, err)
	}
	return value, ts, found, nil
}

// deleteFromRuns adds to b the rewrites of row's runs that leave out the
// columns kill reports true for: a run left empty is deleted. The caller
// holds the row buffer's flushMu (no flush writes runs meanwhile) and the
// row's stripe.
func (s *Store) deleteFromRuns(b *pebble.Batch, table string, row []byte, kill func(family, qualifier []byte) bool) error {
	lower, upper := runBounds(table, row)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("read runs of row %x in %s: %w", row, table, err)
	}
	defer it.Close()
	codec := codecFor(s.codecs, table)
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read run of row %x in %s: %w", row, table, err)
		}
		nv, changed, kept, err := runWithout(nil, v, kill, codec, row)
		if err != nil {
			return fmt.Errorf("run %x: %w", it.Key(), err)
		}
		switch {
		case !changed:
		case kept == 0:
			err = b.Delete(it.Key(), nil)
		default:
			err = b.Set(it.Key(), nv, nil)
		}
		if err != nil {
			return fmt.Errorf("rewrite run %x: %w", it.Key(), err)
		}
	}
	return it.Error()
}

// runTables returns the tables that hold runs.
func runTables(db *pebble.DB) ([]string, error) {
	upper := append([]byte(nil), runsTablePrefix...)
	upper[len(upper)-1]++
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: runsTablePrefix, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var tables []string
	for ok := it.First(); ok; ok = it.Next() {
		tables = append(tables, string(it.Key()[len(runsTablePrefix):]))
	}
	return tables, it.Error()
}

// lastRunSeq returns the sequence number of the last flush that wrote runs
// (0: none).
func lastRunSeq(db *pebble.DB) (uint64, error) {
	v, closer, err := db.Get(runSeqKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: run sequence of %d bytes", errCorruptRun, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// killedSet returns whether a column is one of cols: a scan of a few,
// else a binary search of them sorted (no allocation a column).
func killedSet(cols []memrows.Column) func(family, qualifier []byte) bool {
	if len(cols) <= 8 {
		return func(family, qualifier []byte) bool {
			for _, c := range cols {
				if bytes.Equal(c.Qualifier, qualifier) && bytes.Equal(c.Family, family) {
					return true
				}
			}
			return false
		}
	}
	byColumn := func(a, b memrows.Column) int {
		return memrows.CompareColumns(a.Family, a.Qualifier, b.Family, b.Qualifier)
	}
	sorted := slices.Clone(cols)
	slices.SortFunc(sorted, byColumn)
	return func(family, qualifier []byte) bool {
		_, found := slices.BinarySearchFunc(sorted, memrows.Column{Family: family, Qualifier: qualifier}, byColumn)
		return found
	}
}
