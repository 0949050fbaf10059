package prefetch

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestT0 prefetches addresses of a slice, its end and nil: a hint, it
// changes nothing and never faults.
func TestT0(t *testing.T) {
	b := []byte{1, 2, 3}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(&b[0]), unsafe.Pointer(&b[2]), nil} {
		T0(p)
	}
	if b[0] != 1 || b[1] != 2 || b[2] != 3 {
		t.Errorf("bytes changed: %v", b)
	}
}

// BenchmarkT0 reads random words of a table of 256 MiB (never the same
// 4096 twice in a row), each followed by work that depends on it, loaded
// plainly or prefetched a few lookups ahead: what T0 buys a lookup that
// misses every cache.
func BenchmarkT0(b *testing.B) {
	table := make([]uint64, 32<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int, 1<<22) // 32 MiB of them: a window is not cached
	const window = 4096
	for i := range idx {
		idx[i] = rng.IntN(len(table))
	}
	for _, ahead := range []int{0, 4, 16} {
		b.Run(fmt.Sprintf("ahead=%d", ahead), func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			at := 0
			for b.Loop() {
				w := idx[at : at+window+ahead]
				at = (at + window) % (len(idx) - window - 16)
				for i, k := range w[:window] {
					if ahead > 0 {
						T0(unsafe.Pointer(&table[w[i+ahead]]))
					}
					// Work that needs the word, longer than the CPU's
					// window of instructions in flight, as a lookup's
					// caller has.
					x := table[k]
					for range 100 {
						x = x*0x9E3779B97F4A7C15 + 1
					}
					sum += x
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*window), "ns/lookup")
			_ = sum
		})
	}
}
