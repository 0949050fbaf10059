package mapping

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// seriesKey identifies a label set in the series cache: two 64-bit hashes
// of its key bytes under two seeds drawn at random when the process
// starts (hash/maphash, AES-based where the CPU has it).
//
// A key is 16 bytes however many labels the series has, instead of the
// label bytes themselves (about 200 for a series of 10 labels), which
// is what lets a million active series be cached in about 130 MB. The
// price is that two label sets whose keys agree in 128 bits of keyed hash
// would share a row key: for a billion distinct series the chance is
// about 1 in 10^21, and without the seeds, which never leave the process,
// a sender cannot search for such a pair.
type seriesKey [2]uint64

// seriesEntry is a cached Series, stored compactly: its UIDs in one
// allocation.
type seriesEntry struct {
	uids      []byte // metric ‖ tags
	hash      uint64
	mark      *indexMark
	bucket    int32
	metricLen uint8
}

func (e seriesEntry) series() Series {
	return Series{Metric: e.uids[:e.metricLen:e.metricLen], Tags: e.uids[e.metricLen:], Bucket: int(e.bucket), mark: e.mark, Hash: e.hash}
}

func entryOf(s Series) seriesEntry {
	uids := make([]byte, 0, len(s.Metric)+len(s.Tags))
	uids = append(append(uids, s.Metric...), s.Tags...)
	return seriesEntry{uids: uids, hash: s.Hash, mark: s.mark, bucket: int32(s.Bucket), metricLen: uint8(len(s.Metric))}
}

// seriesEntryBytes approximates what an entry costs: the map slot (key,
// entry, control byte and load-factor slack), the UID bytes' allocation
// and the index mark.
const seriesEntryBytes = 16 + 48 + 24 + 8

// seriesCache maps label-set keys to Series: two generations, the older
// dropped when the newer holds half the byte budget (or max entries); a
// hit in the older generation is promoted. Safe for concurrent use.
type seriesCache struct {
	seeds              [2]maphash.Seed
	mu                 sync.RWMutex
	cur, old           map[seriesKey]seriesEntry
	max                int
	maxBytes           int // 0: entries only
	curBytes, oldBytes int
	hits, misses       atomic.Uint64
}

func newSeriesCache(max int) *seriesCache {
	return &seriesCache{
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		cur:   map[seriesKey]seriesEntry{}, old: map[seriesKey]seriesEntry{}, max: max,
	}
}

// key hashes the key bytes of a label set.
func (c *seriesCache) key(k []byte) seriesKey {
	return seriesKey{maphash.Bytes(c.seeds[0], k), maphash.Bytes(c.seeds[1], k)}
}

func (c *seriesCache) setMaxBytes(n int) {
	c.mu.Lock()
	c.maxBytes = n
	c.mu.Unlock()
}

func (c *seriesCache) get(k []byte) (Series, bool) {
	h := c.key(k)
	c.mu.RLock()
	e, ok := c.cur[h]
	if ok {
		c.mu.RUnlock()
		c.hits.Add(1)
		return e.series(), true
	}
	e, ok = c.old[h]
	c.mu.RUnlock()
	if !ok {
		c.misses.Add(1)
		return Series{}, false
	}
	c.hits.Add(1)
	c.putEntry(h, e)
	return e.series(), true
}

// getLocked looks k up with c.mu held for reading. It neither promotes
// nor counts, but reports whether the entry is in the older generation,
// for the caller to promote once it released the lock.
func (c *seriesCache) getLocked(k []byte) (h seriesKey, e seriesEntry, ok, old bool) {
	h = c.key(k)
	if e, ok = c.cur[h]; ok {
		return h, e, true, false
	}
	e, ok = c.old[h]
	return h, e, ok, ok
}

func (c *seriesCache) put(k []byte, s Series) { c.putEntry(c.key(k), entryOf(s)) }

func (c *seriesCache) putEntry(h seriesKey, e seriesEntry) {
	n := seriesEntryBytes + len(e.uids)
	c.mu.Lock()
	if len(c.cur) >= c.max || (c.maxBytes > 0 && c.curBytes+n > c.maxBytes/2) {
		c.old, c.oldBytes = c.cur, c.curBytes
		c.cur, c.curBytes = make(map[seriesKey]seriesEntry, min(c.max, len(c.old))/4), 0
	}
	if _, ok := c.cur[h]; !ok {
		c.curBytes += n
	}
	c.cur[h] = e
	c.mu.Unlock()
}

func (c *seriesCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cur) + len(c.old)
}

func (c *seriesCache) stats() (entries, bytes, maxBytes int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cur) + len(c.old), c.curBytes + c.oldBytes, c.maxBytes
}

func (c *seriesCache) counts() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }
