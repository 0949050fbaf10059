package gencache

import (
	"math/bits"
	"sync"
)

// ShardLocks holds the locks (all read locks, or all write locks) of the
// shards a batch of operations touched in a sharded map (at most 64
// shards), so that a batch pays each shard's lock once instead of once an
// operation, and lets them all go after LockBatch operations, so that
// others wait for a shard no longer than that. Not safe for concurrent
// use.
//
// Holding several locks cannot deadlock with holders of other
// ShardLocks, nor with code that takes one shard's lock at a time: Hold
// blocks for a lock only when it holds none; with some held it only tries
// (TryRLock, TryLock), and when the shard is taken it lets every lock go
// before it waits.
type ShardLocks struct {
	locks []*sync.RWMutex
	write bool
	held  uint64 // bit i: locks[i] is held
	n     int    // operations since the first lock held was taken
}

// NewReadLocks returns a holder of locks' read locks (at most 64).
func NewReadLocks(locks []*sync.RWMutex) ShardLocks {
	if len(locks) > 64 {
		panic("gencache: more than 64 shards")
	}
	return ShardLocks{locks: locks}
}

// NewWriteLocks returns a holder of locks' write locks (at most 64).
func NewWriteLocks(locks []*sync.RWMutex) ShardLocks {
	l := NewReadLocks(locks)
	l.write = true
	return l
}

// Hold makes sure the lock of shard i is held, for one operation.
func (r *ShardLocks) Hold(i int) {
	if r.n >= LockBatch {
		r.Release()
	}
	r.n++
	if r.held&(1<<i) != 0 {
		return
	}
	mu := r.locks[i]
	if r.held != 0 && !r.try(mu) {
		r.Release()
	}
	if r.held == 0 {
		if r.write {
			mu.Lock()
		} else {
			mu.RLock()
		}
		r.n = 1
	}
	r.held |= 1 << i
}

func (r *ShardLocks) try(mu *sync.RWMutex) bool {
	if r.write {
		return mu.TryLock()
	}
	return mu.TryRLock()
}

// Release lets every lock held go.
func (r *ShardLocks) Release() {
	for held := r.held; held != 0; held &= held - 1 {
		if mu := r.locks[bits.TrailingZeros64(held)]; r.write {
			mu.Unlock()
		} else {
			mu.RUnlock()
		}
	}
	r.held, r.n = 0, 0
}
