package storetest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/store"
)

func testDelete(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	put(t, s, table,
		store.Put{Row: []byte("d1"), Cells: []store.Cell{cell("a", "q1", "1"), cell("a", "q2", "2"), cell("b", "q1", "3")}},
		store.Put{Row: []byte("d2"), Cells: []store.Cell{cell("a", "q1", "4")}},
		store.Put{Row: []byte("d2\x00"), Cells: []store.Cell{cell("a", "q1", "5")}},
	)
	if err := s.Delete(c, table, []byte("d1"), []store.Column{{Family: []byte("a"), Qualifier: []byte("q1")}, {Family: []byte("b"), Qualifier: []byte("q1")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(c, table, []byte("d1"), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:7132=32"; cellString(got.Cells) != want {
		t.Errorf("after column delete = %s, want %s", cellString(got.Cells), want)
	}
	if err := s.Delete(c, table, []byte("d2"), nil); err != nil {
		t.Fatal(err)
	}
	got2 := rowKeys(scanAll(t, s, store.ScanRequest{Table: table}))
	if want := hexKeys([][]byte{[]byte("d1"), []byte("d2\x00")}); strings.Join(got2, ",") != strings.Join(want, ",") {
		t.Errorf("after row delete rows = %v, want %v", got2, want)
	}
	if err := s.Delete(c, table, []byte("never-written"), nil); err != nil {
		t.Errorf("delete of a missing row: %v", err)
	}
}

// cellVersions renders cells as "f:q=v@ts" sorted.
func cellVersions(cells []store.Cell) string {
	parts := make([]string, 0, len(cells))
	for _, c := range cells {
		parts = append(parts, fmt.Sprintf("%s:%s=%s@%d", c.Family, c.Qualifier, c.Value, c.Timestamp))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func versionOf(t *testing.T, r store.Row, family, qualifier string) uint64 {
	t.Helper()
	for _, c := range r.Cells {
		if string(c.Family) == family && string(c.Qualifier) == qualifier {
			return c.Timestamp
		}
	}
	t.Fatalf("row %x has no cell %s:%s", r.Key, family, qualifier)
	return 0
}

// testDeleteBounded: a column with a Timestamp loses only the versions at
// or before it; bounds differ per column within one Delete, and mix with
// unbounded columns.
func testDeleteBounded(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte("bounded")
	vc := func(f, q, v string, ts uint64) store.Cell {
		return store.Cell{Family: []byte(f), Qualifier: []byte(q), Value: []byte(v), Timestamp: ts}
	}
	put(t, s, table, store.Put{Row: row, Cells: []store.Cell{
		vc("a", "at", "1", 1_000), vc("a", "before", "2", 2_000), vc("a", "after", "3", 3_000),
		vc("b", "all", "4", 4_000), vc("b", "kept", "5", 5_000),
	}})
	col := func(f, q string, ts uint64) store.Column {
		return store.Column{Family: []byte(f), Qualifier: []byte(q), Timestamp: ts}
	}
	err := s.Delete(c, table, row, []store.Column{
		col("a", "at", 1_000),     // bound equal to the version: deleted
		col("a", "before", 2_500), // version before the bound: deleted
		col("a", "after", 2_999),  // version after the bound: kept
		col("b", "all", 0),        // unbounded: deleted
		col("a", "missing", 7_000),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(c, table, row, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:after=3@3000 b:kept=5@5000"; cellVersions(got.Cells) != want {
		t.Errorf("after bounded delete = %s, want %s", cellVersions(got.Cells), want)
	}
	// Many bounded columns at once (a backend may read the row once).
	var many []store.Cell
	var manyCols []store.Column
	for i := range 12 {
		q := fmt.Sprintf("q%02d", i)
		many = append(many, vc("a", q, "v", uint64(1_000+i)))
		bound := uint64(1_000 + i) // at the version: deleted
		if i%3 == 0 {
			bound-- // below it: kept
		}
		manyCols = append(manyCols, col("a", q, bound))
	}
	put(t, s, table, store.Put{Row: []byte("bounded-many"), Cells: many})
	if err := s.Delete(c, table, []byte("bounded-many"), manyCols); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Get(c, table, []byte("bounded-many"), ""); err != nil {
		t.Fatal(err)
	}
	if want := "a:q00=v@1000 a:q03=v@1003 a:q06=v@1006 a:q09=v@1009"; cellVersions(got.Cells) != want {
		t.Errorf("after 12 bounded deletes = %s, want %s", cellVersions(got.Cells), want)
	}
	// Server-time versions: bounded by the version read, as a compactor does.
	row2 := []byte("bounded-now")
	put(t, s, table, store.Put{Row: row2, Cells: []store.Cell{cell("a", "q1", "1"), cell("a", "q2", "2")}})
	r, err := s.Get(c, table, row2, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, table, row2, []store.Column{col("a", "q1", versionOf(t, r, "a", "q1")), col("a", "q2", versionOf(t, r, "a", "q2"))}); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Get(c, table, row2, ""); err != nil || len(r.Cells) != 0 {
		t.Errorf("after deleting each column up to the version read: %s, %v; want no cells", cellVersions(r.Cells), err)
	}
}

// testDeleteBoundedKeepsNewer: a column rewritten after the version a
// delete is bounded by keeps the newer version, whether the rewrite took
// the store's time or an explicit later timestamp.
func testDeleteBoundedKeepsNewer(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	for _, tc := range []struct {
		name    string
		rewrite store.Cell
	}{
		{"store time", cell("a", "q", "new")},
		{"explicit later timestamp", store.Cell{Family: []byte("a"), Qualifier: []byte("q"), Value: []byte("new"), Timestamp: 1 << 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := []byte("newer-" + tc.name)
			put(t, s, table, store.Put{Row: row, Cells: []store.Cell{cell("a", "q", "old")}})
			r, err := s.Get(c, table, row, "a")
			if err != nil {
				t.Fatal(err)
			}
			read := versionOf(t, r, "a", "q")
			// A later write lands between the read and the delete; store
			// time moves on at millisecond resolution.
			WaitPast(int64(read))
			put(t, s, table, store.Put{Row: row, Cells: []store.Cell{tc.rewrite}})
			if err := s.Delete(c, table, row, []store.Column{{Family: []byte("a"), Qualifier: []byte("q"), Timestamp: read}}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(c, table, row, "a")
			if err != nil {
				t.Fatal(err)
			}
			if cellString(got.Cells) != "a:71=6e6577" {
				t.Fatalf("after a delete bounded below the newer version = %s, want the new value", cellVersions(got.Cells))
			}
			if v := versionOf(t, got, "a", "q"); v <= read {
				t.Errorf("surviving version %d, want > %d", v, read)
			}
		})
	}
}

// testOlderVersionHidden: a cell written with an explicit timestamp older
// than the stored version does not replace it.
func testOlderVersionHidden(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte("versions")
	vc := func(v string, ts uint64) store.Put {
		return store.Put{Row: row, Cells: []store.Cell{{Family: []byte("a"), Qualifier: []byte("q"), Value: []byte(v), Timestamp: ts}}}
	}
	put(t, s, table, vc("v2000", 2_000))
	put(t, s, table, vc("v1000", 1_000))
	got, err := s.Get(c, table, row, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:q=v2000@2000"; cellVersions(got.Cells) != want {
		t.Errorf("after an older write = %s, want %s", cellVersions(got.Cells), want)
	}
	put(t, s, table, vc("v3000", 3_000))
	if got, err = s.Get(c, table, row, "a"); err != nil {
		t.Fatal(err)
	}
	if want := "a:q=v3000@3000"; cellVersions(got.Cells) != want {
		t.Errorf("after a newer write = %s, want %s", cellVersions(got.Cells), want)
	}
}
