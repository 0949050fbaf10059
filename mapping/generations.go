package mapping

import (
	"sync"
	"sync/atomic"
)

// generations is the state shared by the arena-backed caches (byteCache,
// seriesCache): two generations of a map from K to V, each V locating its
// value in the arena A of its generation. The older generation is dropped,
// with its arena, when the newer one holds max entries or half the byte
// budget, or its arena is full. The embedding cache holds mu around every
// use.
type generations[K comparable, V any, A any] struct {
	mu                 sync.RWMutex
	cur, old           map[K]V
	curArena, oldArena *A
	max                int
	maxBytes           int // 0: entries only
	curBytes, oldBytes int
	hits, misses       atomic.Uint64
}

func (g *generations[K, V, A]) init(max int) {
	g.cur, g.old = map[K]V{}, map[K]V{}
	g.curArena, g.oldArena = new(A), new(A)
	g.max = max
}

// lookupLocked finds k, with mu held for reading, and returns its V, the
// arena V points into and whether that is the older generation's.
func (g *generations[K, V, A]) lookupLocked(k K) (v V, arena *A, ok, old bool) {
	if v, ok := g.cur[k]; ok {
		return v, g.curArena, true, false
	}
	if v, ok := g.old[k]; ok {
		return v, g.oldArena, true, true
	}
	return v, nil, false, false
}

// makeRoomLocked, with mu held for writing, starts a new generation when
// an entry counted as n bytes would not fit in the newer one, or when its
// arena is full.
func (g *generations[K, V, A]) makeRoomLocked(n int, arenaFull bool) {
	if len(g.cur) >= g.max || (g.maxBytes > 0 && g.curBytes+n > g.maxBytes/2) || arenaFull {
		g.old, g.oldBytes, g.oldArena = g.cur, g.curBytes, g.curArena
		g.cur, g.curBytes, g.curArena = make(map[K]V, min(g.max, len(g.old))/4), 0, new(A)
	}
}

// addLocked adds k's entry, counted as n bytes, to the newer generation
// (after makeRoomLocked).
func (g *generations[K, V, A]) addLocked(k K, v V, n int) {
	g.cur[k] = v
	g.curBytes += n
}

// setMaxBytes bounds the cache's memory (0: entries only).
func (g *generations[K, V, A]) setMaxBytes(n int) {
	g.mu.Lock()
	g.maxBytes = n
	g.mu.Unlock()
}

func (g *generations[K, V, A]) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.cur) + len(g.old)
}

// stats returns the entries, approximate bytes and byte budget.
func (g *generations[K, V, A]) stats() (entries, bytes, maxBytes int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.cur) + len(g.old), g.curBytes + g.oldBytes, g.maxBytes
}

func (g *generations[K, V, A]) counts() (hits, misses uint64) { return g.hits.Load(), g.misses.Load() }
