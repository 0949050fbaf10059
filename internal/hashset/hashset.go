// Package hashset is a set of 64-bit hashes.
package hashset

// Set is a set of 64-bit hashes (keyed, so uniformly spread): open
// addressing with linear probing in a power-of-two table of uint64s, at
// most three quarters full, no deletion. A hash costs 8 bytes a slot, 11
// to 21 bytes with the slack, where a Go map[uint64]struct{} takes about
// 38 (its empty value is padded to 8 bytes, and a map just grown is half
// empty): 1 M hashes take 16 MiB instead of 36. The slot value 0
// marks an empty slot; the hash 0 itself is kept aside. Not safe for
// concurrent use; the zero Set is empty and ready.
type Set struct {
	slots []uint64
	n     int // hashes in slots
	zero  bool
}

// minSlots is the table's first size.
const minSlots = 64

// Len returns the hashes in the set.
func (s *Set) Len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// Has reports whether h is in the set.
func (s *Set) Has(h uint64) bool {
	if h == 0 {
		return s.zero
	}
	if len(s.slots) == 0 {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// Add puts h into the set and reports whether it was not there.
func (s *Set) Add(h uint64) bool {
	if h == 0 {
		added := !s.zero
		s.zero = true
		return added
	}
	if s.Has(h) {
		return false // no growth for a hash already in
	}
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	if !insert(s.slots, h) {
		return false
	}
	s.n++
	return true
}

// grow doubles the table.
func (s *Set) grow() {
	slots := make([]uint64, max(minSlots, 2*len(s.slots)))
	for _, h := range s.slots {
		if h != 0 {
			insert(slots, h)
		}
	}
	s.slots = slots
}

// insert puts h (not 0) into slots, which has a free slot, and reports
// whether it was not there.
func insert(slots []uint64, h uint64) bool {
	mask := uint64(len(slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch slots[i] {
		case h:
			return false
		case 0:
			slots[i] = h
			return true
		}
	}
}

// Each calls f with every hash in the set.
func (s *Set) Each(f func(h uint64)) {
	if s.zero {
		f(0)
	}
	for _, h := range s.slots {
		if h != 0 {
			f(h)
		}
	}
}
