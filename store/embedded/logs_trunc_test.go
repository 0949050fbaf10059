package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestSettleTruncatesRetiredLogs: the live log is not preallocated;
// after a settle flushed the memtable,
// the log files Pebble keeps for reuse take no bytes, the store goes on
// writing (into reused files) and reads everything back after a reopen.
func TestSettleTruncatesRetiredLogs(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Tables: []string{"u"}, SettleInterval: -1}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(round int) {
		t.Helper()
		for i := range 200 {
			row := []byte(fmt.Sprintf("r%03d", i))
			if err := s.Put(ctx, "u", []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(fmt.Sprint(round)), Timestamp: uint64(round + 1)}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	retired := func() (n int, bytes int64) {
		t.Helper()
		names := pebbleLogs(dir)
		for _, name := range names[:max(len(names)-1, 0)] { // the live one is the last
			fi, err := os.Stat(filepath.Join(dir, name))
			if err == nil {
				n++
				bytes += fi.Size()
			}
		}
		return n, bytes
	}
	for round := range 4 {
		put(round)
		if err := s.Reclaim(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, b := retired(); n == 0 || b != 0 {
		t.Errorf("after settles: %d retired log files of %d bytes, want some, of 0 bytes", n, b)
	}
	put(9)
	// The live log is not preallocated: it takes the blocks it holds.
	names := pebbleLogs(dir)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, names[len(names)-1]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > st.Size+1<<20 {
		t.Errorf("live log %s: %d bytes allocated for %d bytes", names[len(names)-1], st.Blocks*512, st.Size)
	}
	// A crash now: the files as they are, the last round only in the live
	// log (written into a reused, truncated file), copied while open.
	crashed := crashCopy(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(crashed, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 200 {
		r, err := s.Get(ctx, "u", []byte(fmt.Sprintf("r%03d", i)), "")
		if err != nil || len(r.Cells) != 1 || string(r.Cells[0].Value) != "9" {
			t.Fatalf("row %d after reopen: %v %v", i, r.Cells, err)
		}
	}
}

// TestReusedLogStartsEmpty: a log file Pebble reuses is emptied first, so
// the live log takes the bytes written into it, not those of the larger
// log the file held before (retired by a flush before a settle could
// truncate it); what it holds reads back after a crash.
func TestReusedLogStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Tables: []string{"u"}, SettleInterval: -1}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(round, size int) {
		t.Helper()
		for i := range 100 {
			v := append([]byte(fmt.Sprint(round)), make([]byte, size)...)
			if err := s.Put(ctx, "u", []store.Put{{Row: []byte(fmt.Sprintf("r%03d", i)), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: v, Timestamp: uint64(round + 1)}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	live := func() (string, int64) {
		t.Helper()
		names := pebbleLogs(dir)
		fi, err := os.Stat(filepath.Join(dir, names[len(names)-1]))
		if err != nil {
			t.Fatal(err)
		}
		return names[len(names)-1], fi.Size()
	}
	put(0, 8<<10) // a log many times larger than the later rounds write
	_, big := live()
	// Flushes rotate the log without a settle: the big log is retired as
	// it is, and taken for reuse by a later rotation.
	for round := 1; round <= 4; round++ {
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		put(round, 10)
	}
	name, size := live()
	if size > big/4 {
		t.Errorf("live log %s takes %d bytes after small writes; the big log took %d", name, size, big)
	}
	crashed := crashCopy(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(crashed, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		r, err := s.Get(ctx, "u", []byte(fmt.Sprintf("r%03d", i)), "")
		if err != nil || len(r.Cells) != 1 || r.Cells[0].Value[0] != '4' {
			t.Fatalf("row %d after the crash: %v %v", i, r.Cells, err)
		}
	}
}

// crashCopy copies the files of an open store's directory, as they are,
// into a new directory (what a crash leaves behind) and returns it.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	crashed := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return crashed
}
