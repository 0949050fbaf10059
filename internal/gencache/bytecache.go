package gencache

// Arena chunks: values in chunks of ArenaChunk bytes, a ref being chunk
// number << ArenaShift | offset.
const (
	ArenaShift = 16
	ArenaChunk = 1 << ArenaShift
	// MaxArenaEntry bounds one value of an arena: a longer one is not
	// cached (for the series cache: a series of more than about 2700
	// labels, possible only with --limits.max-label-names-per-series=0, is
	// resolved on every write instead).
	MaxArenaEntry = ArenaChunk / 4
)

// Ref locates a value in a Arena: chunk number << ArenaShift |
// offset, and its length.
type Ref struct {
	Pos uint32
	n   uint32
}

// Arena holds the values of one cache generation in chunks of
// ArenaChunk bytes that are never moved, reused or written again, so a
// value handed out stays valid (and unchanged) after its generation is
// dropped.
type Arena struct {
	Chunks [][]byte
}

// Add copies v into the arena; v must be at most MaxArenaEntry bytes.
func (a *Arena) Add(v []byte) Ref { return a.Add2(v, nil) }

// Add2 copies v ‖ w into the arena; together at most MaxArenaEntry bytes.
func (a *Arena) Add2(v, w []byte) Ref { return a.Add3(v, w, nil) }

// Add3 copies v ‖ w ‖ x into the arena; together at most MaxArenaEntry
// bytes.
func (a *Arena) Add3(v, w, x []byte) Ref {
	n := len(v) + len(w) + len(x)
	if last := len(a.Chunks) - 1; last < 0 || len(a.Chunks[last])+n > ArenaChunk || len(a.Chunks[last]) == ArenaChunk {
		a.Chunks = append(a.Chunks, make([]byte, 0, ArenaChunk))
	}
	c := len(a.Chunks) - 1
	off := len(a.Chunks[c])
	a.Chunks[c] = append(append(append(a.Chunks[c], v...), w...), x...)
	return Ref{Pos: uint32(c<<ArenaShift | off), n: uint32(n)}
}

// maxArenaChunks is the most chunks a ref can name (its offset takes
// ArenaShift of its 32 bits).
const maxArenaChunks = 1 << (32 - ArenaShift)

// Full reports whether the arena may have no room for another value: the
// cache starts a new generation instead of adding to it.
func (a *Arena) Full() bool { return len(a.Chunks) >= maxArenaChunks-1 }

// Get returns the value at r, capacity clipped.
func (a *Arena) Get(r Ref) []byte {
	c, off := r.Pos>>ArenaShift, r.Pos&(ArenaChunk-1)
	return a.Chunks[c][off : off+r.n : off+r.n]
}

// byteCacheEntryBytes is what an entry is counted as besides its value:
// a map slot of up to 16 bytes of key, 8 of Ref and a control byte,
// doubled for the load-factor slack (a map just grown is half empty).
const byteCacheEntryBytes = 2 * (16 + 8 + 1)

// ByteCache is a bounded map from K to short byte strings, without
// pointers (the garbage collector never scans it): two generations, each
// a map of K to Ref and the arena of its values; the older is dropped
// when the newer holds half the byte budget or max entries, and a hit in
// the older is promoted (copied). Values longer than MaxArenaEntry are not
// cached. Safe for concurrent use.
type ByteCache[K comparable] struct {
	Generations[K, Ref, Arena]
}

func NewByteCache[K comparable](max int) *ByteCache[K] {
	c := &ByteCache[K]{}
	c.Init(max)
	return c
}

// Get returns the value of k, promoting it from the older generation.
func (c *ByteCache[K]) Get(k K) ([]byte, bool) {
	c.Mu.RLock()
	v, ok, old := c.GetLocked(k)
	c.Mu.RUnlock()
	if !ok {
		c.Misses.Add(1)
		return nil, false
	}
	c.Hits.Add(1)
	if old {
		c.Put(k, v)
	}
	return v, true
}

// GetLocked looks k up with c.Mu held for reading. It neither promotes
// nor counts, but reports whether the value is in the older generation,
// for the caller to promote (put) once it released the lock.
func (c *ByteCache[K]) GetLocked(k K) (v []byte, ok, old bool) {
	r, arena, ok, old := c.LookupLocked(k)
	if !ok {
		return nil, false, false
	}
	return arena.Get(r), true, old
}

// Put caches a copy of v under k (a value already cached under k stays).
func (c *ByteCache[K]) Put(k K, v []byte) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	c.PutLocked(k, v)
}

// PutLocked is put with c.Mu held for writing.
func (c *ByteCache[K]) PutLocked(k K, v []byte) {
	if len(v) > MaxArenaEntry {
		return
	}
	if _, ok := c.Cur[k]; ok {
		return
	}
	n := byteCacheEntryBytes + len(v)
	c.MakeRoomLocked(n, c.CurArena.Full())
	c.AddLocked(k, c.CurArena.Add(v), n)
}
