package gencache

import (
	"math/bits"
	"sync"
)

// ReadLocks holds the read locks of the shards a batch of lookups touched
// in a sharded cache (at most 64 shards), so that a batch pays each
// shard's lock once instead of once a lookup, and lets them all go after
// LockBatch lookups, so that a writer waits for a shard no longer than
// that. Not safe for concurrent use.
//
// Holding several read locks cannot deadlock with writers that take one
// shard's write lock at a time: Hold blocks for a lock only when it holds
// none; with some held it only tries (TryRLock), and when a writer holds
// or waits for that shard it lets every lock go before it waits.
type ReadLocks struct {
	locks []*sync.RWMutex
	held  uint64 // bit i: locks[i]'s read lock is held
	n     int    // lookups since the first lock held was taken
}

// NewReadLocks returns a holder of locks' read locks (at most 64).
func NewReadLocks(locks []*sync.RWMutex) ReadLocks {
	if len(locks) > 64 {
		panic("gencache: more than 64 shards")
	}
	return ReadLocks{locks: locks}
}

// Hold makes sure the read lock of shard i is held, for one lookup.
func (r *ReadLocks) Hold(i int) {
	if r.n >= LockBatch {
		r.Release()
	}
	r.n++
	if r.held&(1<<i) != 0 {
		return
	}
	mu := r.locks[i]
	if r.held != 0 && !mu.TryRLock() {
		r.Release()
	}
	if r.held == 0 {
		mu.RLock()
		r.n = 1
	}
	r.held |= 1 << i
}

// Release lets every read lock held go.
func (r *ReadLocks) Release() {
	for held := r.held; held != 0; held &= held - 1 {
		r.locks[bits.TrailingZeros64(held)].RUnlock()
	}
	r.held, r.n = 0, 0
}
