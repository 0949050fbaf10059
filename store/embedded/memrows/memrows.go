// Package memrows holds the recent cells of one table of the embedded
// store in memory, a row at a time, in front of Pebble: the row buffer's
// layers (store/embedded). It knows rows, cells and their order; the
// buffer's log, its flushes and the merge with Pebble are the store's.
package memrows

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/promhbase/promhbase/internal/keysort"
	"github.com/promhbase/promhbase/store"
)

// Rows holds the recent cells of one table in memory, a row at a time,
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
type Rows struct {
	table string
	seed  maphash.Seed
	// reserve, when set, takes bytes from the block cache's capacity for
	// as long as the buffer lives, as Pebble does for its memtables, so
	// that the buffer and the cache share one budget.
	reserve  func(n int) func()
	releases []func()

	// The RWMutex guards everything below; methods say whether the
	// caller holds it, shared or exclusively.
	sync.RWMutex
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

// memRow is a row of a Rows: its key and its newest cell block.
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
	// FirstChunkBytes is the size of a buffer's first chunk.
	FirstChunkBytes = 16 << 10
	cellHeader      = 8 + 1 + 2 + 4 + 1
	cellDeadByte    = 15
	blockHeader     = 16
	minBlock        = 128
	maxBlock        = 16 << 10
	rowSize         = 32 // a memRow
)

// New returns an empty buffer of table, whose rows hash with seed;
// reserve, when not nil, takes the bytes it allocates from the block
// cache (see Rows.reserve); total, when not nil, counts its bytes too
// (with those of the other tables' buffers of the same generation).
func New(table string, seed maphash.Seed, reserve func(int) func(), total *atomic.Int64) *Rows {
	m := &Rows{table: table, seed: seed, reserve: reserve, total: total, slots: make([]uint32, 1024)}
	m.account(4 * len(m.slots))
	return m
}

// account counts n more bytes of the buffer. The caller holds mu
// exclusively (or owns m alone).
func (m *Rows) account(n int) {
	m.bytes += int64(n)
	if m.total != nil {
		m.total.Add(int64(n))
	}
	if m.reserve != nil {
		m.releases = append(m.releases, m.reserve(n))
	}
}

// Release returns the buffer's reservations; it is not used afterwards.
func (m *Rows) Release() {
	m.Lock()
	defer m.Unlock()
	for _, r := range m.releases {
		r()
	}
	m.releases = nil
}

// alloc returns n bytes of chunk memory and their ref. The caller holds mu
// exclusively. Chunks are allocated at their full length and never
// resliced, so that readers holding a copy of the chunk list race with no
// write.
func (m *Rows) alloc(n int) (uint64, []byte) {
	if k := len(m.chunks); k > 0 && len(m.chunks[k-1])-m.used >= n {
		off := m.used
		m.used += n
		return uint64(k-1)<<32 | uint64(off), m.chunks[k-1][off : off+n : off+n]
	}
	// Chunks start small and double up to memChunk, so that a table
	// written little between flushes (one of many tenants') holds little.
	size := FirstChunkBytes
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
func (m *Rows) keyOf(chunks [][]byte, r *memRow) []byte {
	return at(chunks, r.key, int(r.klen))
}

// AddCell appends a cell to row index i. The caller holds mu exclusively.
func (m *Rows) AddCell(i int, family, qualifier, value []byte, ts uint64) {
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
func (m *Rows) block(ref uint64) []byte {
	c := m.chunks[ref>>32]
	off := int(uint32(ref))
	return c[off : off+int(binary.LittleEndian.Uint32(c[off+8:]))]
}

// Cell is a cell record as read: slices into chunk memory.
type Cell struct {
	ref       uint64
	Family    []byte
	Qualifier []byte
	Value     []byte
	TS        uint64
	// Dead is set by a delete: the record hides the column's older
	// versions and is not a cell itself.
	Dead bool
}

// blocks appends the refs of row index i's blocks to dst, oldest first.
// The caller holds mu.
func (m *Rows) blocks(dst []uint64, i int) []uint64 {
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
func (m *Rows) blockCells(dst []Cell, ref uint64) []Cell {
	blk := m.block(ref)
	used := int(binary.LittleEndian.Uint32(blk[12:]))
	for p := blockHeader; p < used; {
		f, q, v, next := readRecord(blk, p)
		dst = append(dst, Cell{ref: ref + uint64(p), Family: f, Qualifier: q, Value: v,
			TS: binary.LittleEndian.Uint64(blk[p:]), Dead: blk[p+cellDeadByte] != 0})
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
func (m *Rows) allCells(dst []Cell, i int) []Cell {
	var stack [16]uint64
	for _, ref := range m.blocks(stack[:0], i) {
		dst = m.blockCells(dst, ref)
	}
	return dst
}

// RowCells appends the cells of row index i to dst, sorted by family then
// qualifier: for each column its newest record, dead ones included (a
// tombstone: the column was deleted, and an older layer's or Pebble's
// cell of it must not show). It also reports whether the whole row was
// deleted (older layers and Pebble hold nothing of it). The caller holds
// mu.
//
// A reader that took Pebble's snapshot before a delete depends on both:
// the delete's tombstones in Pebble are newer than its snapshot.
func (m *Rows) RowCells(dst []Cell, i int) ([]Cell, bool) {
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

// AppendAscending appends the live cells of row index i to dst as
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
func (m *Rows) AppendAscending(dst []store.Cell, i int, family []byte) ([]store.Cell, bool) {
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
			if !first && CompareColumns(pf, pq, f, q) >= 0 {
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

// cmpColumn orders records by column (CompareColumns).
func cmpColumn(a, b Cell) int { return CompareColumns(a.Family, a.Qualifier, b.Family, b.Qualifier) }

// CompareColumns orders columns by family, then qualifier, as bytes.Compare
// does; families of one byte and qualifiers of at most 8 bytes (a data
// row's: 2 or 4 bytes a sample) are compared as integers.
func CompareColumns(af, aq, bf, bq []byte) int {
	if len(af) == 1 && len(bf) == 1 {
		if af[0] != bf[0] {
			return compare(af[0], bf[0])
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
		return compare(x, y)
	}
	return compare(len(aq), len(bq))
}

// compare is cmp.Compare for integers.
func compare[T byte | int | uint64](a, b T) int {
	if a == b {
		return 0
	}
	return 2*btoi(a > b) - 1
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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

// Lookup returns the newest record of a column of row, found false when
// the row holds none (a dead record is found, with dead set: the column
// was deleted since the data below it was written).
func (m *Rows) Lookup(row, family, qualifier []byte) (Cell, bool) {
	m.RLock()
	defer m.RUnlock()
	i := m.Find(maphash.Bytes(m.seed, row), row)
	if i < 0 {
		return Cell{}, false
	}
	var buf [64]Cell
	var stack [16]uint64
	bl := m.blocks(stack[:0], i)
	for b := len(bl) - 1; b >= 0; b-- {
		cells := m.blockCells(buf[:0], bl[b])
		for n := len(cells) - 1; n >= 0; n-- {
			c := cells[n]
			if bytes.Equal(c.Family, family) && bytes.Equal(c.Qualifier, qualifier) {
				c.Value = bytes.Clone(c.Value)
				return c, true
			}
		}
	}
	return Cell{}, false
}

// Kill marks dead the records of row's columns that a delete removes: all
// of them when columns is empty, else those of each column whose newest
// record is at or before the column's bound (any, when the bound is 0).
// The caller holds mu exclusively.
func (m *Rows) Kill(row []byte, columns []Column) {
	i := m.Find(maphash.Bytes(m.seed, row), row)
	if i < 0 {
		if len(columns) > 0 {
			return
		}
		i = m.RowFor(row) // remembered as wiped, for readers of an older snapshot
	}
	cells := m.allCells(nil, i)
	newest := make(map[string]uint64, len(columns))
	for _, c := range cells {
		newest[string(c.Family)+"\x00"+string(c.Qualifier)] = c.TS // the last is the newest
	}
	doomed := func(c Cell) bool {
		if len(columns) == 0 {
			return true
		}
		for _, col := range columns {
			if bytes.Equal(col.Family, c.Family) && bytes.Equal(col.Qualifier, c.Qualifier) {
				return col.Bound == 0 || newest[string(c.Family)+"\x00"+string(c.Qualifier)] <= col.Bound
			}
		}
		return false
	}
	for _, c := range cells {
		if !c.Dead && doomed(c) {
			m.chunks[c.ref>>32][int(uint32(c.ref))+cellDeadByte] = 1
		}
	}
	if len(columns) == 0 {
		m.rows[i].wiped = true
	}
}

// KillRange marks dead every record of the rows in [start, stop) (stop
// empty: no bound) and the rows wiped, as a delete of each whole row
// does; a row that is not in the buffer needs nothing (see kill: a range
// delete is not atomic with a scan that began before it). The caller
// holds mu exclusively (or owns m alone).
func (m *Rows) KillRange(start, stop []byte) {
	var cells []Cell
	for i := range m.rows {
		k := m.keyOf(m.chunks, &m.rows[i])
		if bytes.Compare(k, start) < 0 || len(stop) > 0 && bytes.Compare(k, stop) >= 0 {
			continue
		}
		cells = m.allCells(cells[:0], i)
		for _, c := range cells {
			m.chunks[c.ref>>32][int(uint32(c.ref))+cellDeadByte] = 1
		}
		m.rows[i].wiped = true
	}
}

// Column is one column of a delete: bound 0 removes any version.
type Column struct {
	Family, Qualifier []byte
	Bound             uint64
}

// Sorted is the rows of a Rows in key order as one call of Sorted saw
// them: Order indexes the rows, whose keys never change.
type Sorted struct {
	Order  []uint32
	rows   []memRow
	chunks [][]byte
}

// Key returns the key of row index i (an element of Order).
func (s Sorted) Key(i uint32) []byte {
	return at(s.chunks, s.rows[i].key, int(s.rows[i].klen))
}

// Search returns the first position of Order whose row is at or after k.
func (s Sorted) Search(k []byte) int {
	n, _ := slices.BinarySearchFunc(s.Order, k, func(i uint32, k []byte) int {
		return bytes.Compare(s.Key(i), k)
	})
	return n
}

// Sorted returns the rows in key order (those added after it started are
// not included). The order is kept for the next call, which sorts only
// the rows added since and merges them in. The caller does not hold the
// lock.
func (m *Rows) Sorted() Sorted {
	m.sortMu.Lock()
	defer m.sortMu.Unlock()
	m.RLock()
	n := len(m.rows)
	rows := m.rows[:n:n]
	chunks := m.chunks[:len(m.chunks):len(m.chunks)]
	old := m.sorted
	m.RUnlock()
	if len(old) == n {
		return Sorted{Order: old, rows: rows, chunks: chunks}
	}
	// Keys and hashes of rows[:n] never change, so they are read here
	// without the lock while writers add rows and cells.
	srt := Sorted{rows: rows, chunks: chunks}
	fresh := make([]uint32, 0, n-len(old))
	for i := len(old); i < n; i++ {
		fresh = append(fresh, uint32(i))
	}
	keysort.ByKey(fresh, srt.Key)
	merged := make([]uint32, 0, n)
	a, b := old, fresh
	for len(a) > 0 && len(b) > 0 {
		if bytes.Compare(srt.Key(a[0]), srt.Key(b[0])) <= 0 {
			merged, a = append(merged, a[0]), a[1:]
		} else {
			merged, b = append(merged, b[0]), b[1:]
		}
	}
	srt.Order = append(append(merged, a...), b...)
	m.Lock()
	m.sorted = srt.Order
	m.Unlock()
	return srt
}

// Len returns the rows. The caller holds the lock.
func (m *Rows) Len() int { return len(m.rows) }

// SortedLen returns the rows that the last Sorted ordered. The caller
// holds the lock.
func (m *Rows) SortedLen() int { return len(m.sorted) }

// Cells returns the cell records. The caller holds the lock.
func (m *Rows) Cells() int { return m.cells }

// Bytes returns the bytes the buffer holds. The caller holds the lock.
func (m *Rows) Bytes() int64 { return m.bytes }

// Iter steps through a Rows' rows in key order, from the first at or
// after start to the last before stop (nil: no bound), for a scanner that
// merges them with Pebble's. It sees the rows present when it was
// created.
type Iter struct {
	m    *Rows
	srt  Sorted
	stop []byte
	pos  int
}

// NewIter returns an iterator over the rows of m in [start, stop).
func NewIter(m *Rows, start, stop []byte) *Iter {
	it := &Iter{m: m, srt: m.Sorted()}
	if len(stop) > 0 {
		it.stop = stop
	}
	if len(start) > 0 {
		it.pos = it.srt.Search(start)
	}
	return it
}

// NewRowIter returns an iterator over the one row of m whose key is row,
// if m holds it: a point read (a Get, a compaction's read of a row) finds
// it by its hash, where NewIter's order of every row costs a merge of them
// all whenever rows were added since the last (quadratic under a writer).
func NewRowIter(m *Rows, row []byte) *Iter {
	h := m.Hash(row)
	m.RLock()
	defer m.RUnlock()
	it := &Iter{m: m, srt: Sorted{rows: m.rows[:len(m.rows):len(m.rows)], chunks: m.chunks[:len(m.chunks):len(m.chunks)]}}
	if i := m.Find(h, row); i >= 0 {
		it.srt.Order = []uint32{uint32(i)}
	}
	return it
}

// Row returns the key of the current row, false when there is none.
func (it *Iter) Row() ([]byte, bool) {
	if it.pos >= len(it.srt.Order) {
		return nil, false
	}
	k := it.srt.Key(it.srt.Order[it.pos])
	if it.stop != nil && bytes.Compare(k, it.stop) >= 0 {
		it.pos = len(it.srt.Order)
		return nil, false
	}
	return k, true
}

// Index returns the current row's index in Rows (valid after Row
// returned true).
func (it *Iter) Index() int { return int(it.srt.Order[it.pos]) }

// Next moves to the next row.
func (it *Iter) Next() { it.pos++ }

// Rows returns the buffer the iterator steps through.
func (it *Iter) Rows() *Rows { return it.m }
