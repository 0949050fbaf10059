package series

import (
	"math/rand/v2"
	"testing"
)

// TestKeyTable checks a keyTable against a Go map under random sets and
// lookups, with keys crowded into few slots as well as spread.
func TestKeyTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		words uint64 // the first word's range: small crowds the probes
		init  int
	}{
		{"spread", 5000, 1 << 63, 0},
		{"one start slot", 300, 1, 0},
		{"few start slots", 3000, 16, 0},
		{"sized", 5000, 1 << 63, 5000},
		{"undersized", 5000, 1 << 63, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			tab := newKeyTable(tc.init)
			want := map[seriesKey]seriesEntry{}
			var keys []seriesKey
			for i := range tc.n {
				k := seriesKey{rng.Uint64N(tc.words), rng.Uint64() | 1}
				if len(keys) > 0 && rng.IntN(4) == 0 {
					k = keys[rng.IntN(len(keys))] // overwrite one
				} else {
					keys = append(keys, k)
				}
				e := seriesEntry{ref: uint32(i), mark: rng.Uint32()}
				tab.set(k, e)
				want[k] = e
				if tab.len() != len(want) {
					t.Fatalf("len %d after %d sets, want %d", tab.len(), i+1, len(want))
				}
				if got, ok := tab.get(k); !ok || got != e {
					t.Fatalf("get just set %v = %v, %v; want %v", k, got, ok, e)
				}
			}
			if n := len(tab.slots); n&(n-1) != 0 || tab.len()*4 > n*3 {
				t.Fatalf("%d entries in %d slots", tab.len(), n)
			}
			for k, e := range want {
				if got, ok := tab.get(k); !ok || got != e {
					t.Fatalf("get %v = %v, %v; want %v", k, got, ok, e)
				}
			}
			for range 2000 {
				k := seriesKey{rng.Uint64N(tc.words), rng.Uint64() | 1}
				_, inMap := want[k]
				if _, ok := tab.get(k); ok != inMap {
					t.Fatalf("get absent %v: found %v, want %v", k, ok, inMap)
				}
			}
		})
	}
	t.Run("zero value", func(t *testing.T) {
		var tab keyTable
		if _, ok := tab.get(seriesKey{1, 1}); ok {
			t.Fatal("found a key in an empty table")
		}
		tab.set(seriesKey{1, 1}, seriesEntry{ref: 7})
		if e, ok := tab.get(seriesKey{1, 1}); !ok || e.ref != 7 {
			t.Fatalf("get = %v, %v", e, ok)
		}
	})
}

// BenchmarkKeyTableGet looks up known keys of a table of 200 000, in
// random order, against a Go map of the same keys.
func BenchmarkKeyTableGet(b *testing.B) {
	const n = 200_000
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]seriesKey, n)
	tab := newKeyTable(0)
	m := map[seriesKey]seriesEntry{}
	for i := range keys {
		keys[i] = seriesKey{rng.Uint64(), rng.Uint64() | 1}
		tab.set(keys[i], seriesEntry{ref: uint32(i)})
		m[keys[i]] = seriesEntry{ref: uint32(i)}
	}
	rng.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var sink uint32
	b.Run("keyTable", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			e, _ := tab.get(keys[i%n])
			sink += e.ref
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			e := m[keys[i%n]]
			sink += e.ref
		}
	})
	if sink == 1 {
		b.Log(sink)
	}
}
