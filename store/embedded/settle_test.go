package embedded

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
)

// TestReclaimGivesSpaceBack: the space of rows deleted one by one and of a
// range deleted at once goes back to the filesystem when Reclaim returns,
// in a buffered table and in one that is not, and that of replaced cells
// in the table that is not; what was kept reads back. (A buffered row
// written again keeps the run of each flush: a later run hides the
// columns of an earlier one without replacing its key.)
func TestReclaimGivesSpaceBack(t *testing.T) {
	for _, buffered := range []bool{false, true} {
		t.Run(fmt.Sprintf("buffered %v", buffered), func(t *testing.T) {
			ctx := t.Context()
			opts := Options{NoSync: true, Tables: []string{"d"}, SettleInterval: -1}
			if buffered {
				opts.BufferTables = []string{"d"}
			}
			s := openTemp(t, opts)
			rnd := rand.New(rand.NewPCG(1, 2))
			value := func() []byte { // incompressible
				v := make([]byte, 1000)
				for i := range v {
					v[i] = byte(rnd.Uint32())
				}
				return v
			}
			put := func(from, n int) {
				for i := from; i < from+n; i += 100 {
					var puts []store.Put
					for j := i; j < from+n && j < i+100; j++ {
						puts = append(puts, store.Put{Row: fmt.Appendf(nil, "row-%06d", j), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: value()}}})
					}
					if err := s.Put(ctx, "d", puts); err != nil {
						t.Fatal(err)
					}
				}
			}
			put(0, 4000)
			if err := s.Reclaim(ctx); err != nil {
				t.Fatal(err)
			}
			full := s.SSTableBytes()
			if full < 4_000_000 {
				t.Fatalf("%d bytes of tables for 4 MB of values", full)
			}
			// Rows deleted one by one, a range at once, cells replaced.
			for i := range 1000 {
				if err := s.Delete(ctx, "d", fmt.Appendf(nil, "row-%06d", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DeleteRows(ctx, "d", []byte("row-001000"), []byte("row-003000")); err != nil {
				t.Fatal(err)
			}
			if !buffered {
				put(3000, 1000) // the last quarter written again
			}
			if err := s.Reclaim(ctx); err != nil {
				t.Fatal(err)
			}
			left := s.SSTableBytes()
			t.Logf("tables: %d bytes, %d after deleting 3/4 (and replacing 1/4 unbuffered)", full, left)
			if left > full/4+full/10 {
				t.Errorf("%d bytes of tables left of %d, with a quarter of the rows live", left, full)
			}
			sc := s.Scan(ctx, store.ScanRequest{Table: "d"})
			n := 0
			for sc.Next() {
				if want := fmt.Appendf(nil, "row-%06d", 3000+n); !bytes.Equal(sc.Row().Key, want) {
					t.Fatalf("row %q, want %q", sc.Row().Key, want)
				}
				n++
			}
			if err := sc.Err(); err != nil || n != 1000 {
				t.Errorf("%d rows read back (%v), want 1000", n, err)
			}
			sc.Close()
		})
	}
}

// TestBackgroundSettle: with no Reclaim, the background settle compacts
// deleted rows away while writes go on, and once the writes stop flushes
// the row buffer and the memtable and trims the row buffer's log.
func TestBackgroundSettle(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, Options{NoSync: true, Tables: []string{"d", "u"}, BufferTables: []string{"d"}, SettleInterval: 20 * time.Millisecond})
	putRows(t, s, "d", 0, 3000, 1000)
	putRows(t, s, "u", 0, 100, 10)
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := s.SSTableBytes()
	if err := s.DeleteRows(ctx, "d", nil, []byte("row-00002900")); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, done func() bool) {
		t.Helper()
		poll.Until(t, 20*time.Second, 5*time.Millisecond, what, func() (bool, string) { return done(), "not yet" })
	}
	// Writes go on (a row every few milliseconds) while the deleted rows
	// are compacted away.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		writeUntil(t, s, "d", 5000, 2*time.Millisecond, func(int) []byte { return []byte{1} }, nil, stop)
	}()
	waitFor("deleted rows compacted away", func() bool { return s.SSTableBytes() < before/5 })
	close(stop)
	wg.Wait()
	if s.rb.stats().cells == 0 {
		t.Error("the row buffer was flushed while writes went on")
	}
	waitFor("row buffer flushed and its log trimmed once writes stopped", func() bool {
		return s.rb.stats().cells == 0 && s.rb.wal.DiskBytes() == 0
	})
	waitFor("memtable flushed once writes stopped", func() bool {
		m := s.db.Metrics()
		return m.WAL.Size == 0 || m.Flush.Count > 1
	})
	if n := s.settler.errors.Load(); n > 0 {
		t.Errorf("%d background settles failed", n)
	}
}

// TestSettleConcurrent runs writers, deletes, range deletes, reads,
// Reclaims and the background settle at once (for the race detector), and
// then checks the table against what the writers left.
func TestSettleConcurrent(t *testing.T) {
	ctx := t.Context()
	s, err := Open(t.TempDir(), Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}, BufferBytes: 64 << 10,
		SettleInterval: 5 * time.Millisecond, RowCodecs: map[string]RowCodec{"d": toyCodec{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writers, rounds = 4, 150
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				// Each writer owns the rows w-*: it writes ten, deletes one
				// whole, one range, reads one.
				var puts []store.Put
				for j := range 10 {
					puts = append(puts, store.Put{Row: fmt.Appendf(nil, "%d-%04d", w, (i*10+j)%400), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{byte(i)}, Value: []byte{byte(w), byte(i)}}}})
				}
				if err := s.Put(ctx, "d", puts); err != nil {
					t.Error(err)
					return
				}
				if err := s.Delete(ctx, "d", fmt.Appendf(nil, "%d-%04d", w, i%400), nil); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 9 {
					if err := s.DeleteRows(ctx, "d", fmt.Appendf(nil, "%d-%04d", w, i*7%400), fmt.Appendf(nil, "%d-%04d", w, i*7%400+20)); err != nil {
						t.Error(err)
						return
					}
				}
				if i%50 == 49 && w == 0 {
					if err := s.Reclaim(ctx); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := s.Get(ctx, "d", fmt.Appendf(nil, "%d-%04d", w, i%400), ""); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := dump(t, s, "d")
	if err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s, "d"); got != want {
		t.Errorf("a settle changed what the table holds")
	}
}

// TestDeleteRowsReplay: rows a DeleteRows removed from the row buffer stay
// removed when its log is replayed after a crash, and a row written in
// the range after it comes back; likewise for the rows of a buffer whose
// flush failed and waits for its retry.
func TestDeleteRowsReplay(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	opts := Options{Tables: []string{"d"}, BufferTables: []string{"d"}, SettleInterval: -1}
	s := mustOpen(t, dir, opts)
	put := func(rows ...string) {
		t.Helper()
		var puts []store.Put
		for _, r := range rows {
			puts = append(puts, store.Put{Row: []byte(r), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte(r), Value: []byte("v")}}})
		}
		if err := s.Put(ctx, "d", puts); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "b", "c") // flushed into Pebble
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	put("a", "b1", "b2", "c", "d") // a and c again, in the buffer and its log
	// A flush that fails: its buffer waits for the retry.
	block := filepath.Join(dir, rowBufferDir, "ingest.sst")
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.rb.flush(); err == nil {
		t.Fatal("flush succeeded with its sstable's name taken")
	}
	put("b3", "e")
	if err := s.DeleteRows(ctx, "d", []byte("b"), []byte("d")); err != nil {
		t.Fatal(err)
	}
	put("b4", "c")
	const want = "61: t:61=76\n6234: t:6234=76\n63: t:63=76\n64: t:64=76\n65: t:65=76\n"
	check := func(when string) {
		t.Helper()
		got := dump(t, s, "d")
		// Versions aside.
		var b bytes.Buffer
		for _, line := range bytes.SplitAfter([]byte(got), []byte("\n")) {
			if i := bytes.IndexByte(line, '@'); i >= 0 {
				line = append(line[:i:i], '\n')
			}
			b.Write(line)
		}
		if b.String() != want {
			t.Errorf("%s:\n%s\nwant:\n%s", when, b.String(), want)
		}
	}
	check("after DeleteRows")
	crash(t, s)
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, opts)
	defer s.Close()
	check("after the replay")
}

// TestTableBytes: a table's bytes on disk, none for an empty one, an error
// for one that does not exist.
func TestTableBytes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Options{NoSync: true, Tables: []string{"d", "e", "u"}, BufferTables: []string{"d"}, SettleInterval: -1})
	putRows(t, s, "d", 0, 1000, 1000)
	putRows(t, s, "u", 0, 100, 1000)
	if err := s.CompactAll(ctx); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, tc := range []struct {
		table    string
		min, max int64
	}{{"d", 1_000, 2 << 20}, {"u", 100, 1 << 20}, {"e", 0, 4 << 10}} { // e: an estimate over a file of d and u
		n, err := s.TableBytes(ctx, tc.table)
		if err != nil || n < tc.min || n > tc.max {
			t.Errorf("TableBytes(%s) = %d, %v; want %d to %d", tc.table, n, err, tc.min, tc.max)
		}
		sum += n
	}
	if live := int64(s.SSTableBytes()); sum > live {
		t.Errorf("the tables' bytes add up to %d, more than the %d of every sstable", sum, live)
	}
	if _, err := s.TableBytes(ctx, "x"); err == nil {
		t.Error("TableBytes of a table not in Options.Tables: no error")
	}
}

// TestSpans: the ranges noted for a settle are merged where they overlap
// or touch, and bounded in number.
func TestSpans(t *testing.T) {
	k := func(s string) []byte { return []byte(s) }
	got := mergeSpans([]span{{k("c"), k("d")}, {k("a"), k("b")}, {k("b"), k("c")}, {k("x"), k("z")}, {k("y"), k("y\x00")}})
	if len(got) != 2 || string(got[0].lo) != "a" || string(got[0].hi) != "d" || string(got[1].lo) != "x" || string(got[1].hi) != "z" {
		t.Errorf("merged %q", got)
	}
	var spans []span
	for i := range 3 * maxPendingSpans {
		lo := fmt.Appendf(nil, "%08d", i*2)
		spans = addSpan(spans, span{lo, append(bytes.Clone(lo), 0)})
	}
	if len(spans) > 2*maxPendingSpans {
		t.Errorf("%d spans noted, want at most %d", len(spans), 2*maxPendingSpans)
	}
	merged := mergeSpans(spans)
	for i := range 3 * maxPendingSpans {
		key := fmt.Appendf(nil, "%08d", i*2)
		covered := false
		for _, sp := range merged {
			if bytes.Compare(sp.lo, key) <= 0 && bytes.Compare(key, sp.hi) < 0 {
				covered = true
				break
			}
		}
		if !covered {
			t.Fatalf("key %s noted and not covered", key)
		}
	}
}
