package index

import "testing"

// TestSeenSet: a key added is seen; keys sharing a first hash never stand
// for each other (the later replaces the earlier, which is only written
// again); the byte budget starts a new generation and drops the oldest,
// and a hit in the older generation is promoted on release.
func TestSeenSet(t *testing.T) {
	has := func(s *seenSet, k seenKey) bool {
		t.Helper()
		r := s.reader()
		defer r.release()
		return r.has(k)
	}
	t.Run("shared first hash", func(t *testing.T) {
		s := newSeenSet(1 << 20)
		a, b := seenKey{5, 1}, seenKey{5, 2}
		s.addAll([]seenKey{a})
		if !has(s, a) || has(s, b) {
			t.Fatalf("after adding a: has(a) %v, has(b) %v; want true, false", has(s, a), has(s, b))
		}
		s.addAll([]seenKey{b})
		if has(s, a) || !has(s, b) {
			t.Fatalf("after adding b: has(a) %v, has(b) %v; want false, true", has(s, a), has(s, b))
		}
	})
	t.Run("shared first hash across generations", func(t *testing.T) {
		s := newSeenSet(4 * entryBytes) // two keys a generation
		x, y, z := seenKey{9, 1}, seenKey{9, 2}, seenKey{9, 3}
		s.addAll([]seenKey{x, {1, 1}})
		s.addAll([]seenKey{{2, 2}}) // swap: x in the older generation
		s.addAll([]seenKey{y})      // y in the newer
		if !has(s, y) || has(s, z) {
			t.Fatalf("has(y) %v, has(z) %v; want true, false", has(s, y), has(s, z))
		}
		if !has(s, x) { // found in the older generation, promoted over y
			t.Fatal("x, in the older generation, not seen")
		}
		if has(s, z) {
			t.Error("z seen after x's promotion")
		}
	})
	t.Run("generations", func(t *testing.T) {
		s := newSeenSet(4 * entryBytes) // two keys a generation
		for i := uint64(1); i <= 2; i++ {
			s.addAll([]seenKey{{i, i}})
		}
		s.addAll([]seenKey{{3, 3}}) // 1 and 2 now in the older generation
		if !has(s, seenKey{1, 1}) { // promoted
			t.Fatal("key 1 lost after one swap")
		}
		s.addAll([]seenKey{{4, 4}, {5, 5}}) // swap: 2 dropped, 1 kept in the older
		if has(s, seenKey{2, 2}) {
			t.Error("key 2 kept past two swaps without a hit")
		}
		if !has(s, seenKey{1, 1}) {
			t.Error("promoted key 1 lost")
		}
		n, bytes := s.stats()
		if bytes > s.budget || n > 4 {
			t.Errorf("%d keys, %d bytes counted; budget %d", n, bytes, s.budget)
		}
	})
}
