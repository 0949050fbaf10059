package mapping

import (
	"bytes"
	"fmt"
	"testing"
)

// TestByteCache: the UID caches' store. Values survive one generation
// swap and are promoted on a hit; a value handed out keeps its bytes after
// its generation is dropped; the byte budget bounds the cache; an
// oversized value is not cached; both key kinds.
func TestByteCache(t *testing.T) {
	t.Run("generations", func(t *testing.T) {
		c := newByteCache[uint64](4)
		c.put(1, []byte("one"))
		v1, _ := c.get(1)
		for i := uint64(2); i <= 5; i++ {
			c.put(i, fmt.Appendf(nil, "v%d", i))
		}
		if v, ok := c.get(1); !ok || string(v) != "one" { // promoted
			t.Fatalf("after a swap: %q %v", v, ok)
		}
		for i := uint64(6); i <= 13; i++ {
			c.put(i, fmt.Appendf(nil, "v%d", i))
		}
		if _, ok := c.get(2); ok {
			t.Error("value two generations old still cached")
		}
		if string(v1) != "one" {
			t.Errorf("value handed out changed to %q after its generation was dropped", v1)
		}
		c.put(13, []byte("other"))
		if v, _ := c.get(13); string(v) != "v13" {
			t.Errorf("put over a cached key: %q, want the first value kept", v)
		}
	})
	t.Run("budget", func(t *testing.T) {
		c := newByteCache[uint64](1 << 30)
		c.setMaxBytes(100 * (byteCacheEntryBytes + 3))
		for i := range uint64(10000) {
			c.put(i, []byte("abc"))
		}
		n, b, max := c.stats()
		if b > max || n > 100 {
			t.Errorf("%d entries, %d bytes; budget %d bytes (100 entries)", n, b, max)
		}
	})
	t.Run("oversized", func(t *testing.T) {
		c := newByteCache[uint64](10)
		c.put(1, make([]byte, maxArenaEntry+1))
		if _, ok := c.get(1); ok {
			t.Error("oversized value cached")
		}
	})
	t.Run("uid and name caches", func(t *testing.T) {
		f, r := newUIDCache(1000), newNameCache(1000)
		names := []string{"", "a", "b", "job", "instance", "\x00\x01"}
		for i, n := range names {
			uid := []byte{0, 0, byte(i + 1)}
			f.putName(n, uid)
			r.putUID(uid, n)
		}
		for i, n := range names {
			uid := []byte{0, 0, byte(i + 1)}
			if got, ok := f.getName([]byte(n)); !ok || !bytes.Equal(got, uid) {
				t.Errorf("uid of %q: %x %v, want %x", n, got, ok, uid)
			}
			if got, ok := r.getUID(uid); !ok || got != n {
				t.Errorf("name of %x: %q %v, want %q", uid, got, ok, n)
			}
		}
		if _, ok := f.getName([]byte("absent")); ok {
			t.Error("absent name found")
		}
		if _, ok := r.getUID(make([]byte, 9)); ok {
			t.Error("a 9-byte uid found")
		}
	})
}

// TestByteArenaEdges: an empty value after a chunk filled exactly gets a
// ref of its own chunk; a cache whose arena is full starts a generation.
func TestByteArenaEdges(t *testing.T) {
	var a byteArena
	v := make([]byte, 4)
	for range arenaChunk / len(v) {
		a.add(v)
	}
	r := a.add(nil)
	if got := a.get(r); len(got) != 0 {
		t.Errorf("empty value after a full chunk: %q", got)
	}
	if r.ref&(arenaChunk-1) != 0 || r.ref>>arenaShift != 1 {
		t.Errorf("empty value after a full chunk: ref %#x, want chunk 1 offset 0", r.ref)
	}
	c := newByteCache[uint64](1 << 30)
	c.curArena.chunks = make([][]byte, maxArenaChunks-1) // as if 4 GiB were in it
	c.put(1, []byte("x"))
	if len(c.curArena.chunks) != 1 || len(c.old) != 0 {
		t.Errorf("put into a full arena: %d chunks in the newer generation, want a new generation of 1", len(c.curArena.chunks))
	}
	if v, ok := c.get(1); !ok || string(v) != "x" {
		t.Errorf("after the swap: %q %v", v, ok)
	}
}
