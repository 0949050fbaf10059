package memrows

import (
	"bytes"
	"hash/maphash"
	"slices"
)

// The rows' hash table: a row found by its key's hash (open addressing
// over slots, each a row's index + 1), one at a time or a request's at
// once, and added when absent.

// Find returns the index of row, -1 when absent. The caller holds mu.
func (m *Rows) Find(h uint64, row []byte) int {
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

// FindMany is Find of many rows at once: it appends to dst the index of
// row keys(k), whose hash is hs[k], for each k (-1 when absent), and
// returns it with a byte of each found row's newest cell block summed
// (see Touch). The caller holds mu.
//
// A lookup of a row in a buffer of a hundred thousand misses the CPU's
// caches three or four times, one after the other: its hash slot, the
// rows its probe meets, its key's bytes, its newest block. FindMany takes
// each step for all the rows in a pass of its own before the next, so
// that a pass's misses, which do not depend on each other, overlap, and
// the next pass finds its memory cached (BenchmarkFindMany).
func (m *Rows) FindMany(dst []int32, hs []uint64, keys func(k int) []byte) ([]int32, uint32) {
	mask := uint64(len(m.slots) - 1)
	var sum uint32
	// Pass 1: each row's first slot.
	for _, h := range hs {
		sum += m.slots[h&mask]
	}
	// Pass 2: the probe, by hash alone: the first row of the same hash
	// is the candidate.
	start := len(dst)
	for _, h := range hs {
		cand := int32(-1)
		for i := h & mask; ; i = (i + 1) & mask {
			s := m.slots[i]
			if s == 0 {
				break
			}
			if m.rows[s-1].hash == h {
				cand = int32(s - 1)
				break
			}
		}
		dst = append(dst, cand)
	}
	// Pass 3: the candidates' keys and newest blocks.
	for _, c := range dst[start:] {
		if c < 0 {
			continue
		}
		r := &m.rows[c]
		if r.klen > 0 {
			sum += uint32(m.chunks[r.key>>32][uint32(r.key)])
		}
		if r.last != 0 {
			sum += uint32(m.chunks[(r.last-1)>>32][uint32(r.last-1)])
		}
	}
	// Pass 4: the keys compared; a candidate of another key (two keys
	// of one 64-bit hash) is looked up again, whole.
	for k, c := range dst[start:] {
		if c < 0 {
			continue
		}
		key := keys(k)
		if !bytes.Equal(m.keyOf(m.chunks, &m.rows[c]), key) {
			c = int32(m.Find(hs[k], key))
			dst[start+k] = c
			if c < 0 {
				continue
			}
		}
		sum += uint32(m.Touch(int(c)))
	}
	return dst, sum
}

// RowFor returns the index of row, added when absent. The caller holds mu
// exclusively.
func (m *Rows) RowFor(row []byte) int { return m.RowForHash(m.Hash(row), row) }

// Hash returns the hash of row that find and rowForHash take.
func (m *Rows) Hash(row []byte) uint64 { return maphash.Bytes(m.seed, row) }

// RowForHash is rowFor of a row whose hash (m.hash) is h.
func (m *Rows) RowForHash(h uint64, row []byte) int {
	if i := m.Find(h, row); i >= 0 {
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
func (m *Rows) grow() {
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

// EachHash calls fn with the hash of each row (Hash). The caller holds
// mu.
func (m *Rows) EachHash(fn func(h uint64)) {
	for i := range m.rows {
		fn(m.rows[i].hash)
	}
}

// Touch reads a byte of row index i's newest cell block, so that the
// block is in this core's cache when a cell is appended to it (a put
// probes its rows under the read lock before it takes the write lock).
// The caller holds the lock.
func (m *Rows) Touch(i int) byte {
	if last := m.rows[i].last; last != 0 {
		return m.block(last - 1)[12] // its used bytes
	}
	return 0
}
