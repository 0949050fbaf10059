package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
)

// TestRunGolden pins a run's byte layout: a row of three cells flushed
// from the row buffer, against testdata/run.hex.
func TestRunGolden(t *testing.T) {
	s := openTemp(t, Options{NoSync: true, Tables: []string{"tsdb"}, BufferTables: []string{"tsdb"}})
	row := []byte{0, 0, 1, 0x5f, 0x5e, 0x10, 0, 0, 0, 1, 0, 0, 2}
	put := store.Put{Row: row, Cells: []store.Cell{
		{Family: []byte("x"), Qualifier: nil, Value: []byte("abc"), Timestamp: 2000},
		{Family: []byte("t"), Qualifier: []byte{0, 0xf0}, Value: []byte{43}, Timestamp: 1000},
		{Family: []byte("t"), Qualifier: []byte{0, 0}, Value: []byte{42}, Timestamp: 1000},
	}}
	if err := s.Put(t.Context(), "tsdb", []store.Put{put}); err != nil {
		t.Fatal(err)
	}
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	fixture := readHexFixture(t, "run.hex")
	key := appendRunKey(nil, "tsdb", row, 1)
	want := fixture[:len(key)]
	if !bytes.Equal(key, want) {
		t.Fatalf("run key:\n got %x\nwant %x", key, want)
	}
	v, closer, err := s.db.Get(key)
	if err != nil {
		t.Fatalf("run key %x: %v", key, err)
	}
	defer closer.Close()
	if want := fixture[len(key):]; !bytes.Equal(v, want) {
		t.Errorf("run value:\n got %x\nwant %x", v, want)
	}
	// No cell keys: the row is the run alone.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte("tsdb\x00"), UpperBound: []byte("tsdb\x01")})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if n != 1 {
		t.Errorf("%d keys in the table, want 1 (the run)", n)
	}
}

// TestRunDecodeErrors: a value that is not a well-formed run is an error
// naming it, never a panic or cells out of order.
func TestRunDecodeErrors(t *testing.T) {
	good := appendRunCell(appendRunCell([]byte{runFormat}, nil, []byte("t"), []byte{1}, []byte{7}, 5), []byte("t"), []byte("t"), []byte{2}, []byte{8}, 6)
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"unknown format", []byte{2}},
		{"first cell without family", []byte{runFormat, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"family past the end", []byte{runFormat, 9, 't'}},
		{"cut in the timestamp", good[:len(good)-5]},
		{"value past the end", append(bytes.Clone(good[:len(good)-2]), 5, 1)},
		{"columns not ascending", appendRunCell(bytes.Clone(good), []byte("t"), []byte("t"), []byte{1}, nil, 1)},
		{"column repeated", appendRunCell(bytes.Clone(good), []byte("t"), []byte("t"), []byte{2}, nil, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := appendRunCells(nil, nil, tc.v, nil, nil, nil)
			if !errors.Is(err, errCorruptRun) {
				t.Fatalf("appendRunCells(%x): err %v, want %v", tc.v, err, errCorruptRun)
			}
		})
	}
	cells, _, err := appendRunCells(nil, nil, good, nil, nil, nil)
	if err != nil || len(cells) != 2 || cells[1].Timestamp != 6 || cells[1].Value[0] != 8 {
		t.Fatalf("good run: %v %v", cellString(cells), err)
	}
}

// FuzzRunDecode: any value decodes to an error or to cells in strictly
// ascending column order with non-empty families, which encode back to
// the same bytes; findRunCell and runWithout agree with the decode.
func FuzzRunDecode(f *testing.F) {
	good := appendRunCell(appendRunCell([]byte{runFormat}, nil, []byte("t"), []byte{0, 0}, []byte{42}, 1000), []byte("t"), []byte("t"), []byte{0, 0xf0}, []byte{43}, 1000)
	f.Add(good)
	f.Add(appendRunCell(bytes.Clone(good), []byte("t"), []byte("x"), nil, []byte("abc"), 2000))
	f.Add([]byte{runFormat})
	f.Add([]byte{runFormat, 0})
	f.Add([]byte{runFormat, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	packed, _ := toyCodec{}.Encode(nil, []byte("r"), []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: []byte{2}, Timestamp: 3}})
	f.Add(append([]byte{runFormatCodec}, packed...))
	f.Fuzz(func(t *testing.T, v []byte) {
		if len(v) > 0 && v[0] == runFormatCodec {
			// Format 2: whatever the codec returns is checked; a run it
			// decodes packs and decodes back the same.
			cells, _, err := appendRunCells(nil, nil, v, nil, toyCodec{}, []byte("r"))
			if err != nil {
				if !errors.Is(err, errCorruptRun) {
					t.Fatalf("error %v does not wrap errCorruptRun", err)
				}
				return
			}
			again, _, err := appendRunCells(nil, nil, appendRun(nil, cells, toyCodec{}, []byte("r")), nil, toyCodec{}, []byte("r"))
			if err != nil || cellString(again) != cellString(cells) {
				t.Fatalf("re-encoded run decodes to %s (%v), want %s", cellString(again), err, cellString(cells))
			}
			return
		}
		cells, _, err := appendRunCells(nil, nil, v, nil, nil, nil)
		if err != nil {
			if !errors.Is(err, errCorruptRun) {
				t.Fatalf("error %v does not wrap errCorruptRun", err)
			}
			return
		}
		enc := []byte{runFormat}
		var prev []byte
		for i, c := range cells {
			if len(c.Family) == 0 {
				t.Fatalf("cell %d: empty family", i)
			}
			if i > 0 && cmpCell(cells[i-1], c) >= 0 {
				t.Fatalf("cell %d not after cell %d", i, i-1)
			}
			enc = appendRunCell(enc, prev, c.Family, c.Qualifier, c.Value, c.Timestamp)
			prev = c.Family
			val, ts, found, err := findRunCell(v, c.Family, c.Qualifier, nil, nil)
			if err != nil || !found || ts != c.Timestamp || !bytes.Equal(val, c.Value) {
				t.Fatalf("findRunCell of cell %d: %x %d %v %v", i, val, ts, found, err)
			}
		}
		// A family repeated in full decodes the same but encodes shorter.
		if got, _, _ := appendRunCells(nil, nil, enc, nil, nil, nil); cellString(got) != cellString(cells) {
			t.Fatalf("re-encoded run decodes to %s, want %s", cellString(got), cellString(cells))
		}
		kept, changed, n, err := runWithout(nil, v, func(f, q []byte) bool { return len(q)%2 == 1 }, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		rest, _, err := appendRunCells(nil, nil, kept, nil, nil, nil)
		if err != nil || len(rest) != n {
			t.Fatalf("runWithout: %d cells (%v), reported %d", len(rest), err, n)
		}
		if changed != (n < len(cells)) {
			t.Fatalf("runWithout: changed %v with %d of %d cells kept", changed, n, len(cells))
		}
	})
}

// TestOverlayCells: newer cells replace their columns, others merge in
// column order.
func TestOverlayCells(t *testing.T) {
	c := func(q byte, v byte) store.Cell {
		return store.Cell{Family: []byte("t"), Qualifier: []byte{q}, Value: []byte{v}}
	}
	for _, tc := range []struct {
		name       string
		old, newer []store.Cell
		want       string
	}{
		{"append", []store.Cell{c(1, 1), c(2, 1)}, []store.Cell{c(3, 2)}, "t:01=01@0 t:02=01@0 t:03=02@0 "},
		{"replace", []store.Cell{c(1, 1), c(2, 1)}, []store.Cell{c(2, 2)}, "t:01=01@0 t:02=02@0 "},
		{"interleave", []store.Cell{c(1, 1), c(3, 1), c(5, 1)}, []store.Cell{c(0, 2), c(3, 2), c(4, 2), c(9, 2)},
			"t:00=02@0 t:01=01@0 t:03=02@0 t:04=02@0 t:05=01@0 t:09=02@0 "},
		{"none newer", []store.Cell{c(1, 1)}, nil, "t:01=01@0 "},
		{"none older", nil, []store.Cell{c(1, 2)}, "t:01=02@0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := overlayCells(append([]store.Cell(nil), tc.old...), tc.newer, nil, nil)
			if s := cellString(got); s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
		})
	}
	// Tombstones (the row buffer's dead records) remove their columns and
	// add nothing, in the merge and when they all come after the older
	// cells.
	for _, tc := range []struct {
		name       string
		old, newer []store.Cell
		dead       []bool
		want       string
	}{
		{"merge", []store.Cell{c(1, 1), c(3, 1), c(5, 1)}, []store.Cell{c(0, 2), c(3, 2), c(4, 2)}, []bool{true, true, false},
			"t:01=01@0 t:04=02@0 t:05=01@0 "},
		{"after", []store.Cell{c(1, 1)}, []store.Cell{c(2, 2), c(3, 2)}, []bool{false, true}, "t:01=01@0 t:02=02@0 "},
		{"none older", nil, []store.Cell{c(1, 2)}, []bool{true}, ""},
	} {
		t.Run("dead "+tc.name, func(t *testing.T) {
			got, _ := overlayCells(append([]store.Cell(nil), tc.old...), tc.newer, tc.dead, nil)
			if s := cellString(got); s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
		})
	}
}

// TestRunSequenceSurvivesReopen: a store reopened after a clean close
// (its log gone) goes on from the last flush's sequence number, so a
// later flush never writes over an earlier run of the same row.
func TestRunSequenceSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	row := []byte{0, 0, 1}
	for i := range 3 {
		s := mustOpen(t, dir, Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
		err := s.Put(t.Context(), "d", []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{byte(i)}, Value: []byte{byte(i)}, Timestamp: 1}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := mustOpen(t, dir, Options{NoSync: true, Tables: []string{"d"}})
	defer s.Close()
	if !s.buffered("d") {
		t.Error("table d holds runs but was opened unbuffered")
	}
	if got, want := dump(t, s, "d"), fmt.Sprintf("%x: t:00=00@1 t:01=01@1 t:02=02@1\n", row); got != want {
		t.Errorf("after three sessions:\n got %s\nwant %s", got, want)
	}
	if seq, err := lastRunSeq(s.db); err != nil || seq != 3 {
		t.Errorf("last run sequence %d (%v), want 3", seq, err)
	}
}

// TestRunsOfATableNotOpened: a table with runs whose logged cells are
// ingested by a session that does not open it (Options.Tables leaves it
// out) gets them as runs too, so that a later session reads the newest.
func TestRunsOfATableNotOpened(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	open := func(opts Options) *Store {
		t.Helper()
		opts.NoSync = true
		s := mustOpen(t, dir, opts)
		return s
	}
	put := func(s *Store, v string) {
		t.Helper()
		if err := s.Put(ctx, "d", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(v)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	s := open(Options{BufferTables: []string{"d"}})
	put(s, "old")
	if err := s.Close(); err != nil { // a run of "old"; d marked
		t.Fatal(err)
	}
	s = open(Options{BufferTables: []string{"d"}})
	put(s, "new")
	crash(t, s) // "new" only in the row buffer's log
	s = open(Options{Tables: []string{"u"}, BufferTables: []string{"u"}})
	if err := s.Close(); err != nil { // replays and ingests d's "new"
		t.Fatal(err)
	}
	s = open(Options{})
	defer s.Close()
	if v, ok, err := s.GetCell(ctx, "d", []byte("r"), "f", "q"); err != nil || string(v) != "new" {
		t.Errorf("GetCell = %q %v %v, want new", v, ok, err)
	}
	if got := dump(t, s, "d"); !strings.Contains(got, "=6e6577@") {
		t.Errorf("scan: %s, want the value new", got)
	}
}

// TestDeleteWhileFlushWaitsForRetry: a delete that runs while a failed
// flush's buffer waits for its retry removes the cells of that buffer too,
// so neither a read meanwhile nor the retried flush brings them back.
func TestDeleteWhileFlushWaitsForRetry(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole row %v", whole), func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
			defer s.Close()
			row := []byte("r")
			if err := s.Put(ctx, "d", []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte("v")}}}}); err != nil {
				t.Fatal(err)
			}
			// The flush cannot create its sstable: a directory holds its name.
			block := filepath.Join(dir, rowBufferDir, "ingest.sst")
			if err := os.MkdirAll(filepath.Join(block, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := s.rb.flush(); err == nil {
				t.Fatal("flush succeeded with its sstable's name taken")
			}
			var cols []store.Column
			if !whole {
				cols = []store.Column{{Family: []byte("f"), Qualifier: []byte("q")}}
			}
			if err := s.Delete(ctx, "d", row, cols); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				t.Helper()
				if v, ok, err := s.GetCell(ctx, "d", row, "f", "q"); ok || err != nil {
					t.Errorf("%s: GetCell = %q %v %v, want none", when, v, ok, err)
				}
				if got := dump(t, s, "d"); got != "" {
					t.Errorf("%s: scan %q, want nothing", when, got)
				}
			}
			check("before the retry")
			if err := os.RemoveAll(block); err != nil {
				t.Fatal(err)
			}
			if err := s.rb.flush(); err != nil {
				t.Fatal(err)
			}
			check("after the retry")
		})
	}
}
