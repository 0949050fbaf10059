package compact

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// faultStore is a store on which one step of a compaction fails: the k-th
// call of op fails with store.ErrUnavailable. op "put" and "delete" fail
// the store's calls, their change refused, or made when applied (an RPC
// that reached the region server before its answer was lost); op "stop"
// is the compactor's afterPut hook, where the process stops between its
// put and its delete.
type faultStore struct {
	store.Store
	op      string
	k       int
	applied bool

	mu    sync.Mutex
	calls int
	row   []byte // the row of the failed call
}

// As forwards the optional interfaces of the store underneath
// (store.Wrapper), those that write failing as Put, Delete and a "sync"
// op do.
func (f *faultStore) As(target any) bool {
	switch t := target.(type) {
	case *store.DeferredPutter:
		d, ok := store.As[store.DeferredPutter](f.Store)
		if ok {
			*t = faultDeferred{f, d}
		}
		return ok
	case *store.DeferredDeleter:
		d, ok := store.As[store.DeferredDeleter](f.Store)
		if ok {
			*t = faultDeferredDel{f, d}
		}
		return ok
	case *store.Syncer:
		sy, ok := store.As[store.Syncer](f.Store)
		if ok {
			*t = faultSyncer{f, sy}
		}
		return ok
	}
	return store.Forward(f.Store, target)
}

type (
	faultDeferred struct {
		f *faultStore
		d store.DeferredPutter
	}
	faultDeferredDel struct {
		f *faultStore
		d store.DeferredDeleter
	}
	faultSyncer struct {
		f  *faultStore
		sy store.Syncer
	}
)

func (w faultDeferred) PutDeferred(ctx context.Context, table string, puts []store.Put) error {
	if len(puts) == 0 || !w.f.fails("put", puts[0].Row) {
		return w.d.PutDeferred(ctx, table, puts)
	}
	if w.f.applied {
		if err := w.d.PutDeferred(ctx, table, puts); err != nil {
			return err
		}
	}
	return fmt.Errorf("put %d rows: failed (applied %v): %w", len(puts), w.f.applied, store.ErrUnavailable)
}

func (w faultDeferredDel) DeleteDeferred(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if !w.f.fails("delete", row) {
		return w.d.DeleteDeferred(ctx, table, row, columns)
	}
	if w.f.applied {
		if err := w.d.DeleteDeferred(ctx, table, row, columns); err != nil {
			return err
		}
	}
	return fmt.Errorf("delete %d columns of row %x: failed (applied %v): %w", len(columns), row, w.f.applied, store.ErrUnavailable)
}

func (w faultSyncer) Sync(ctx context.Context) error {
	if !w.f.fails("sync", nil) {
		return w.sy.Sync(ctx)
	}
	return fmt.Errorf("sync: failed: %w", store.ErrUnavailable)
}

// fails counts a call of op on row and reports whether it is the one that
// fails.
func (f *faultStore) fails(op string, row []byte) bool {
	if op != f.op {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls != f.k {
		return false
	}
	f.row = bytes.Clone(row)
	return true
}

// failedRow returns the row of the failed call; nil if none failed.
func (f *faultStore) failedRow() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.row
}

func (f *faultStore) Put(ctx context.Context, table string, puts []store.Put) error {
	if len(puts) == 0 || !f.fails("put", puts[0].Row) {
		return f.Store.Put(ctx, table, puts)
	}
	if f.applied {
		if err := f.Store.Put(ctx, table, puts); err != nil {
			return err
		}
	}
	return fmt.Errorf("put row %x: no answer (applied %v): %w", puts[0].Row, f.applied, store.ErrUnavailable)
}

func (f *faultStore) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if !f.fails("delete", row) {
		return f.Store.Delete(ctx, table, row, columns)
	}
	if f.applied {
		if err := f.Store.Delete(ctx, table, row, columns); err != nil {
			return err
		}
	}
	return fmt.Errorf("delete %d columns of row %x: no answer (applied %v): %w", len(columns), row, f.applied, store.ErrUnavailable)
}

// TestCompactionFaultAtEachStep fails the compaction of six rows, row by
// row as the Scheduler compacts them, at one step of the third: its put
// refused, or applied with its answer lost; the process stopped between
// the put and the delete; its delete refused, or applied with its answer
// lost. Reads stay exactly as written, the row holds what the step left
// (its cells, those and the compacted cell, or the compacted cell alone)
// and the other rows are compacted. `promhbase compact` over the range
// (CompactRange) then leaves every row one compacted cell as OpenTSDB
// lays it out (checkCompactedRow), and reads still exact. On the backend
// of PROMHBASE_TEST_BACKEND (HBase in make test's HBase run).
func TestCompactionFaultAtEachStep(t *testing.T) {
	const k = 3
	for _, tc := range []struct {
		name    string
		op      string
		applied bool
		holds   string // what the failed row holds: "written", "both" or "compacted"
	}{
		{"put refused", "put", false, "written"},
		{"put applied, its answer lost", "put", true, "both"},
		{"stopped between put and delete", "stop", false, "both"},
		{"delete refused", "delete", false, "both"},
		{"delete applied, its answer lost", "delete", true, "compacted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			e.writeBySample(hostSeries("fault_step", 3, 2, 61*time.Second, func(i, j int) float64 {
				return specialValues[(i+j)%len(specialValues)]
			}))
			written := e.rows()
			readBefore := e.read()
			if len(written) != 6 {
				t.Fatalf("%d rows written, want 6", len(written))
			}
			fs := &faultStore{Store: e.Store, op: tc.op, k: k, applied: tc.applied}
			c := New(fs, Options{DataTable: e.Tables.Data, UIDTable: e.Tables.UID, Layout: e.Layout, Now: func() time.Time { return e.now }})
			c.afterPut = func(row []byte) {
				if fs.fails("stop", row) {
					panic("the process stops between the put and the delete")
				}
			}
			var st Stats
			for _, w := range written { // row by row, as the Scheduler compacts
				st.Add(c.CompactRow(ctxFor(t), w.Key))
			}
			failed := fs.failedRow()
			if failed == nil || st.Errors != 1 || st.Compacted != len(written)-1 {
				t.Fatalf("stats %s, failed row %x; want one error and the other %d rows compacted", st, failed, len(written)-1)
			}
			t.Logf("the failing compaction: %s", st)
			if got := e.read(); got != readBefore {
				t.Errorf("reads after the failure:\n%s\nwant\n%s", got, readBefore)
			}
			for i, w := range written {
				after := e.row(w.Key)
				if !bytes.Equal(w.Key, failed) {
					checkCompactedRow(t, e, w, after)
					continue
				}
				checkFailedRow(t, e, i, tc.holds, w, after)
			}

			// Compacted again, as `promhbase compact` does.
			again := e.compactAll(e.compactor())
			want := 1 // the failed row
			if tc.holds == "compacted" {
				want = 0
			}
			if again.Compacted != want || again.Unchanged != len(written)-want {
				t.Errorf("compaction run again: %s, want %d rows compacted and the others unchanged", again, want)
			}
			after := e.rows()
			if len(after) != len(written) {
				t.Fatalf("%d rows after compaction, %d written", len(after), len(written))
			}
			for i, w := range written {
				checkCompactedRow(t, e, w, after[i])
			}
			if got := e.read(); got != readBefore {
				t.Errorf("reads after compaction run again:\n%s\nwant\n%s", got, readBefore)
			}
		})
	}
}

// checkBoth checks that row after holds every cell of row written, and
// one more: a compacted cell of all its points, as a compaction stopped
// between its put and its delete leaves it.
func checkBoth(t *testing.T, e *env, written, after store.Row) {
	t.Helper()
	was := map[string]bool{}
	for _, c := range written.Cells {
		was[renderCells([]store.Cell{c})] = true
	}
	kept, extra := 0, []store.Cell(nil)
	for _, c := range after.Cells {
		if was[renderCells([]store.Cell{c})] {
			kept++
		} else {
			extra = append(extra, c)
		}
	}
	if kept != len(written.Cells) || len(extra) != 1 {
		t.Errorf("row %x holds %s;\nwant its cells as written %s and one compacted cell", after.Key, renderCells(after.Cells), renderCells(written.Cells))
		return
	}
	checkCompactedRow(t, e, written, store.Row{Key: after.Key, Cells: extra})
}

// TestBatchCompactionFaultAtEachStep: CompactRows of six rows at once
// (their puts in one durable write, their deletes, a sync: on the
// embedded store deferred puts, a sync, deferred deletes, a sync), failed
// at one step: the puts refused, or
// applied with the failure after; the sync after them; the process
// stopped between the puts and the deletes (at the third row's); the
// third row's delete refused or applied; the sync after the deletes.
// Every row the step touched is failed and holds what the step left; the
// others are compacted; reads stay exact; a compaction run again leaves
// every row one compacted cell.
func TestBatchCompactionFaultAtEachStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      string
		k       int
		applied bool
		failed  int    // rows failed: all six, or the third alone
		holds   string // what a failed row holds
	}{
		{"puts refused", "put", 1, false, 6, "written"},
		{"puts applied, failed after", "put", 1, true, 6, "both"},
		{"sync after the puts failed", "sync", 1, false, 6, "both"},
		{"stopped between the puts and the deletes", "stop", 3, false, 6, "both"},
		{"third delete refused", "delete", 3, false, 1, "both"},
		{"third delete applied, failed after", "delete", 3, true, 1, "compacted"},
		{"sync after the deletes failed", "sync", 2, false, 6, "compacted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			e.writeBySample(hostSeries("fault_batch", 3, 2, 61*time.Second, func(i, j int) float64 {
				return specialValues[(i+j)%len(specialValues)]
			}))
			written := e.rows()
			readBefore := e.read()
			if len(written) != 6 {
				t.Fatalf("%d rows written, want 6", len(written))
			}
			fs := &faultStore{Store: e.Store, op: tc.op, k: tc.k, applied: tc.applied}
			c := New(fs, Options{DataTable: e.Tables.Data, UIDTable: e.Tables.UID, Layout: e.Layout, Now: func() time.Time { return e.now }})
			if _, ok := store.As[store.Syncer](e.Store); !ok && tc.op == "sync" {
				t.Skip("the store's writes are durable when they return (HBase): it has no sync to fail")
			}
			c.afterPut = func(row []byte) {
				if fs.fails("stop", row) {
					panic("the process stops between the puts and the deletes")
				}
			}
			keys := make([][]byte, len(written))
			for i, w := range written {
				keys[i] = w.Key
			}
			results, errs := make([]Result, len(keys)), make([]error, len(keys))
			c.CompactRows(ctxFor(t), keys, results, errs)
			var st Stats
			for i := range keys {
				st.Add(results[i], errs[i])
			}
			if st.Errors != tc.failed || st.Compacted != len(written)-tc.failed {
				t.Fatalf("stats %s; want %d errors and the other %d rows compacted", st, tc.failed, len(written)-tc.failed)
			}
			t.Logf("the failing compaction: %s", st)
			if got := e.read(); got != readBefore {
				t.Errorf("reads after the failure:\n%s\nwant\n%s", got, readBefore)
			}
			for i, w := range written {
				after := e.row(w.Key)
				if errs[i] == nil {
					checkCompactedRow(t, e, w, after)
					continue
				}
				checkFailedRow(t, e, i, tc.holds, w, after)
			}
			again := e.compactAll(e.compactor())
			after := e.rows()
			if again.Errors != 0 || len(after) != len(written) {
				t.Fatalf("compaction run again: %s, %d rows of %d", again, len(after), len(written))
			}
			for i, w := range written {
				checkCompactedRow(t, e, w, after[i])
			}
			if got := e.read(); got != readBefore {
				t.Errorf("reads after compaction run again:\n%s\nwant\n%s", got, readBefore)
			}
		})
	}
}

// checkFailedRow checks that row i, after (written as w), holds what the
// failed step left: its cells as "written", "both" those and a compacted
// cell, or the "compacted" cell alone.
func checkFailedRow(t *testing.T, e *env, i int, holds string, w, after store.Row) {
	t.Helper()
	switch holds {
	case "written":
		if renderCells(after.Cells) != renderCells(w.Cells) {
			t.Errorf("row %d %x holds %s, want its cells as written %s", i, w.Key, renderCells(after.Cells), renderCells(w.Cells))
		}
	case "both":
		checkBoth(t, e, w, after)
	case "compacted":
		checkCompactedRow(t, e, w, after)
	}
}
