package embedded

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
)

// memRows holds the recent cells of one table in memory, a row at a time,
// in front of Pebble (see rowBuffer). A cell written to a row already
// present costs a hash probe and an append, where a Pebble memtable insert
// is a skiplist search of some twenty cache misses; the order of rows is
// established only when they are read or flushed.
//
// Memory is a list of chunks addressed by ref (chunk index << 32 | offset):
//
//	row key:     the row's bytes
//	cell record: prev u64 (ref of the row's previous cell + 1, 0 for none)
//	             ‖ ts u64 ‖ flen u8 ‖ qlen u16 ‖ vlen u32 ‖ dead u8
//	             ‖ family ‖ qualifier ‖ value   (integers little-endian)
//
// A row's cells form a chain from its newest record back; the newest live
// record of a column is its value. Records are never moved; a delete sets
// dead. Everything but dead and a row's last is immutable once written,
// so that a sort of the rows can read keys without the lock.
type memRows struct {
	table string
	seed  maphash.Seed
	// reserve, when set, takes bytes from the block cache's capacity for
	// as long as the buffer lives, as Pebble does for its memtables, so
	// that the buffer and the cache share one budget.
	reserve  func(n int) func()
	releases []func()

	mu     sync.RWMutex
	chunks [][]byte
	used   int // bytes used of the last chunk
	rows   []memRow
	slots  []uint32 // open addressing over rows: index+1, 0 empty
	cells  int
	bytes  int64

	sortMu sync.Mutex
	sorted []uint32 // rows[:len(sorted)] in key order; replaced, never changed
}

type memRow struct {
	hash uint64
	key  uint64 // ref of the key
	klen uint32
	last uint64 // ref+1 of the newest cell record, 0 for none
}

const (
	memChunk     = 1 << 20
	cellHeader   = 8 + 8 + 1 + 2 + 4 + 1
	cellDeadByte = 23
	rowSize      = 32 // a memRow
)

func newMemRows(table string, seed maphash.Seed, reserve func(int) func()) *memRows {
	m := &memRows{table: table, seed: seed, reserve: reserve, slots: make([]uint32, 1024)}
	m.account(4 * len(m.slots))
	return m
}

// account counts n more bytes of the buffer. The caller holds mu
// exclusively (or owns m alone).
func (m *memRows) account(n int) {
	m.bytes += int64(n)
	if m.reserve != nil {
		m.releases = append(m.releases, m.reserve(n))
	}
}

// release returns the buffer's reservations; it is not used afterwards.
func (m *memRows) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.releases {
		r()
	}
	m.releases = nil
}

// alloc returns n bytes of chunk memory and their ref. The caller holds mu
// exclusively. Chunks are allocated at their full length and never
// resliced, so that readers holding a copy of the chunk list race with no
// write.
func (m *memRows) alloc(n int) (uint64, []byte) {
	if k := len(m.chunks); k > 0 && len(m.chunks[k-1])-m.used >= n {
		off := m.used
		m.used += n
		return uint64(k-1)<<32 | uint64(off), m.chunks[k-1][off : off+n : off+n]
	}
	c := make([]byte, max(memChunk, n))
	m.chunks = append(m.chunks, c)
	m.account(len(c))
	m.used = n
	return uint64(len(m.chunks)-1) << 32, c[:n:n]
}

// at returns the n bytes at ref.
func at(chunks [][]byte, ref uint64, n int) []byte {
	c := chunks[ref>>32]
	off := int(uint32(ref))
	return c[off : off+n : off+n]
}

func (m *memRows) keyOf(chunks [][]byte, r *memRow) []byte {
	return at(chunks, r.key, int(r.klen))
}

// find returns the index of row, -1 when absent. The caller holds mu.
func (m *memRows) find(h uint64, row []byte) int {
	mask := uint64(len(m.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return -1
		}
		r := &m.rows[s-1]
		if r.hash == h && bytes.Equal(m.keyOf(m.chunks, r), row) {
			return int(s - 1)
		}
	}
}

// rowFor returns the index of row, added when absent. The caller holds mu
// exclusively.
func (m *memRows) rowFor(row []byte) int {
	h := maphash.Bytes(m.seed, row)
	if i := m.find(h, row); i >= 0 {
		return i
	}
	if 2*(len(m.rows)+1) > len(m.slots) {
		m.grow()
	}
	ref, b := m.alloc(len(row))
	copy(b, row)
	if len(m.rows) == cap(m.rows) {
		m.rows = slices.Grow(m.rows, max(1024, len(m.rows)))
		m.account(rowSize * (cap(m.rows) - len(m.rows)))
	}
	m.rows = append(m.rows, memRow{hash: h, key: ref, klen: uint32(len(row))})
	mask := uint64(len(m.slots) - 1)
	i := h & mask
	for m.slots[i] != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = uint32(len(m.rows))
	return len(m.rows) - 1
}

func (m *memRows) grow() {
	slots := make([]uint32, 2*len(m.slots))
	m.account(4 * (len(slots) - len(m.slots)))
	mask := uint64(len(slots) - 1)
	for n := range m.rows {
		i := m.rows[n].hash & mask
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = uint32(n + 1)
	}
	m.slots = slots
}

// addCell appends a cell to row index i. The caller holds mu exclusively.
func (m *memRows) addCell(i int, family, qualifier, value []byte, ts uint64) {
	n := cellHeader + len(family) + len(qualifier) + len(value)
	ref, b := m.alloc(n)
	r := &m.rows[i]
	binary.LittleEndian.PutUint64(b[0:], r.last)
	binary.LittleEndian.PutUint64(b[8:], ts)
	b[16] = byte(len(family))
	binary.LittleEndian.PutUint16(b[17:], uint16(len(qualifier)))
	binary.LittleEndian.PutUint32(b[19:], uint32(len(value)))
	b[cellDeadByte] = 0
	p := cellHeader
	p += copy(b[p:], family)
	p += copy(b[p:], qualifier)
	copy(b[p:], value)
	r.last = ref + 1
	m.cells++
}

// memCell is a cell record as read: slices into chunk memory.
type memCell struct {
	ref       uint64
	family    []byte
	qualifier []byte
	value     []byte
	ts        uint64
	dead      bool
}

// cellAt reads the record at ref and returns it with the ref+1 of the
// previous one. The caller holds mu (dead changes under it).
func cellAt(chunks [][]byte, ref uint64) (memCell, uint64) {
	c := chunks[ref>>32]
	off := int(uint32(ref))
	h := c[off : off+cellHeader]
	prev := binary.LittleEndian.Uint64(h[0:])
	fl, ql, vl := int(h[16]), int(binary.LittleEndian.Uint16(h[17:])), int(binary.LittleEndian.Uint32(h[19:]))
	p := off + cellHeader
	return memCell{
		ref:       ref,
		family:    c[p : p+fl : p+fl],
		qualifier: c[p+fl : p+fl+ql : p+fl+ql],
		value:     c[p+fl+ql : p+fl+ql+vl : p+fl+ql+vl],
		ts:        binary.LittleEndian.Uint64(h[8:]),
		dead:      h[cellDeadByte] != 0,
	}, prev
}

// rowCells appends the visible cells of row index i to dst, sorted by
// family then qualifier: for each column its newest record, when live.
// The caller holds mu.
func (m *memRows) rowCells(dst []memCell, i int) []memCell {
	start := len(dst)
	for ref := m.rows[i].last; ref != 0; {
		var c memCell
		c, ref = cellAt(m.chunks, ref-1)
		dst = append(dst, c)
	}
	cells := dst[start:]
	// Oldest first: the order of the writes, which for a row of samples
	// is already the order of the qualifiers, so that the sort is
	// usually skipped. Within a column, the last record is the newest.
	slices.Reverse(cells)
	sorted := true
	for n := 1; n < len(cells); n++ {
		if cmpColumn(cells[n-1], cells[n]) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(cells, cmpColumn)
	}
	out := cells[:0]
	for n, c := range cells {
		if n+1 < len(cells) && cmpColumn(c, cells[n+1]) == 0 {
			continue // hidden behind a newer record of the column
		}
		if !c.dead {
			out = append(out, c)
		}
	}
	return dst[:start+len(out)]
}

func cmpColumn(a, b memCell) int {
	if c := bytes.Compare(a.family, b.family); c != 0 {
		return c
	}
	return bytes.Compare(a.qualifier, b.qualifier)
}

// lookup returns the newest record of a column of row, found false when
// the row holds none (a dead record is found, with dead set: the column
// was deleted since the data below it was written).
func (m *memRows) lookup(row, family, qualifier []byte) (memCell, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := m.find(maphash.Bytes(m.seed, row), row)
	if i < 0 {
		return memCell{}, false
	}
	for ref := m.rows[i].last; ref != 0; {
		var c memCell
		c, ref = cellAt(m.chunks, ref-1)
		if bytes.Equal(c.family, family) && bytes.Equal(c.qualifier, qualifier) {
			c.value = bytes.Clone(c.value)
			return c, true
		}
	}
	return memCell{}, false
}

// kill marks dead the records of row's columns that a delete removes: all
// of them when columns is empty, else those of each column whose newest
// record is at or before the column's bound (any, when the bound is 0).
// The caller holds mu exclusively.
func (m *memRows) kill(row []byte, columns []killColumn) {
	i := m.find(maphash.Bytes(m.seed, row), row)
	if i < 0 {
		return
	}
	var newest map[string]uint64
	if len(columns) > 0 {
		newest = make(map[string]uint64, len(columns))
		for ref := m.rows[i].last; ref != 0; {
			var c memCell
			c, ref = cellAt(m.chunks, ref-1)
			k := string(c.family) + "\x00" + string(c.qualifier)
			if _, seen := newest[k]; !seen {
				newest[k] = c.ts
			}
		}
	}
	doomed := func(c memCell) bool {
		if len(columns) == 0 {
			return true
		}
		for _, col := range columns {
			if bytes.Equal(col.family, c.family) && bytes.Equal(col.qualifier, c.qualifier) {
				return col.bound == 0 || newest[string(c.family)+"\x00"+string(c.qualifier)] <= col.bound
			}
		}
		return false
	}
	for ref := m.rows[i].last; ref != 0; {
		var c memCell
		c, ref = cellAt(m.chunks, ref-1)
		if !c.dead && doomed(c) {
			m.chunks[c.ref>>32][int(uint32(c.ref))+cellDeadByte] = 1
		}
	}
}

// killColumn is one column of a delete: bound 0 removes any version.
type killColumn struct {
	family, qualifier []byte
	bound             uint64
}

// sortedRows returns the indices of the rows in key order (those added
// after it started are not included), with the rows and chunks that hold
// their keys.
func (m *memRows) sortedRows() ([]uint32, []memRow, [][]byte) {
	m.sortMu.Lock()
	defer m.sortMu.Unlock()
	m.mu.RLock()
	n := len(m.rows)
	rows := m.rows[:n:n]
	chunks := m.chunks[:len(m.chunks):len(m.chunks)]
	old := m.sorted
	m.mu.RUnlock()
	if len(old) == n {
		return old, rows, chunks
	}
	// Keys and hashes of rows[:n] never change, so they are read here
	// without the lock while writers add rows and cells.
	key := func(i uint32) []byte { return at(chunks, rows[i].key, int(rows[i].klen)) }
	fresh := make([]uint32, 0, n-len(old))
	for i := len(old); i < n; i++ {
		fresh = append(fresh, uint32(i))
	}
	byKey := func(a, b uint32) int { return bytes.Compare(key(a), key(b)) }
	slices.SortFunc(fresh, byKey)
	merged := make([]uint32, 0, n)
	a, b := old, fresh
	for len(a) > 0 && len(b) > 0 {
		if byKey(a[0], b[0]) <= 0 {
			merged, a = append(merged, a[0]), a[1:]
		} else {
			merged, b = append(merged, b[0]), b[1:]
		}
	}
	merged = append(append(merged, a...), b...)
	m.mu.Lock()
	m.sorted = merged
	m.mu.Unlock()
	return merged, rows, chunks
}

// rowKey returns the key of row index i from chunks.
func rowKey(chunks [][]byte, rows []memRow, i uint32) []byte {
	return at(chunks, rows[i].key, int(rows[i].klen))
}

// memIter iterates over a memRows' cells as Pebble keys and values (the
// layout of the package comment), for merging with a Pebble iterator. It
// sees the rows present when it was created, with their cells as they are
// when it reaches them.
type memIter struct {
	m      *memRows
	order  []uint32
	rows   []memRow // for keys only: a row's last is read under m.mu
	chunks [][]byte
	lower  []byte // Pebble key bounds; upper nil for none
	upper  []byte
	pos    int // index in order of the current row

	cells []memCell
	keys  []byte
	ends  []int // ends of the keys in keys
	vals  []byte
	vends []int
	cur   int // index of the current cell
}

func newMemIter(m *memRows, lower, upper []byte) *memIter {
	order, rows, chunks := m.sortedRows()
	return &memIter{m: m, order: order, rows: rows, chunks: chunks, lower: lower, upper: upper}
}

// loadRow materializes the cells of order[pos] and reports whether it
// has any.
func (it *memIter) loadRow() bool {
	it.m.mu.RLock()
	row := rowKey(it.chunks, it.rows, it.order[it.pos])
	it.cells = it.m.rowCells(it.cells[:0], int(it.order[it.pos]))
	it.keys, it.ends, it.vals, it.vends = it.keys[:0], it.ends[:0], it.vals[:0], it.vends[:0]
	for _, c := range it.cells {
		it.keys = appendCellKey(it.keys, it.m.table, row, c.family, c.qualifier)
		it.ends = append(it.ends, len(it.keys))
		it.vals = binary.BigEndian.AppendUint64(it.vals, c.ts)
		it.vals = append(it.vals, c.value...)
		it.vends = append(it.vends, len(it.vals))
	}
	it.m.mu.RUnlock()
	it.cur = 0
	return len(it.ends) > 0
}

// seekGE positions the iterator at the first cell whose key is >= k.
func (it *memIter) seekGE(k []byte) bool {
	// The row prefix of a cell key orders as the row: find the first row
	// whose cells can be >= k, a row at a time from the one whose prefix
	// is <= k.
	var pbuf []byte
	it.pos, _ = slices.BinarySearchFunc(it.order, k, func(i uint32, k []byte) int {
		pbuf = appendRowPrefix(pbuf[:0], it.m.table, rowKey(it.chunks, it.rows, i))
		return bytes.Compare(pbuf, k)
	})
	if it.pos > 0 {
		it.pos-- // the row whose prefix is just below k may hold cells >= k
	}
	for ; it.pos < len(it.order); it.pos++ {
		if !it.loadRow() {
			continue
		}
		for it.cur < len(it.ends) {
			if bytes.Compare(it.key(), k) >= 0 {
				return it.checkUpper()
			}
			it.cur++
		}
	}
	return false
}

func (it *memIter) first() bool {
	if it.lower != nil {
		return it.seekGE(it.lower)
	}
	for it.pos = 0; it.pos < len(it.order); it.pos++ {
		if it.loadRow() {
			return it.checkUpper()
		}
	}
	return false
}

func (it *memIter) next() bool {
	if it.pos >= len(it.order) {
		return false
	}
	it.cur++
	if it.cur < len(it.ends) {
		return it.checkUpper()
	}
	for it.pos++; it.pos < len(it.order); it.pos++ {
		if it.loadRow() {
			return it.checkUpper()
		}
	}
	return false
}

func (it *memIter) checkUpper() bool {
	if it.upper != nil && bytes.Compare(it.key(), it.upper) >= 0 {
		it.pos = len(it.order)
		return false
	}
	return true
}

func (it *memIter) key() []byte {
	start := 0
	if it.cur > 0 {
		start = it.ends[it.cur-1]
	}
	return it.keys[start:it.ends[it.cur]]
}

func (it *memIter) value() []byte {
	start := 0
	if it.cur > 0 {
		start = it.vends[it.cur-1]
	}
	return it.vals[start:it.vends[it.cur]]
}
