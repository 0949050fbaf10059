package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestDiskGuard: the guard's state as the free space moves: read-only
// below the watermark, writable again only a margin above it
// (hysteresis); after an ENOSPC read-only, its ballast gone, until the
// ballast could be made again with room to spare.
func TestDiskGuard(t *testing.T) {
	const mib = 1 << 20
	dir := t.TempDir()
	free := int64(1000 * mib)
	g := &diskGuard{dir: dir, min: 100 * mib, ballast: 10 * mib, freeBytes: func(string) (int64, error) { return free, nil }}
	ballast := func() bool { _, err := os.Stat(filepath.Join(dir, BallastName)); return err == nil }
	for _, step := range []struct {
		name     string
		free     int64 // before check; -1: an ENOSPC instead
		readOnly bool
		ballast  bool
	}{
		{name: "room", free: 1000 * mib, ballast: true},
		{name: "just above the watermark", free: 101 * mib, ballast: true},
		{name: "below the watermark", free: 99 * mib, readOnly: true, ballast: true},
		{name: "back above, within the margin", free: 110 * mib, readOnly: true, ballast: true},
		{name: "past the margin", free: 126 * mib, ballast: true},
		{name: "a write met ENOSPC", free: -1, readOnly: true},
		{name: "space for the watermark but not the ballast", free: 130 * mib, readOnly: true},
		{name: "space for both", free: 500 * mib, ballast: true},
	} {
		if step.free < 0 {
			g.noteErr(&os.PathError{Op: "write", Path: "x", Err: errNoSpace})
		} else {
			free = step.free
			g.check()
		}
		ro := g.writable() != nil
		if ro != step.readOnly || ballast() != step.ballast {
			t.Fatalf("%s: read-only %v, ballast %v; want %v, %v", step.name, ro, ballast(), step.readOnly, step.ballast)
		}
	}
}

// TestDiskGuardOff: where the free space cannot be read the guard is off
// and says so: no watermark, no ballast, and an ENOSPC fails its write
// alone, never turning the store read-only for good; it starts and
// closes with no goroutine.
func TestDiskGuardOff(t *testing.T) {
	dir := t.TempDir()
	g := newDiskGuard(dir, 1<<40, 1<<20, func(string) (int64, error) { return 0, errFreeUnknown })
	if g.off == "" || !strings.Contains(g.off, "the disk guard is off") {
		t.Fatalf("off %q, want why the guard is off", g.off)
	}
	g.start()
	g.noteErr(&os.PathError{Op: "write", Path: "x", Err: errNoSpace})
	if err := g.writable(); err != nil {
		t.Errorf("writable after an ENOSPC with the guard off: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, BallastName)); !os.IsNotExist(err) {
		t.Errorf("a ballast made with the guard off: %v", err)
	}
	g.close(true)
}

// TestFreeBytes: this system's free space reads (the guard is on), as a
// positive number of bytes.
func TestFreeBytes(t *testing.T) {
	free, err := freeBytes(t.TempDir())
	if err != nil || free <= 0 {
		t.Fatalf("freeBytes = %d, %v", free, err)
	}
}

// TestReadOnlyStore: a read-only store refuses puts with ErrReadOnly, a
// store.ErrUnavailable that says why, and goes on reading, deleting and
// taking check-and-puts.
func TestReadOnlyStore(t *testing.T) {
	s := openTemp(t, Options{BufferTables: []string{"t"}})
	ctx := context.Background()
	put := []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte("v")}}}}
	if err := s.Put(ctx, "t", put); err != nil {
		t.Fatal(err)
	}
	s.guard.setReadOnly("a test's full disk")
	err := s.Put(ctx, "t", put)
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "a test's full disk") {
		t.Fatalf("Put on a read-only store: %v", err)
	}
	if ro, why := s.ReadOnly(); !ro || why != "a test's full disk" {
		t.Fatalf("ReadOnly() = %v, %q", ro, why)
	}
	if row, err := s.Get(ctx, "t", []byte("r"), ""); err != nil || len(row.Cells) != 1 {
		t.Fatalf("Get on a read-only store: %v, %v", row, err)
	}
	if ok, err := s.CheckAndPut(ctx, "u", store.Put{Row: []byte("lease"), Cells: put[0].Cells}, "f", "q", nil); err != nil || !ok {
		t.Fatalf("CheckAndPut on a read-only store: %v, %v", ok, err)
	}
	if err := s.Delete(ctx, "t", []byte("r"), nil); err != nil {
		t.Fatalf("Delete on a read-only store: %v", err)
	}
}

// errNoSpace is the error of a full disk.
var errNoSpace = syscall.ENOSPC
