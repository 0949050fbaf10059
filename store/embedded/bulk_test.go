package embedded

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
)

// TestPutBulk: a bulk put's rows that the row buffer does not hold go
// straight into Pebble as runs (the buffer stays empty), read back as Put
// writes them, across a reopen; a row the buffer holds goes through it.
// TestRowBufferAgainstPebble checks bulk puts against Put at random.
func TestPutBulk(t *testing.T) {
	cell := func(q byte, v string) store.Cell {
		return store.Cell{Family: []byte("t"), Qualifier: []byte{q, 0}, Value: []byte(v)}
	}
	cases := []struct {
		name string
		// before is put through the buffer first; bulk then.
		before, bulk []store.Put
		// buffered is how many rows the buffer holds after the bulk put.
		buffered int64
		want     string
	}{
		{
			name:     "fresh rows go straight to Pebble",
			bulk:     []store.Put{{Row: []byte("b"), Cells: []store.Cell{cell(1, "x"), cell(2, "y")}}, {Row: []byte("a"), Cells: []store.Cell{cell(1, "z")}}},
			buffered: 0,
			want:     "61: t:0100=7a@1000\n62: t:0100=78@1000 t:0200=79@1000\n",
		},
		{
			name:     "a row the buffer holds stays in it",
			before:   []store.Put{{Row: []byte("a"), Cells: []store.Cell{cell(1, "old"), cell(3, "keep")}}},
			bulk:     []store.Put{{Row: []byte("a"), Cells: []store.Cell{cell(1, "new")}}, {Row: []byte("b"), Cells: []store.Cell{cell(1, "x")}}},
			buffered: 1,
			want:     "61: t:0100=6e6577@1000 t:0300=6b656570@1000\n62: t:0100=78@1000\n",
		},
		{
			name:     "a row put twice: the later put wins",
			bulk:     []store.Put{{Row: []byte("a"), Cells: []store.Cell{cell(1, "first")}}, {Row: []byte("a"), Cells: []store.Cell{cell(1, "second")}}},
			buffered: 1,
			want:     "61: t:0100=7365636f6e64@1000\n",
		},
		{
			name:     "cells out of column order go through the buffer",
			bulk:     []store.Put{{Row: []byte("a"), Cells: []store.Cell{cell(2, "y"), cell(1, "x")}}},
			buffered: 1,
			want:     "61: t:0100=78@1000 t:0200=79@1000\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}}
			s := mustOpen(t, dir, opts)
			s.now = fixedNow(1000)
			if err := s.Put(t.Context(), "d", c.before); err != nil {
				t.Fatal(err)
			}
			if err := s.PutBulk(t.Context(), "d", c.bulk); err != nil {
				t.Fatal(err)
			}
			if got := s.rb.stats().rows; got != c.buffered {
				t.Errorf("the buffer holds %d rows, want %d", got, c.buffered)
			}
			if got := dump(t, s, "d"); got != c.want {
				t.Errorf("got\n%swant\n%s", got, c.want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, dir, opts)
			defer s.Close()
			if got := dump(t, s, "d"); got != c.want {
				t.Errorf("after a reopen got\n%swant\n%s", got, c.want)
			}
		})
	}
}

// TestPutBulkSequenceReserved: a bulk put's runs take a sequence number
// that no later session reuses, so that a row put again after a reopen
// (flushed as a run of its own) keeps the bulk put's other columns.
func TestPutBulkSequenceReserved(t *testing.T) {
	dir := t.TempDir()
	opts := Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}}
	s := mustOpen(t, dir, opts)
	s.now = fixedNow(1000)
	put := func(f func(*Store) error) {
		t.Helper()
		if err := f(s); err != nil {
			t.Fatal(err)
		}
	}
	row := []byte("r")
	put(func(s *Store) error {
		return s.PutBulk(t.Context(), "d", []store.Put{{Row: row, Cells: []store.Cell{
			{Family: []byte("t"), Qualifier: []byte{1}, Value: []byte("a")},
			{Family: []byte("t"), Qualifier: []byte{2}, Value: []byte("b")}}}})
	})
	put(func(s *Store) error { return s.Close() })
	s = mustOpen(t, dir, opts)
	defer s.Close()
	s.now = fixedNow(2000)
	put(func(s *Store) error {
		return s.Put(t.Context(), "d", []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: []byte("c")}}}})
	})
	put(func(s *Store) error { return s.CompactAll(t.Context()) })
	if got, want := dump(t, s, "d"), "72: t:01=63@2000 t:02=62@1000\n"; got != want {
		t.Errorf("got %swant %s", got, want)
	}
}

// TestPutBulkClose: bulk puts racing a close either land or fail with
// store.ErrUnavailable; none outlives the store (run with -race).
func TestPutBulkClose(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				err := s.PutBulk(t.Context(), "d", []store.Put{{Row: fmt.Appendf(nil, "r%d-%d", g, i),
					Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: []byte("v")}}}})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a bulk put racing close: %v, want store.ErrUnavailable", err)
		}
	}
}

// fixedNow returns a clock that always says ms (Unix milliseconds).
func fixedNow(ms int64) func() time.Time {
	return func() time.Time { return time.UnixMilli(ms) }
}

// TestPutBulkConcurrent: bulk puts of the same rows at the same time as
// puts, deletes of rows and of row ranges, flushes and closes of the log
// end (run with -race); a lock order that differs from a delete's hangs
// here. Once all is done, a bulk put's rows read back.
func TestPutBulkConcurrent(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
	defer s.Close()
	ctx := t.Context()
	row := func(i int) []byte { return fmt.Appendf(nil, "r%02d", i%16) }
	cells := func(v byte) []store.Cell {
		return []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: []byte{v}}, {Family: []byte("t"), Qualifier: []byte{2}, Value: []byte{v}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	run := func(f func(i int) error) {
		wg.Go(func() {
			for i := range 200 {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for g := range 3 {
		run(func(i int) error {
			return s.PutBulk(ctx, "d", []store.Put{{Row: row(i + g), Cells: cells(byte(i))}, {Row: row(i + g + 5), Cells: cells(byte(i))}})
		})
	}
	run(func(i int) error { return s.Put(ctx, "d", []store.Put{{Row: row(3 * i), Cells: cells(byte(i))}}) })
	run(func(i int) error { return s.Delete(ctx, "d", row(7*i), nil) })
	run(func(i int) error { return s.DeleteRows(ctx, "d", row(i), row(i+2)) })
	run(func(i int) error {
		if i%20 != 0 {
			return nil
		}
		return s.CompactAll(ctx)
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := s.PutBulk(ctx, "d", []store.Put{{Row: []byte("z"), Cells: cells(9)}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "d", []byte("z"), ""); err != nil || len(got.Cells) != 2 {
		t.Errorf("the last bulk put's row: %v cells (%v), want 2", got.Cells, err)
	}
}

// TestPutBulkActivity: a bulk put that wrote runs counts as a write for
// the settler (Store.activity), which settles the ranges written only
// once the writes stop.
func TestPutBulkActivity(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
	defer s.Close()
	before := s.activity()
	if err := s.PutBulk(t.Context(), "d", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: []byte("v")}}}}); err != nil {
		t.Fatal(err)
	}
	if after := s.activity(); after == before {
		t.Errorf("activity %+v after a bulk put, the same as before", after)
	}
}
