package index

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// seenSet remembers keys within a byte budget: two generations, the older
// dropped when the newer holds half the budget, so memory stays within the
// budget and recently written keys are kept. A key forgotten is only
// written again (index writes are idempotent).
type seenSet struct {
	mu         sync.RWMutex
	cur, old   map[string]struct{}
	curBytes   int
	oldBytes   int
	budget     int
	hits, miss atomic.Uint64
}

// entryOverhead approximates what a map entry costs beyond its key bytes
// (string header, bucket slot, hash bits).
const entryOverhead = 48

func newSeenSet(budget int) *seenSet {
	return &seenSet{cur: map[string]struct{}{}, old: map[string]struct{}{}, budget: budget}
}

// reader looks many keys up under one read lock; promotions from the
// older generation are kept until release. Not safe for concurrent use.
type seenReader struct {
	s          *seenSet
	locked     bool
	promote    []string
	hits, miss uint64
}

func (s *seenSet) reader() seenReader { return seenReader{s: s} }

// has reports whether k was written; it does not allocate for a key in the
// newer generation or absent.
func (r *seenReader) has(k []byte) bool {
	if !r.locked {
		r.s.mu.RLock()
		r.locked = true
	}
	if _, ok := r.s.cur[string(k)]; ok {
		r.hits++
		return true
	}
	if _, ok := r.s.old[string(k)]; ok {
		r.hits++
		r.promote = append(r.promote, string(k))
		return true
	}
	r.miss++
	return false
}

// release drops the read lock and applies the promotions and counts.
func (r *seenReader) release() {
	if r.locked {
		r.s.mu.RUnlock()
		r.locked = false
	}
	r.s.hits.Add(r.hits)
	r.s.miss.Add(r.miss)
	r.hits, r.miss = 0, 0
	if len(r.promote) > 0 {
		r.s.addAll(r.promote)
		r.promote = r.promote[:0]
	}
}

// addAll adds keys under one lock.
func (s *seenSet) addAll(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.addLocked(k)
	}
}

func (s *seenSet) addLocked(k string) {
	if _, ok := s.cur[k]; ok {
		return
	}
	if s.curBytes+len(k)+entryOverhead > s.budget/2 {
		s.old, s.oldBytes = s.cur, s.curBytes
		s.cur, s.curBytes = map[string]struct{}{}, 0
	}
	s.cur[k] = struct{}{}
	s.curBytes += len(k) + entryOverhead
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
