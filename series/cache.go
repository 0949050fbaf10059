package series

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/promhbase/promhbase/internal/gencache"
)

// seriesKey identifies a label set in the series cache: two 64-bit hashes
// of its key bytes under two seeds drawn at random when the process
// starts (hash/maphash, AES-based where the CPU has it).
//
// A key is 16 bytes however many labels the series has, instead of the
// label bytes themselves (about 200 for a series of 10 labels), which
// is what lets a million active series be cached in about 136 MB. The
// price is that two label sets whose keys agree in their bits of keyed hash
// would share a row key. They are compared in 127 bits (the low bit of the
// second hash is always set): for a billion distinct series the chance
// is about 1 in 10^20, and without the seeds, which never leave the
// process, a sender cannot search for such a pair.
type seriesKey [2]uint64

// seriesEntry is a cached Series, stored compactly and without pointers
// (so the garbage collector never scans the tables): a table holds only
// where its record and index mark are in the arena of the entry's
// generation.
// The record is a header of seriesHeaderBytes followed by the UIDs
// (metric ‖ tags), padded to 8 bytes:
//
//	hash      u64 little-endian (Series.Hash)
//	bucket    i32 little-endian (Series.Bucket)
//	n         u16 little-endian (bytes of UIDs that follow)
//	metricLen u8
//	          u8  zero
//
// Keeping the header out of the table makes its slot 24 bytes instead
// of 40: a series takes 32 to 64 bytes of the tables (a keyTable is 3/8
// to 3/4 full) instead of 53 to 107.
type seriesEntry struct {
	ref  uint32 // of the record in the arena: chunk << gencache.ArenaShift | offset
	mark uint32 // of the index mark in the arena
}

// seriesHeaderBytes is the size of a record's header.
const seriesHeaderBytes = 16

// seriesEntryBytes is what an entry is counted as besides its UIDs: the
// table's slot (16-byte key, 8-byte entry), doubled for the load-factor
// slack (a keyTable is 3/8 to 3/4 full), the record's header and the
// index mark.
const seriesEntryBytes = 2*(16+8) + seriesHeaderBytes + 8

// Index marks are kept in chunks of markChunk.
const markChunk = 4096

// maxArenaChunks is the most chunks a ref can name.
const maxArenaChunks = 1 << (32 - gencache.ArenaShift)

// seriesArena holds the records and index marks of one generation's
// entries, in the order they were added: a request's series, looked up in
// the order they were first written, walk it forward, which the CPU's
// prefetching rewards (every shard's entries share the one arena for
// that reason). Nothing in it is ever moved, reused or written again, so
// a Series handed out keeps pointing at its bytes after its generation is
// dropped.
//
// Appends (add) are made under seriesCache.genMu while lookups of other
// shards read it: the chunk lists are replaced, never changed in place
// (atomic pointers to copies), and records are padded to 8 bytes so that
// an append writes no word a lookup of an earlier record reads.
type seriesArena struct {
	chunks atomic.Pointer[[]*[gencache.ArenaChunk]byte]
	marks  atomic.Pointer[[]*[markChunk]indexMark]
	// Under seriesCache.genMu: chunks and marks in use, bytes used of
	// the last chunk.
	nchunk, used, nmark int
}

// full reports whether the arena may have no room for another record.
func (a *seriesArena) full() bool { return a.nchunk >= maxArenaChunks-1 }

// add copies s's UIDs and mark into the arena and returns its entry. A
// promoted Series keeps its mark's day but not its freshness: the
// Series handed out before may yet set the day on the old mark only, and
// the copy must not then claim that no stored row can name the series.
// The caller holds seriesCache.genMu; s is at most
// gencache.MaxArenaEntry bytes with its header.
func (a *seriesArena) add(s Series, promoted bool) seriesEntry {
	n := len(s.Metric) + len(s.Tags)
	size := (seriesHeaderBytes + n + 7) &^ 7
	if a.nchunk == 0 || a.used+size > gencache.ArenaChunk {
		a.chunks.Store(appendChunk(a.chunks.Load(), new([gencache.ArenaChunk]byte)))
		a.nchunk++
		a.used = 0
	}
	chunk := (*a.chunks.Load())[a.nchunk-1]
	rec := chunk[a.used : a.used+size : a.used+size]
	binary.LittleEndian.PutUint64(rec[0:], s.Hash)
	binary.LittleEndian.PutUint32(rec[8:], uint32(int32(s.Bucket)))
	binary.LittleEndian.PutUint16(rec[12:], uint16(n))
	rec[14] = uint8(len(s.Metric))
	copy(rec[seriesHeaderBytes+copy(rec[seriesHeaderBytes:], s.Metric):], s.Tags)
	ref := uint32(a.nchunk-1)<<gencache.ArenaShift | uint32(a.used)
	a.used += size
	if a.nmark%markChunk == 0 {
		a.marks.Store(appendChunk(a.marks.Load(), new([markChunk]indexMark)))
	}
	m := &(*a.marks.Load())[a.nmark/markChunk][a.nmark%markChunk]
	if s.mark != nil {
		m.day.Store(s.mark.day.Load())
		if !promoted {
			m.fresh = s.mark.fresh
		}
	}
	e := seriesEntry{ref: ref, mark: uint32(a.nmark)}
	a.nmark++
	return e
}

// appendChunk returns a new list: the chunks of list (nil: none) and c.
func appendChunk[C any](list *[]*C, c *C) *[]*C {
	var old []*C
	if list != nil {
		old = *list
	}
	l := make([]*C, len(old)+1)
	copy(l, old)
	l[len(old)] = c
	return &l
}

// series returns the Series of e, an entry of this arena.
func (a *seriesArena) series(e seriesEntry) Series {
	chunk := (*a.chunks.Load())[e.ref>>gencache.ArenaShift]
	rec := chunk[e.ref&(gencache.ArenaChunk-1):]
	h := rec[:seriesHeaderBytes:seriesHeaderBytes]
	n, metricLen := int(binary.LittleEndian.Uint16(h[12:])), int(h[14])
	uids := rec[seriesHeaderBytes : seriesHeaderBytes+n : seriesHeaderBytes+n]
	return Series{Metric: uids[:metricLen:metricLen], Tags: uids[metricLen:], Bucket: int(int32(binary.LittleEndian.Uint32(h[8:]))),
		mark: &(*a.marks.Load())[e.mark/markChunk][e.mark%markChunk], Hash: binary.LittleEndian.Uint64(h[0:])}
}

// seriesCache maps label-set keys to Series: two generations, the older
// dropped (with its arena) when the newer holds max entries or half the
// byte budget; a hit in the older generation is promoted, copied into the
// newer arena. Safe for concurrent use.
//
// The tables (keyTable) are in shards by the key's hash, each under its
// own lock; the arena of a generation is shared by the shards. Why shards: a first
// contact puts thousands of new series while every other request looks
// its series up, and with one lock the puts held every lookup back (the
// cache's write lock was 8 % of the write path's time with 16 senders and
// 100 k new series; docs/bench/write-scaling.md). Why one arena: with an
// arena a shard, a request's records were scattered over all of them and
// a lookup of a known series cost a cache miss more (steady writes 8-10 %
// slower at 2 cores).
//
// Locks: a shard's lock guards its tables. genMu guards the appends to the
// newer arena and the counts; it is taken after a shard's lock. A new
// generation is started with every shard's write lock (in order) and
// genMu held, so the holder of any shard's lock reads cur and old safely.
type seriesCache struct {
	seeds  [2]maphash.Seed
	shards []seriesShard
	locks  []*sync.RWMutex // of each shard, for gencache.ShardLocks
	mask   uint64

	genMu              sync.Mutex
	cur, old           *seriesArena
	curN, oldN         int
	curBytes, oldBytes int
	max                int // entries of a generation
	maxBytes           int // 0: entries only

	hits, misses atomic.Uint64
	// epoch counts the resets; it changes only with every shard's lock
	// and genMu held, so that a put holding a shard's lock and genMu sees
	// whether the cache was reset since its caller's epoch.
	epoch atomic.Uint64
}

// seriesShard is one shard of the cache's tables, padded to its own cache
// lines so that the locks of neighbouring shards do not share one.
type seriesShard struct {
	mu       sync.RWMutex
	cur, old keyTable
	_        [64]byte
}

// maxSeriesShards is the number of shards of a large cache; a cache of
// fewer than minShardEntries entries a shard has fewer shards. 16, not
// more: a batch of lookups takes each shard's read lock it touches, whose
// cache line the other cores' batches write too; with 64 shards that cost
// steady writes 4 % at 2 cores, with 16 nothing measurable.
const (
	maxSeriesShards = 16
	minShardEntries = 4096
)

func newSeriesCache(max int) *seriesCache {
	n := 1
	for n < maxSeriesShards && max/(2*n) >= minShardEntries {
		n *= 2
	}
	c := &seriesCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		shards: make([]seriesShard, n), locks: make([]*sync.RWMutex, n), mask: uint64(n - 1),
		cur: new(seriesArena), old: new(seriesArena), max: max}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.cur, sh.old = newKeyTable(0), newKeyTable(0)
		c.locks[i] = &sh.mu
	}
	return c
}

// key hashes the key bytes of a label set.
func (c *seriesCache) key(k []byte) seriesKey {
	// The low bit of the second hash is set so that no key is zero, the
	// keyTable's empty slot.
	return seriesKey{maphash.Bytes(c.seeds[0], k), maphash.Bytes(c.seeds[1], k) | 1}
}

// shardIndex returns the index of h's shard: the second hash's high bits
// (the tables take their slot from the first hash).
func (c *seriesCache) shardIndex(h seriesKey) int { return int((h[1] >> 40) & c.mask) }

// SetMaxBytes bounds the cache's memory (0: entries only).
func (c *seriesCache) SetMaxBytes(n int) {
	c.genMu.Lock()
	c.maxBytes = n
	c.genMu.Unlock()
}

// Len returns the entries cached.
func (c *seriesCache) Len() int {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	return c.curN + c.oldN
}

// Stats returns the entries, approximate bytes and byte budget
// (gencache.StatsSource).
func (c *seriesCache) Stats() (entries, bytes, maxBytes int) {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	return c.curN + c.oldN, c.curBytes + c.oldBytes, c.maxBytes
}

// Counts returns the lookups answered and not answered
// (gencache.StatsSource).
func (c *seriesCache) Counts() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// lookupLocked looks h up in shard sh, whose lock the caller holds (for
// reading at least). It neither promotes nor counts, but reports whether
// the entry is in the older generation, for the caller to promote.
func (c *seriesCache) lookupLocked(sh *seriesShard, h seriesKey) (s Series, ok, old bool) {
	if e, ok := sh.cur.get(h); ok {
		return c.cur.series(e), true, false
	}
	if e, ok := sh.old.get(h); ok {
		return c.old.series(e), true, true
	}
	return Series{}, false, false
}

func (c *seriesCache) get(k []byte) (Series, bool) {
	h := c.key(k)
	sh := &c.shards[c.shardIndex(h)]
	sh.mu.RLock()
	s, ok, old := c.lookupLocked(sh, h)
	sh.mu.RUnlock()
	if !ok {
		c.misses.Add(1)
		return Series{}, false
	}
	c.hits.Add(1)
	if old {
		return c.putEntry(h, s, true), true
	}
	return s, true
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
	return c.putEntryAt(h, s, promoted, c.epoch.Load())
}

// putEntryAt is putEntry for a caller of epoch: after a reset, nothing is
// put and s is returned.
func (c *seriesCache) putEntryAt(h seriesKey, s Series, promoted bool, epoch uint64) Series {
	if seriesHeaderBytes+len(s.Metric)+len(s.Tags) > gencache.MaxArenaEntry {
		return s
	}
	sh := &c.shards[c.shardIndex(h)]
	sh.mu.Lock()
	c.genMu.Lock()
	if c.epoch.Load() != epoch {
		c.genMu.Unlock()
		sh.mu.Unlock()
		return s
	}
	got, ok := c.putLocked(sh, h, s, promoted, false)
	if !ok {
		c.genMu.Unlock()
		sh.mu.Unlock()
		c.newGeneration(seriesEntryBytes + len(s.Metric) + len(s.Tags))
		sh.mu.Lock()
		c.genMu.Lock()
		if c.epoch.Load() != epoch {
			got = s
		} else {
			got, _ = c.putLocked(sh, h, s, promoted, true)
		}
	}
	c.genMu.Unlock()
	sh.mu.Unlock()
	return got
}

// putLocked adds s under h to shard sh, whose write lock the caller holds
// with genMu, unless it is cached already. It reports false, adding
// nothing, when the newer generation has no room for it and force is not
// set: the caller then lets the locks go, starts a new generation
// (newGeneration) and tries again with force.
func (c *seriesCache) putLocked(sh *seriesShard, h seriesKey, s Series, promoted, force bool) (Series, bool) {
	if e, ok := sh.cur.get(h); ok {
		return c.cur.series(e), true
	}
	n := seriesEntryBytes + len(s.Metric) + len(s.Tags)
	if !force && c.fullLocked(n) {
		return Series{}, false
	}
	e := c.cur.add(s, promoted)
	sh.cur.set(h, e)
	c.curN++
	c.curBytes += n
	return c.cur.series(e), true
}

// fullLocked reports, with genMu held, whether an entry counted as n
// bytes would not fit in the newer generation.
// reset empties the cache and starts a new epoch, which it returns: puts
// of an older epoch (PutItemsAt, promotions of a reader made before) are
// dropped from then on.
func (c *seriesCache) reset() uint64 {
	for i := range c.shards {
		c.shards[i].mu.Lock()
	}
	c.genMu.Lock()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.cur, sh.old = newKeyTable(0), newKeyTable(0)
	}
	c.cur, c.old = new(seriesArena), new(seriesArena)
	c.curN, c.oldN, c.curBytes, c.oldBytes = 0, 0, 0, 0
	e := c.epoch.Add(1)
	c.genMu.Unlock()
	for i := range c.shards {
		c.shards[i].mu.Unlock()
	}
	return e
}

func (c *seriesCache) fullLocked(n int) bool {
	return c.curN >= c.max || (c.maxBytes > 0 && c.curBytes+n > c.maxBytes/2) || c.cur.full()
}

// newGeneration starts a new generation, dropping the older one, unless
// another call did meanwhile and an entry counted as n bytes fits now. It
// takes every shard's write lock, in order, then genMu; the caller holds
// none of them.
func (c *seriesCache) newGeneration(n int) {
	for i := range c.shards {
		c.shards[i].mu.Lock()
	}
	c.genMu.Lock()
	if c.fullLocked(n) {
		for i := range c.shards {
			sh := &c.shards[i]
			sh.old, sh.cur = sh.cur, newKeyTable(sh.cur.len()/4)
		}
		c.old, c.oldN, c.oldBytes = c.cur, c.curN, c.curBytes
		c.cur, c.curN, c.curBytes = new(seriesArena), 0, 0
	}
	c.genMu.Unlock()
	for i := range c.shards {
		c.shards[i].mu.Unlock()
	}
}

// putItems caches the Series of every item without an error and sets
// each such item's Series to the cached one. The records go into the
// newer arena first, in the items' order (the order the series' next
// requests will look them up in, which the arena keeps), under genMu
// alone; the entries then go into their shards' tables, each shard's write
// lock taken once for its items, gencache.LockBatch at a time, so that a
// lookup of that shard waits for no more than that many puts and the
// other shards' lookups wait for none. A record whose series another
// call cached meanwhile, or whose generation ended meanwhile (another
// call's, or this one's, when the records passed the generation's
// bounds), is left unused; the latter's entry is added again to the new
// generation.
func (c *seriesCache) putItems(items []ResolveItem) { c.putItemsAt(items, c.epoch.Load()) }

// putItemsAt is putItems for a caller of epoch: after a reset, the items
// left are not cached (they keep their Series).
func (c *seriesCache) putItemsAt(items []ResolveItem, epoch uint64) {
	hs := make([]seriesKey, len(items))
	order := make([]int32, 0, len(items))
	need := 0
	for i := range items {
		if items[i].Err == nil {
			n := len(items[i].Series.Metric) + len(items[i].Series.Tags)
			if seriesHeaderBytes+n > gencache.MaxArenaEntry {
				continue // too large to cache: the item keeps its Series
			}
			hs[i] = c.key(items[i].Key)
			order = append(order, int32(i))
			need += seriesEntryBytes + n
		}
	}
	if len(order) == 0 {
		return
	}
	ents := make([]seriesEntry, len(items))
	c.genMu.Lock()
	if c.fullLocked(need) {
		c.genMu.Unlock()
		c.newGeneration(need)
		c.genMu.Lock()
	}
	if c.epoch.Load() != epoch {
		c.genMu.Unlock()
		return
	}
	a := c.cur
	for _, i := range order {
		ents[i] = a.add(items[i].Series, false)
	}
	c.genMu.Unlock()
	if len(c.shards) > 1 {
		slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(c.shardIndex(hs[x]), c.shardIndex(hs[y])) })
	}
	for len(order) > 0 {
		si := c.shardIndex(hs[order[0]])
		sh := &c.shards[si]
		n := 1
		for n < len(order) && n < gencache.LockBatch && c.shardIndex(hs[order[n]]) == si {
			n++
		}
		sh.mu.Lock()
		c.genMu.Lock()
		if c.epoch.Load() != epoch {
			c.genMu.Unlock()
			sh.mu.Unlock()
			return
		}
		for _, i := range order[:n] {
			h, s := hs[i], items[i].Series
			size := seriesEntryBytes + len(s.Metric) + len(s.Tags)
			e, ok := sh.cur.get(h)
			switch {
			case ok:
				items[i].Series = c.cur.series(e)
			case c.cur == a && !c.fullLocked(size):
				sh.cur.set(h, ents[i])
				c.curN++
				c.curBytes += size
				items[i].Series = a.series(ents[i])
			default:
				if c.fullLocked(size) {
					c.genMu.Unlock()
					sh.mu.Unlock()
					c.newGeneration(size)
					sh.mu.Lock()
					c.genMu.Lock()
				}
				if c.epoch.Load() != epoch {
					continue // reset meanwhile: s stays the item's
				}
				items[i].Series, _ = c.putLocked(sh, h, s, false, true)
			}
		}
		c.genMu.Unlock()
		sh.mu.Unlock()
		order = order[n:]
	}
}
