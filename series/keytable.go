package series

import (
	"unsafe"

	"github.com/promhbase/promhbase/internal/prefetch"
)

// keyTable maps seriesKeys to seriesEntries: open addressing with linear
// probing over one array of slots, each the key and its entry side by
// side (24 bytes). A key is already a keyed hash, so its first word picks
// the slot; a zero key marks an empty slot (seriesCache.key never returns
// one).
//
// Why not a Go map: a lookup of a known series in a table of 100 000 or
// more misses the CPU's caches, and a map's lookup misses twice, on its
// group's control word and then on the slot's key; here the probe starts
// at the key itself, one miss for a hit. BenchmarkKeyTableGet (200 000
// keys, random order): 10 ns a lookup against the map's 26. In a server
// under steady writes at 2 cores the cache's lookups went from 22-24 %
// of the CPU profile to 17-22 % (docs/bench/write-scaling.md).
//
// Entries are only added and looked up: a generation's table is dropped
// whole. Not safe for concurrent use; the cache's shard locks guard it.
type keyTable struct {
	slots []keySlot // len a power of two, or 0
	n     int
}

type keySlot struct {
	k seriesKey
	e seriesEntry
}

// keyTableMinSlots is the size of a table's first array.
const keyTableMinSlots = 64

// newKeyTable returns a table with room for n entries before it grows.
func newKeyTable(n int) keyTable {
	size := keyTableMinSlots
	for size*3/4 < n {
		size *= 2
	}
	return keyTable{slots: make([]keySlot, size)}
}

// len returns the entries held.
func (t *keyTable) len() int { return t.n }

// get returns k's entry.
func (t *keyTable) get(k seriesKey) (seriesEntry, bool) {
	if len(t.slots) == 0 {
		return seriesEntry{}, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := k[0] & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.k == k {
			return s.e, true
		}
		if s.k == (seriesKey{}) {
			return seriesEntry{}, false
		}
	}
}

// prefetch starts loading the slot where get(k) begins its probe (see
// package prefetch).
func (t *keyTable) prefetch(k seriesKey) {
	if len(t.slots) > 0 {
		prefetch.T0(unsafe.Pointer(&t.slots[k[0]&uint64(len(t.slots)-1)]))
	}
}

// set sets k's entry, adding k when absent. k must not be zero.
func (t *keyTable) set(k seriesKey, e seriesEntry) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := k[0] & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.k == k {
			s.e = e
			return
		}
		if s.k == (seriesKey{}) {
			*s = keySlot{k, e}
			t.n++
			return
		}
	}
}

// grow doubles the slots (or makes the first ones).
func (t *keyTable) grow() {
	old := t.slots
	t.slots = make([]keySlot, max(2*len(old), keyTableMinSlots))
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.k == (seriesKey{}) {
			continue
		}
		i := s.k[0] & mask
		for t.slots[i].k != (seriesKey{}) {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
