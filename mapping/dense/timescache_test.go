package dense

import (
	"slices"
	"testing"

	"github.com/promhbase/promhbase/mapping"
)

// timesRow returns a dense 240-sample row whose timestamps are 15 s
// apart from offset off (ms), so that rows of one off share their
// timestamps section and rows of two offs do not.
func timesRow(t *testing.T, off int64, seed float64) []byte {
	t.Helper()
	ts := make([]int64, 240)
	vs := make([]float64, 240)
	for i := range ts {
		ts[i] = off + int64(i)*15000
		vs[i] = seed + float64(i)
	}
	q, v := floatRow(ts, vs, true)
	d, ok := (&Codec{}).Encode(nil, testRow, cellOf(q, v, 1700006412345))
	if !ok {
		t.Fatal("refused")
	}
	return d
}

// TestTimesCache: a section met again is copied from the cache, giving
// the points a cold decoder gives; rows whose sections seldom repeat turn
// the cache off after its probe, and RetryTimes turns it on again,
// keeping what it held.
func TestTimesCache(t *testing.T) {
	decode := func(c *Codec, row []byte) []mapping.Point {
		t.Helper()
		pts, _, err := c.AppendPoints(nil, 1700002800, row)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	t.Run("hits give the decoded points", func(t *testing.T) {
		var c Codec
		a, b := timesRow(t, 100, 1), timesRow(t, 100, 50)
		decode(&c, a)
		if got, want := decode(&c, b), decode(&Codec{}, b); !slices.Equal(got, want) {
			t.Fatalf("from the cache: %v..., want %v...", got[:3], want[:3])
		}
		if tc := c.timesOf(); tc.hits != 1 || tc.lookups != 2 {
			t.Fatalf("hits %d of %d lookups, want 1 of 2", tc.hits, tc.lookups)
		}
	})
	t.Run("off after a probe of misses, on again after RetryTimes", func(t *testing.T) {
		var c Codec
		shared := timesRow(t, 7, 1)
		decode(&c, shared)
		for i := range timesProbe {
			decode(&c, timesRow(t, int64(1000+i), 1))
		}
		tc := c.timesOf()
		if !tc.off {
			t.Fatalf("on after %d lookups with %d hits", tc.lookups, tc.hits)
		}
		decode(&c, shared)
		if tc.hits != 0 {
			t.Fatalf("a hit while off")
		}
		c.RetryTimes()
		if got, want := decode(&c, shared), decode(&Codec{}, shared); !slices.Equal(got, want) {
			t.Fatalf("after RetryTimes: %v..., want %v...", got[:3], want[:3])
		}
		if tc.off || tc.hits != 1 {
			t.Fatalf("after RetryTimes: off %v, hits %d; want on, the section kept (1 hit)", tc.off, tc.hits)
		}
	})
}
