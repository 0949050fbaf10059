package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestSnapshotWhileWriting: a snapshot taken while writers go on holds
// every row acknowledged before CreateSnapshot was called, with its value,
// in a buffered table and one that is not; restored (CopySnapshot) and
// opened it is a store of its own; list and delete see it.
func TestSnapshotWhileWriting(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	opts := Options{NoSync: true, Tables: []string{"d", "u"}, BufferTables: []string{"d"}, SettleInterval: -1}
	s := mustOpen(t, dir, opts)
	defer s.Close()
	var acked [2]atomic.Int64 // rows of d and u acknowledged, in order
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, table := range []string{"d", "u"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeUntil(t, s, table, 0, 0, func(i int) []byte { return fmt.Appendf(nil, "%s-%d", table, i) }, &acked[w], stop)
		}()
	}
	for acked[0].Load() < 2000 || acked[1].Load() < 2000 {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		default:
		}
	}
	before := [2]int64{acked[0].Load(), acked[1].Load()}
	if err := s.CreateSnapshot(ctx, "20261126T130000Z-0000000000000001", nil); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if err := s.CreateSnapshot(ctx, "20261126T130000Z-0000000000000001", nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a second snapshot of the same name: %v, want ErrInvalid", err)
	}
	if err := s.CreateSnapshot(ctx, "../x", nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a snapshot named ../x: %v, want ErrInvalid", err)
	}
	list, err := s.ListSnapshots(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "20261126T130000Z-0000000000000001" || list[0].Created.Year() != 2026 {
		t.Fatalf("snapshots %+v (%v), want the one made", list, err)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if err := CopySnapshot(list[0].Location, restored); err != nil {
		t.Fatal(err)
	}
	if err := CopySnapshot(list[0].Location, restored); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a restore into a directory not empty: %v, want ErrInvalid", err)
	}
	r := mustOpen(t, restored, opts)
	defer r.Close()
	for w, table := range []string{"d", "u"} {
		n := countRows(ctx, t, r, table, func(i int, v []byte) {
			if want := fmt.Appendf(nil, "%s-%d", table, i); !bytes.Equal(v, want) {
				t.Errorf("%s row %d: %q, want %q", table, i, v, want)
			}
		})
		if int64(n) < before[w] || int64(n) > acked[w].Load() {
			t.Errorf("%s: %d rows in the snapshot, want %d acknowledged before it .. %d written", table, n, before[w], acked[w].Load())
		}
	}
	// The store goes on apart from the snapshot.
	if err := s.DeleteSnapshot(ctx, list[0].Name); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListSnapshots(ctx); err != nil || len(list) != 0 {
		t.Errorf("snapshots after the delete: %+v (%v)", list, err)
	}
	if n := countRows(ctx, t, s, "d", func(int, []byte) {}); int64(n) != acked[0].Load() {
		t.Errorf("the store has %d rows of d after the snapshot's delete, want %d", n, acked[0].Load())
	}
}

// countRows scans table, checking that its rows are row-00000000 on with
// no gap, and calls check with each row's index and first cell's value.
func countRows(ctx context.Context, t *testing.T, s *Store, table string, check func(int, []byte)) int {
	t.Helper()
	sc := s.Scan(ctx, store.ScanRequest{Table: table})
	defer sc.Close()
	n := 0
	for sc.Next() {
		row := sc.Row()
		if want := fmt.Appendf(nil, "row-%08d", n); !bytes.Equal(row.Key, want) {
			t.Fatalf("%s: row %q, want %q", table, row.Key, want)
		}
		check(n, row.Cells[0].Value)
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
