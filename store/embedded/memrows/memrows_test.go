package memrows

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refCompare is the order CompareColumns must give: family, then qualifier, each
// as unsigned bytes with a prefix first.
func refCompare(af, aq, bf, bq []byte) int {
	if c := bytes.Compare(af, bf); c != 0 {
		return c
	}
	return bytes.Compare(aq, bq)
}

func TestCompareColumns(t *testing.T) {
	for _, tc := range []struct {
		name           string
		af, aq, bf, bq string
	}{
		{"same", "t", "\x00\x10", "t", "\x00\x10"},
		{"second form before millisecond form", "t", "\xff\xf0", "t", "\xf0\x00\x00\x07"},
		{"prefix first", "t", "\x01", "t", "\x01\x00"},
		{"zero padding is not equality", "t", "\x01\x00", "t", "\x01"},
		{"family first", "f", "\xff\xff", "t", "\x00"},
		{"long families", "family", "\x01", "famil", "\x02"},
		{"empty qualifier", "t", "", "t", "\x00"},
		{"nine bytes", "t", "\x01\x02\x03\x04\x05\x06\x07\x08\x09", "t", "\x01\x02\x03\x04\x05\x06\x07\x08"},
		{"eight bytes", "t", "\xff\x02\x03\x04\x05\x06\x07\x08", "t", "\x01\x02\x03\x04\x05\x06\x07\x09"},
		{"three bytes", "t", "\x06\x01\x02", "t", "\x06\x01\x02\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, swap := range []bool{false, true} {
				af, aq, bf, bq := []byte(tc.af), []byte(tc.aq), []byte(tc.bf), []byte(tc.bq)
				if swap {
					af, aq, bf, bq = bf, bq, af, aq
				}
				if got, want := CompareColumns(af, aq, bf, bq), refCompare(af, aq, bf, bq); got != want {
					t.Errorf("CompareColumns(%q %x, %q %x) = %d, want %d", af, aq, bf, bq, got, want)
				}
			}
		})
	}
}

func FuzzCompareColumns(f *testing.F) {
	f.Add([]byte("t"), []byte{0, 1}, []byte("t"), []byte{0, 1, 0})
	f.Add([]byte("t"), []byte{0xf0, 0, 0, 1}, []byte("t"), []byte{0xf0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, af, aq, bf, bq []byte) {
		if got, want := CompareColumns(af, aq, bf, bq), refCompare(af, aq, bf, bq); got != want {
			t.Fatalf("CompareColumns(%x %x, %x %x) = %d, want %d", af, aq, bf, bq, got, want)
		}
	})
}

// model is what a Rows must hold: per row, per column, the newest
// record's value and whether it is dead; wiped rows.
type model map[string]map[string]modelCell

type modelCell struct {
	value string
	ts    uint64
	dead  bool
}

func colKey(f, q []byte) string { return string(f) + "\x00" + string(q) }

// TestRowsAgainstModel: random cells, deletes of columns and of ranges
// into a Rows, checked against a map after each step: Sorted and Iter
// give the rows in key order, RowCells each column's newest record,
// AppendAscending the same cells when it accepts a row, Lookup a
// column's newest.
func TestRowsAgainstModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			m := New("t", maphash.MakeSeed(), nil, nil)
			want := model{}
			key := func() []byte { return []byte{byte(rng.IntN(3)), byte(rng.IntN(40))} }
			for step := range 3000 {
				row := key()
				switch rng.IntN(20) {
				case 0: // delete one column, unbounded
					q := []byte{0, byte(rng.IntN(16))}
					m.Lock()
					m.Kill(row, []Column{{Family: []byte("t"), Qualifier: q}})
					m.Unlock()
					if c, ok := want[string(row)][colKey([]byte("t"), q)]; ok {
						c.dead = true
						want[string(row)][colKey([]byte("t"), q)] = c
					}
				case 1: // delete a range of rows
					start, stop := key(), key()
					if bytes.Compare(start, stop) > 0 {
						start, stop = stop, start
					}
					m.Lock()
					m.KillRange(start, stop)
					m.Unlock()
					for k, cols := range want {
						if k >= string(start) && k < string(stop) {
							for ck, c := range cols {
								c.dead = true
								cols[ck] = c
							}
						}
					}
				default:
					q := []byte{0, byte(rng.IntN(16))}
					v := fmt.Appendf(nil, "v%d", step)
					m.Lock()
					m.AddCell(m.RowFor(row), []byte("t"), q, v, uint64(step))
					m.Unlock()
					if want[string(row)] == nil {
						want[string(row)] = map[string]modelCell{}
					}
					want[string(row)][colKey([]byte("t"), q)] = modelCell{value: string(v), ts: uint64(step)}
				}
			}
			checkRows(t, m, want)
		})
	}
}

// checkRows compares m with want.
func checkRows(t *testing.T, m *Rows, want model) {
	t.Helper()
	srt := m.Sorted()
	var keys []string
	for _, i := range srt.Order {
		keys = append(keys, string(srt.Key(i)))
	}
	var wantKeys []string
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("Sorted: %d rows %q, want %d %q", len(keys), keys, len(wantKeys), wantKeys)
	}
	it := NewIter(m, []byte(wantKeys[1]), []byte(wantKeys[len(wantKeys)-1]))
	var iterated []string
	for k, ok := it.Row(); ok; k, ok = it.Row() {
		iterated = append(iterated, string(k))
		it.Next()
	}
	if !slices.Equal(iterated, wantKeys[1:len(wantKeys)-1]) {
		t.Errorf("Iter over [%q, %q) = %q", wantKeys[1], wantKeys[len(wantKeys)-1], iterated)
	}
	// A point iterator finds each row, at the index the order has, and
	// nothing of a row absent.
	for _, i := range srt.Order {
		row := srt.Key(i)
		it := NewRowIter(m, row)
		if k, ok := it.Row(); !ok || !bytes.Equal(k, row) || it.Index() != int(i) {
			t.Fatalf("NewRowIter(%x): row %x (%v), index %d; want index %d", row, k, ok, it.Index(), i)
		}
		if it.Next(); func() bool { _, ok := it.Row(); return ok }() {
			t.Fatalf("NewRowIter(%x): a second row", row)
		}
	}
	if k, ok := NewRowIter(m, []byte{9, 9, 9}).Row(); ok {
		t.Fatalf("NewRowIter of an absent row: %x", k)
	}
	m.RLock()
	defer m.RUnlock()
	checkFindMany(t, m, wantKeys)
	for _, i := range srt.Order {
		row := srt.Key(i)
		cells, _ := m.RowCells(nil, int(i))
		got := map[string]modelCell{}
		for n, c := range cells {
			if n > 0 && CompareColumns(cells[n-1].Family, cells[n-1].Qualifier, c.Family, c.Qualifier) >= 0 {
				t.Fatalf("row %x: RowCells out of column order", row)
			}
			got[colKey(c.Family, c.Qualifier)] = modelCell{value: string(c.Value), ts: c.TS, dead: c.Dead}
		}
		if !maps.Equal(got, want[string(row)]) {
			t.Fatalf("row %x: RowCells = %v, want %v", row, got, want[string(row)])
		}
		if asc, ok := m.AppendAscending(nil, int(i), nil); ok {
			var live []string
			for _, c := range asc {
				live = append(live, colKey(c.Family, c.Qualifier))
			}
			var wantLive []string
			for ck, c := range want[string(row)] {
				if !c.dead {
					wantLive = append(wantLive, ck)
				}
			}
			slices.Sort(wantLive)
			if !slices.Equal(live, wantLive) {
				t.Fatalf("row %x: AppendAscending = %q, want %q", row, live, wantLive)
			}
		}
	}
	for rowKey, cols := range want {
		for ck, c := range cols {
			f, q, _ := strings.Cut(ck, "\x00")
			m.RUnlock()
			got, ok := m.Lookup([]byte(rowKey), []byte(f), []byte(q))
			m.RLock()
			if !ok || string(got.Value) != c.value || got.Dead != c.dead {
				t.Fatalf("Lookup(%x, %q) = %q dead %v (found %v), want %q dead %v", rowKey, ck, got.Value, got.Dead, ok, c.value, c.dead)
			}
		}
	}
}

// checkFindMany checks that FindMany finds what Find finds, for the keys
// held and keys that are not. The caller holds m's read lock.
func checkFindMany(t *testing.T, m *Rows, held []string) {
	t.Helper()
	var keys [][]byte
	for _, k := range held {
		keys = append(keys, []byte(k), []byte(k+"\x00"))
	}
	hs := make([]uint64, len(keys))
	for k, key := range keys {
		hs[k] = m.Hash(key)
	}
	got, _ := m.FindMany(nil, hs, func(k int) []byte { return keys[k] })
	for k, key := range keys {
		if want := m.Find(hs[k], key); int(got[k]) != want {
			t.Fatalf("FindMany(%x) = %d, Find = %d", key, got[k], want)
		}
	}
}

// TestFindManyCollisions: rows of one hash (RowForHash takes any) are
// told apart by their keys, along FindMany's second lookup.
func TestFindManyCollisions(t *testing.T) {
	m := New("t", maphash.MakeSeed(), nil, nil)
	a, b := m.RowForHash(7, []byte("a")), m.RowForHash(7, []byte("b"))
	c := m.RowForHash(8, []byte("c"))
	keys := [][]byte{[]byte("b"), []byte("a"), []byte("z"), []byte("c"), []byte("d")}
	got, _ := m.FindMany(nil, []uint64{7, 7, 7, 8, 9}, func(k int) []byte { return keys[k] })
	if want := []int32{int32(b), int32(a), -1, int32(c), -1}; !slices.Equal(got, want) {
		t.Errorf("FindMany = %v, want %v", got, want)
	}
}

// BenchmarkFindMany looks up requests of 2000 rows, each a random row of
// a buffer of 200 000 (a row a series, each with a cell), as the row
// buffer's puts do: one Find (and Touch) after another, and FindMany.
func BenchmarkFindMany(b *testing.B) {
	const rows, batch = 200_000, 2000
	m := New("t", maphash.MakeSeed(), nil, nil)
	keys := make([][]byte, rows)
	for i := range keys {
		k := make([]byte, 20)
		binary.BigEndian.PutUint32(k[16:], uint32(i))
		keys[i] = k
		m.AddCell(m.RowFor(k), []byte("t"), []byte{0, 0}, []byte{1}, 1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([][][]byte, 64)
	for i := range reqs {
		// A request's keys side by side, as a request's arena holds them.
		arena := make([]byte, 0, batch*20)
		for range batch {
			arena = append(arena, keys[rng.IntN(rows)]...)
			reqs[i] = append(reqs[i], arena[len(arena)-20:])
		}
	}
	hs := make([]uint64, batch)
	dst := make([]int32, 0, batch)
	for _, tc := range []struct {
		name string
		find func(req [][]byte) uint32
	}{
		{"one-by-one", func(req [][]byte) uint32 {
			var t uint32
			dst = dst[:0]
			for k, key := range req {
				i := m.Find(hs[k], key)
				dst = append(dst, int32(i))
				t += uint32(m.Touch(i))
			}
			return t
		}},
		{"many", func(req [][]byte) uint32 {
			var t uint32
			dst, t = m.FindMany(dst[:0], hs, func(k int) []byte { return req[k] })
			return t
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				req := reqs[n%len(reqs)]
				n++
				for k, key := range req {
					hs[k] = m.Hash(key)
				}
				tc.find(req)
				if dst[batch-1] < 0 {
					b.Fatal("row not found")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
		})
	}
}

// BenchmarkPointReadUnderWrites: a row read as Get reads it (its own
// iterator) while a writer adds a row between reads, in a buffer of
// 100,000 rows: by hash (NewRowIter), and through the buffer's order
// (NewIter), which merges the rows added since its last order into it.
func BenchmarkPointReadUnderWrites(b *testing.B) {
	for _, name := range []string{"hash", "order"} {
		b.Run(name, func(b *testing.B) {
			m := New("t", maphash.MakeSeed(), nil, nil)
			key := func(i int) []byte { return fmt.Appendf(nil, "row-%09d", i) }
			m.Lock()
			for i := range 100_000 {
				m.AddCell(m.RowFor(key(i)), []byte("t"), []byte{0, 1}, []byte("v"), 1)
			}
			m.Unlock()
			m.Sorted()
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				m.Lock()
				m.AddCell(m.RowFor(key(100_000+n)), []byte("t"), []byte{0, 1}, []byte("v"), 1)
				m.Unlock()
				row := key(n % 100_000)
				var it *Iter
				if name == "hash" {
					it = NewRowIter(m, row)
				} else {
					it = NewIter(m, row, append(slices.Clone(row), 0))
				}
				if k, ok := it.Row(); !ok || !bytes.Equal(k, row) {
					b.Fatalf("row %s not found", row)
				}
			}
		})
	}
}
