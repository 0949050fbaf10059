package mapping

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// byteRef locates a value in a byteArena: chunk number << arenaShift |
// offset, and its length.
type byteRef struct {
	ref uint32
	n   uint32
}

// byteArena holds the values of one cache generation in chunks of
// arenaChunk bytes that are never moved, reused or written again, so a
// value handed out stays valid (and unchanged) after its generation is
// dropped.
type byteArena struct {
	chunks [][]byte
}

// add copies v into the arena; v must be at most maxArenaEntry bytes.
func (a *byteArena) add(v []byte) byteRef { return a.add2(v, nil) }

// add2 copies v ‖ w into the arena; together at most maxArenaEntry bytes.
func (a *byteArena) add2(v, w []byte) byteRef { return a.add3(v, w, nil) }

// add3 copies v ‖ w ‖ x into the arena; together at most maxArenaEntry
// bytes.
func (a *byteArena) add3(v, w, x []byte) byteRef {
	n := len(v) + len(w) + len(x)
	if last := len(a.chunks) - 1; last < 0 || len(a.chunks[last])+n > arenaChunk || len(a.chunks[last]) == arenaChunk {
		a.chunks = append(a.chunks, make([]byte, 0, arenaChunk))
	}
	c := len(a.chunks) - 1
	off := len(a.chunks[c])
	a.chunks[c] = append(append(append(a.chunks[c], v...), w...), x...)
	return byteRef{ref: uint32(c<<arenaShift | off), n: uint32(n)}
}

// maxArenaChunks is the most chunks a ref can name (its offset takes
// arenaShift of its 32 bits).
const maxArenaChunks = 1 << (32 - arenaShift)

// full reports whether the arena may have no room for another value: the
// cache starts a new generation instead of adding to it.
func (a *byteArena) full() bool { return len(a.chunks) >= maxArenaChunks-1 }

// get returns the value at r, capacity clipped.
func (a *byteArena) get(r byteRef) []byte {
	c, off := r.ref>>arenaShift, r.ref&(arenaChunk-1)
	return a.chunks[c][off : off+r.n : off+r.n]
}

// byteCacheEntryBytes is what an entry is counted as besides its value:
// a map slot of up to 16 bytes of key, 8 of byteRef and a control byte,
// doubled for the load-factor slack (a map just grown is half empty).
const byteCacheEntryBytes = 2 * (16 + 8 + 1)

// byteCache is a bounded map from K to short byte strings, without
// pointers (the garbage collector never scans it): two generations, each
// a map of K to byteRef and the arena of its values; the older is dropped
// when the newer holds half the byte budget or max entries, and a hit in
// the older is promoted (copied). Values longer than maxArenaEntry are not
// cached. Safe for concurrent use.
type byteCache[K comparable] struct {
	generations[K, byteRef, byteArena]
}

func newByteCache[K comparable](max int) *byteCache[K] {
	c := &byteCache[K]{}
	c.init(max)
	return c
}

// get returns the value of k, promoting it from the older generation.
func (c *byteCache[K]) get(k K) ([]byte, bool) {
	c.mu.RLock()
	v, ok, old := c.getLocked(k)
	c.mu.RUnlock()
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	if old {
		c.put(k, v)
	}
	return v, true
}

// getLocked looks k up with c.mu held for reading. It neither promotes
// nor counts, but reports whether the value is in the older generation,
// for the caller to promote (put) once it released the lock.
func (c *byteCache[K]) getLocked(k K) (v []byte, ok, old bool) {
	r, arena, ok, old := c.lookupLocked(k)
	if !ok {
		return nil, false, false
	}
	return arena.get(r), true, old
}

// put caches a copy of v under k (a value already cached under k stays).
func (c *byteCache[K]) put(k K, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, v)
}

// putLocked is put with c.mu held for writing.
func (c *byteCache[K]) putLocked(k K, v []byte) {
	if len(v) > maxArenaEntry {
		return
	}
	if _, ok := c.cur[k]; ok {
		return
	}
	n := byteCacheEntryBytes + len(v)
	c.makeRoomLocked(n, c.curArena.full())
	c.addLocked(k, c.curArena.add(v), n)
}

// nameKey stands for a name in the forward UID cache: two 64-bit hashes
// of it under two seeds drawn at random when the process starts
// (hash/maphash). Two names share a key only if they agree in 128 bits of
// keyed hash (about 1 in 10^20 for a billion names; a sender without the
// seeds cannot search for a pair), as the series cache's keys.
type nameKey [2]uint64

// uidCache is the forward cache of one kind: name -> UID.
type uidCache struct {
	seeds [2]maphash.Seed
	*byteCache[nameKey]
}

func newUIDCache(max int) *uidCache {
	return &uidCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, byteCache: newByteCache[nameKey](max)}
}

func (c *uidCache) key(name []byte) nameKey {
	return nameKey{maphash.Bytes(c.seeds[0], name), maphash.Bytes(c.seeds[1], name)}
}

// getName returns the cached UID of name; it does not allocate.
func (c *uidCache) getName(name []byte) ([]byte, bool) { return c.get(c.key(name)) }

// keyString is key for a name held as a string.
func (c *uidCache) keyString(name string) nameKey {
	return nameKey{maphash.String(c.seeds[0], name), maphash.String(c.seeds[1], name)}
}

// putName caches uid as the UID of name.
func (c *uidCache) putName(name string, uid []byte) {
	c.put(c.keyString(name), uid)
}

// nameCache is the reverse cache of one kind: UID -> name. A UID of up to
// 8 bytes is its own key, big-endian in a uint64; callers pass only UIDs
// of the kind's width, so no two share a key.
type nameCache struct {
	*byteCache[uint64]
}

func newNameCache(max int) *nameCache { return &nameCache{newByteCache[uint64](max)} }

func uidKey(uid []byte) (uint64, bool) {
	if len(uid) > 8 {
		return 0, false
	}
	var b [8]byte
	copy(b[8-len(uid):], uid)
	return binary.BigEndian.Uint64(b[:]), true
}

// getUID returns the cached name of uid, copied: a string sharing the
// arena would keep its whole chunk alive for as long as the caller keeps
// the name (a metric list, say), past the budget.
func (c *nameCache) getUID(uid []byte) (string, bool) {
	k, ok := uidKey(uid)
	if !ok {
		return "", false
	}
	v, ok := c.get(k)
	return string(v), ok
}

// putUID caches name as the name of uid.
func (c *nameCache) putUID(uid []byte, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putUIDLocked(uid, name)
}

// putUIDLocked is putUID with c.mu held for writing.
func (c *nameCache) putUIDLocked(uid []byte, name string) {
	if k, ok := uidKey(uid); ok {
		c.putLocked(k, unsafe.Slice(unsafe.StringData(name), len(name)))
	}
}
