package gencache

import (
	"slices"
	"sync"
)

// ShardedByteCache is a ByteCache cut into shards by a hash of the key,
// each shard a ByteCache under its own lock: concurrent batches of
// lookups and adds (ShardLocks) then hold back only the batches that
// touch the same shards at the same moment, where one lock made every
// request resolving new series wait for every other's adds. Each shard
// keeps its share of the entry and byte budgets. Safe for concurrent use.
type ShardedByteCache[K comparable] struct {
	shards  []*ByteCache[K]
	locks   []*sync.RWMutex // each shard's Mu, for ShardLocks
	shardOf func(K) uint64  // a hash of the key; its top bits pick the shard
	shift   uint
}

// NewShardedByteCache returns a cache of 1<<bits shards (bits at most
// 6), maxEntries in all, each key's shard the top bits of hash(key).
func NewShardedByteCache[K comparable](bits uint, maxEntries int, hash func(K) uint64) *ShardedByteCache[K] {
	if bits > 6 {
		panic("gencache: more than 64 shards")
	}
	n := 1 << bits
	c := &ShardedByteCache[K]{shards: make([]*ByteCache[K], n), locks: make([]*sync.RWMutex, n), shardOf: hash, shift: 64 - bits}
	for i := range c.shards {
		c.shards[i] = NewByteCache[K](max(maxEntries/n, 1))
		c.locks[i] = &c.shards[i].Mu
	}
	return c
}

// Shard returns the index of k's shard.
func (c *ShardedByteCache[K]) Shard(k K) int {
	if c.shift == 64 {
		return 0
	}
	return int(c.shardOf(k) >> c.shift)
}

// ShardCache returns shard i, for the ...Locked methods under a
// ShardLocks of ReadLocks or WriteLocks holding i.
func (c *ShardedByteCache[K]) ShardCache(i int) *ByteCache[K] { return c.shards[i] }

// ReadLocks returns a holder of the shards' read locks.
func (c *ShardedByteCache[K]) ReadLocks() ShardLocks { return NewReadLocks(c.locks) }

// WriteLocks returns a holder of the shards' write locks.
func (c *ShardedByteCache[K]) WriteLocks() ShardLocks { return NewWriteLocks(c.locks) }

// Get returns the value of k (ByteCache.Get).
func (c *ShardedByteCache[K]) Get(k K) ([]byte, bool) { return c.shards[c.Shard(k)].Get(k) }

// Put caches a copy of v under k (ByteCache.Put).
func (c *ShardedByteCache[K]) Put(k K, v []byte) { c.shards[c.Shard(k)].Put(k, v) }

// ByShard appends to dst the indexes 0..n-1 ordered by the shard of
// key(i), keeping their order within a shard, and returns it with
// bounds: the indexes of shard s are dst[bounds[s]:bounds[s+1]]. A batch
// that takes each shard's lock once, for its indexes alone, holds back
// only the batches of that shard meanwhile (holding every shard's lock
// for a part of the batch, as ShardLocks does, holds back all of them
// when the batch's keys cover every shard).
func (c *ShardedByteCache[K]) ByShard(dst []int32, n int, key func(i int) K) (order []int32, bounds []int32) {
	bounds = make([]int32, len(c.shards)+1)
	for i := range n {
		bounds[c.Shard(key(i))+1]++
	}
	for s := range len(c.shards) {
		bounds[s+1] += bounds[s]
	}
	order = slices.Grow(dst[:0], n)[:n]
	var next [64]int32 // the next place of each shard's indexes
	copy(next[:], bounds)
	for i := range n {
		sh := c.Shard(key(i))
		order[next[sh]] = int32(i)
		next[sh]++
	}
	return order, bounds
}

// runsByShard calls run with the indexes 0..n-1 of each shard in turn
// (ByShard), at most LockBatch of them a call.
func (c *ShardedByteCache[K]) runsByShard(n int, key func(i int) K, run func(sc *ByteCache[K], part []int32)) {
	order, bounds := c.ByShard(nil, n, key)
	for s, sc := range c.shards {
		rest := order[bounds[s]:bounds[s+1]]
		for len(rest) > 0 {
			part := rest[:min(len(rest), LockBatch)]
			rest = rest[len(part):]
			run(sc, part)
		}
	}
}

// PutByShard caches value(i) under key(i) for i in 0..n-1, shard by
// shard (ByShard), each shard's write lock held for at most LockBatch
// puts at a time.
func PutByShard[K comparable](c *ShardedByteCache[K], n int, key func(i int) K, value func(i int) []byte) {
	c.runsByShard(n, key, func(sc *ByteCache[K], part []int32) {
		sc.Mu.Lock()
		defer sc.Mu.Unlock()
		for _, i := range part {
			sc.PutLocked(key(int(i)), value(int(i)))
		}
	})
}

// GetByShard looks up key(i) for i in 0..n-1, shard by shard (ByShard),
// each shard's read lock held for at most LockBatch lookups at a time,
// and calls found for each key cached, with its value and whether it is
// in the older generation (for the caller to promote: Put it again once
// this returned). It counts the hits and misses.
func GetByShard[K comparable](c *ShardedByteCache[K], n int, key func(i int) K, found func(i int, v []byte, old bool)) {
	hits := 0
	c.runsByShard(n, key, func(sc *ByteCache[K], part []int32) {
		sc.Mu.RLock()
		defer sc.Mu.RUnlock()
		for _, i := range part {
			if v, ok, old := sc.GetLocked(key(int(i))); ok {
				found(int(i), v, old)
				hits++
			}
		}
	})
	c.Count(uint64(hits), uint64(n-hits))
}

// Count adds lookups made under ShardLocks to the cache's counts.
func (c *ShardedByteCache[K]) Count(hits, misses uint64) {
	c.shards[0].Hits.Add(hits)
	c.shards[0].Misses.Add(misses)
}

// SetMaxBytes bounds the cache's memory, each shard to its share (0:
// entries only).
func (c *ShardedByteCache[K]) SetMaxBytes(n int) {
	for _, s := range c.shards {
		s.SetMaxBytes(n / len(c.shards))
	}
}

// Len returns the entries of every shard.
func (c *ShardedByteCache[K]) Len() int {
	n := 0
	for _, s := range c.shards {
		n += s.Len()
	}
	return n
}

// Stats returns the entries, approximate bytes and byte budget of every
// shard together.
func (c *ShardedByteCache[K]) Stats() (entries, bytes, maxBytes int) {
	for _, s := range c.shards {
		e, b, m := s.Stats()
		entries, bytes, maxBytes = entries+e, bytes+b, maxBytes+m
	}
	return entries, bytes, maxBytes
}

// Counts returns the lookups answered and not answered.
func (c *ShardedByteCache[K]) Counts() (hits, misses uint64) {
	for _, s := range c.shards {
		h, m := s.Counts()
		hits, misses = hits+h, misses+m
	}
	return hits, misses
}
