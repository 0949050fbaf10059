package gencache

import (
	"sync"
	"sync/atomic"
)

// Generations is the state shared by the arena-backed caches (ByteCache,
// seriesCache): two generations of a map from K to V, each V locating its
// value in the arena A of its generation. The older generation is dropped,
// with its arena, when the newer one holds max entries or half the byte
// budget, or its arena is full. The embedding cache holds mu around every
// use.
type Generations[K comparable, V any, A any] struct {
	Mu                 sync.RWMutex
	Cur, Old           map[K]V
	CurArena, OldArena *A
	max                int
	maxBytes           int // 0: entries only
	curBytes, oldBytes int
	Hits, Misses       atomic.Uint64
}

func (g *Generations[K, V, A]) Init(max int) {
	g.Cur, g.Old = map[K]V{}, map[K]V{}
	g.CurArena, g.OldArena = new(A), new(A)
	g.max = max
}

// LookupLocked finds k, with mu held for reading, and returns its V, the
// arena V points into and whether that is the older generation's.
func (g *Generations[K, V, A]) LookupLocked(k K) (v V, arena *A, ok, old bool) {
	if v, ok := g.Cur[k]; ok {
		return v, g.CurArena, true, false
	}
	if v, ok := g.Old[k]; ok {
		return v, g.OldArena, true, true
	}
	return v, nil, false, false
}

// MakeRoomLocked, with mu held for writing, starts a new generation when
// an entry counted as n bytes would not fit in the newer one, or when its
// arena is full.
func (g *Generations[K, V, A]) MakeRoomLocked(n int, arenaFull bool) {
	if len(g.Cur) >= g.max || (g.maxBytes > 0 && g.curBytes+n > g.maxBytes/2) || arenaFull {
		g.Old, g.oldBytes, g.OldArena = g.Cur, g.curBytes, g.CurArena
		g.Cur, g.curBytes, g.CurArena = make(map[K]V, min(g.max, len(g.Old))/4), 0, new(A)
	}
}

// AddLocked adds k's entry, counted as n bytes, to the newer generation
// (after makeRoomLocked).
func (g *Generations[K, V, A]) AddLocked(k K, v V, n int) {
	g.Cur[k] = v
	g.curBytes += n
}

// SetMaxBytes bounds the cache's memory (0: entries only).
func (g *Generations[K, V, A]) SetMaxBytes(n int) {
	g.Mu.Lock()
	g.maxBytes = n
	g.Mu.Unlock()
}

func (g *Generations[K, V, A]) Len() int {
	g.Mu.RLock()
	defer g.Mu.RUnlock()
	return len(g.Cur) + len(g.Old)
}

// Stats returns the entries, approximate bytes and byte budget.
func (g *Generations[K, V, A]) Stats() (entries, bytes, maxBytes int) {
	g.Mu.RLock()
	defer g.Mu.RUnlock()
	return len(g.Cur) + len(g.Old), g.curBytes + g.oldBytes, g.maxBytes
}

func (g *Generations[K, V, A]) Counts() (hits, misses uint64) { return g.Hits.Load(), g.Misses.Load() }

// LockBatch is how many entries a batch looks up or adds under one
// acquisition of the lock: few enough that a writer (or readers) waiting
// for it wait for at most that many map operations, many enough that
// concurrent requests do not contend on the lock's word once a series.
const LockBatch = 256
