package embedded

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
)

// TestSettleAfterRestart: what a process wrote or deleted and did not
// settle before it closed is settled by the next process's background
// settle, with no write or delete of its own to note it: every table ends
// in the bottom level (compressed as that level compresses), and the space
// of deleted and replaced cells comes back.
func TestSettleAfterRestart(t *testing.T) {
	cases := []struct {
		name     string
		buffered bool // the table goes through the row buffer
		// before is what the first process does after a CompactAll of its
		// 4000 rows, before it closes.
		before func(t *testing.T, s *Store)
		// live is the share of the first CompactAll's bytes that stays.
		live float64
	}{
		{"rows deleted one by one", false, deleteRows, 0.25},
		{"rows deleted one by one, buffered", true, deleteRows, 0.25},
		{"cells replaced", false, func(t *testing.T, s *Store) { putRandom(t, s, "d", 0, 3000) }, 1},
	}
	for _, c := range cases {
		for _, background := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, background %v", c.name, background), func(t *testing.T) {
				restartSettles(t, c.buffered, c.before, c.live, background)
			})
		}
	}
}

// restartSettles writes 4000 rows, compacts them down, does before, closes
// the store and opens it again; then it waits for the background settle,
// or calls Settle (store.Settler, as offline commands do), and checks the
// tables are settled and take at most live times the first bytes.
func restartSettles(t *testing.T, buffered bool, before func(*testing.T, *Store), live float64, background bool) {
	dir := t.TempDir()
	opts := Options{NoSync: true, Tables: []string{"d"}, SettleInterval: -1}
	if buffered {
		opts.BufferTables = []string{"d"}
	}
	s := mustOpen(t, dir, opts)
	putRandom(t, s, "d", 0, 4000)
	if err := s.CompactAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	full := s.SSTableBytes()
	before(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if background {
		opts.SettleInterval = 20 * time.Millisecond
	}
	s = mustOpen(t, dir, opts)
	t.Cleanup(func() { s.Close() })
	if !background {
		if err := s.Settle(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 20*time.Second, 5*time.Millisecond, "every table settled after the store opened", func() (bool, string) {
		n := unsettledTables(t, s)
		return n == 0, fmt.Sprintf("%d tables not settled", n)
	})
	if got, want := float64(s.SSTableBytes()), live*float64(full); got > want*1.1 {
		t.Errorf("%.0f bytes of tables once settled, want at most %.0f (%.2f of %d)", got, want*1.1, live, full)
	}
	if n := s.settler.errors.Load(); n > 0 {
		t.Errorf("%d settles failed", n)
	}
	if s.settler.foundSpans.Load() == 0 {
		t.Error("no unsettled table found at open")
	}
}

// deleteRows deletes rows [0, 3000) of table d one by one.
func deleteRows(t *testing.T, s *Store) {
	for i := range 3000 {
		if err := s.Delete(t.Context(), "d", fmt.Appendf(nil, "row-%08d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// putRandom writes rows [from, from+n) of table with a 1000-byte
// incompressible cell each.
func putRandom(t *testing.T, s *Store, table string, from, n int) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(uint64(from), uint64(n)))
	for i := from; i < from+n; i += 100 {
		var puts []store.Put
		for j := i; j < min(i+100, from+n); j++ {
			v := make([]byte, 1000)
			for k := range v {
				v[k] = byte(rnd.Uint32())
			}
			puts = append(puts, store.Put{Row: fmt.Appendf(nil, "row-%08d", j), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{1}, Value: v}}})
		}
		if err := s.Put(t.Context(), table, puts); err != nil {
			t.Fatal(err)
		}
	}
}

// unsettledTables counts the tables of s above the bottom level, and those
// of the bottom level not compressed as it compresses.
func unsettledTables(t *testing.T, s *Store) int {
	t.Helper()
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for l, tables := range levels {
		for _, tb := range tables {
			if l < len(levels)-1 || tb.Properties.CompressionName != sstable.ZstdCompression.Name {
				n++
			}
		}
	}
	return n
}
