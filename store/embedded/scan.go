package embedded

import (
	"bytes"
	"context"
	"fmt"
	"regexp"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/internal/arena"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// Scan returns a scanner over the rows [req.Start, req.Stop) of req.Table
// that match req.RowMatch (or else req.RowRegex), with their cells of
// req.Family when it is not empty: Pebble's rows merged with the row
// buffer's. A scan sees every write that returned before it began.
func (s *Store) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if err := s.checkTable(req.Table); err != nil {
		return &scanner{err: err}
	}
	sc := &scanner{ctx: ctx, tlen: len(req.Table) + 1, cellMem: arena.Arena{ChunkSize: rowArenaChunk}, codec: codecFor(s.codecs, req.Table)}
	if req.RowMatch != nil {
		sc.match, sc.seek = req.RowMatch, req.RowSeek
	} else if req.RowRegex != "" {
		re, err := regexp.Compile(req.RowRegex)
		if err != nil {
			return &scanner{err: fmt.Errorf("row regex %q: %w: %w", req.RowRegex, store.ErrInvalid, err)}
		}
		sc.re = re
	}
	if req.Family != "" {
		sc.family = []byte(req.Family)
	}
	if sc.codec != nil {
		sc.packed, sc.packedAlso, sc.packedRuns = req.Packed, req.PackedAlso, req.PackedRuns
	}
	lower, upper, ok := rowRange(req.Table, req.Start, req.Stop)
	if !ok {
		sc.done = true
		return sc
	}
	var layers []*memrows.Rows
	var it *pebble.Iterator
	var err error
	if s.buffered(req.Table) {
		// The layers and the Pebble iterator are taken together: a flush
		// that ends in between would leave its cells in neither.
		s.rb.mu.Lock()
		layers = s.rb.layersLocked(req.Table)
		it, err = s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		s.rb.mu.Unlock()
	} else {
		it, err = s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	}
	if err != nil {
		return &scanner{err: fmt.Errorf("scan %s: %w", req.Table, err)}
	}
	point := isOneRow(req.Start, req.Stop)
	for _, m := range layers {
		if point {
			sc.mem = append(sc.mem, memrows.NewRowIter(m, req.Start))
		} else {
			sc.mem = append(sc.mem, memrows.NewIter(m, req.Start, req.Stop))
		}
	}
	sc.it = it
	sc.valid = it.First()
	return sc
}

// isOneRow reports whether [start, stop) holds the one row start: stop is
// start ‖ 0x00, the first key after it (Get's range).
func isOneRow(start, stop []byte) bool {
	return len(start) > 0 && len(stop) == len(start)+1 && stop[len(start)] == 0 && bytes.Equal(stop[:len(start)], start)
}

// scanner is the store.Scanner of Scan: a Pebble iterator over the range,
// merged a row at a time with the row buffer's layers.
type scanner struct {
	ctx    context.Context
	it     *pebble.Iterator
	re     *regexp.Regexp
	match  func([]byte) bool            // the request's RowMatch, used instead of re
	seek   func(dst, key []byte) []byte // the request's RowSeek
	seekTo []byte                       // seek's key
	family []byte
	tlen   int
	valid  bool
	done   bool
	err    error

	row     store.Row
	key     []byte      // current row key
	next    []byte      // row key of the iterator's position
	nextN   int         // length of next's encoding in the iterator's key
	seekKey []byte      // skipRow's seek key
	cellMem arena.Arena // the current row's cells
	latin1  []byte
	raw     []byte // encoding of the current row in Pebble keys
	scanned int

	// mem are the row buffer's layers, newest first, merged a row at a
	// time with Pebble's rows (decoded is set while next holds the row of
	// the Pebble iterator's position).
	mem      []*memrows.Iter
	decoded  bool
	memCells []memrows.Cell
	newer    []store.Cell // memCells as laid over the row (overlayMem)
	dead     []bool       // which of newer are tombstones
	overlay  []store.Cell // overlayCells' scratch
	runs     [][]byte     // the current row's runs, in cellMem
	runCells []store.Cell // the cells of one of them
	// codec is the table's RowCodec (nil: none), codecBuf the memory
	// its decodes of the current row's runs of format 2 point into.
	codec    RowCodec
	codecBuf []byte
	// packed is the format of the packed cells the caller takes
	// (store.ScanRequest.Packed; 0: none, or no codec).
	packed byte
	// packedAlso is a second such format (store.ScanRequest.PackedAlso).
	packedAlso byte
	// packedRuns: a row of several such runs comes as a packed cell a run
	// (store.ScanRequest.PackedRuns).
	packedRuns bool
}

// rowArenaChunk is the chunk size of a scanner's row arena: the cells of
// the row being read are copied into it, so that their slices point at
// bytes that do not move while the row is assembled; each row reuses the
// chunks (a Row is valid only until the next Next).
const rowArenaChunk = 32 << 10

func (sc *scanner) Row() store.Row { return sc.row }
func (sc *scanner) Err() error     { return sc.err }

func (sc *scanner) Close() error {
	sc.done = true
	if sc.it != nil {
		err := sc.it.Close()
		sc.it = nil
		if err != nil {
			return fmt.Errorf("close scanner: %w", err)
		}
	}
	return nil
}

// fail ends the scan with err and reports false, for Next to return.
func (sc *scanner) fail(err error) bool {
	sc.err = err
	sc.Close()
	return false
}

// Next assembles the next row: from consecutive cell keys of Pebble's,
// and from the row buffer's layers, whose cells of the same row replace
// Pebble's column by column.
func (sc *scanner) Next() bool {
	if sc.done || sc.err != nil {
		return false
	}
	for {
		sc.scanned++
		if sc.scanned%1024 == 0 {
			if err := sc.ctx.Err(); err != nil {
				return sc.fail(fmt.Errorf("scan: %w", err))
			}
		}
		if sc.valid && !sc.decoded {
			row, n, err := splitRow(sc.it.Key()[sc.tlen:], sc.next)
			if err != nil {
				return sc.fail(err)
			}
			sc.next, sc.nextN, sc.decoded = row, n, true
		}
		if !sc.valid {
			if err := sc.it.Error(); err != nil {
				return sc.fail(fmt.Errorf("scan: %w", err))
			}
		}
		// The smallest row of the sources.
		row, have := sc.next, sc.valid
		for _, mi := range sc.mem {
			if k, ok := mi.Row(); ok && (!have || bytes.Compare(k, row) < 0) {
				row, have = k, true
			}
		}
		if !have {
			sc.Close()
			return false
		}
		inPebble := sc.valid && bytes.Equal(sc.next, row)
		if sc.match != nil && !sc.match(row) {
			if sc.seek != nil {
				if to := sc.seek(sc.seekTo[:0], row); to != nil && bytes.Compare(to, row) > 0 {
					sc.seekTo = to
					sc.skipTo(to)
					continue
				}
			}
			sc.skip(row, inPebble)
			continue
		}
		if sc.re != nil {
			sc.latin1 = latin1(sc.latin1[:0], row) // kept: no allocation per row
			if !sc.re.Match(sc.latin1) {
				sc.skip(row, inPebble)
				continue
			}
		}
		if ok := sc.readRow(row, inPebble); ok || sc.err != nil {
			return ok
		}
	}
}

// skip moves every source past row.
func (sc *scanner) skip(row []byte, inPebble bool) {
	for _, mi := range sc.mem {
		if k, ok := mi.Row(); ok && bytes.Equal(k, row) {
			mi.Next()
		}
	}
	if inPebble {
		sc.valid, sc.decoded = sc.skipRow(), false
	}
}

// skipTo moves every source to its first row at or after to (RowSeek's
// key: every row before it is refused).
func (sc *scanner) skipTo(to []byte) {
	for _, mi := range sc.mem {
		for {
			k, ok := mi.Row()
			if !ok || bytes.Compare(k, to) >= 0 {
				break
			}
			mi.Next()
		}
	}
	if sc.valid {
		// table 0x00 escape(to), built as skipRow builds its key.
		sc.seekKey = append(sc.seekKey[:0], sc.it.Key()[:sc.tlen]...)
		sc.seekKey = appendEscapedPrefix(sc.seekKey, "", to)
		sc.seekKey = append(sc.seekKey[:sc.tlen], sc.seekKey[sc.tlen+1:]...)
		sc.valid, sc.decoded = sc.it.SeekGE(sc.seekKey), false
	}
}

// skipRow moves the iterator past the current row.
func (sc *scanner) skipRow() bool {
	// The first key past the row: table prefix ‖ row prefix, incremented
	// as store.PrefixEnd does, built in seekKey (no allocation).
	sc.seekKey = append(sc.seekKey[:0], sc.it.Key()[:sc.tlen]...)
	sc.seekKey = appendRowPrefix(sc.seekKey, "", sc.next)
	// appendRowPrefix's leading byte is not part of the key.
	sc.seekKey = append(sc.seekKey[:sc.tlen], sc.seekKey[sc.tlen+1:]...)
	k := sc.seekKey
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] != 0xFF {
			k[i]++
			return sc.it.SeekGE(k[:i+1])
		}
	}
	return false
}

// readRow collects the cells of row from Pebble (when inPebble: the row at
// sc.next, whose encoding is the first sc.nextN bytes of the iterator's
// key past the table) and from the row buffer's layers, and moves every
// source past it. It reports false (with no error) when the family filter
// or deletes left the row empty.
func (sc *scanner) readRow(row []byte, inPebble bool) bool {
	sc.key = append(sc.key[:0], row...)
	sc.cellMem.Reset()
	sc.codecBuf = sc.codecBuf[:0]
	cells := sc.row.Cells[:0]
	if inPebble {
		// A row the row buffer holds nothing of may come as one packed
		// cell: no newer cell can replace a column of it.
		packed := sc.packed != 0
		for i := 0; packed && i < len(sc.mem); i++ {
			if k, ok := sc.mem[i].Row(); ok && bytes.Equal(k, sc.key) {
				packed = false
			}
		}
		var ok bool
		if cells, ok = sc.readPebbleRow(cells, packed); !ok {
			return false
		}
		sc.decoded = false
	}
	// Oldest layer first, each newer one replacing its columns.
	for l := len(sc.mem) - 1; l >= 0; l-- {
		mi := sc.mem[l]
		k, ok := mi.Row()
		if !ok || !bytes.Equal(k, sc.key) {
			continue
		}
		mi.Rows().RLock()
		// A row written in column order (samples in time order) after
		// what older layers and Pebble hold of it is appended at once.
		n := len(cells)
		if cells, ok = mi.Rows().AppendAscending(cells, mi.Index(), sc.family); ok {
			mi.Rows().RUnlock()
			mi.Next()
			continue
		}
		cells = cells[:n]
		var wiped bool
		sc.memCells, wiped = mi.Rows().RowCells(sc.memCells[:0], mi.Index())
		mi.Rows().RUnlock()
		mi.Next()
		if wiped {
			cells = cells[:0] // the row was deleted after the older layers' cells
		}
		if sc.family != nil {
			kept := sc.memCells[:0]
			for _, c := range sc.memCells {
				if bytes.Equal(c.Family, sc.family) {
					kept = append(kept, c)
				}
			}
			sc.memCells = kept
		}
		cells = sc.overlayMem(cells, sc.memCells)
	}
	sc.row.Cells = cells
	if len(cells) == 0 {
		return false
	}
	sc.row = store.Row{Key: sc.key, Cells: cells}
	return true
}

// overlayMem lays the row buffer's cells of the row (newer, sorted by
// column, pointing into the buffer's memory, which never changes once
// written) over cells, each replacing the cell of its column; a dead one
// (a tombstone) removes it.
func (sc *scanner) overlayMem(cells []store.Cell, newer []memrows.Cell) []store.Cell {
	if len(newer) == 0 {
		return cells
	}
	sc.newer, sc.dead = sc.newer[:0], sc.dead[:0]
	for _, c := range newer {
		sc.newer = append(sc.newer, store.Cell{Family: c.Family, Qualifier: c.Qualifier, Value: c.Value, Timestamp: c.TS})
		sc.dead = append(sc.dead, c.Dead)
	}
	cells, sc.overlay = overlayCells(cells, sc.newer, sc.dead, sc.overlay)
	return cells
}

// overlayCells merges newer into cells, both sorted by column with one
// cell a column: each newer cell replaces the cell of its column, or
// removes it when it is a tombstone (dead[j] for newer[j]; dead nil: none
// is). scratch is reused for the older cells and returned.
func overlayCells(cells, newer []store.Cell, dead []bool, scratch []store.Cell) ([]store.Cell, []store.Cell) {
	if len(newer) == 0 {
		return cells, scratch
	}
	if len(cells) == 0 || cmpCell(cells[len(cells)-1], newer[0]) < 0 {
		// A later stretch of the row's samples.
		if dead == nil {
			return append(cells, newer...), scratch
		}
		for j := range newer {
			if !dead[j] {
				cells = append(cells, newer[j])
			}
		}
		return cells, scratch
	}
	scratch = append(scratch[:0], cells...)
	cells = cells[:0]
	i, j := 0, 0
	for i < len(scratch) || j < len(newer) {
		c := 1 // newer[j] first
		switch {
		case j == len(newer):
			c = -1
		case i < len(scratch):
			c = cmpCell(scratch[i], newer[j])
		}
		if c < 0 {
			cells = append(cells, scratch[i])
			i++
			continue
		}
		if dead == nil || !dead[j] {
			cells = append(cells, newer[j])
		}
		j++
		if c == 0 {
			i++
		}
	}
	return cells, scratch
}

// cmpCell orders cells by column (cmpCol).
func cmpCell(a, b store.Cell) int {
	return memrows.CompareColumns(a.Family, a.Qualifier, b.Family, b.Qualifier)
}

// readPebbleRow appends the cells of the row at sc.next to cells and moves
// the iterator past it. It reports false when it failed. With packed, a
// row that is one run of format 2 of the packed format sc.packed names,
// and nothing else, comes as one packed cell (store.Cell.Packed) of its
// value.
func (sc *scanner) readPebbleRow(cells []store.Cell, packed bool) ([]store.Cell, bool) {
	// The row's encoding: the keys of its cells start with it, which
	// spares decoding the row again for each cell.
	sc.raw = append(sc.raw[:0], sc.it.Key()[sc.tlen:sc.tlen+sc.nextN]...)
	runs := sc.runs[:0]
	for sc.valid {
		rest := sc.it.Key()[sc.tlen:]
		if !bytes.HasPrefix(rest, sc.raw) {
			break // the next row, which Next decodes
		}
		col := rest[len(sc.raw):]
		if isRunColumn(col) {
			// A run (they come first, oldest first): kept in the row's
			// arena and laid over the cell keys below.
			v, err := sc.it.ValueAndErr()
			if err != nil {
				return cells, sc.fail(fmt.Errorf("scan: %w", err))
			}
			runs = append(runs, sc.cellMem.Copy(v))
			sc.valid = sc.it.Next()
			continue
		}
		var fam, qual []byte
		if n := len(sc.family); n > 0 && len(col) > n && col[n] == 0 && bytes.Equal(col[:n], sc.family) {
			// The filter's family (names hold no 0x00): no search for
			// the terminator.
			fam, qual = sc.family[:n:n], col[n+1:]
		} else {
			f, q, err := splitColumn(col)
			if err != nil {
				return cells, sc.fail(err)
			}
			if sc.family != nil {
				sc.valid = sc.it.Next() // another family
				continue
			}
			fam, qual = sc.cellMem.Copy(f), q
		}
		v, err := sc.it.ValueAndErr()
		if err != nil {
			return cells, sc.fail(fmt.Errorf("scan: %w", err))
		}
		ts, val, err := splitValue(v)
		if err != nil {
			return cells, sc.fail(err)
		}
		// Qualifier and value in one run of the row's arena.
		b := append(append(sc.cellMem.Alloc(len(qual)+len(val)), qual...), val...)
		cells = append(cells, store.Cell{Family: fam, Qualifier: b[:len(qual):len(qual)],
			Value: b[len(qual):], Timestamp: ts})
		sc.valid = sc.it.Next()
	}
	if !sc.valid {
		if err := sc.it.Error(); err != nil {
			return cells, sc.fail(fmt.Errorf("scan: %w", err))
		}
	}
	if packed && len(cells) == 0 && (len(runs) == 1 || (sc.packedRuns && len(runs) > 1)) {
		all := true
		for _, v := range runs {
			if len(v) < 2 || v[0] != runFormatCodec || (v[1] != sc.packed && (sc.packedAlso == 0 || v[1] != sc.packedAlso)) {
				all = false
				break
			}
		}
		if all {
			for _, v := range runs {
				if sc.family == nil || sc.codec.Family(v[1:]) == string(sc.family) {
					cells = append(cells, store.Cell{Value: v[1:]})
				}
			}
			sc.runs = runs[:0]
			return cells, true
		}
	}
	// The runs are newer than the cell keys, and each than the one before.
	for _, r := range runs {
		var err error
		if len(cells) == 0 {
			if cells, sc.codecBuf, err = appendRunCells(cells, sc.codecBuf, r, sc.family, sc.codec, sc.key); err != nil {
				return cells, sc.fail(fmt.Errorf("scan: row %x: %w", sc.key, err))
			}
			continue
		}
		if sc.runCells, sc.codecBuf, err = appendRunCells(sc.runCells[:0], sc.codecBuf, r, sc.family, sc.codec, sc.key); err != nil {
			return cells, sc.fail(fmt.Errorf("scan: row %x: %w", sc.key, err))
		}
		cells, sc.overlay = overlayCells(cells, sc.runCells, nil, sc.overlay)
	}
	sc.runs = runs[:0]
	return cells, true
}

// latin1 appends b decoded as ISO-8859-1 and encoded as UTF-8: byte x
// becomes the rune U+00xx, as HBase's JAVA regex engine sees a row key.
func latin1(dst, b []byte) []byte {
	for _, c := range b {
		if c < 0x80 {
			dst = append(dst, c)
		} else {
			dst = append(dst, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return dst
}
