package storetest

import (
	"testing"

	"github.com/promhbase/promhbase/store"
)

// testBatch: store.Write commits a batch's ops in order (a later op's
// cell replaces an earlier one's of the same table, a bulk op's too), and
// the caller may reuse every buffer the batch's puts reference once Write
// returned nil: the store keeps none of them. WriteDeferred's puts are
// visible at once and an empty Write after them returns.
func testBatch(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	// The batch's rows, families, qualifiers and values all in one
	// buffer, overwritten once Write returns.
	buf := []byte("r1r2r3aqv1v2v3v4")
	row1, row2, row3 := buf[0:2], buf[2:4], buf[4:6]
	fam, qual := buf[6:7], buf[7:8]
	v1, v2, v3, v4 := buf[8:10], buf[10:12], buf[12:14], buf[14:16]
	var b store.Batch
	b.Put(table, []store.Put{{Row: row1, Cells: []store.Cell{{Family: fam, Qualifier: qual, Value: v1}}}})
	b.Put(table, []store.Put{
		{Row: row1, Cells: []store.Cell{{Family: fam, Qualifier: qual, Value: v2}}},
		{Row: row2, Cells: []store.Cell{{Family: fam, Qualifier: qual, Value: v3}}},
	})
	b.PutBulk(table, []store.Put{{Row: row3, Cells: []store.Cell{{Family: fam, Qualifier: qual, Value: v4}}}})
	if got := b.Rows(); got != 4 {
		t.Fatalf("batch rows %d, want 4", got)
	}
	if err := store.Write(c, s, &b); err != nil {
		t.Fatalf("write: %v", err)
	}
	for i := range buf {
		buf[i] = 'x'
	}
	b.Reset()
	if len(b.Ops()) != 0 {
		t.Fatalf("reset batch has %d ops", len(b.Ops()))
	}
	want := map[string]string{"r1": "v2", "r2": "v3", "r3": "v4"}
	for row, v := range want {
		r, err := s.Get(c, table, []byte(row), "a")
		if err != nil {
			t.Fatalf("get %s: %v", row, err)
		}
		if got, want := cellString(r.Cells), cellString([]store.Cell{cell("a", "q", v)}); got != want {
			t.Errorf("row %s after Write and its buffers overwritten: %s, want %s", row, got, want)
		}
	}
	// Deferred: visible when it returns; an empty Write makes it durable.
	b.Put(table, []store.Put{{Row: []byte("r4"), Cells: []store.Cell{cell("a", "q", "v5")}}})
	if err := store.WriteDeferred(c, s, &b); err != nil {
		t.Fatalf("write deferred: %v", err)
	}
	r, err := s.Get(c, table, []byte("r4"), "a")
	if err != nil {
		t.Fatalf("get r4: %v", err)
	}
	if got, want := cellString(r.Cells), cellString([]store.Cell{cell("a", "q", "v5")}); got != want {
		t.Errorf("row r4 after WriteDeferred: %s, want %s", got, want)
	}
	b.Reset()
	if err := store.Write(c, s, &b); err != nil {
		t.Fatalf("empty write: %v", err)
	}
	if err := store.Sync(c, s); err != nil {
		t.Fatalf("sync: %v", err)
	}
}
