package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/promhbase/promhbase/store"
)

// TestSettleTruncatesRetiredLogs: the live log is not preallocated;
// after a settle flushed the memtable,
// the log files Pebble keeps for reuse take no bytes, the store goes on
// writing (into reused files) and reads everything back after a reopen.
func TestSettleTruncatesRetiredLogs(t *testing.T) {
	dir, opts := t.TempDir(), Options{Tables: []string{"u"}, SettleInterval: -1}
	s := mustOpen(t, dir, opts)
	ctx := context.Background()
	put := func(round int) { putRound(t, s, 200, round, 0) }
	retired := func() (n int, bytes int64) {
		t.Helper()
		names := pebbleLogs(vfs.Default, dir)
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
	names := pebbleLogs(vfs.Default, dir)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, names[len(names)-1]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > st.Size+1<<20 {
		t.Errorf("live log %s: %d bytes allocated for %d bytes", names[len(names)-1], st.Blocks*512, st.Size)
	}
	// A crash now: the files as they are, the last round only in the live
	// log (written into a reused, truncated file), copied while open.
	checkRound(t, crashReopen(t, s, dir, opts), 200, 9, 0)
}

// TestReusedLogStartsEmpty: a log file Pebble reuses is emptied first, so
// the live log takes the bytes written into it, not those of the larger
// log the file held before (retired by a flush before a settle could
// truncate it); what it holds reads back after a crash.
func TestReusedLogStartsEmpty(t *testing.T) {
	dir, opts := t.TempDir(), Options{Tables: []string{"u"}, SettleInterval: -1}
	s := mustOpen(t, dir, opts)
	put := func(round, size int) { putRound(t, s, 100, round, size) }
	live := func() (string, int64) {
		t.Helper()
		names := pebbleLogs(vfs.Default, dir)
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
	checkRound(t, crashReopen(t, s, dir, opts), 100, 4, 10)
}

// roundValue is the value putRound writes in a round: the round's number
// followed by pad zero bytes.
func roundValue(round, pad int) []byte {
	return append([]byte(fmt.Sprint(round)), make([]byte, pad)...)
}

// putRound writes rows r000..r<n-1> of table u, each one cell of
// roundValue(round, pad) at version round+1.
func putRound(t *testing.T, s *Store, n, round, pad int) {
	t.Helper()
	for i := range n {
		c := store.Cell{Family: []byte("f"), Qualifier: []byte("q"), Value: roundValue(round, pad), Timestamp: uint64(round + 1)}
		if err := s.Put(context.Background(), "u", []store.Put{{Row: []byte(fmt.Sprintf("r%03d", i)), Cells: []store.Cell{c}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRound fails t unless each of rows r000..r<n-1> of table u holds one
// cell, the value putRound wrote in round.
func checkRound(t *testing.T, s *Store, n, round, pad int) {
	t.Helper()
	for i := range n {
		r, err := s.Get(context.Background(), "u", []byte(fmt.Sprintf("r%03d", i)), "")
		if err != nil || len(r.Cells) != 1 || !bytes.Equal(r.Cells[0].Value, roundValue(round, pad)) {
			t.Fatalf("row %d after the crash: %v %v, want the value of round %d", i, r.Cells, err, round)
		}
	}
}

// crashReopen copies dir, the directory of the open store s (what a crash
// leaves behind), closes s and opens the copy with opts; the copy's store
// is closed when t ends.
func crashReopen(t *testing.T, s *Store, dir string, opts Options) *Store {
	t.Helper()
	crashed := crashCopy(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, crashed, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// crashCopy copies the files of an open store's directory, as they are,
// into a new directory (what a crash leaves behind) and returns it. The
// store's background work may add and remove files while they are
// copied (a compaction's table, then the MANIFEST naming it): the copy
// is taken again until the directory's files, names and sizes, are the
// same after it as before, an instant a crash could have left.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	for range 50 {
		crashed := t.TempDir()
		before := storeFiles(t, dir)
		for name := range before {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				break // removed meanwhile: the listings differ
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(crashed, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if maps.Equal(before, storeFiles(t, dir)) {
			return crashed
		}
	}
	t.Fatalf("the files of %s kept changing while they were copied", dir)
	return ""
}

// storeFiles returns the regular files of dir but LOCK, by name, with
// their sizes.
func storeFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = fi.Size()
	}
	return files
}
