package series

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/promhbase/promhbase/internal/gencache"
)

// seriesKey identifies a label set in the series cache: two 64-bit hashes
// of its key bytes under two seeds drawn at random when the process
// starts (hash/maphash, AES-based where the CPU has it).
//
// A key is 16 bytes however many labels the series has, instead of the
// label bytes themselves (about 200 for a series of 10 labels), which
// is what lets a million active series be cached in about 136 MB. The
// price is that two label sets whose keys agree in 128 bits of keyed hash
// would share a row key: for a billion distinct series the chance is
// about 1 in 10^21, and without the seeds, which never leave the process,
// a sender cannot search for such a pair.
type seriesKey [2]uint64

// seriesEntry is a cached Series, stored compactly and without pointers
// (so the garbage collector never scans the map): the map holds only
// where its record and index mark are in the arena of the entry's
// generation. The record is a header of seriesHeaderBytes followed by the
// UIDs (metric ‖ tags):
//
//	hash      u64 little-endian (Series.Hash)
//	bucket    i32 little-endian (Series.Bucket)
//	n         u16 little-endian (bytes of UIDs that follow)
//	metricLen u8
//	          u8  zero
//
// Keeping the header out of the map halves its slot (8 bytes of value
// instead of 24): 1 M series take about 70 bytes each in the map instead
// of 100 (a Go map just grown is half empty).
type seriesEntry struct {
	ref  uint32 // of the record in the arena
	mark uint32 // of the index mark in the arena
}

// seriesHeaderBytes is the size of a record's header.
const seriesHeaderBytes = 16

// seriesEntryBytes is what an entry is counted as besides its UIDs: the
// map slot (16-byte key, 8-byte entry, control byte), doubled for the
// load-factor slack, the record's header and the index mark.
const seriesEntryBytes = 2*(16+8+1) + seriesHeaderBytes + 8

// Index marks are kept in chunks of markChunk; UIDs in the chunks of a
// gencache.Arena.
const markChunk = 4096

// seriesArena holds the UIDs and index marks of one generation's
// entries. Neither is ever moved or reused, so a Series handed out keeps
// pointing at its bytes after its generation is dropped.
type seriesArena struct {
	uids  gencache.Arena
	marks [][]indexMark
	nmark int
}

// add copies s's UIDs and mark into the arena and returns its entry. A
// promoted Series keeps its mark's day but not its freshness: the
// Series handed out before may yet set the day on the old mark only, and
// the copy must not then claim that no stored row can name the series.
func (a *seriesArena) add(s Series, promoted bool) seriesEntry {
	n := len(s.Metric) + len(s.Tags)
	var h [seriesHeaderBytes]byte
	binary.LittleEndian.PutUint64(h[0:], s.Hash)
	binary.LittleEndian.PutUint32(h[8:], uint32(int32(s.Bucket)))
	binary.LittleEndian.PutUint16(h[12:], uint16(n))
	h[14] = uint8(len(s.Metric))
	r := a.uids.Add3(h[:], s.Metric, s.Tags)
	if a.nmark%markChunk == 0 {
		a.marks = append(a.marks, make([]indexMark, markChunk))
	}
	m := &a.marks[a.nmark/markChunk][a.nmark%markChunk]
	if s.mark != nil {
		m.day.Store(s.mark.day.Load())
		if !promoted {
			m.fresh = s.mark.fresh
		}
	}
	e := seriesEntry{ref: r.Pos, mark: uint32(a.nmark)}
	a.nmark++
	return e
}

// series returns the Series of e, an entry of this arena.
func (a *seriesArena) series(e seriesEntry) Series {
	c, off := e.ref>>gencache.ArenaShift, e.ref&(gencache.ArenaChunk-1)
	rec := a.uids.Chunks[c][off:]
	h := rec[:seriesHeaderBytes:seriesHeaderBytes]
	n, metricLen := int(binary.LittleEndian.Uint16(h[12:])), int(h[14])
	uids := rec[seriesHeaderBytes : seriesHeaderBytes+n : seriesHeaderBytes+n]
	return Series{Metric: uids[:metricLen:metricLen], Tags: uids[metricLen:], Bucket: int(int32(binary.LittleEndian.Uint32(h[8:]))),
		mark: &a.marks[e.mark/markChunk][e.mark%markChunk], Hash: binary.LittleEndian.Uint64(h[0:])}
}

// seriesCache maps label-set keys to Series: shards by the key's hash,
// each with two generations, the older dropped (with its arena) when the
// newer holds half the shard's byte budget (or its share of max entries);
// a hit in the older generation is promoted, copied into the newer arena.
// Safe for concurrent use.
//
// Why shards: a first contact puts thousands of new series while every
// other request looks its series up. With one lock the puts held every
// lookup back: the cache's write lock was 55 % of the write path's mutex
// delay (16 senders, 100 k new series; docs/bench/write-scaling.md). A
// lookup now takes its shard's read lock alone, and a batch of puts one
// shard's write lock at a time.
type seriesCache struct {
	seeds  [2]maphash.Seed
	shards []seriesShard
	locks  []*sync.RWMutex // of each shard, for gencache.ShardLocks
	mask   uint64
}

// seriesShard is one shard of the cache, padded to its own cache lines so
// that the locks of neighbouring shards do not share one.
type seriesShard struct {
	gencache.Generations[seriesKey, seriesEntry, seriesArena]
	_ [64]byte
}

// maxSeriesShards is the number of shards of a large cache; a cache of
// fewer than minShardEntries entries a shard has fewer shards (one for a
// small one, as the tests' caches are, so their generations swap at the
// counts they set), and a byte budget of less than minShardBytes a shard
// fewer still (SetMaxBytes).
const (
	maxSeriesShards = 64
	minShardEntries = 4096
	minShardBytes   = 1 << 20
)

func newSeriesCache(max int) *seriesCache {
	n := 1
	for n < maxSeriesShards && max/(2*n) >= minShardEntries {
		n *= 2
	}
	c := &seriesCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	c.setShards(n, max, 0)
	return c
}

// key hashes the key bytes of a label set.
func (c *seriesCache) key(k []byte) seriesKey {
	return seriesKey{maphash.Bytes(c.seeds[0], k), maphash.Bytes(c.seeds[1], k)}
}

// shard returns the shard of h. The second hash's high bits choose it:
// the map inside hashes the key again with its own seed.
func (c *seriesCache) shard(h seriesKey) *seriesShard { return &c.shards[c.shardIndex(h)] }

// shardIndex returns the index of h's shard.
func (c *seriesCache) shardIndex(h seriesKey) int { return int((h[1] >> 40) & c.mask) }

// SetMaxBytes bounds the cache's memory (0: entries only), split evenly
// between the shards; a budget of less than minShardBytes a shard lowers
// their number. It must be called before the cache is used: it empties
// it.
func (c *seriesCache) SetMaxBytes(n int) {
	shards := len(c.shards)
	for n > 0 && shards > 1 && n/shards < minShardBytes {
		shards /= 2
	}
	max := 0
	for i := range c.shards {
		max += c.shards[i].Max()
	}
	c.setShards(shards, max, n)
}

// setShards makes n empty shards (a power of two) sharing max entries and
// maxBytes bytes.
func (c *seriesCache) setShards(n, max, maxBytes int) {
	c.shards, c.locks, c.mask = make([]seriesShard, n), make([]*sync.RWMutex, n), uint64(n-1)
	for i := range c.shards {
		c.shards[i].Init(max / n)
		c.shards[i].SetMaxBytes(maxBytes / n)
		c.locks[i] = &c.shards[i].Mu
	}
}

// Len returns the entries cached.
func (c *seriesCache) Len() int {
	n := 0
	for i := range c.shards {
		n += c.shards[i].Len()
	}
	return n
}

// Stats returns the entries, approximate bytes and byte budget, summed
// over the shards (gencache.StatsSource).
func (c *seriesCache) Stats() (entries, bytes, maxBytes int) {
	for i := range c.shards {
		e, b, m := c.shards[i].Stats()
		entries, bytes, maxBytes = entries+e, bytes+b, maxBytes+m
	}
	return entries, bytes, maxBytes
}

// Counts returns the lookups answered and not answered
// (gencache.StatsSource).
func (c *seriesCache) Counts() (hits, misses uint64) {
	for i := range c.shards {
		h, m := c.shards[i].Counts()
		hits, misses = hits+h, misses+m
	}
	return hits, misses
}

func (c *seriesCache) get(k []byte) (Series, bool) {
	h, s, ok, old := c.lookup(k)
	sh := c.shard(h)
	if !ok {
		sh.Misses.Add(1)
		return Series{}, false
	}
	sh.Hits.Add(1)
	if old {
		return c.putEntry(h, s, true), true
	}
	return s, true
}

// lookup looks k up under its shard's read lock. It neither promotes
// nor counts, but reports whether the entry is in the older generation,
// for the caller to promote (the lock released).
func (c *seriesCache) lookup(k []byte) (h seriesKey, s Series, ok, old bool) {
	h = c.key(k)
	sh := c.shard(h)
	sh.Mu.RLock()
	e, arena, ok, old := sh.LookupLocked(h)
	if ok {
		s = arena.series(e)
	}
	sh.Mu.RUnlock()
	return h, s, ok, old
}

// put caches s under k and returns the cached Series, whose index mark
// the caller must use from then on (the one the cache keeps): s's own
// mark is copied, not shared.
func (c *seriesCache) put(k []byte, s Series) Series { return c.putEntry(c.key(k), s, false) }

// putEntry caches s under h, copying it into the newer arena, and returns
// the cached Series (the one already there, if any; s itself if it is too
// large to cache). A Series promoted from the older generation gets a
// mark of its own, copied: an update of the old mark after that is lost,
// which costs only an index check the next time the series is written
// (promoted: s comes from the older generation).
func (c *seriesCache) putEntry(h seriesKey, s Series, promoted bool) Series {
	if seriesHeaderBytes+len(s.Metric)+len(s.Tags) > gencache.MaxArenaEntry {
		return s
	}
	sh := c.shard(h)
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	return sh.putLocked(h, s, promoted)
}

// putLocked is putEntry with the shard's lock held for writing.
func (sh *seriesShard) putLocked(h seriesKey, s Series, promoted bool) Series {
	if seriesHeaderBytes+len(s.Metric)+len(s.Tags) > gencache.MaxArenaEntry {
		return s
	}
	if e, ok := sh.Cur[h]; ok {
		return sh.CurArena.series(e)
	}
	n := seriesEntryBytes + len(s.Metric) + len(s.Tags)
	sh.MakeRoomLocked(n, sh.CurArena.uids.Full())
	e := sh.CurArena.add(s, promoted)
	sh.AddLocked(h, e, n)
	return sh.CurArena.series(e)
}

// putItems caches the Series of every item without an error and sets
// each such item's Series to the cached one. The keys are hashed before
// any lock is taken; each shard's write lock is then taken once for its
// items, gencache.LockBatch at a time, so that a lookup of that shard
// waits for no more than that many puts and the other shards' lookups
// wait for none.
func (c *seriesCache) putItems(items []ResolveItem) {
	if len(items) == 0 {
		return
	}
	hs := make([]seriesKey, len(items))
	order := make([]int32, 0, len(items))
	for i := range items {
		if items[i].Err == nil {
			hs[i] = c.key(items[i].Key)
			order = append(order, int32(i))
		}
	}
	if len(c.shards) > 1 {
		slices.SortFunc(order, func(a, b int32) int {
			return cmp.Compare(c.shardIndex(hs[a]), c.shardIndex(hs[b]))
		})
	}
	for len(order) > 0 {
		sh := c.shard(hs[order[0]])
		n := 1
		for n < len(order) && n < gencache.LockBatch && c.shard(hs[order[n]]) == sh {
			n++
		}
		sh.Mu.Lock()
		for _, i := range order[:n] {
			items[i].Series = sh.putLocked(hs[i], items[i].Series, false)
		}
		sh.Mu.Unlock()
		order = order[n:]
	}
}
