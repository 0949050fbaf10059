package embedded

import (
	"encoding/binary"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// BenchmarkScanMetric reads one metric's rows (200 series of 100 samples,
// OpenTSDB row keys of 10 tags) out of 100 metrics, as a remote read of
// the harness does: from Pebble's tables, and from the row buffer.
func BenchmarkScanMetric(b *testing.B) {
	const metrics, series, samples = 100, 200, 100
	rowKey := func(m, s int) []byte {
		k := []byte{0, 0, byte(m + 1), 0x5f, 0x5e, 0x10, 0}
		for t := range 10 {
			k = append(k, 0, 0, byte(t+1), 0, byte(s>>8), byte(s))
		}
		return k
	}
	for _, tc := range []struct {
		name  string
		flush bool
	}{{"pebble", true}, {"buffer", false}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{NoSync: true, BufferTables: []string{"tsdb"}, BufferBytes: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for i := range samples {
				puts := make([]store.Put, 0, metrics*series)
				for m := range metrics {
					for sr := range series {
						q := binary.BigEndian.AppendUint16(nil, uint16(i*15)<<4|7)
						v := binary.BigEndian.AppendUint64(nil, uint64(i))
						puts = append(puts, store.Put{Row: rowKey(m, sr), Cells: []store.Cell{{Family: []byte("t"), Qualifier: q, Value: v}}})
					}
				}
				if err := s.Put(b.Context(), "tsdb", puts); err != nil {
					b.Fatal(err)
				}
			}
			if tc.flush {
				if err := s.CompactAll(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			req := store.ScanRequest{Table: "tsdb", Start: []byte{0, 0, 50}, Stop: []byte{0, 0, 51}}
			b.ReportAllocs()
			b.ResetTimer()
			cells := 0
			for range b.N {
				sc := s.Scan(b.Context(), req)
				for sc.Next() {
					cells += len(sc.Row().Cells)
				}
				if err := sc.Err(); err != nil {
					b.Fatal(err)
				}
			}
			if cells != b.N*series*samples {
				b.Fatalf("%d cells, want %d", cells, b.N*series*samples)
			}
			b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
		})
	}
}
