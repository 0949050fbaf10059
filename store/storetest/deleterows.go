package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
)

// testDeleteRows: store.DeleteRows (one step on a store.RowRangeDeleter,
// scans and deletes in batches on another) removes every row of
// [start, stop) whatever its families, the row at start included, and
// keeps its neighbours just outside (the row before start, stop itself,
// stop's extensions); a row written in the range afterwards is visible;
// an empty stop deletes to the table's end; an empty range deletes
// nothing.
func testDeleteRows(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	before := [][]byte{[]byte("dr-a"), []byte("dr-a\xff\xff"), []byte("dr-\x00")}
	inside := [][]byte{[]byte("dr-b"), []byte("dr-b\x00"), []byte("dr-b\x00\x01"), []byte("dr-c"), []byte("dr-c\xff")}
	// More rows than one batch of the scans of a store without a range
	// delete.
	for i := range 600 {
		inside = append(inside, fmt.Appendf(nil, "dr-bulk-%04d", i))
	}
	after := [][]byte{[]byte("dr-d"), []byte("dr-d\x00"), []byte("dr-e")}
	var puts []store.Put
	for _, group := range [][][]byte{before, inside, after} {
		for _, row := range group {
			puts = append(puts, store.Put{Row: row, Cells: []store.Cell{cell("a", "q", "1"), cell("b", "r", "2")}})
		}
	}
	put(t, s, table, puts...)
	n, err := store.DeleteRows(c, s, table, []byte("dr-b"), []byte("dr-d"))
	if err != nil {
		t.Fatal(err)
	}
	if n != -1 && n != int64(len(inside)) {
		t.Errorf("DeleteRows reported %d rows deleted, want %d (or -1: not counted)", n, len(inside))
	}
	keys := func() string {
		return strings.Join(rowKeys(scanAll(t, s, store.ScanRequest{Table: table})), ",")
	}
	want := strings.Join(hexKeys(append(append([][]byte{[]byte("dr-\x00")}, before[:2]...), after...)), ",")
	if got := keys(); got != want {
		t.Errorf("rows after deleting [dr-b, dr-d):\n got %s\nwant %s", got, want)
	}
	for _, row := range [][]byte{inside[0], inside[3], inside[len(inside)-1]} {
		if r, err := s.Get(c, table, row, ""); err != nil || len(r.Cells) > 0 {
			t.Errorf("get %q after its deletion = %s, %v; want no cells", row, cellString(r.Cells), err)
		}
	}
	for _, row := range [][]byte{before[1], after[0], after[1]} {
		if r, err := s.Get(c, table, row, ""); err != nil || cellString(r.Cells) != "a:71=31 b:72=32" {
			t.Errorf("get %q outside the range = %s, %v; want both cells", row, cellString(r.Cells), err)
		}
	}

	// A write in the range after DeleteRows returned stays. (Store time
	// moves on first: a delete marker of the same millisecond would hide
	// it on HBase.)
	WaitPast(time.Now().UnixMilli())
	put(t, s, table, store.Put{Row: []byte("dr-c"), Cells: []store.Cell{cell("a", "new", "3")}})
	if r, err := s.Get(c, table, []byte("dr-c"), ""); err != nil || cellString(r.Cells) != "a:6e6577=33" {
		t.Errorf("get of a row written after DeleteRows = %s, %v; want a:new=3 alone", cellString(r.Cells), err)
	}

	// An empty range: nothing.
	if _, err := store.DeleteRows(c, s, table, []byte("dr-d"), []byte("dr-d")); err != nil {
		t.Fatal(err)
	}
	// To the table's end.
	if _, err := store.DeleteRows(c, s, table, []byte("dr-c\x00"), nil); err != nil {
		t.Fatal(err)
	}
	want = strings.Join(hexKeys([][]byte{[]byte("dr-\x00"), before[0], before[1], []byte("dr-c")}), ",")
	if got := keys(); got != want {
		t.Errorf("rows after deleting [dr-c\\x00, end):\n got %s\nwant %s", got, want)
	}
}
