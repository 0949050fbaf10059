package gencache

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Cache is a bounded map: two generations, the older dropped when the
// newer fills up (max entries, or half of maxBytes by size's count), so it
// holds at most 2×max entries and about maxBytes bytes. A hit in the older
// generation is promoted.
type Cache[V any] struct {
	Mu                 sync.RWMutex
	Cur, Old           map[string]V
	max                int
	maxBytes           int // 0: entries only
	size               func(k string, v V) int
	curBytes, oldBytes int
	Hits, Misses       atomic.Uint64
}

// cacheEntryOverhead approximates what a map entry costs beyond the bytes
// of its key and value: the string and slice headers, the bucket slot and
// the allocation rounding.
const cacheEntryOverhead = 64

// New returns a Cache of at most 2×max entries; size counts an entry's
// bytes for SetMaxBytes.
func New[V any](max int, size func(k string, v V) int) *Cache[V] {
	return &Cache[V]{Cur: map[string]V{}, Old: map[string]V{}, max: max, size: size}
}

// SetMaxBytes bounds the cache's memory (0: entries only).
func (c *Cache[V]) SetMaxBytes(n int) {
	c.Mu.Lock()
	c.maxBytes = n
	c.Mu.Unlock()
}

func (c *Cache[V]) Get(k []byte) (V, bool) {
	c.Mu.RLock()
	v, ok := c.Cur[string(k)]
	if ok {
		c.Mu.RUnlock()
		c.Hits.Add(1)
		return v, true
	}
	v, ok = c.Old[string(k)]
	c.Mu.RUnlock()
	if ok {
		c.Hits.Add(1)
		c.Put(string(k), v)
	} else {
		c.Misses.Add(1)
	}
	return v, ok
}

// GetLocked looks k up with c.Mu held for reading; it does not promote
// and does not count (the caller counts, see SeriesCacheReader).
func (c *Cache[V]) GetLocked(k []byte) (V, bool) {
	if v, ok := c.Cur[string(k)]; ok {
		return v, true
	}
	v, ok := c.Old[string(k)]
	return v, ok
}

func (c *Cache[V]) Put(k string, v V) {
	n := len(k) + cacheEntryOverhead
	if c.size != nil {
		n += c.size(k, v)
	}
	c.Mu.Lock()
	if len(c.Cur) >= c.max || (c.maxBytes > 0 && c.curBytes+n > c.maxBytes/2) {
		c.Old, c.oldBytes = c.Cur, c.curBytes
		c.Cur, c.curBytes = make(map[string]V, min(c.max, len(c.Old))/4), 0
	}
	if _, ok := c.Cur[k]; !ok {
		c.curBytes += n
	}
	c.Cur[k] = v
	c.Mu.Unlock()
}

func (c *Cache[V]) Len() int {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return len(c.Cur) + len(c.Old)
}

// Stats returns the entries, approximate bytes and byte budget.
func (c *Cache[V]) Stats() (entries, bytes, maxBytes int) {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return len(c.Cur) + len(c.Old), c.curBytes + c.oldBytes, c.maxBytes
}

// cacheCollector exports caches' sizes and hit counts, by cache name.
type cacheCollector struct {
	caches                            map[string]StatsSource
	bytes, entries, max, hits, misses *prometheus.Desc
}

// StatsSource is what the collector reads of a cache: Cache, ByteCache
// and the caches built on Generations.
type StatsSource interface {
	Stats() (entries, bytes, maxBytes int)
	Counts() (hits, misses uint64)
}

// Counts returns the lookups answered and not answered.
func (c *Cache[V]) Counts() (hits, misses uint64) { return c.Hits.Load(), c.Misses.Load() }

// NewCollector exports the sizes and hit counts of caches, labelled
// cache="<key>": promhbase_cache_{bytes,entries,max_bytes,hits_total,misses_total}.
func NewCollector(caches map[string]StatsSource) prometheus.Collector {
	l := []string{"cache"}
	return &cacheCollector{caches: caches,
		bytes:   prometheus.NewDesc("promhbase_cache_bytes", "Approximate bytes held by a cache.", l, nil),
		entries: prometheus.NewDesc("promhbase_cache_entries", "Entries held by a cache.", l, nil),
		max:     prometheus.NewDesc("promhbase_cache_max_bytes", "Byte budget of a cache (0: bounded by entries only).", l, nil),
		hits:    prometheus.NewDesc("promhbase_cache_hits_total", "Lookups a cache answered.", l, nil),
		misses:  prometheus.NewDesc("promhbase_cache_misses_total", "Lookups a cache could not answer.", l, nil),
	}
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.bytes, c.entries, c.max, c.hits, c.misses} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for name, cs := range c.caches {
		entries, bytes, maxBytes := cs.Stats()
		hits, misses := cs.Counts()
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(bytes), name)
		ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(entries), name)
		ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(maxBytes), name)
		ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(hits), name)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(misses), name)
	}
}
