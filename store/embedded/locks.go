package embedded

import (
	"hash/maphash"
	"math/bits"
	"sync"
)

// rowLocks is the number of lock stripes rows hash to (see the package
// comment: atomicity per row).
const rowLocks = 256

// stripe returns the lock stripe of row.
func (s *Store) stripe(row []byte) int {
	return int(maphash.Bytes(s.seed, row) % rowLocks)
}

// lockRow locks row's stripe exclusively and returns it.
func (s *Store) lockRow(row []byte) *sync.RWMutex {
	m := &s.locks[s.stripe(row)]
	m.Lock()
	return m
}

// stripeSet is a set of lock stripes, each wanted shared or exclusive.
type stripeSet struct {
	shared, exclusive [rowLocks / 64]uint64
}

// add puts stripe into the set, exclusive when wanted so by any add.
func (ss *stripeSet) add(stripe int, exclusive bool) {
	if exclusive {
		ss.exclusive[stripe/64] |= 1 << (stripe % 64)
	} else {
		ss.shared[stripe/64] |= 1 << (stripe % 64)
	}
}

// lock takes the stripes in ascending order, exclusive where wanted so, so
// that two sets never wait for each other in a cycle.
func (ss *stripeSet) lock(locks *[rowLocks]sync.RWMutex) {
	ss.each(locks, (*sync.RWMutex).Lock, (*sync.RWMutex).RLock)
}

// unlock releases the stripes lock took.
func (ss *stripeSet) unlock(locks *[rowLocks]sync.RWMutex) {
	ss.each(locks, (*sync.RWMutex).Unlock, (*sync.RWMutex).RUnlock)
}

// each calls exclusive or shared, as the set wants it, with the lock of
// every stripe of the set, in ascending order.
func (ss *stripeSet) each(locks *[rowLocks]sync.RWMutex, exclusive, shared func(*sync.RWMutex)) {
	for w := range ss.shared {
		for all := ss.shared[w] | ss.exclusive[w]; all != 0; all &= all - 1 {
			i := bits.TrailingZeros64(all)
			if ss.exclusive[w]&(1<<i) != 0 {
				exclusive(&locks[w*64+i])
			} else {
				shared(&locks[w*64+i])
			}
		}
	}
}
