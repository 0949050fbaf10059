package embedded

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/promhbase/promhbase/internal/keysort"
	"github.com/promhbase/promhbase/store"
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
//	cell block:  prev u64 (ref+1 of the row's previous block, 0 for none)
//	             ‖ cap u32 ‖ used u32 (bytes, header included)
//	             ‖ cell records, oldest first
//	cell record: ts u64 ‖ flen u8 ‖ qlen u16 ‖ vlen u32 ‖ dead u8
//	             ‖ family ‖ qualifier ‖ value   (integers little-endian)
//
// A row's cells are appended to its newest block; a full block is
// followed by one twice its size (up to maxBlock), so that reading a row
// of many cells reads a few runs of memory rather than a cache miss a
// cell. Within a column the last record is the newest, and the newest
// live one is its value. Records are never moved; a delete sets dead.
// Row keys and written records (dead aside) never change, so that a sort
// of the rows can read keys without the lock.
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
	total  *atomic.Int64 // the generation's bytes (newMemRows); may be nil

	sortMu sync.Mutex
	sorted []uint32 // rows[:len(sorted)] in key order; replaced, never changed
}

// memRow is a row of a memRows: its key and its newest cell block.
type memRow struct {
	hash uint64
	key  uint64 // ref of the key
	klen uint32
	// wiped is set by a delete of the whole row: the row's cells in older
	// layers and in Pebble are gone (its records written since are not).
	wiped bool
	last  uint64 // ref+1 of the newest cell block, 0 for none
}

const (
	memChunk = 1 << 20
	// memChunkFirst is the size of a buffer's first chunk.
	memChunkFirst = 16 << 10
	cellHeader    = 8 + 1 + 2 + 4 + 1
	cellDeadByte  = 15
	blockHeader   = 16
	minBlock      = 128
	maxBlock      = 16 << 10
	rowSize       = 32 // a memRow
)

// newMemRows returns an empty buffer of table, whose rows hash with seed;
// reserve, when not nil, takes the bytes it allocates from the block
// cache (see memRows.reserve).
// newMemRows returns an empty buffer of table; total, when not nil,
// counts its bytes too (with those of the other tables' buffers of the
// same generation).
func newMemRows(table string, seed maphash.Seed, reserve func(int) func(), total *atomic.Int64) *memRows {
	m := &memRows{table: table, seed: seed, reserve: reserve, total: total, slots: make([]uint32, 1024)}
	m.account(4 * len(m.slots))
	return m
}

// account counts n more bytes of the buffer. The caller holds mu
// exclusively (or owns m alone).
func (m *memRows) account(n int) {
	m.bytes += int64(n)
	if m.total != nil {
		m.total.Add(int64(n))
	}
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
	// Chunks start small and double up to memChunk, so that a table
	// written little between flushes (one of many tenants') holds little.
	size := memChunkFirst
	if k := len(m.chunks); k > 0 {
		size = min(2*len(m.chunks[k-1]), memChunk)
	}
	c := make([]byte, max(size, n))
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

// keyOf returns the key of r from chunks.
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
func (m *memRows) rowFor(row []byte) int { return m.rowForHash(m.hash(row), row) }

// hash returns the hash of row that find and rowForHash take.
func (m *memRows) hash(row []byte) uint64 { return maphash.Bytes(m.seed, row) }

// rowForHash is rowFor of a row whose hash (m.hash) is h.
func (m *memRows) rowForHash(h uint64, row []byte) int {
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

// grow doubles the hash slots. The caller holds mu exclusively.
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
	r := &m.rows[i]
	var b []byte
	if r.last != 0 {
		blk := m.block(r.last - 1)
		capacity, used := int(binary.LittleEndian.Uint32(blk[8:])), int(binary.LittleEndian.Uint32(blk[12:]))
		if used+n <= capacity {
			b = blk[used : used+n]
			binary.LittleEndian.PutUint32(blk[12:], uint32(used+n))
		}
	}
	if b == nil {
		// The first block fits the first cell exactly: at a million series
		// a buffer holds about one cell a row.
		capacity := blockHeader + n
		if r.last != 0 {
			prev := int(binary.LittleEndian.Uint32(m.block(r.last - 1)[8:]))
			capacity = max(capacity, min(max(2*prev, minBlock), maxBlock))
		}
		ref, blk := m.alloc(capacity)
		binary.LittleEndian.PutUint64(blk[0:], r.last)
		binary.LittleEndian.PutUint32(blk[8:], uint32(capacity))
		binary.LittleEndian.PutUint32(blk[12:], uint32(blockHeader+n))
		r.last = ref + 1
		b = blk[blockHeader : blockHeader+n]
	}
	binary.LittleEndian.PutUint64(b[0:], ts)
	b[8] = byte(len(family))
	binary.LittleEndian.PutUint16(b[9:], uint16(len(qualifier)))
	binary.LittleEndian.PutUint32(b[11:], uint32(len(value)))
	b[cellDeadByte] = 0
	p := cellHeader
	p += copy(b[p:], family)
	p += copy(b[p:], qualifier)
	copy(b[p:], value)
	m.cells++
}

// block returns the block at ref, its whole capacity.
func (m *memRows) block(ref uint64) []byte {
	c := m.chunks[ref>>32]
	off := int(uint32(ref))
	return c[off : off+int(binary.LittleEndian.Uint32(c[off+8:]))]
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

// blocks appends the refs of row index i's blocks to dst, oldest first.
// The caller holds mu.
func (m *memRows) blocks(dst []uint64, i int) []uint64 {
	start := len(dst)
	for ref := m.rows[i].last; ref != 0; {
		dst = append(dst, ref-1)
		ref = binary.LittleEndian.Uint64(m.block(ref - 1))
	}
	slices.Reverse(dst[start:])
	return dst
}

// blockCells appends the records of the block at ref to dst, oldest first.
// The caller holds mu (dead changes under it).
func (m *memRows) blockCells(dst []memCell, ref uint64) []memCell {
	blk := m.block(ref)
	used := int(binary.LittleEndian.Uint32(blk[12:]))
	for p := blockHeader; p < used; {
		f, q, v, next := readRecord(blk, p)
		dst = append(dst, memCell{ref: ref + uint64(p), family: f, qualifier: q, value: v,
			ts: binary.LittleEndian.Uint64(blk[p:]), dead: blk[p+cellDeadByte] != 0})
		p = next
	}
	return dst
}

// readRecord reads the cell record at offset p of blk: its family,
// qualifier and value (slices into blk) and the offset of the next record.
func readRecord(blk []byte, p int) (f, q, v []byte, next int) {
	h := blk[p : p+cellHeader]
	fe := p + cellHeader + int(h[8])
	qe := fe + int(binary.LittleEndian.Uint16(h[9:]))
	ve := qe + int(binary.LittleEndian.Uint32(h[11:]))
	return blk[p+cellHeader : fe : fe], blk[fe:qe:qe], blk[qe:ve:ve], ve
}

// allCells appends every record of row index i to dst, oldest first. The
// caller holds mu.
func (m *memRows) allCells(dst []memCell, i int) []memCell {
	var stack [16]uint64
	for _, ref := range m.blocks(stack[:0], i) {
		dst = m.blockCells(dst, ref)
	}
	return dst
}

// rowCells appends the cells of row index i to dst, sorted by family then
// qualifier: for each column its newest record, dead ones included (a
// tombstone: the column was deleted, and an older layer's or Pebble's
// cell of it must not show). It also reports whether the whole row was
// deleted (older layers and Pebble hold nothing of it). The caller holds
// mu.
//
// A reader that took Pebble's snapshot before a delete depends on both:
// the delete's tombstones in Pebble are newer than its snapshot.
func (m *memRows) rowCells(dst []memCell, i int) ([]memCell, bool) {
	start := len(dst)
	dst = m.allCells(dst, i)
	cells := dst[start:]
	// The order of the writes, which for a row of samples is already the
	// order of the qualifiers and has one record a column, so that the
	// sort and the removal of hidden records are usually skipped.
	ascending := true
	for n := 1; n < len(cells); n++ {
		if cmpColumn(cells[n-1], cells[n]) >= 0 {
			ascending = false
			break
		}
	}
	if ascending {
		return dst, m.rows[i].wiped
	}
	slices.SortStableFunc(cells, cmpColumn)
	out := cells[:0]
	for n, c := range cells {
		if n+1 < len(cells) && cmpColumn(c, cells[n+1]) == 0 {
			continue // hidden behind a newer record of the column
		}
		out = append(out, c)
	}
	return dst[:start+len(out)], m.rows[i].wiped
}

// appendAscending appends the live cells of row index i to dst as
// store.Cells pointing into the buffer's memory (which never changes once
// written), keeping only family's when family is not nil, provided that
// the row's records are in strictly ascending column order (one record a
// column, as a row of samples written in time order has) and, when dst
// ends in older cells of the row, all after dst's last column and the row
// not wiped since: then nothing in dst is replaced, and the row is dst
// followed by the buffer's cells (a row whose older samples were flushed
// into Pebble). It reports false otherwise, and dst's appended cells are
// then to be dropped (the caller takes rowCells). Dead records are left
// out: they hide nothing in dst. The caller holds mu.
func (m *memRows) appendAscending(dst []store.Cell, i int, family []byte) ([]store.Cell, bool) {
	var pf, pq []byte
	first := true
	if n := len(dst); n > 0 {
		if m.rows[i].wiped {
			return dst, false
		}
		pf, pq, first = dst[n-1].Family, dst[n-1].Qualifier, false
	}
	var stack [16]uint64
	for _, ref := range m.blocks(stack[:0], i) {
		blk := m.block(ref)
		used := int(binary.LittleEndian.Uint32(blk[12:]))
		for p := blockHeader; p < used; {
			f, q, v, next := readRecord(blk, p)
			if !first && cmpCol(pf, pq, f, q) >= 0 {
				return dst, false
			}
			first, pf, pq = false, f, q
			if blk[p+cellDeadByte] == 0 && (family == nil || bytes.Equal(f, family)) {
				dst = append(dst, store.Cell{Family: f, Qualifier: q, Value: v, Timestamp: binary.LittleEndian.Uint64(blk[p:])})
			}
			p = next
		}
	}
	return dst, true
}

// cmpColumn orders records by column (cmpCol).
func cmpColumn(a, b memCell) int { return cmpCol(a.family, a.qualifier, b.family, b.qualifier) }

// cmpCol orders columns by family, then qualifier, as bytes.Compare
// does; families of one byte and qualifiers of at most 8 bytes (a data
// row's: 2 or 4 bytes a sample) are compared as integers.
func cmpCol(af, aq, bf, bq []byte) int {
	if len(af) == 1 && len(bf) == 1 {
		if af[0] != bf[0] {
			return cmp.Compare(af[0], bf[0])
		}
	} else if c := bytes.Compare(af, bf); c != 0 {
		return c
	}
	if len(aq) > 8 || len(bq) > 8 {
		return bytes.Compare(aq, bq)
	}
	// Left-aligned, zero-padded: equal padded values leave the shorter,
	// a prefix of the longer, first.
	if x, y := padBE(aq), padBE(bq); x != y {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(len(aq), len(bq))
}

// padBE reads up to 8 bytes big-endian into the high bytes of a uint64.
func padBE(b []byte) uint64 {
	switch len(b) {
	case 2:
		return uint64(binary.BigEndian.Uint16(b)) << 48
	case 4:
		return uint64(binary.BigEndian.Uint32(b)) << 32
	case 8:
		return binary.BigEndian.Uint64(b)
	}
	var x uint64
	for k, c := range b {
		x |= uint64(c) << (56 - 8*k)
	}
	return x
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
	var buf [64]memCell
	var stack [16]uint64
	bl := m.blocks(stack[:0], i)
	for b := len(bl) - 1; b >= 0; b-- {
		cells := m.blockCells(buf[:0], bl[b])
		for n := len(cells) - 1; n >= 0; n-- {
			c := cells[n]
			if bytes.Equal(c.family, family) && bytes.Equal(c.qualifier, qualifier) {
				c.value = bytes.Clone(c.value)
				return c, true
			}
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
		if len(columns) > 0 {
			return
		}
		i = m.rowFor(row) // remembered as wiped, for readers of an older snapshot
	}
	cells := m.allCells(nil, i)
	newest := make(map[string]uint64, len(columns))
	for _, c := range cells {
		newest[string(c.family)+"\x00"+string(c.qualifier)] = c.ts // the last is the newest
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
	for _, c := range cells {
		if !c.dead && doomed(c) {
			m.chunks[c.ref>>32][int(uint32(c.ref))+cellDeadByte] = 1
		}
	}
	if len(columns) == 0 {
		m.rows[i].wiped = true
	}
}

// killRange marks dead every record of the rows in [start, stop) (stop
// empty: no bound) and the rows wiped, as a delete of each whole row
// does; a row that is not in the buffer needs nothing (see kill: a range
// delete is not atomic with a scan that began before it). The caller
// holds mu exclusively (or owns m alone).
func (m *memRows) killRange(start, stop []byte) {
	for i := range m.rows {
		k := m.keyOf(m.chunks, &m.rows[i])
		if bytes.Compare(k, start) < 0 || len(stop) > 0 && bytes.Compare(k, stop) >= 0 {
			continue
		}
		var stack [16]uint64
		for _, ref := range m.blocks(stack[:0], i) {
			blk := m.block(ref)
			used := int(binary.LittleEndian.Uint32(blk[12:]))
			for p := blockHeader; p < used; {
				_, _, _, next := readRecord(blk, p)
				blk[p+cellDeadByte] = 1
				p = next
			}
		}
		m.rows[i].wiped = true
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
	keysort.ByKey(fresh, key)
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

// memRowIter steps through a memRows' rows in key order, from the first
// at or after start to the last before stop (nil: no bound), for a
// scanner that merges them with Pebble's. It sees the rows present when
// it was created.
type memRowIter struct {
	m      *memRows
	order  []uint32
	rows   []memRow
	chunks [][]byte
	stop   []byte
	pos    int
}

// newMemRowIter returns an iterator over the rows of m in [start, stop).
func newMemRowIter(m *memRows, start, stop []byte) *memRowIter {
	order, rows, chunks := m.sortedRows()
	it := &memRowIter{m: m, order: order, rows: rows, chunks: chunks}
	if len(stop) > 0 {
		it.stop = stop
	}
	if len(start) > 0 {
		it.pos, _ = slices.BinarySearchFunc(order, start, func(i uint32, k []byte) int {
			return bytes.Compare(rowKey(chunks, rows, i), k)
		})
	}
	return it
}

// row returns the key of the current row, false when there is none.
func (it *memRowIter) row() ([]byte, bool) {
	if it.pos >= len(it.order) {
		return nil, false
	}
	k := rowKey(it.chunks, it.rows, it.order[it.pos])
	if it.stop != nil && bytes.Compare(k, it.stop) >= 0 {
		it.pos = len(it.order)
		return nil, false
	}
	return k, true
}
