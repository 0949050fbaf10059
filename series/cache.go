package series

import (
	"encoding/binary"
	"hash/maphash"

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

// seriesCache maps label-set keys to Series: two generations, the older
// dropped (with its arena) when the newer holds half the byte budget (or
// max entries); a hit in the older generation is promoted, copied into
// the newer arena. Safe for concurrent use.
type seriesCache struct {
	seeds [2]maphash.Seed
	gencache.Generations[seriesKey, seriesEntry, seriesArena]
}

func newSeriesCache(max int) *seriesCache {
	c := &seriesCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	c.Init(max)
	return c
}

// key hashes the key bytes of a label set.
func (c *seriesCache) key(k []byte) seriesKey {
	return seriesKey{maphash.Bytes(c.seeds[0], k), maphash.Bytes(c.seeds[1], k)}
}

func (c *seriesCache) get(k []byte) (Series, bool) {
	c.Mu.RLock()
	h, s, ok, old := c.getLocked(k)
	c.Mu.RUnlock()
	if !ok {
		c.Misses.Add(1)
		return Series{}, false
	}
	c.Hits.Add(1)
	if old {
		return c.putEntry(h, s, true), true
	}
	return s, true
}

// getLocked looks k up with c.Mu held for reading. It neither promotes
// nor counts, but reports whether the entry is in the older generation,
// for the caller to promote once it released the lock.
func (c *seriesCache) getLocked(k []byte) (h seriesKey, s Series, ok, old bool) {
	h = c.key(k)
	e, arena, ok, old := c.LookupLocked(h)
	if !ok {
		return h, Series{}, false, false
	}
	return h, arena.series(e), true, old
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
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.putEntryLocked(h, s, promoted)
}

// putEntryLocked is putEntry with c.Mu held for writing.
func (c *seriesCache) putEntryLocked(h seriesKey, s Series, promoted bool) Series {
	if seriesHeaderBytes+len(s.Metric)+len(s.Tags) > gencache.MaxArenaEntry {
		return s
	}
	if e, ok := c.Cur[h]; ok {
		return c.CurArena.series(e)
	}
	n := seriesEntryBytes + len(s.Metric) + len(s.Tags)
	c.MakeRoomLocked(n, c.CurArena.uids.Full())
	e := c.CurArena.add(s, promoted)
	c.AddLocked(h, e, n)
	return c.CurArena.series(e)
}

// putItems caches the Series of every item without an error, gencache.LockBatch
// at a time under the write lock (keys hashed before it is taken), and
// sets each such item's Series to the cached one.
func (c *seriesCache) putItems(items []ResolveItem) {
	var hs [gencache.LockBatch]seriesKey
	for len(items) > 0 {
		part := items[:min(len(items), gencache.LockBatch)]
		items = items[len(part):]
		for i := range part {
			if part[i].Err == nil {
				hs[i] = c.key(part[i].Key)
			}
		}
		c.Mu.Lock()
		for i := range part {
			if part[i].Err == nil {
				part[i].Series = c.putEntryLocked(hs[i], part[i].Series, false)
			}
		}
		c.Mu.Unlock()
	}
}
