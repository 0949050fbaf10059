package gencache

import (
	"fmt"
	"testing"
)

// TestByteCache: the UID caches' store. Values survive one generation
// swap and are promoted on a hit; a value handed out keeps its bytes after
// its generation is dropped; the byte budget bounds the cache; an
// oversized value is not cached; both key kinds.
func TestByteCache(t *testing.T) {
	t.Run("generations", func(t *testing.T) {
		c := NewByteCache[uint64](4)
		c.Put(1, []byte("one"))
		v1, _ := c.Get(1)
		for i := uint64(2); i <= 5; i++ {
			c.Put(i, fmt.Appendf(nil, "v%d", i))
		}
		if v, ok := c.Get(1); !ok || string(v) != "one" { // promoted
			t.Fatalf("after a swap: %q %v", v, ok)
		}
		for i := uint64(6); i <= 13; i++ {
			c.Put(i, fmt.Appendf(nil, "v%d", i))
		}
		if _, ok := c.Get(2); ok {
			t.Error("value two generations old still cached")
		}
		if string(v1) != "one" {
			t.Errorf("value handed out changed to %q after its generation was dropped", v1)
		}
		c.Put(13, []byte("other"))
		if v, _ := c.Get(13); string(v) != "v13" {
			t.Errorf("put over a cached key: %q, want the first value kept", v)
		}
	})
	t.Run("budget", func(t *testing.T) {
		c := NewByteCache[uint64](1 << 30)
		c.SetMaxBytes(100 * (byteCacheEntryBytes + 3))
		for i := range uint64(10000) {
			c.Put(i, []byte("abc"))
		}
		n, b, max := c.Stats()
		if b > max || n > 100 {
			t.Errorf("%d entries, %d bytes; budget %d bytes (100 entries)", n, b, max)
		}
	})
	t.Run("oversized", func(t *testing.T) {
		c := NewByteCache[uint64](10)
		c.Put(1, make([]byte, MaxArenaEntry+1))
		if _, ok := c.Get(1); ok {
			t.Error("oversized value cached")
		}
	})
}

// TestByteArenaEdges: an empty value after a chunk filled exactly gets a
// ref of its own chunk; a cache whose arena is full starts a generation.
func TestByteArenaEdges(t *testing.T) {
	var a Arena
	v := make([]byte, 4)
	for range ArenaChunk / len(v) {
		a.Add(v)
	}
	r := a.Add(nil)
	if got := a.Get(r); len(got) != 0 {
		t.Errorf("empty value after a full chunk: %q", got)
	}
	if r.Pos&(ArenaChunk-1) != 0 || r.Pos>>ArenaShift != 1 {
		t.Errorf("empty value after a full chunk: ref %#x, want chunk 1 offset 0", r.Pos)
	}
	c := NewByteCache[uint64](1 << 30)
	c.CurArena.Chunks = make([][]byte, maxArenaChunks-1) // as if 4 GiB were in it
	c.Put(1, []byte("x"))
	if len(c.CurArena.Chunks) != 1 || len(c.Old) != 0 {
		t.Errorf("put into a full arena: %d chunks in the newer generation, want a new generation of 1", len(c.CurArena.Chunks))
	}
	if v, ok := c.Get(1); !ok || string(v) != "x" {
		t.Errorf("after the swap: %q %v", v, ok)
	}
}
