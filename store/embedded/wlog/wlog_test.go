package wlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// readAll replays every segment in dir, in order, and returns the
// payloads and whether the last segment ended torn.
func readAll(t *testing.T, dir string) ([]string, bool) {
	t.Helper()
	segs, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var torn bool
	for _, seg := range segs {
		torn, err = ReadSegment(filepath.Join(dir, SegmentName(seg)), seg, func(p []byte) error {
			got = append(got, string(p))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return got, torn
}

// TestRecordLayout pins a record's bytes: len u32 ‖ crc32c(seg ‖ payload)
// u32 ‖ payload, little-endian.
func TestRecordLayout(t *testing.T) {
	got := AppendRecord(nil, 1, []byte("ab"))
	want := []byte{
		0x02, 0x00, 0x00, 0x00, // len: 2
		0, 0, 0, 0, // crc, filled in below
		'a', 'b', // payload
	}
	// crc32c (Castagnoli) over segment 1 as a u64, then the payload.
	crc := crc32.Update(crc32.Checksum([]byte{1, 0, 0, 0, 0, 0, 0, 0}, crc32.MakeTable(crc32.Castagnoli)), crc32.MakeTable(crc32.Castagnoli), []byte("ab"))
	binary.LittleEndian.PutUint32(want[4:], crc)
	if !bytes.Equal(got, want) {
		t.Errorf("record = %x, want %x", got, want)
	}
	if CRC(1, []byte("ab")) == CRC(2, []byte("ab")) {
		t.Error("the crc does not cover the segment's number")
	}
}

// TestAppendRotateReplay: records appended, by Append and AppendFunc, across
// rotations and concurrent writers, replay in their order, each writer's
// own in the order it appended them; retired segments leave one file kept
// for reuse, which the replay ignores.
func TestAppendRotateReplay(t *testing.T) {
	for _, c := range []struct {
		noSync   bool
		interval time.Duration
	}{{false, 0}, {true, 0}, {false, time.Millisecond}} {
		noSync := c.noSync
		t.Run(fmt.Sprintf("noSync=%v/interval=%v", noSync, c.interval), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(dir, 1, Options{NoSync: noSync, KeepBytes: 1 << 10, SyncInterval: c.interval})
			if err != nil {
				t.Fatal(err)
			}
			synced := 0
			w.SetBeforeSync(func() error { synced++; return nil })
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 50 {
						var pos uint64
						if i%2 == 0 {
							pos = w.Append(fmt.Appendf(nil, "%d:%d", g, i))
						} else {
							pos = w.AppendFunc(func(dst []byte) []byte { return fmt.Appendf(dst, "%d:%d", g, i) })
						}
						if err := w.WaitDurable(pos); err != nil {
							t.Error(err)
						}
					}
				})
			}
			first, err := w.Rotate()
			if err != nil || first != 1 {
				t.Fatalf("Rotate = %d, %v; want 1", first, err)
			}
			wg.Wait()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, torn := readAll(t, dir)
			if torn || len(got) != 200 {
				t.Fatalf("replayed %d records, torn %v; want 200 whole", len(got), torn)
			}
			next := make([]int, 4)
			for _, r := range got {
				var g, i int
				if _, err := fmt.Sscanf(r, "%d:%d", &g, &i); err != nil || i != next[g] {
					t.Fatalf("record %q out of order (next of %d is %d)", r, g, next[g])
				}
				next[g]++
			}
			if noSync != (synced == 0) {
				t.Errorf("beforeSync ran %d times with noSync %v", synced, noSync)
			}
		})
	}
}

// TestSyncInterval: with SyncInterval, WaitDurable returns once the
// records are in the segment's file (readable by another reader before
// any fdatasync), and the file is fdatasynced each interval that records
// were written in, not in the others; Close ends the loop.
func TestSyncInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		w, err := Open(dir, 1, Options{SyncInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := w.WaitDurable(w.Append(fmt.Appendf(nil, "r%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		got, torn := readAll(t, dir)
		if torn || !slices.Equal(got, []string{"r0", "r1", "r2"}) {
			t.Fatalf("file holds %q (torn %v) once WaitDurable returned; want r0..r2", got, torn)
		}
		if n := w.Fsyncs(); n != 0 {
			t.Fatalf("%d fdatasyncs before the first interval; want 0", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := w.Fsyncs(); n != 1 {
			t.Fatalf("%d fdatasyncs after one interval with records written; want 1", n)
		}
		time.Sleep(3 * time.Second) // nothing written: nothing to sync
		synctest.Wait()
		if n := w.Fsyncs(); n != 1 {
			t.Fatalf("%d fdatasyncs after idle intervals; want still 1", n)
		}
		if err := w.WaitDurable(w.Append([]byte("r3"))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := w.Fsyncs(); n != 2 {
			t.Fatalf("%d fdatasyncs after a second interval with a record; want 2", n)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSyncAllAppendedMeanwhile: SyncAll returns once the records appended
// before it are fdatasynced, though another is appended while it runs and
// nobody writes that one out (its appender waits later, or, in the store,
// behind the lock SyncAll's caller holds). It used to wait for that record
// too, spinning for good: a compaction's delete held the store's lock and
// every write stopped (CI, cmd/promhbase TestImportCommand, under load).
func TestSyncAllAppendedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, 1, Options{SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// The append lands while SyncAll's group commit runs (mu released),
	// between the position SyncAll waits for and the fdatasync.
	var late uint64
	w.SetBeforeSync(func() error {
		if late == 0 {
			late = w.Append([]byte("late"))
		}
		return nil
	})
	first := w.Append([]byte("first"))
	done := make(chan error, 1)
	go func() { done <- w.SyncAll() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang, not a time measured
		t.Fatal("SyncAll did not return: it waits for a record appended after it began, which nobody writes out")
	}
	if late <= first {
		t.Fatalf("the late record's position %d is not after the first's %d: the test appended nothing meanwhile", late, first)
	}
	if n := w.Fsyncs(); n != 1 {
		t.Fatalf("%d fdatasyncs by SyncAll; want 1", n)
	}
	if err := w.WaitDurable(late); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, torn := readAll(t, dir); torn || !slices.Equal(got, []string{"first", "late"}) {
		t.Fatalf("the segment holds %q (torn %v); want first, late", got, torn)
	}
}

// TestSyncIntervalAfterFailure: records acknowledged before the log fails
// (here its beforeSync) are still fdatasynced, by the background sync and
// by Close, which returns the failure.
func TestSyncIntervalAfterFailure(t *testing.T) {
	for _, byClose := range []bool{false, true} {
		t.Run(fmt.Sprintf("byClose=%v", byClose), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, err := Open(t.TempDir(), 1, Options{SyncInterval: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				failed := errors.New("pebble unavailable")
				var fail bool
				w.SetBeforeSync(func() error {
					if fail {
						return failed
					}
					return nil
				})
				if err := w.WaitDurable(w.Append([]byte("acknowledged"))); err != nil {
					t.Fatal(err)
				}
				fail = true
				if err := w.WaitDurable(w.Append([]byte("refused"))); !errors.Is(err, failed) {
					t.Fatalf("WaitDurable after beforeSync failed: %v, want %v", err, failed)
				}
				if !byClose {
					time.Sleep(time.Second)
					synctest.Wait()
					if n := w.Fsyncs(); n != 1 {
						t.Fatalf("%d fdatasyncs of the acknowledged record after the failure; want 1", n)
					}
				}
				if err := w.Close(); !errors.Is(err, failed) {
					t.Fatalf("Close = %v, want %v", err, failed)
				}
				if w.dirty {
					t.Error("the acknowledged record is still not fdatasynced after Close")
				}
			})
		})
	}
}

// TestRemoveThroughKeepsOne: retiring segments keeps the newest retired
// one, cut to KeepBytes, as the next segment's file; the next segment
// written over it replays only its own records.
func TestRemoveThroughKeepsOne(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, 1, Options{NoSync: true, KeepBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for seg := range 3 {
		for i := range 20 {
			w.Append(fmt.Appendf(nil, "old %d.%d", seg, i))
		}
		if _, err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.RemoveThrough(2); err != nil {
		t.Fatal(err)
	}
	if segs, _ := Segments(dir); !slices.Equal(segs, []uint64{3, 4}) {
		t.Fatalf("segments after RemoveThrough(2) = %v, want [3 4]", segs)
	}
	fi, err := os.Stat(filepath.Join(dir, FreeName))
	if err != nil || fi.Size() != 64 {
		t.Fatalf("kept file: %v, %v; want 64 bytes", fi, err)
	}
	if err := w.RemoveThrough(3); err != nil {
		t.Fatal(err)
	}
	// Segment 5 reuses the kept file: written over from its start.
	if _, err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	w.Append([]byte("new"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	torn, err := ReadSegment(filepath.Join(dir, SegmentName(5)), 5, func(p []byte) error {
		if string(p) != "new" {
			return fmt.Errorf("segment 5 replays %q", p)
		}
		return nil
	})
	if err != nil || !torn {
		t.Errorf("segment 5: torn %v, err %v; want torn (the old records after)", torn, err)
	}
}

// TestTrim: a trimmed log holds its records and nothing beyond them.
func TestTrim(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, 1, Options{NoSync: true, KeepBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(bytes.Repeat([]byte("x"), 500))
	if _, err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveThrough(1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rotate(); err != nil { // segment 3 over the kept file
		t.Fatal(err)
	}
	w.Append([]byte("y"))
	if err := w.WaitDurable(w.Position()); err != nil {
		t.Fatal(err)
	}
	if err := w.Trim(); err != nil {
		t.Fatal(err)
	}
	if want := int64(HeaderSize + 1); w.DiskBytes() != want {
		t.Errorf("DiskBytes after Trim = %d, want %d", w.DiskBytes(), want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitDurable(w.Position() + 1); err == nil {
		t.Error("WaitDurable after Close succeeded")
	}
}

// TestReplayReusedFile: a segment written over a reused file replays its
// own records and stops at the old ones, which are whole records of
// another segment.
func TestReplayReusedFile(t *testing.T) {
	file := slices.Concat(AppendRecord(nil, 2, []byte("new")), AppendRecord(nil, 1, []byte("old")), AppendRecord(nil, 1, []byte("older")))
	var got []string
	torn, err := Replay(file, 2, func(p []byte) error {
		got = append(got, string(p))
		return nil
	})
	if err != nil || !torn || !slices.Equal(got, []string{"new"}) {
		t.Errorf("replay = %q, torn %v, err %v; want [new], torn", got, torn, err)
	}
}

// FuzzReplay: any bytes replay to whole records and maybe a torn end,
// never a panic; what is replayed re-encodes to a prefix of the input.
func FuzzReplay(f *testing.F) {
	f.Add(AppendRecord(nil, 1, []byte("a")))
	f.Add(slices.Concat(AppendRecord(nil, 1, []byte("a")), AppendRecord(nil, 1, nil))[:12])
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var again []byte
		torn, err := Replay(data, 1, func(p []byte) error {
			again = AppendRecord(again, 1, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, again) || torn == (len(again) == len(data)) {
			t.Fatalf("replayed %d of %d bytes, torn %v", len(again), len(data), torn)
		}
	})
}
