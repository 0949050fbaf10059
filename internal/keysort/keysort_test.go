package keysort

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkSorted sorts keys' indices with ByKey and compares the result
// with a comparison sort's.
func checkSorted(t testing.TB, keys [][]byte) {
	t.Helper()
	idx := make([]uint32, len(keys))
	for i := range idx {
		idx[i] = uint32(i)
	}
	ByKey(idx, func(i uint32) []byte { return keys[i] })
	seen := make([]bool, len(keys))
	for n, i := range idx {
		if seen[i] {
			t.Fatalf("index %d twice", i)
		}
		seen[i] = true
		if n > 0 && bytes.Compare(keys[idx[n-1]], keys[i]) > 0 {
			t.Fatalf("%x before %x", keys[idx[n-1]], keys[i])
		}
	}
}

func TestByKey(t *testing.T) {
	long := bytes.Repeat([]byte{7}, 40)
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"empty", nil},
		{"one", []string{"a"}},
		{"prefixes and zeros", []string{"a\x00\x00", "a", "a\x00", "", "\x00", "a\x00\x01", "\x00\x00"}},
		{"digit boundary", []string{
			"0123456789abcdef", "0123456789abcde", "0123456789abcdef\x00", "0123456789abcdef\x01",
			"0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdee\xff", "0123456789abcdeg",
		}},
		{"long shared prefix", []string{string(long) + "b", string(long) + "a", string(long), string(long) + "a\x00", string(long[:39]) + "\x08"}},
		{"high bytes", []string{"\xff\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\x00", "\x80", "\x7f\xff"}},
		{"equal keys", []string{"x", "x", "y", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys [][]byte
			for _, k := range tc.keys {
				keys = append(keys, []byte(k))
			}
			checkSorted(t, keys)
		})
	}
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for round := range 200 {
			n := rng.IntN(300)
			keys := make([][]byte, n)
			for i := range keys {
				// A few shared stems and short random tails, zeros likely.
				k := slices.Clone(long[:rng.IntN(len(long))])
				for range rng.IntN(20) {
					k = append(k, byte(rng.IntN(3)))
				}
				keys[i] = k
			}
			t.Run(fmt.Sprint(round), func(t *testing.T) { checkSorted(t, keys) })
		}
	})
}

func FuzzByKey(f *testing.F) {
	f.Add([]byte("a\x00a\x00\x00b0123456789abcdef0"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		// data split into keys at every byte equal to cut.
		checkSorted(t, bytes.Split(data, []byte{cut}))
	})
}

// dataRowKeys returns n data-table row keys shaped as the harness's: a
// metric of 100, an hour, then nine tag pairs, low-cardinality tags
// first and one of each series' own last, shuffled.
func dataRowKeys(n int) [][]byte {
	uid := func(dst []byte, v int) []byte { return append(dst, byte(v>>16), byte(v>>8), byte(v)) }
	keys := make([][]byte, n)
	for i := range keys {
		k := uid(nil, i%100)
		k = binary.BigEndian.AppendUint32(k, 1_700_000_000/3600*3600)
		for t, v := range [...]int{i % 16, i % 3, i % 8, 0, i / 100, 0, i % 4, i % 40, i} {
			k = uid(uid(k, t+1), v+1)
		}
		keys[i] = k
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// BenchmarkByKey: the row order of a flush of a row buffer holding
// 1 M data rows, by ByKey and by a comparison sort of the indices.
func BenchmarkByKey(b *testing.B) {
	keys := dataRowKeys(1_000_000)
	// The keys in one arena, as a row buffer holds them.
	var arena []byte
	refs := make([][2]int, len(keys))
	for i, k := range keys {
		refs[i] = [2]int{len(arena), len(arena) + len(k)}
		arena = append(arena, k...)
	}
	key := func(i uint32) []byte { return arena[refs[i][0]:refs[i][1]] }
	idx := make([]uint32, len(keys))
	for _, bc := range []struct {
		name string
		sort func()
	}{
		{"digits", func() { ByKey(idx, key) }},
		{"compare", func() { slices.SortFunc(idx, func(a, b uint32) int { return bytes.Compare(key(a), key(b)) }) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range idx {
					idx[i] = uint32(i)
				}
				bc.sort()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(idx)), "ns/row")
		})
	}
}
