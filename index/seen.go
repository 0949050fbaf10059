package index

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// seenKey stands for a written key: two 64-bit hashes of its bytes under
// two seeds drawn at random when the process starts (hash/maphash). A key
// costs 16 bytes however long it is, and the set holds no pointers, so
// the garbage collector never scans it. Two keys share a seenKey only if
// they agree in 128 bits of keyed hash (about 1 in 10^20 for a billion
// keys; a sender without the seeds cannot search for a pair); the one
// seen second would then not be written.
type seenKey [2]uint64

// seenSet remembers keys within a byte budget: two generations, the older
// dropped when the newer holds half the budget, so memory stays within the
// budget and recently written keys are kept. A key forgotten is only
// written again (index writes are idempotent).
//
// Each generation maps a key's first hash to its second: a 16-byte slot,
// where a set of 16-byte keys would take 24 (Go pads the empty value). Two
// keys whose first hashes agree (about one pair among 6 billion keys) share
// a slot, the later replacing the earlier, which is then only forgotten.
type seenSet struct {
	seeds      [2]maphash.Seed
	mu         sync.RWMutex
	cur, old   map[uint64]uint64
	curBytes   int
	oldBytes   int
	budget     int
	hits, miss atomic.Uint64
}

// entryBytes is what a map entry is counted as: the 16-byte slot and its
// control byte, doubled for the load-factor slack (a map just grown is
// half empty).
const entryBytes = 34

func newSeenSet(budget int) *seenSet {
	return &seenSet{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		cur: map[uint64]uint64{}, old: map[uint64]uint64{}, budget: budget}
}

// key hashes k.
func (s *seenSet) key(k []byte) seenKey {
	return seenKey{maphash.Bytes(s.seeds[0], k), maphash.Bytes(s.seeds[1], k)}
}

// reader looks many keys up under one read lock; promotions from the
// older generation are kept until release. Not safe for concurrent use.
type seenReader struct {
	s          *seenSet
	locked     bool
	held       int // lookups since the read lock was taken
	promote    []seenKey
	hits, miss uint64
}

func (s *seenSet) reader() seenReader { return seenReader{s: s} }

// lockBatch is how many keys are looked up or added under one
// acquisition of the lock, so that a writer waiting for it (or readers
// waiting for a writer) wait for at most that many map operations, not
// for a whole request's.
const lockBatch = 256

// has reports whether k was written.
func (r *seenReader) has(k seenKey) bool {
	switch {
	case !r.locked:
		r.s.mu.RLock()
		r.locked = true
	case r.held >= lockBatch:
		r.s.mu.RUnlock()
		r.s.mu.RLock()
		r.held = 0
	}
	r.held++
	if v, ok := r.s.cur[k[0]]; ok && v == k[1] {
		r.hits++
		return true
	}
	if v, ok := r.s.old[k[0]]; ok && v == k[1] {
		r.hits++
		r.promote = append(r.promote, k)
		return true
	}
	r.miss++
	return false
}

// release drops the read lock and applies the promotions and counts.
func (r *seenReader) release() {
	if r.locked {
		r.s.mu.RUnlock()
		r.locked, r.held = false, 0
	}
	r.s.hits.Add(r.hits)
	r.s.miss.Add(r.miss)
	r.hits, r.miss = 0, 0
	if len(r.promote) > 0 {
		r.s.addAll(r.promote)
		r.promote = r.promote[:0]
	}
}

// addAll adds keys, lockBatch at a time under the lock.
func (s *seenSet) addAll(keys []seenKey) {
	for len(keys) > 0 {
		part := keys[:min(len(keys), lockBatch)]
		keys = keys[len(part):]
		s.mu.Lock()
		for _, k := range part {
			s.addLocked(k)
		}
		s.mu.Unlock()
	}
}

func (s *seenSet) addLocked(k seenKey) {
	v, ok := s.cur[k[0]]
	if ok {
		if v != k[1] {
			s.cur[k[0]] = k[1] // the rare pair sharing a first hash: the other is forgotten
		}
		return
	}
	if s.curBytes+entryBytes > s.budget/2 {
		s.old, s.oldBytes = s.cur, s.curBytes
		s.cur, s.curBytes = map[uint64]uint64{}, 0
	}
	s.cur[k[0]] = k[1]
	s.curBytes += entryBytes
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
	s.mu.Lock()
	bytes, entries := s.curBytes+s.oldBytes, len(s.cur)+len(s.old)
	s.mu.Unlock()
	hits, miss := s.hits.Load(), s.miss.Load()
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(entries))
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(hits), "hit")
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(miss), "miss")
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(s.budget))
}
