package wlog_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/promhbase/promhbase/store/embedded/wlog"
	"github.com/promhbase/promhbase/store/embedded/wlog/wlogfault"
)

// faultWorkload appends 60 records, waiting for each, rotating every 7
// and retiring the segments before the one just finished (as the row
// buffer's flushes do once the records are in Pebble), and returns the
// records acknowledged (WaitDurable returned nil), those appended, and
// how many of the first appended were retired (they may be gone).
func faultWorkload(w *wlog.Log) (acked, appended []string, retired int) {
	ends := map[uint64]int{} // a finished segment -> records appended before its end
	for i := range 60 {
		p := fmt.Sprintf("record %02d", i)
		appended = append(appended, p)
		if err := w.WaitDurable(w.Append([]byte(p))); err == nil {
			acked = append(acked, p)
		}
		if i%7 == 6 {
			if seg, err := w.Rotate(); err == nil {
				ends[seg] = len(appended)
				retired = max(retired, ends[seg-1])
				_ = w.RemoveThrough(seg - 1)
			}
		}
	}
	return acked, appended, retired
}

// TestFaultEveryOperation: for every k, the k-th operation of a workload
// of appends, rotations and retirements fails with ENOSPC or EIO; after
// the workload, Close, and a crash that drops what was not fdatasynced,
// a replay holds every acknowledged record, in order, each once, and
// nothing that was not appended; after a failed write (ENOSPC) the log
// takes writes again: the last records are acknowledged.
func TestFaultEveryOperation(t *testing.T) {
	fault, count := wlogfault.FailNth(0, nil)
	dir := t.TempDir()
	w, err := wlog.Open(dir, 1, wlog.Options{FS: wlogfault.New(fault), KeepBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	faultWorkload(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops := count()
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
		for k := 1; k <= ops; k++ {
			t.Run(fmt.Sprintf("%v/op%d", errno, k), func(t *testing.T) {
				fault, count := wlogfault.FailNth(k, errno)
				fs := wlogfault.New(fault)
				dir := t.TempDir()
				w, err := wlog.Open(dir, 1, wlog.Options{FS: fs, KeepBytes: 1 << 10})
				if err != nil {
					return // the first segment could not be made: nothing acknowledged
				}
				acked, appended, retired := faultWorkload(w)
				_ = w.Close()
				if err := fs.Crash(dir); err != nil {
					t.Fatal(err)
				}
				got, _ := wlog.ReadAll(t, dir)
				checkReplay(t, got, acked, appended, retired)
				// A write that failed leaves the log usable: the records
				// after a failed write are acknowledged again.
				if errno == syscall.ENOSPC && len(acked) > 0 && acked[len(acked)-1] != appended[len(appended)-1] && count() > k+5 {
					t.Errorf("the last record was not acknowledged: the log did not recover from the failure (acked %d of %d)", len(acked), len(appended))
				}
			})
		}
	}
}

// checkReplay fails the test unless got holds every acknowledged record
// but the first retired appended, and otherwise only appended ones, in
// the order appended, each once.
func checkReplay(t *testing.T, got, acked, appended []string, retired int) {
	t.Helper()
	at := map[string]int{}
	for i, p := range appended {
		at[p] = i
	}
	last := -1
	for _, p := range got {
		i, ok := at[p]
		if !ok {
			t.Fatalf("replayed %q, never appended", p)
		}
		if i <= last {
			t.Fatalf("replayed %q after %q: out of order or twice", p, appended[last])
		}
		last = i
	}
	for _, p := range acked {
		if at[p] >= retired && !slices.Contains(got, p) {
			t.Fatalf("acknowledged %q lost; replayed %q", p, got)
		}
	}
}

// TestFailedWriteKeepsRecords: a group commit whose write fails (a full
// disk) fails its waiters, cuts the file back and writes the same
// records with the next commit, once space is back.
func TestFailedWriteKeepsRecords(t *testing.T) {
	var full atomic.Bool // the next operation meets a full disk
	fs := wlogfault.New(func(string, string) error {
		if full.CompareAndSwap(true, false) {
			return syscall.ENOSPC
		}
		return nil
	})
	dir := t.TempDir()
	w, err := wlog.Open(dir, 1, wlog.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WaitDurable(w.Append([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	if err := w.WaitDurable(w.Append([]byte("b"))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WaitDurable on a full disk = %v, want ENOSPC", err)
	}
	if err := w.WaitDurable(w.Append([]byte("c"))); err != nil {
		t.Fatalf("WaitDurable once space is back: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, torn := wlog.ReadAll(t, dir); !slices.Equal(got, []string{"a", "b", "c"}) || torn {
		t.Fatalf("replayed %q (torn %v), want a, b, c whole", got, torn)
	}
}
