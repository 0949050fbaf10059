package embedded

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"

	"github.com/promhbase/promhbase/store"
)

// nodeExporterScrapes calls put with each scrape of series node
// exporter-like series, samples scrapes 15 s apart, as promhbase writes
// them into the data table: OpenTSDB rows (metric UID ‖ base hour ‖ three
// tag pairs, 3-byte UIDs), 4-byte millisecond qualifiers, 8-byte floats.
// The values are a node exporter's mix: integer counters (bytes,
// packets), float counters (CPU seconds), gauges that change now and
// then, constants.
func nodeExporterScrapes(series, samples int, put func([]store.Put)) {
	rng := rand.New(rand.NewPCG(3, 4))
	type serie struct {
		key  []byte // without the base hour
		kind int
		v    float64
	}
	ss := make([]serie, series)
	for i := range ss {
		metric := i % 97
		k := []byte{0, 0, byte(metric + 1), 0, 0, 0, 0}
		for tag, v := range []int{i % 13, i / 97, i % 7} { // instance, cpu/device, mode
			k = append(k, 0, 0, byte(tag+1), 0, byte(v>>8), byte(v+1))
		}
		kind := rng.IntN(10)
		v := float64(rng.IntN(1 << 20))
		if kind >= 8 {
			v = float64(rng.IntN(2))
		}
		ss[i] = serie{key: k, kind: kind, v: v}
	}
	const start = 1_700_000_000_000 // ms
	puts := make([]store.Put, series)
	for n := range samples {
		t := int64(start + n*15_000 + rng.IntN(20))
		hour := t / 3_600_000 * 3600
		off := uint32(t - hour*1000)
		for i := range ss {
			s := &ss[i]
			switch {
			case s.kind < 3: // integer counter
				s.v += float64(rng.IntN(4096))
			case s.kind < 5: // float counter: seconds
				s.v += 15 * rng.Float64()
			case s.kind < 8: // gauge
				if rng.IntN(10) == 0 {
					s.v = math.Round(s.v * (0.9 + 0.2*rng.Float64()))
				}
			}
			row := append([]byte(nil), s.key...)
			binary.BigEndian.PutUint32(row[3:], uint32(hour))
			q := binary.BigEndian.AppendUint32(nil, 0xF0000000|off<<6|0x0F)
			v := binary.BigEndian.AppendUint64(nil, math.Float64bits(s.v))
			puts[i] = store.Put{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: q, Value: v}}}
		}
		put(puts)
	}
}

// BenchmarkSettledBytes writes about a million node exporter-like samples
// (1000 series × 1000 scrapes) through the row buffer, settles them into
// the bottom level, and reports the bytes of its tables a sample, and the
// seconds the settle took, for the bottom level's compression and block
// size. A measurement, not a benchmark of speed: run it once
// (-benchtime=1x).
func BenchmarkSettledBytes(b *testing.B) {
	for _, tc := range []struct {
		name      string
		profile   *sstable.CompressionProfile
		blockSize int
	}{
		{"snappy/4KiB", sstable.SnappyCompression, 4 << 10},
		{"snappy/32KiB", sstable.SnappyCompression, 32 << 10},
		{"zstd3/4KiB", sstable.ZstdCompression, 4 << 10},
		{"zstd3/16KiB", sstable.ZstdCompression, 16 << 10},
		{"zstd3/32KiB", sstable.ZstdCompression, 32 << 10},
		{"zstd3/64KiB", sstable.ZstdCompression, 64 << 10},
		{"good/32KiB", block.GoodCompression, 32 << 10},
		{"default", nil, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				opts := Options{NoSync: true, Tables: []string{"tsdb"}, BufferTables: []string{"tsdb"}, SettleInterval: -1}
				if tc.profile != nil {
					opts.tunePebble = func(po *pebble.Options) {
						l := &po.Levels[len(po.Levels)-1]
						l.Compression = func() *sstable.CompressionProfile { return tc.profile }
						l.BlockSize = tc.blockSize
					}
				}
				s, err := Open(b.TempDir(), opts)
				if err != nil {
					b.Fatal(err)
				}
				cells := 0
				nodeExporterScrapes(1000, 1000, func(puts []store.Put) {
					if err := s.Put(b.Context(), "tsdb", puts); err != nil {
						b.Fatal(err)
					}
					cells += len(puts)
				})
				t0 := time.Now()
				if err := s.CompactAll(b.Context()); err != nil {
					b.Fatal(err)
				}
				settle := time.Since(t0)
				n, err := s.TableBytes(b.Context(), "tsdb")
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(s.SSTableBytes())/float64(cells), "bytes/sample")
				b.ReportMetric(float64(n)/float64(cells), "table-bytes/sample")
				b.ReportMetric(settle.Seconds(), "settle-s")
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNodeExporterScrapes: the generator's rows are OpenTSDB's shape.
func TestNodeExporterScrapes(t *testing.T) {
	rows := map[string]int{}
	nodeExporterScrapes(10, 300, func(puts []store.Put) {
		for _, p := range puts {
			if len(p.Row) != 25 || len(p.Cells[0].Qualifier) != 4 || len(p.Cells[0].Value) != 8 {
				t.Fatalf("row %x cell %x=%x", p.Row, p.Cells[0].Qualifier, p.Cells[0].Value)
			}
			rows[fmt.Sprintf("%x", p.Row)]++
		}
	})
	if len(rows) != 20 { // 10 series × 2 hours (75 minutes from 22:13)
		t.Errorf("%d rows, want 20", len(rows))
	}
}
