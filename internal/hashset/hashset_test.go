package hashset

import (
	"math/rand/v2"
	"testing"
)

// TestRowSet: the set agrees with a Go map over random hashes, hashes
// that collide in their low bits (long probe runs across growths) and
// the hash 0.
func TestRowSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  func(r *rand.Rand) uint64
	}{
		{"random", func(r *rand.Rand) uint64 { return r.Uint64() }},
		{"same low bits", func(r *rand.Rand) uint64 { return r.Uint64N(1<<20) << 40 }},
		{"small, with zero", func(r *rand.Rand) uint64 { return r.Uint64N(300) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var s Set
			want := map[uint64]bool{}
			for range 20_000 {
				h := tc.gen(r)
				if added := s.Add(h); added == want[h] {
					t.Fatalf("add(%#x) = %v with the hash already in: %v", h, added, want[h])
				}
				want[h] = true
				if q := tc.gen(r); s.Has(q) != want[q] {
					t.Fatalf("has(%#x) = %v, want %v", q, s.Has(q), want[q])
				}
			}
			if s.Len() != len(want) {
				t.Errorf("len %d, want %d", s.Len(), len(want))
			}
			for h := range want {
				if !s.Has(h) {
					t.Fatalf("%#x lost", h)
				}
			}
			if 4*s.n > 3*len(s.slots) {
				t.Errorf("%d hashes in %d slots: over three quarters full", s.n, len(s.slots))
			}
		})
	}
	var empty Set
	if empty.Has(0) || empty.Has(7) || empty.Len() != 0 {
		t.Error("the empty set has something")
	}
}

func BenchmarkRowSetAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	hs := make([]uint64, 1<<20)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	b.ReportAllocs()
	for b.Loop() {
		var s Set
		for _, h := range hs {
			s.Add(h)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hs)), "ns/row")
}
