package embedded

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// uidStore opens a store whose table "uid" holds n forward rows
// name-<i> -> id:tagv, flushed to tables, as a UID table after a while.
func uidStore(tb testing.TB, n int) *Store {
	tb.Helper()
	s, err := Open(tb.TempDir(), Options{NoSync: true, Tables: []string{"uid"}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	var puts []store.Put
	for i := range n {
		puts = append(puts, store.Put{Row: fmt.Appendf(nil, "name-%d", i), Cells: []store.Cell{
			{Family: []byte("id"), Qualifier: []byte("tagv"), Value: []byte{0, byte(i >> 8), byte(i)}}}})
		if len(puts) == 1000 || i == n-1 {
			if err := s.Put(tb.Context(), "uid", puts); err != nil {
				tb.Fatal(err)
			}
			puts = puts[:0]
		}
	}
	if err := s.db.Flush(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestGetCells: present and absent rows in any order, a row whose other
// qualifier exists, duplicates, and agreement with GetCell.
func TestGetCells(t *testing.T) {
	s := uidStore(t, 3000)
	rows := [][]byte{[]byte("name-2999"), []byte("absent"), []byte("name-0"), []byte("name-15"), []byte("name-0"), []byte("name-1500x"), nil}
	values, found := make([][]byte, len(rows)), make([]bool, len(rows))
	if err := s.GetCells(t.Context(), "uid", rows, "id", "tagv", values, found); err != nil {
		t.Fatal(err)
	}
	for i, row := range rows {
		v, ok, err := s.GetCell(t.Context(), "uid", row, "id", "tagv")
		if err != nil {
			t.Fatal(err)
		}
		if ok != found[i] || !bytes.Equal(v, values[i]) {
			t.Errorf("row %q: GetCells %x %v, GetCell %x %v", row, values[i], found[i], v, ok)
		}
	}
	if !found[0] || !found[2] || found[1] || found[5] {
		t.Errorf("found %v", found)
	}
	if err := s.GetCells(t.Context(), "uid", rows[:1], "id", "metrics", values, found); err != nil || found[0] {
		t.Errorf("other qualifier: found %v, %v", found[0], err)
	}
	if err := s.GetCells(t.Context(), "nosuch", rows, "id", "tagv", values, found); err == nil {
		t.Error("unknown table: no error")
	}
}

// BenchmarkGetCells: the forward-row reads of a request's 2000 new names
// (absent) against a UID table of 200 000 names, as 2000 GetCells and as
// one GetCells.
func BenchmarkGetCells(b *testing.B) {
	s := uidStore(b, 200_000)
	rows := make([][]byte, 2000)
	for i := range rows {
		rows[i] = fmt.Appendf(nil, "new-%07d", i*7919%100000)
	}
	values, found := make([][]byte, len(rows)), make([]bool, len(rows))
	b.Run("GetCell", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range rows {
				if _, _, err := s.GetCell(b.Context(), "uid", r, "id", "tagv"); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
	b.Run("GetCells", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.GetCells(b.Context(), "uid", rows, "id", "tagv", values, found); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
}
