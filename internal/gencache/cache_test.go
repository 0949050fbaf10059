package gencache

import (
	"fmt"
	"testing"
)

func TestGenCacheBounded(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		c := New[int](10, nil)
		for i := range 1000 {
			c.Put(fmt.Sprint(i), i)
		}
		if n := c.Len(); n > 20 {
			t.Errorf("cache holds %d entries, want at most 20", n)
		}
		if v, ok := c.Get([]byte("999")); !ok || v != 999 {
			t.Errorf("newest entry: %d, %v", v, ok)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		// Values of 1000 bytes, a budget of 64 KiB: about 30 entries.
		c := New(1<<20, func(_ string, v []byte) int { return len(v) })
		c.SetMaxBytes(64 << 10)
		for i := range 10000 {
			c.Put(fmt.Sprint(i), make([]byte, 1000))
		}
		entries, bytes, max := c.Stats()
		if bytes > max || entries > 64 || entries < 30 {
			t.Errorf("%d entries, %d bytes, budget %d", entries, bytes, max)
		}
		if _, ok := c.Get([]byte("9999")); !ok {
			t.Error("newest entry gone")
		}
		if _, ok := c.Get([]byte("0")); ok {
			t.Error("oldest entry kept")
		}
		if h, m := c.Counts(); h != 1 || m != 1 {
			t.Errorf("hits %d misses %d, want 1 and 1", h, m)
		}
	})
}
