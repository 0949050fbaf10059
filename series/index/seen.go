package index

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/internal/gencache"
)

// seenKey stands for a written key: two 64-bit hashes of its bytes under
// two seeds drawn at random when the process starts (hash/maphash). A key
// costs 16 bytes however long it is, and the set holds no pointers, so
// the garbage collector never scans it. Two keys share a seenKey only if
// they agree in 128 bits of keyed hash (about 1 in 10^20 for a billion
// keys; a sender without the seeds cannot search for a pair); the one
// seen second would then not be written.
type seenKey [2]uint64

// seenSet remembers keys within a byte budget: shards by the key's second
// hash, each with two generations, the older dropped when the newer holds
// half the shard's budget, so memory stays within the budget and recently
// written keys are kept. A key forgotten is only written again (index
// writes are idempotent).
//
// Each generation maps a key's first hash to its second: a 16-byte slot,
// where a set of 16-byte keys would take 24 (Go pads the empty value). Two
// keys whose first hashes agree (about one pair among 6 billion keys) share
// a slot, the later replacing the earlier, which is then only forgotten.
//
// Shards, because one lock was 21 % of the write path's mutex delay on a
// first contact (docs/bench/write-scaling.md): the keys a request adds
// held every other request's lookups back.
type seenSet struct {
	seeds      [2]maphash.Seed
	shards     []seenShard
	locks      []*sync.RWMutex // of each shard, for gencache.ShardLocks
	mask       uint64
	budget     int
	hits, miss atomic.Uint64
}

// seenShard is one shard of a seenSet, padded to its own cache lines.
type seenShard struct {
	mu       sync.RWMutex
	cur, old map[uint64]uint64
	curBytes int
	oldBytes int
	budget   int
	_        [64]byte
}

// entryBytes is what a map entry is counted as: the 16-byte slot and its
// control byte, doubled for the load-factor slack (a map just grown is
// half empty).
const entryBytes = 34

// Shards: at most maxSeenShards, each with a budget of at least
// minSeenShardBytes (a small set, as the tests' are, has one).
const (
	maxSeenShards     = 16
	minSeenShardBytes = 1 << 20
)

func newSeenSet(budget int) *seenSet {
	n := 1
	for n < maxSeenShards && budget/(2*n) >= minSeenShardBytes {
		n *= 2
	}
	s := &seenSet{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		shards: make([]seenShard, n), locks: make([]*sync.RWMutex, n), mask: uint64(n - 1), budget: budget}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.cur, sh.old, sh.budget = map[uint64]uint64{}, map[uint64]uint64{}, budget/n
		s.locks[i] = &sh.mu
	}
	return s
}

// key hashes k.
func (s *seenSet) key(k []byte) seenKey {
	return seenKey{maphash.Bytes(s.seeds[0], k), maphash.Bytes(s.seeds[1], k)}
}

// shardIndex returns the index of k's shard: the second hash's high bits
// (the maps hash the first again with their own seed).
func (s *seenSet) shardIndex(k seenKey) int { return int((k[1] >> 40) & s.mask) }

// reader looks many keys up, each shard's read lock taken once for up to
// lockBatch lookups (gencache.ShardLocks); promotions from the older
// generation are kept until release. Not safe for concurrent use.
type seenReader struct {
	s          *seenSet
	locks      gencache.ShardLocks
	promote    []seenKey
	hits, miss uint64
}

func (s *seenSet) reader() seenReader { return seenReader{s: s, locks: gencache.NewReadLocks(s.locks)} }

// lockBatch is how many keys are added under one acquisition of a shard's
// lock, so that readers waiting for a writer wait for at most that many
// map operations, not for a whole request's.
const lockBatch = gencache.LockBatch

// has reports whether k was written.
func (r *seenReader) has(k seenKey) bool {
	i := r.s.shardIndex(k)
	r.locks.Hold(i)
	sh := &r.s.shards[i]
	if v, ok := sh.cur[k[0]]; ok && v == k[1] {
		r.hits++
		return true
	}
	if v, ok := sh.old[k[0]]; ok && v == k[1] {
		r.hits++
		r.promote = append(r.promote, k)
		return true
	}
	r.miss++
	return false
}

// release drops the read locks and applies the promotions and counts.
func (r *seenReader) release() {
	r.locks.Release()
	r.s.hits.Add(r.hits)
	r.s.miss.Add(r.miss)
	r.hits, r.miss = 0, 0
	if len(r.promote) > 0 {
		r.s.addAll(r.promote)
		r.promote = r.promote[:0]
	}
}

// addAll adds keys, sorted by shard and lockBatch at a time under each
// shard's lock. It reorders keys.
func (s *seenSet) addAll(keys []seenKey) {
	if len(s.shards) > 1 {
		slices.SortFunc(keys, func(a, b seenKey) int { return cmp.Compare(s.shardIndex(a), s.shardIndex(b)) })
	}
	for len(keys) > 0 {
		i := s.shardIndex(keys[0])
		n := 1
		for n < len(keys) && n < lockBatch && s.shardIndex(keys[n]) == i {
			n++
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, k := range keys[:n] {
			sh.addLocked(k)
		}
		sh.mu.Unlock()
		keys = keys[n:]
	}
}

func (sh *seenShard) addLocked(k seenKey) {
	v, ok := sh.cur[k[0]]
	if ok {
		if v != k[1] {
			sh.cur[k[0]] = k[1] // the rare pair sharing a first hash: the other is forgotten
		}
		return
	}
	if sh.curBytes+entryBytes > sh.budget/2 {
		sh.old, sh.oldBytes = sh.cur, sh.curBytes
		sh.cur, sh.curBytes = map[uint64]uint64{}, 0
	}
	sh.cur[k[0]] = k[1]
	sh.curBytes += entryBytes
}

// stats returns the keys held and the bytes they are counted as.
func (s *seenSet) stats() (entries, bytes int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		entries += len(sh.cur) + len(sh.old)
		bytes += sh.curBytes + sh.oldBytes
		sh.mu.RUnlock()
	}
	return entries, bytes
}

// collector exports the set's size and hit ratio.
func (s *seenSet) collector() prometheus.Collector {
	return &seenCollector{s: s,
		bytes:   prometheus.NewDesc("promhbase_index_cache_bytes", "Approximate bytes held by the series index writer's cache of written keys.", nil, nil),
		entries: prometheus.NewDesc("promhbase_index_cache_entries", "Keys held by the series index writer's cache of written keys.", nil, nil),
		lookups: prometheus.NewDesc("promhbase_index_cache_lookups_total", "Lookups in the series index writer's cache, by result.", []string{"result"}, nil),
		budget:  prometheus.NewDesc("promhbase_index_cache_max_bytes", "Byte budget of the series index writer's cache.", nil, nil),
	}
}

type seenCollector struct {
	s                               *seenSet
	bytes, entries, lookups, budget *prometheus.Desc
}

func (c *seenCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.bytes
	ch <- c.entries
	ch <- c.lookups
	ch <- c.budget
}

func (c *seenCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	entries, bytes := s.stats()
	hits, miss := s.hits.Load(), s.miss.Load()
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(entries))
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(hits), "hit")
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(miss), "miss")
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(s.budget))
}
