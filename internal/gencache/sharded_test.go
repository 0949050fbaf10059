package gencache

import (
	"fmt"
	"sync"
	"testing"
)

// TestShardedByteCache: keys spread over the shards by their hash's top
// bits and are found again through Get and through a batch's locks; the
// counts and sizes are the shards' sums; the byte budget is shared out;
// with 0 bits every key is in the one shard; ByShard orders a batch's
// indexes shard by shard, and PutByShard and GetByShard find what they
// put; concurrent batches of adds and lookups (run with -race) lose
// nothing.
func TestShardedByteCache(t *testing.T) {
	mix := func(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 }
	for _, tc := range []struct {
		name   string
		bits   uint
		shards int
	}{
		{"sixteen shards", 4, 16},
		{"one shard", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewShardedByteCache(tc.bits, 1<<16, mix)
			used := map[int]bool{}
			for i := range uint64(1000) {
				c.Put(i, fmt.Appendf(nil, "v%d", i))
				sh := c.Shard(i)
				if sh < 0 || sh >= tc.shards {
					t.Fatalf("key %d in shard %d of %d", i, sh, tc.shards)
				}
				used[sh] = true
			}
			if len(used) != tc.shards {
				t.Errorf("1000 keys in %d shards of %d", len(used), tc.shards)
			}
			locks := c.ReadLocks()
			var hits, misses uint64
			for i := range uint64(1100) {
				sh := c.Shard(i)
				locks.Hold(sh)
				v, ok, _ := c.ShardCache(sh).GetLocked(i)
				switch {
				case i < 1000 && (!ok || string(v) != fmt.Sprintf("v%d", i)):
					t.Fatalf("key %d: %q %v", i, v, ok)
				case i >= 1000 && ok:
					t.Fatalf("key %d never put: found %q", i, v)
				case ok:
					hits++
				default:
					misses++
				}
			}
			locks.Release()
			c.Count(hits, misses)
			if v, ok := c.Get(7); !ok || string(v) != "v7" {
				t.Errorf("Get(7) = %q %v", v, ok)
			}
			if n, _, _ := c.Stats(); n != 1000 || c.Len() != 1000 {
				t.Errorf("Stats entries %d, Len %d, want 1000", n, c.Len())
			}
			if h, m := c.Counts(); h != 1001 || m != 100 {
				t.Errorf("counts %d hits %d misses, want 1001 and 100", h, m)
			}
		})
	}
	t.Run("budget", func(t *testing.T) {
		c := NewShardedByteCache(4, 1<<30, mix)
		c.SetMaxBytes(1600 * (byteCacheEntryBytes + 3))
		for i := range uint64(100000) {
			c.Put(i, []byte("abc"))
		}
		n, b, max := c.Stats()
		if b > max || n > 1600 || max > 1600*(byteCacheEntryBytes+3) {
			t.Errorf("%d entries, %d bytes; budget %d bytes (1600 entries)", n, b, max)
		}
	})
	t.Run("by shard", func(t *testing.T) {
		c := NewShardedByteCache(4, 1<<20, mix)
		keys := make([]uint64, 1000)
		for i := range keys {
			keys[i] = uint64(i) * 7
		}
		order, bounds := c.ByShard(nil, len(keys), func(i int) uint64 { return keys[i] })
		if len(order) != len(keys) || bounds[0] != 0 || int(bounds[16]) != len(keys) {
			t.Fatalf("ByShard: %d indexes, bounds %v", len(order), bounds)
		}
		for s := range 16 {
			prev := int32(-1)
			for _, i := range order[bounds[s]:bounds[s+1]] {
				if c.Shard(keys[i]) != s || i <= prev {
					t.Fatalf("index %d (shard %d) among shard %d's, after %d", i, c.Shard(keys[i]), s, prev)
				}
				prev = i
			}
		}
		PutByShard(c, len(keys), func(i int) uint64 { return keys[i] }, func(i int) []byte { return fmt.Appendf(nil, "v%d", i) })
		found := map[int]string{}
		GetByShard(c, 1100, func(i int) uint64 { return uint64(i) * 7 }, func(i int, v []byte, _ bool) { found[i] = string(v) })
		if len(found) != 1000 {
			t.Errorf("%d keys found, want 1000", len(found))
		}
		for i, v := range found {
			if v != fmt.Sprintf("v%d", i) {
				t.Fatalf("key %d: %q", i*7, v)
			}
		}
		if h, m := c.Counts(); h != 1000 || m != 100 {
			t.Errorf("counts %d hits %d misses, want 1000 and 100", h, m)
		}
	})
	t.Run("concurrent batches", func(t *testing.T) {
		c := NewShardedByteCache(4, 1<<20, mix)
		var wg sync.WaitGroup
		for g := range uint64(4) {
			wg.Go(func() {
				PutByShard(c, 5000, func(i int) uint64 { return g*5000 + uint64(i) }, func(i int) []byte { return []byte{byte(g*5000 + uint64(i))} })
				GetByShard(c, 20000, func(i int) uint64 { return uint64(i) }, func(int, []byte, bool) {})
			})
		}
		wg.Wait()
		for i := range uint64(20000) {
			if v, ok := c.Get(i); !ok || v[0] != byte(i) {
				t.Fatalf("key %d after the batches: %v %v", i, v, ok)
			}
		}
	})
}
