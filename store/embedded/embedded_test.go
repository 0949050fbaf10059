package embedded

import (
	"fmt"
	"testing"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, string) {
		t.Helper()
		s, err := Open(t.TempDir(), Options{NoSync: true, Tables: []string{"contract"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, "contract"
	}, storetest.Options{})
}

// TestContractBuffered runs the contract on a table in the row buffer:
// with a budget no test reaches (cells stay in memory, merged with
// Pebble's on reads) and with one of a few bytes (a flush after every
// put: cells in Pebble, put there by ingestion, while deletes and reads
// run against flushes).
func TestContractBuffered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"in memory", 1 << 30}, {"flushing", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) (store.Store, string) {
				t.Helper()
				s, err := Open(t.TempDir(), Options{NoSync: true, Tables: []string{"contract"}, BufferTables: []string{"contract"}, BufferBytes: tc.budget})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s, "contract"
			}, storetest.Options{})
		})
	}
}

// TestCheckAndPutBatchSeesEarlierOps checks the embedded batch's promise
// beyond the contract: a check sees the puts of the ops before it.
func TestCheckAndPutBatchSeesEarlierOps(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	put := func(v string) store.Put {
		return store.Put{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(v)}}}
	}
	ops := []store.CondPut{
		{Put: put("1"), Family: "f", Qualifier: "q"},                        // absent: written
		{Put: put("2"), Family: "f", Qualifier: "q"},                        // now present: refused
		{Put: put("3"), Family: "f", Qualifier: "q", Expected: []byte("1")}, // sees "1": written
		{Put: put("4"), Family: "f", Qualifier: "q", Expected: []byte("1")}, // sees "3": refused
	}
	written := make([]bool, len(ops))
	if err := s.CheckAndPutBatch(t.Context(), "t", ops, written); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, false}; fmt.Sprint(written) != fmt.Sprint(want) {
		t.Errorf("written = %v, want %v", written, want)
	}
	v, found, err := s.GetCell(t.Context(), "t", []byte("r"), "f", "q")
	if err != nil || !found || string(v) != "3" {
		t.Errorf("cell = %q, %v, %v; want \"3\"", v, found, err)
	}
}

// TestPutOutOfRowOrder: a Put's rows go into Pebble's batch in row order
// (rowOrder), and a row put twice keeps the later put's cells.
func TestPutOutOfRowOrder(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	put := func(row, v string) store.Put {
		return store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(v)}}}
	}
	if err := s.Put(t.Context(), "t", []store.Put{put("c", "1"), put("a", "2"), put("c", "3"), put("b", "4"), put("a", "5")}); err != nil {
		t.Fatal(err)
	}
	for row, want := range map[string]string{"a": "5", "b": "4", "c": "3"} {
		v, found, err := s.GetCell(t.Context(), "t", []byte(row), "f", "q")
		if err != nil || !found || string(v) != want {
			t.Errorf("row %s: %q, %v, %v; want %q", row, v, found, err, want)
		}
	}
	for _, tc := range []struct {
		rows []string
		want string // nil order: "sorted"
	}{
		{[]string{"a", "b", "b", "c"}, "sorted"},
		{[]string{"c", "a", "c", "b", "a"}, "[1 4 3 0 2]"},
		{nil, "sorted"},
	} {
		var puts []store.Put
		for _, r := range tc.rows {
			puts = append(puts, put(r, ""))
		}
		got := "sorted"
		if o := rowOrder(puts); o != nil {
			got = fmt.Sprint(o)
		}
		if got != tc.want {
			t.Errorf("rowOrder(%q) = %s, want %s", tc.rows, got, tc.want)
		}
	}
}
