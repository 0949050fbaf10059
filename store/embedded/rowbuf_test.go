package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
	"github.com/promhbase/promhbase/store/embedded/wlog"
	"github.com/promhbase/promhbase/test/testkit/poll"
)

// dump returns every row of table as text: keys, cells, versions.
func dump(t *testing.T, s *Store, table string) string {
	t.Helper()
	sc := s.Scan(t.Context(), store.ScanRequest{Table: table})
	defer sc.Close()
	var b strings.Builder
	for sc.Next() {
		r := sc.Row()
		fmt.Fprintf(&b, "%x:", r.Key)
		for _, c := range r.Cells {
			fmt.Fprintf(&b, " %s:%x=%x@%d", c.Family, c.Qualifier, c.Value, c.Timestamp)
		}
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRowBufferAgainstPebble applies the same random puts, deletes,
// check-and-puts, flushes and reopenings to a store whose table is
// buffered (with a budget that flushes every few operations; its flushes
// write runs) and to one whose table is not, and compares scans, row
// reads and cell reads after every step. The buffered store starts
// unbuffered in some seeds, so that its first runs lie over cell keys, and
// is reopened without buffering at times: a table with runs must stay
// buffered.
func TestRowBufferAgainstPebble(t *testing.T) {
	for seed := range uint64(10) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			clock := time.UnixMilli(1_700_000_000_000)
			now := func() time.Time { return clock }
			open := func(dir string, buffered bool) *Store {
				t.Helper()
				opts := Options{NoSync: true, Tables: []string{"d"}}
				if buffered {
					opts.BufferTables = []string{"d"}
					opts.BufferBytes = int64(rng.IntN(3)+1) << 20
				}
				if seed%2 == 1 {
					// Its runs packed where the codec takes them.
					opts.RowCodecs = map[string]RowCodec{"d": toyCodec{}}
				}
				s := mustOpen(t, dir, opts)
				s.now = now
				return s
			}
			refDir, bufDir := t.TempDir(), t.TempDir()
			ref, buf := open(refDir, false), open(bufDir, seed%3 != 0)
			t.Cleanup(func() { ref.Close(); buf.Close() })
			hasRuns := false
			rowKey := func() []byte {
				// Zero bytes and prefixes of each other, as OpenTSDB keys.
				k := []byte{0, 0, byte(rng.IntN(3)), 0}
				return k[:1+rng.IntN(4)]
			}
			col := func() ([]byte, []byte) {
				return []byte{"ft"[rng.IntN(2)]}, []byte{byte(rng.IntN(4)), 0}[:1+rng.IntN(2)]
			}
			ctx := t.Context()
			for step := range 500 {
				clock = clock.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
				row := rowKey()
				fam, qual := col()
				var op string
				switch r := rng.IntN(24); {
				case r >= 21:
					// A bulk put (PutBulk) of a few rows, a row now and
					// then twice, cells now and then out of column order
					// or with a timestamp: those go through the buffer.
					var puts []store.Put
					for n := range 1 + rng.IntN(4) {
						r := row
						if n > 0 && rng.IntN(4) > 0 {
							r = rowKey()
						}
						var cells []store.Cell
						for k := range 1 + rng.IntN(3) {
							f, q := col()
							c := store.Cell{Family: f, Qualifier: q, Value: []byte{byte(step), byte(step >> 8), byte(n), byte(k)}}
							if rng.IntN(8) == 0 {
								c.Timestamp = uint64(clock.UnixMilli()) - uint64(rng.IntN(5))
							}
							cells = append(cells, c)
						}
						if rng.IntN(3) > 0 {
							slices.SortFunc(cells, func(a, b store.Cell) int { return memrows.CompareColumns(a.Family, a.Qualifier, b.Family, b.Qualifier) })
							cells = slices.CompactFunc(cells, func(a, b store.Cell) bool {
								return memrows.CompareColumns(a.Family, a.Qualifier, b.Family, b.Qualifier) == 0
							})
						}
						puts = append(puts, store.Put{Row: r, Cells: cells})
						op += fmt.Sprintf(" %x %s", r, cellString(cells))
					}
					op = "bulk put" + op
					for _, s := range []*Store{ref, buf} {
						if err := s.PutBulk(ctx, "d", puts); err != nil {
							t.Fatal(op, err)
						}
					}
				case r < 10:
					// One cell, or several (a later one of a column wins).
					var cells []store.Cell
					for n := range 1 + rng.IntN(4)*rng.IntN(2) {
						f, q := fam, qual
						if n > 0 {
							f, q = col()
						}
						c := store.Cell{Family: f, Qualifier: q, Value: []byte{byte(step), byte(step >> 8), byte(n)}}
						if rng.IntN(3) == 0 {
							c.Timestamp = uint64(clock.UnixMilli()) - uint64(rng.IntN(5))
						}
						cells = append(cells, c)
					}
					p := []store.Put{{Row: row, Cells: cells}}
					op = fmt.Sprintf("put %x %s", row, cellString(cells))
					for _, s := range []*Store{ref, buf} {
						if err := s.Put(ctx, "d", p); err != nil {
							t.Fatal(op, err)
						}
					}
				case r < 14:
					var cols []store.Column
					switch rng.IntN(5) {
					case 0: // the whole row
					case 1: // every column, bounded: one pass over the row reads their versions
						for _, f := range []string{"f", "t"} {
							for _, q := range [][]byte{{0}, {1}, {2}, {3}, {0, 0}, {1, 0}} {
								cols = append(cols, store.Column{Family: []byte(f), Qualifier: q,
									Timestamp: uint64(clock.UnixMilli()) - uint64(rng.IntN(3))})
							}
						}
					default:
						cols = []store.Column{{Family: fam, Qualifier: qual}}
						if rng.IntN(2) == 0 {
							cols[0].Timestamp = uint64(clock.UnixMilli()) - uint64(rng.IntN(5))
						}
					}
					op = fmt.Sprintf("delete %x %v", row, cols)
					for _, s := range []*Store{ref, buf} {
						if err := s.Delete(ctx, "d", row, cols); err != nil {
							t.Fatal(op, err)
						}
					}
				case r < 16:
					c := store.Cell{Family: fam, Qualifier: qual, Value: []byte{byte(step)}}
					var want []byte
					if rng.IntN(2) == 0 {
						want = []byte{byte(rng.IntN(256)), byte(rng.IntN(2))}
					}
					op = fmt.Sprintf("check-and-put %x %s:%x", row, fam, qual)
					var got [2]bool
					for i, s := range []*Store{ref, buf} {
						ok, err := s.CheckAndPut(ctx, "d", store.Put{Row: row, Cells: []store.Cell{c}}, string(fam), string(qual), want)
						if err != nil {
							t.Fatal(op, err)
						}
						got[i] = ok
					}
					if got[0] != got[1] {
						t.Fatalf("step %d %s: written %v", step, op, got)
					}
				case r < 18:
					op = "flush"
					if buf.rb != nil {
						if err := buf.rb.flush(); err != nil {
							t.Fatal(err)
						}
						hasRuns = hasRuns || buf.rb.seq > 0
					}
					if rng.IntN(3) == 0 {
						op = "reclaim"
						if err := buf.Reclaim(ctx); err != nil {
							t.Fatal(err)
						}
					}
				case r == 20:
					start, stop := rowKey(), rowKey()
					if bytes.Compare(start, stop) > 0 {
						start, stop = stop, start
					}
					if rng.IntN(4) == 0 {
						stop = nil
					}
					op = fmt.Sprintf("delete rows [%x, %x)", start, stop)
					for _, s := range []*Store{ref, buf} {
						if err := s.DeleteRows(ctx, "d", start, stop); err != nil {
							t.Fatal(op, err)
						}
					}
				case r < 19:
					buffered := rng.IntN(2) == 0
					op = fmt.Sprintf("reopen (buffered %v)", buffered)
					if err := buf.Close(); err != nil {
						t.Fatal(err)
					}
					buf = open(bufDir, buffered)
					if buf.rb != nil {
						hasRuns = hasRuns || buf.rb.seq > 0
					}
					if hasRuns && !buf.buffered("d") {
						t.Fatalf("step %d: a table with runs opened unbuffered", step)
					}
				default:
					op = "get"
				}
				if a, b := dump(t, ref, "d"), dump(t, buf, "d"); a != b {
					t.Fatalf("step %d, after %s:\npebble:\n%s\nbuffered:\n%s", step, op, a, b)
				}
				ra, err := ref.Get(ctx, "d", row, "")
				if err != nil {
					t.Fatal(err)
				}
				rb, err := buf.Get(ctx, "d", row, "")
				if err != nil {
					t.Fatal(err)
				}
				if cellString(ra.Cells) != cellString(rb.Cells) {
					t.Fatalf("step %d, after %s: get %x: %s vs %s", step, op, row, cellString(ra.Cells), cellString(rb.Cells))
				}
				// One family: the buffer's fast path filters as it copies.
				fa1, err := ref.Get(ctx, "d", row, string(fam))
				if err != nil {
					t.Fatal(err)
				}
				fb1, err := buf.Get(ctx, "d", row, string(fam))
				if err != nil {
					t.Fatal(err)
				}
				if cellString(fa1.Cells) != cellString(fb1.Cells) {
					t.Fatalf("step %d, after %s: get %x family %s: %s vs %s", step, op, row, fam, cellString(fa1.Cells), cellString(fb1.Cells))
				}
				va, fa, _ := ref.GetCell(ctx, "d", row, string(fam), string(qual))
				vb, fb, _ := buf.GetCell(ctx, "d", row, string(fam), string(qual))
				if fa != fb || string(va) != string(vb) {
					t.Fatalf("step %d, after %s: cell %x %s:%x: %x %v vs %x %v", step, op, row, fam, qual, va, fa, vb, fb)
				}
			}
			if seed%3 != 0 && !hasRuns {
				t.Fatal("no flush wrote a run")
			}
		})
	}
}

func cellString(cells []store.Cell) string {
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "%s:%x=%x@%d ", c.Family, c.Qualifier, c.Value, c.Timestamp)
	}
	return b.String()
}

// crash stops s as a crash would: the row buffer's log keeps what was
// synced, nothing is flushed into Pebble.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.settler.stop()
	s.guard.close(true)
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	close(s.rb.stopSort)
	<-s.rb.sorterDone
	s.rb.mu.Lock()
	s.rb.closed = true
	s.rb.mu.Unlock()
	close(s.rb.stopFlush)
	<-s.rb.stopped
	if err := s.rb.wal.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRowBufferReplay checks that what the buffer held when the process
// died comes back from its log, deletes included, that a torn record at
// the log's end is dropped, and that a reused segment file's old records
// are not replayed.
func TestRowBufferReplay(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Tables: []string{"d"}, BufferTables: []string{"d"}}
	s := mustOpen(t, dir, opts)
	ctx := t.Context()
	for i := range 100 {
		p := store.Put{Row: []byte{0, byte(i % 10), 0}, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{byte(i)}, Value: []byte{byte(i)}}}}
		if err := s.Put(ctx, "d", []store.Put{p}); err != nil {
			t.Fatal(err)
		}
		// Two flushes: half the puts in Pebble, and the log's current
		// segment a reused file that still holds older records beyond
		// the new ones (of rows deleted since, which must stay deleted).
		if i == 50 || i == 60 {
			if err := s.rb.flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Delete(ctx, "d", []byte{0, 3, 0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "d", []byte{0, 4, 0}, []store.Column{{Family: []byte("t"), Qualifier: []byte{94}}}); err != nil {
		t.Fatal(err)
	}
	want := dump(t, s, "d")
	crash(t, s)
	segs, err := wlog.Segments(filepath.Join(dir, rowBufferDir))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	// A record cut short by the crash.
	f, err := os.OpenFile(filepath.Join(dir, rowBufferDir, wlog.SegmentName(segs[len(segs)-1])), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, walOpPut}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s = mustOpen(t, dir, opts)
	defer s.Close()
	if got := dump(t, s, "d"); got != want {
		t.Errorf("after replay:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(want, "\n"); n != 9 {
		t.Errorf("%d rows before the crash, want 9", n)
	}
	if st := s.rb.stats(); st.cells != 0 {
		t.Errorf("%d cells in the buffer after replay, want 0 (ingested)", st.cells)
	}
}

// TestRowBufferScanAcrossDelete: a scan that took Pebble's snapshot
// before a delete, and reads the row after it, never shows a value the
// delete did not remove but that was already overwritten (the column's
// older value in Pebble, or cells of a row deleted whole).
func TestRowBufferScanAcrossDelete(t *testing.T) {
	s := openTemp(t, Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
	ctx := t.Context()
	put := func(row, q, v string) {
		t.Helper()
		if err := s.Put(ctx, "d", []store.Put{{Row: []byte(row), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte(q), Value: []byte(v)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "q", "old")
	put("b", "q", "old")
	put("b", "p", "pebble only")
	put("c", "a", "old")
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	put("a", "q", "new")
	put("b", "q", "new")
	put("c", "z", "new") // after Pebble's columns of the row: appended, unless the row is wiped
	sc := s.Scan(ctx, store.ScanRequest{Table: "d"})
	defer sc.Close()
	if err := s.Delete(ctx, "d", []byte("a"), []store.Column{{Family: []byte("f"), Qualifier: []byte("q")}}); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"b", "c"} {
		if err := s.Delete(ctx, "d", []byte(row), nil); err != nil {
			t.Fatal(err)
		}
	}
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			if string(c.Value) != "new" {
				t.Errorf("row %s: %s = %q, a value hidden or deleted before the scan's end", sc.Row().Key, c.Qualifier, c.Value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s, "d"); got != "" {
		t.Errorf("after the deletes:\n%s", got)
	}
}

// TestRowBufferLogOfOtherTables: a log holding a table that is no longer
// buffered (another data table name, or no buffer at all) is ingested at
// open, not refused and not left to be replayed over newer writes later.
func TestRowBufferLogOfOtherTables(t *testing.T) {
	for _, tc := range []struct {
		name     string
		buffered []string
	}{{"other table buffered", []string{"e"}}, {"no buffer", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{Tables: []string{"d", "e"}, BufferTables: []string{"d"}})
			if err := s.Put(t.Context(), "d", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte("v")}}}}); err != nil {
				t.Fatal(err)
			}
			want := dump(t, s, "d")
			crash(t, s)
			s = mustOpen(t, dir, Options{Tables: []string{"d", "e"}, BufferTables: tc.buffered})
			defer s.Close()
			if got := dump(t, s, "d"); got != want || got == "" {
				t.Errorf("after reopening: %q, want %q", got, want)
			}
			if tc.buffered == nil {
				if segs, _ := wlog.Segments(filepath.Join(dir, rowBufferDir)); len(segs) > 0 {
					t.Errorf("log segments %v left", segs)
				}
			}
		})
	}
}

// TestRowBufferSyncsPebbleFirst: when the buffer's log is synced, what
// was committed to Pebble before (a request's new UIDs) is synced too.
func TestRowBufferSyncsPebbleFirst(t *testing.T) {
	s := openTemp(t, Options{Tables: []string{"d", "u"}, BufferTables: []string{"d"}})
	ctx := t.Context()
	if _, err := s.Increment(ctx, "u", []byte{0}, "id", "metrics", 1); err != nil { // not synced on its own
		t.Fatal(err)
	}
	if s.synced.Load() >= s.committed.Load() {
		t.Fatal("the increment is synced already; the test shows nothing")
	}
	pos, err := s.rb.put("d", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q"), Value: []byte("v")}}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.rb.wal.WaitDurable(pos); err != nil {
		t.Fatal(err)
	}
	if s.synced.Load() < s.committed.Load() {
		t.Errorf("the buffer's log is durable, Pebble's commit %d is not (synced %d)", s.committed.Load(), s.synced.Load())
	}
}

// TestRowBufferPresorts: new rows of the active buffer are put in key
// order in the background once the writes pause, without a read asking
// for it; a scan then returns every row in key order.
func TestRowBufferPresorts(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows int
	}{
		{"many", 3000},
		{"few", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t, Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}})
			rng := rand.New(rand.NewPCG(uint64(tc.rows), 1))
			var puts []store.Put
			for i := range tc.rows {
				row := fmt.Appendf(nil, "row-%08d", rng.IntN(1_000_000_000))
				puts = append(puts, store.Put{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{byte(i)}, Value: []byte{1}, Timestamp: 1}}})
				if len(puts) == 100 || i == tc.rows-1 {
					if err := s.Put(t.Context(), "d", puts); err != nil {
						t.Fatal(err)
					}
					puts = puts[:0]
				}
			}
			m := s.rb.layers("d")[0]
			poll.Until(t, 10*time.Second, 5*time.Millisecond, "every row ordered without a read", func() (bool, string) {
				m.RLock()
				rows, sorted := m.Len(), m.SortedLen()
				m.RUnlock()
				return rows > 0 && sorted == rows, fmt.Sprintf("%d of %d rows ordered", sorted, rows)
			})
			if s.rb.presorts.Load() == 0 {
				t.Error("no presort counted")
			}
			var prev string
			n := 0
			for _, line := range strings.Split(strings.TrimSpace(dump(t, s, "d")), "\n") {
				key, _, _ := strings.Cut(line, ":")
				if key <= prev {
					t.Fatalf("row %s after %s", key, prev)
				}
				prev = key
				n++
			}
			m.RLock()
			want := m.Len()
			m.RUnlock()
			if n != want {
				t.Errorf("scan returned %d rows, the buffer holds %d", n, want)
			}
		})
	}
}

// TestRowBufferConcurrentPutsReplay: puts of the same cells from many
// goroutines at once enter the buffer in the order of their records in
// the log (put takes the table buffer's lock before it lets go of the
// buffer's), so that what a replay of the log gives after a crash is
// what was read before it.
func TestRowBufferConcurrentPutsReplay(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Tables: []string{"d"}, BufferTables: []string{"d"}}
	s := mustOpen(t, dir, opts)
	// Between a put's record and its cells, the goroutine yields: a put
	// whose cells could go in out of the log's order would then.
	s.rb.afterLog = runtime.Gosched
	ctx := t.Context()
	// Each round's writers start together and write the same cells (a
	// column of the round's own in each row), each its own value: which
	// value is newest is decided by their race.
	const writers, rounds, rows = 8, 60, 4
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				batch := make([]store.Put, rows)
				for r := range batch {
					batch[r] = store.Put{Row: []byte{0, byte(r), 0}, Cells: []store.Cell{
						{Family: []byte("t"), Qualifier: []byte{byte(round)}, Value: []byte{byte(w)}}}}
				}
				if err := s.PutDeferred(ctx, "d", batch); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	want := dump(t, s, "d")
	crash(t, s)
	s = mustOpen(t, dir, opts)
	defer s.Close()
	if got := dump(t, s, "d"); got != want {
		t.Errorf("after replay:\n%s\nwant what was read before the crash:\n%s", got, want)
	}
	if n := strings.Count(want, "\n"); n != rows {
		t.Errorf("%d rows before the crash, want %d", n, rows)
	}
}

// TestRowBufferPutsAcrossClose: puts still putting their cells in when
// the store closes (past the buffer's budget: each wakes the flusher after
// it let go of the buffer's lock) neither crash nor hang; the ones that
// come after the close fail as unavailable.
func TestRowBufferPutsAcrossClose(t *testing.T) {
	for round := range 5 {
		s := mustOpen(t, t.TempDir(), Options{Tables: []string{"d"}, BufferTables: []string{"d"}, BufferBytes: 4096})
		s.rb.afterLog = func() { time.Sleep(time.Millisecond) }
		var wg sync.WaitGroup
		var done atomic.Int64 // puts done, of all writers
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					p := store.Put{Row: []byte{0, byte(w), byte(i)}, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: make([]byte, 8<<10)}}}
					if err := s.PutDeferred(t.Context(), "d", []store.Put{p}); err != nil {
						if !errors.Is(err, store.ErrUnavailable) {
							t.Errorf("round %d: put after close: %v, want unavailable", round, err)
						}
						return
					}
					done.Add(1)
				}
			})
		}
		// Close once the writers are well under way (each put past the
		// budget has woken the flusher).
		poll.Until(t, 10*time.Second, time.Millisecond, "16 puts done", func() (bool, string) {
			n := done.Load()
			return n >= 16, fmt.Sprintf("%d puts done", n)
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

// TestRowBufferProbeAcrossFlush: a put looks its rows up before it takes
// the buffer's lock (probe); when a flush swaps the buffer out between the
// two, the indices it found name other rows of the new buffer, or none,
// and its cells must still go into their own rows.
func TestRowBufferProbeAcrossFlush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other bool // the new buffer gets a row of its own first
	}{
		{name: "new buffer empty"},
		{name: "new buffer holds another row", other: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, t.TempDir(), Options{Tables: []string{"d"}, BufferTables: []string{"d"}})
			// A put that panicked holds the buffer's lock: Close would
			// wait for it forever.
			panicked := false
			defer func() {
				if !panicked {
					s.Close()
				}
			}()
			ctx := t.Context()
			put := func(row string, q, v byte) {
				t.Helper()
				defer func() {
					if r := recover(); r != nil {
						panicked = true
						t.Fatalf("put of row %s panicked: %v", row, r)
					}
				}()
				p := store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{q}, Value: []byte{v}, Timestamp: 1}}}
				if err := s.PutDeferred(ctx, "d", []store.Put{p}); err != nil {
					t.Fatal(err)
				}
			}
			put("a", 1, 0xa1) // row a: index 0 of the first buffer
			s.rb.afterProbe = func() {
				s.rb.afterProbe = nil
				if err := s.rb.flush(); err != nil {
					t.Fatal(err)
				}
				if tc.other {
					put("c", 2, 0xc2) // row c: index 0 of the new buffer
				}
			}
			put("a", 2, 0xa2) // probed: row a at index 0
			want := "61: t:01=a1@1 t:02=a2@1\n"
			if tc.other {
				want += "63: t:02=c2@1\n"
			}
			if got := dump(t, s, "d"); got != want {
				t.Errorf("after a put probed across a flush:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestRowBufferLimit: the buffer is flushed at its budget while its rows
// are new, and grows to growFactor times it when most of its rows
// continue those of the buffer before it; rows new again bring it back to
// its budget.
func TestRowBufferLimit(t *testing.T) {
	const budget = 512 << 10
	s := mustOpen(t, t.TempDir(), Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}, BufferBytes: budget})
	defer s.Close()
	ctx := t.Context()
	q := uint16(0)
	// round writes a cell to each of n rows, the first at first.
	round := func(first, n int) {
		t.Helper()
		q++
		puts := make([]store.Put, 0, n)
		for r := first; r < first+n; r++ {
			puts = append(puts, store.Put{Row: fmt.Appendf(nil, "row%08d", r), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{byte(q >> 8), byte(q)}, Value: []byte{1}, Timestamp: 1}}})
		}
		if err := s.PutDeferred(ctx, "d", puts); err != nil {
			t.Fatal(err)
		}
	}
	limit := func() int64 {
		s.rb.mu.Lock()
		defer s.rb.mu.Unlock()
		return s.rb.limit()
	}
	flushes := func() int64 { return s.rb.flushes.Load() }
	// New rows: a buffer of them is flushed at its budget.
	const rows = 2000
	round(0, rows)
	if l := limit(); l != budget {
		t.Fatalf("a buffer of new rows: limit %d, want the budget %d", l, budget)
	}
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	// The same rows again, in a fresh buffer: they continue the flushed
	// one's, and the buffer grows past its budget without a flush.
	before := flushes()
	round(0, rows)
	if l := limit(); l != growFactor*budget {
		t.Fatalf("a buffer of continued rows: limit %d, want %d (the cache %d bytes)", l, growFactor*budget, s.cacheBytes)
	}
	for s.rb.gen.bytes.Load() < 3*budget/2 {
		round(0, rows)
	}
	if f := flushes(); f != before {
		t.Errorf("%d flushes of a buffer of continued rows under %d bytes", f-before, growFactor*budget)
	}
	for _, tc := range []struct{ budget, cache, want int64 }{
		{32 << 20, 256 << 20, 128 << 20},  // the defaults
		{32 << 20, 128 << 20, 64 << 20},   // half the cache
		{128 << 20, 128 << 20, 128 << 20}, // never below the budget
		{32 << 20, 0, 128 << 20},          // no cache
	} {
		if got := grownLimit(tc.budget, tc.cache); got != tc.want {
			t.Errorf("grownLimit(%d, %d) = %d, want %d", tc.budget, tc.cache, got, tc.want)
		}
	}
	// Other rows, more than those: no longer mostly continued, and
	// flushed at the budget.
	round(rows, 2*rows)
	if l := limit(); l != budget {
		t.Errorf("a buffer of mostly new rows: limit %d, want the budget %d", l, budget)
	}
	poll.Until(t, 10*time.Second, time.Millisecond, "a flush of the buffer past its budget", func() (bool, string) {
		return flushes() > before, fmt.Sprintf("%d flushes", flushes()-before)
	})
}
