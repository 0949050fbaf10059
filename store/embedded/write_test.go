package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestPutOutOfRowOrder: a Put's rows go into Pebble's batch in row order
// (rowOrder), and a row put twice keeps the later put's cells.
func TestPutOutOfRowOrder(t *testing.T) {
	s := openTemp(t, Options{NoSync: true})
	put := func(row, v string) store.Put {
		return store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(v)}}}
	}
	if err := s.Put(t.Context(), "t", []store.Put{put("c", "1"), put("a", "2"), put("c", "3"), put("b", "4"), put("a", "5")}); err != nil {
		t.Fatal(err)
	}
	for row, want := range map[string]string{"a": "5", "b": "4", "c": "3"} {
		v, found, err := s.GetCell(t.Context(), "t", []byte(row), "f", "q")
		if err != nil || !found || string(v) != want {
			t.Errorf("row %s: %q, %v, %v; want %q", row, v, found, err, want)
		}
	}
	for _, tc := range []struct {
		rows []string
		want string // nil order: "sorted"
	}{
		{[]string{"a", "b", "b", "c"}, "sorted"},
		{[]string{"c", "a", "c", "b", "a"}, "[1 4 3 0 2]"},
		{nil, "sorted"},
	} {
		var puts []store.Put
		for _, r := range tc.rows {
			puts = append(puts, put(r, ""))
		}
		got := "sorted"
		if o := rowOrder(puts); o != nil {
			got = fmt.Sprint(o)
		}
		if got != tc.want {
			t.Errorf("rowOrder(%q) = %s, want %s", tc.rows, got, tc.want)
		}
	}
}

// BenchmarkPutRequest puts what one remote-write request of 2000 series
// becomes: 2000 rows of ten tags, one cell each, in one Put (no fsync),
// into Pebble's memtable and into the row buffer. Each iteration writes
// the next sample of the same series, so the memtable or buffer grows as
// it does under a sustained write (flushes included).
func BenchmarkPutRequest(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"memtable", Options{NoSync: true}},
		{"buffer", Options{NoSync: true, BufferTables: []string{"tsdb"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const n = 2000
			puts := make([]store.Put, n)
			for i := range puts {
				row := openTSDBRow()
				binary.BigEndian.PutUint32(row[len(row)-6:], uint32(i)) // the last tag pair's value: a series of its own
				puts[i] = store.Put{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: make([]byte, 2), Value: []byte{1}}}}
			}
			ctx := context.Background()
			b.ReportAllocs()
			q := uint16(0)
			for b.Loop() {
				q++
				for i := range puts {
					binary.BigEndian.PutUint16(puts[i].Cells[0].Qualifier, q<<4)
				}
				if err := s.Put(ctx, "tsdb", puts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cell")
		})
	}
}

// BenchmarkPutRequestParallel is BenchmarkPutRequest's buffer case with
// GOMAXPROCS writers at once (set with -cpu), each writing 2000 series of
// its own: how the row buffer's puts scale with cores (its table buffer
// takes one put at a time).
func BenchmarkPutRequestParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true, BufferTables: []string{"tsdb"}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		b.StopTimer() // the flush of Close left out
		s.Close()
	}()
	const n = 2000
	var writers atomic.Uint32
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := writers.Add(1)
		puts := make([]store.Put, n)
		for i := range puts {
			row := openTSDBRow()
			binary.BigEndian.PutUint32(row[len(row)-6:], w<<16|uint32(i))
			puts[i] = store.Put{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: make([]byte, 2), Value: []byte{1}}}}
		}
		q := uint16(0)
		for pb.Next() {
			q++
			for i := range puts {
				binary.BigEndian.PutUint16(puts[i].Cells[0].Qualifier, q<<4)
			}
			if err := s.Put(ctx, "tsdb", puts); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cell")
}

// BenchmarkPutHours puts what one write of an import becomes: 200 rows
// (series and hour) of 240 cells each (an hour of 15 s samples), in one
// Put into the row buffer (no fsync); each iteration the next hour of the
// same series, flushes included.
func BenchmarkPutHours(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true, BufferTables: []string{"tsdb"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const rows, cells = 200, 240
	puts := make([]store.Put, rows)
	for i := range puts {
		row := openTSDBRow()
		binary.BigEndian.PutUint32(row[len(row)-6:], uint32(i))
		cs := make([]store.Cell, cells)
		for j := range cs {
			q := binary.BigEndian.AppendUint16(nil, uint16(j*15)<<4|7)
			cs[j] = store.Cell{Family: []byte("t"), Qualifier: q, Value: binary.BigEndian.AppendUint64(nil, uint64(i*j))}
		}
		puts[i] = store.Put{Row: row, Cells: cs}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for i := range puts {
			base := binary.BigEndian.Uint32(puts[i].Row[3:])
			binary.BigEndian.PutUint32(puts[i].Row[3:], base+3600)
		}
		if err := s.Put(ctx, "tsdb", puts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*cells), "ns/cell")
}
