package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/wlog"
)

// dirFiles returns the sizes of the files in dir whose names end in one
// of suffixes.
func dirFiles(t *testing.T, dir string, suffixes ...string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		for _, suf := range suffixes {
			if strings.HasSuffix(e.Name(), suf) {
				fi, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				out[e.Name()] = fi.Size()
			}
		}
	}
	return out
}

// putRows writes n rows of one cell of size bytes into table.
func putRows(t *testing.T, s *Store, table string, from, n, size int) {
	t.Helper()
	for i := from; i < from+n; i += 100 {
		var puts []store.Put
		for j := i; j < min(i+100, from+n); j++ {
			puts = append(puts, store.Put{Row: fmt.Appendf(nil, "row-%08d", j), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: make([]byte, size)}}})
		}
		if err := s.Put(t.Context(), table, puts); err != nil {
			t.Fatal(err)
		}
	}
}

// writeUntil puts the rows row-%08d of table from first on, one a put,
// each with the cell t:01=value(i), until stop closes: with a pause, one a
// pause; without, at once one after the other. After each put it stores
// the rows acknowledged in acked, when acked is not nil. A put's error is
// reported with t.Error and ends it.
func writeUntil(t *testing.T, s *Store, table string, first int, pause time.Duration, value func(i int) []byte, acked *atomic.Int64, stop <-chan struct{}) {
	for i := 0; ; i++ {
		if pause > 0 {
			select {
			case <-stop:
				return
			case <-time.After(pause):
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		p := []store.Put{{Row: fmt.Appendf(nil, "row-%08d", first+i), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: value(i)}}}}
		if err := s.Put(t.Context(), table, p); err != nil {
			t.Error(err)
			return
		}
		if acked != nil {
			acked.Store(int64(i + 1))
		}
	}
}

// TestRowBufferLogBounded: after its rows are flushed the row buffer's log
// holds at most its current segment and one file kept for reuse, each at
// most the buffer's budget, however large a segment once was (here: one
// written under a larger budget and replayed); a clean Close leaves it
// empty.
func TestRowBufferLogBounded(t *testing.T) {
	dir := t.TempDir()
	rbDir := filepath.Join(dir, rowBufferDir)
	opts := Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}, BufferBytes: 64 << 20, SettleInterval: -1}
	s := mustOpen(t, dir, opts)
	putRows(t, s, "d", 0, 4000, 1000) // 4 MB in one segment
	crash(t, s)
	if files := dirFiles(t, rbDir, ".wal", wlog.FreeName); len(files) != 1 {
		t.Fatalf("log files before the reopen: %v", files)
	}

	const budget = 256 << 10
	opts.BufferBytes = budget
	s = mustOpen(t, dir, opts)
	for round := range 5 {
		putRows(t, s, "d", 4000+round*1000, 1000, 1000) // flushes on its own at the budget
		if err := s.rb.flush(); err != nil {
			t.Fatal(err)
		}
		files := dirFiles(t, rbDir, ".wal", wlog.FreeName)
		if len(files) > 2 {
			t.Errorf("round %d: %d log files after a flush, want the current segment and the one kept: %v", round, len(files), files)
		}
		for name, size := range files {
			if size > budget {
				t.Errorf("round %d: log file %s of %d bytes, more than the budget %d", round, name, size, budget)
			}
		}
	}
	if err := s.rb.wal.Trim(); err != nil {
		t.Fatal(err)
	}
	if n := s.rb.wal.DiskBytes(); n != 0 {
		t.Errorf("%d bytes of log after a flush and a trim, want 0", n)
	}
	putRows(t, s, "d", 9000, 10, 10)
	want := dump(t, s, "d")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, size := range dirFiles(t, rbDir, ".wal", wlog.FreeName) {
		total += size
	}
	if total != 0 {
		t.Errorf("%d bytes of row buffer log after Close, want 0", total)
	}
	s = mustOpen(t, dir, opts)
	defer s.Close()
	if got := dump(t, s, "d"); got != want {
		t.Errorf("after reopening: %d bytes of dump, want %d", len(got), len(want))
	}
}

// TestCloseLeavesNoLog: Close flushes the row buffer and Pebble's memtable,
// so that neither log holds anything to replay, and removes Pebble's log
// files; what was written reads back after the reopen.
func TestCloseLeavesNoLog(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Tables: []string{"d", "u"}, BufferTables: []string{"d"}, SettleInterval: -1}
	s := mustOpen(t, dir, opts)
	putRows(t, s, "d", 0, 2000, 100)
	putRows(t, s, "u", 0, 2000, 1000) // 2 MB in Pebble's memtable and log
	if _, err := s.Increment(t.Context(), "u", []byte("counter"), "t", "n", 5); err != nil {
		t.Fatal(err)
	}
	wantD, wantU := dump(t, s, "d"), dump(t, s, "u")
	if n := s.db.Metrics().WAL.Size; n < 1<<20 {
		t.Fatalf("Pebble's log holds %d bytes before Close; the test shows nothing", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logs int64
	for name, size := range dirFiles(t, dir, ".log") {
		t.Logf("%s: %d bytes", name, size)
		logs += size
	}
	for _, size := range dirFiles(t, filepath.Join(dir, rowBufferDir), ".wal", wlog.FreeName) {
		logs += size
	}
	if logs > 64<<10 {
		t.Errorf("%d bytes of logs after Close, want next to none", logs)
	}
	s = mustOpen(t, dir, opts)
	defer s.Close()
	if got := dump(t, s, "d"); got != wantD {
		t.Errorf("table d after reopening: %d bytes of dump, want %d", len(got), len(wantD))
	}
	if got := dump(t, s, "u"); got != wantU {
		t.Errorf("table u after reopening: %d bytes of dump, want %d", len(got), len(wantU))
	}
	if v, ok, err := s.GetCell(t.Context(), "u", []byte("counter"), "t", "n"); err != nil || !ok || v[7] != 5 {
		t.Errorf("counter after reopening = %x %v %v", v, ok, err)
	}
}
