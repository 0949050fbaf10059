package embedded

import (
	"errors"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestNamespaces checks that the tables of a namespace exist only once it
// is made, hold their own rows (buffered, packed by the codec of their
// name), and that namespaces and their runs outlive a reopening.
func TestNamespaces(t *testing.T) {
	dir := t.TempDir()
	open := func() *Store {
		t.Helper()
		s, err := Open(dir, Options{NoSync: true, Tables: []string{"d", "u"}, BufferTables: []string{"d"},
			RowCodecs: map[string]RowCodec{"d": toyCodec{}}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	ctx := t.Context()
	put := func(s *Store, table, row, val string) error {
		return s.Put(ctx, table, []store.Put{{Row: []byte(row), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q"), Value: []byte(val), Timestamp: 1}}}})
	}
	if err := put(s, "a:d", "r", "x"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("put into a namespace not made: %v, want ErrTableNotFound", err)
	}
	for _, ns := range []string{"", "a:b", "a\x00"} {
		if _, err := s.CreateNamespace(ctx, ns); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateNamespace(%q): %v, want ErrInvalid", ns, err)
		}
	}
	for _, want := range []bool{true, false} {
		if created, err := s.CreateNamespace(ctx, "a"); err != nil || created != want {
			t.Fatalf("CreateNamespace(a) = %v, %v; want %v", created, err, want)
		}
	}
	if _, err := s.CreateNamespace(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := put(s, "a:x", "r", "x"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("put into a table not among Options.Tables: %v", err)
	}
	for _, w := range []struct{ table, row, val string }{{"d", "r1", "plain"}, {"a:d", "r1", "A"}, {"a:d", "r2", "A2"}, {"b:d", "r1", "B"}, {"a:u", "r1", "AU"}} {
		if err := put(s, w.table, w.row, w.val); err != nil {
			t.Fatal(err)
		}
	}
	if !s.buffered("a:d") || s.buffered("a:u") {
		t.Fatal("a:d should be buffered as d, a:u not")
	}
	want := map[string]string{
		"d":   "7231: t:71=706c61696e@1\n",
		"a:d": "7231: t:71=41@1\n7232: t:71=4132@1\n",
		"b:d": "7231: t:71=42@1\n",
		"a:u": "7231: t:71=4155@1\n",
		"b:u": "",
	}
	check := func(s *Store, when string) {
		t.Helper()
		for table, w := range want {
			if got := dump(t, s, table); got != w {
				t.Errorf("%s: %s holds\n%s\nwant\n%s", when, table, got, w)
			}
		}
	}
	check(s, "buffered")
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	check(s, "flushed")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	check(s, "reopened")
	if got := s.Namespaces(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Namespaces() = %q, want [a b]", got)
	}
	// A namespaced view reads its own.
	v := store.Namespaced(s, "b")
	_, ranges := store.As[store.RowRangeDeleter](v)
	_, cells := store.As[store.CellsGetter](v)
	if !ranges || !cells {
		t.Error("the view of the embedded store lost its optional interfaces")
	}
	r, err := v.Get(ctx, "d", []byte("r1"), "t")
	if err != nil || len(r.Cells) != 1 || string(r.Cells[0].Value) != "B" {
		t.Errorf("view b: Get(d, r1) = %v, %v; want B", r, err)
	}
}

// TestNamespacedTablesNamedInFull: tables named "ns:name" in the
// options, as a command's table flags name a tenant's, exist and are
// buffered as named, and read what a server wrote through the namespace.
func TestNamespacedTablesNamedInFull(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := mustOpen(t, dir, Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
	if _, err := s.CreateNamespace(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	v := store.Namespaced(s, "a")
	if err := v.Put(ctx, "d", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q"), Value: []byte("v"), Timestamp: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, Options{NoSync: true, Tables: []string{"a:d", "b:d"}, BufferTables: []string{"a:d", "b:d"}})
	defer s.Close()
	if !s.buffered("a:d") || !s.buffered("b:d") {
		t.Error("tables named in full are not buffered")
	}
	if got := dump(t, s, "a:d"); got != "72: t:71=76@1\n" {
		t.Errorf("a:d holds %q", got)
	}
	if err := s.Put(ctx, "b:d", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q"), Value: []byte("w"), Timestamp: 1}}}}); err != nil {
		t.Errorf("put into b:d, named in full, its namespace not made: %v", err)
	}
	if err := s.Put(ctx, "d", nil); !errors.Is(err, store.ErrTableNotFound) {
		t.Errorf("put into d, not among the tables: %v", err)
	}
}
