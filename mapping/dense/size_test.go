package dense

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"

	"github.com/promhbase/promhbase/store"
)

// Node-exporter-like data for measurements: targets scraped every 15 s
// with 0..5 ms of jitter (every series of a target shares its scrape
// timestamps), an hour (240 samples) a row, as promhbase writes them
// (4-byte ms qualifiers, 8-byte floats).

// seriesKind is one kind of series and its share of a target's series.
type seriesKind struct {
	key    string // its sub-benchmark's name
	name   string
	share  int // series of this kind per target
	perMet int // series of one metric per target (adjacent rows)
	next   func(r *rand.Rand, prev float64, i int) float64
	first  func(r *rand.Rand) float64
}

var nodeKinds = []seriesKind{
	{"cpu", "cpu seconds counter (2 decimals)", 32, 16,
		func(r *rand.Rand, prev float64, i int) float64 {
			// The series' mode decides its share of the 15 s (in 1/100 s):
			// idle most of it, user and system some, the rest little.
			mean := [...]float64{1275, 120, 60, 15, 2, 8, 0, 0}[int(math.Float64bits(prev))%8]
			inc := mean + (r.Float64()*2-1)*math.Max(1, mean*0.3)
			return math.Round(prev*100+math.Max(0, math.Round(inc))) / 100
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(10000000)) / 100 }},
	{"small-counter", "small counter (+0..10)", 16, 4,
		func(r *rand.Rand, prev float64, _ int) float64 {
			if r.IntN(2000) == 0 {
				return 0 // reset
			}
			return prev + float64(r.IntN(11))
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(1000000)) }},
	{"byte-counter", "byte counter (+0..100000)", 12, 4,
		func(r *rand.Rand, prev float64, _ int) float64 { return prev + float64(r.IntN(100001)) },
		func(r *rand.Rand) float64 { return float64(r.Int64N(1 << 40)) }},
	{"error-counter", "error counter (mostly +0)", 12, 4,
		func(r *rand.Rand, prev float64, _ int) float64 {
			if r.IntN(50) == 0 {
				return prev + 1
			}
			return prev
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(100)) }},
	{"gauge", "gauge, 2 decimals", 10, 1,
		func(r *rand.Rand, prev float64, _ int) float64 {
			return math.Max(0, math.Round(prev*100+float64(r.IntN(21)-10))/100)
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(400)) / 100 }},
	{"memory", "memory gauge (4 KiB pages)", 10, 1,
		func(r *rand.Rand, prev float64, _ int) float64 { return prev + 4096*float64(r.IntN(201)-100) },
		func(r *rand.Rand) float64 { return 4096 * float64(1<<20+r.IntN(1<<20)) }},
	{"constant", "constant", 16, 4,
		func(_ *rand.Rand, prev float64, _ int) float64 { return prev },
		func(r *rand.Rand) float64 {
			if r.IntN(2) == 0 {
				return 1
			}
			return float64(r.Int64N(1 << 42))
		}},
}

// genRow is one generated row: its kind, metric group and target.
type genRow struct {
	kind, metric, target int
	cells                []store.Cell
}

// genNodeRows generates the rows of targets targets for one hour, in the
// order a scan returns them (metric, then target: the row key puts the
// metric first and instance is a low tagk UID).
// With aligned, scrape timestamps are exactly 15 s apart except for one
// scrape in 20, 3..12 ms late (Prometheus snaps those off by at most 2
// ms); otherwise each is 0..5 ms late.
//
// With f64 every value is an 8-byte float; otherwise each is stored in
// its shortest exact encoding, as promhbase's writer does.
func genNodeRows(targets int, seed uint64, aligned, f64 bool) []genRow {
	r := rand.New(rand.NewPCG(seed, 1))
	times := make([][]int64, targets)
	for t := range times {
		phase := int64(r.IntN(15000))
		times[t] = make([]int64, 240)
		for i := range times[t] {
			jitter := int64(r.IntN(6))
			if aligned {
				jitter = 0
				if r.IntN(20) == 0 {
					jitter = 3 + int64(r.IntN(10))
				}
			}
			times[t][i] = phase + int64(i)*15000 + jitter
		}
	}
	var rows []genRow
	metric := 0
	for k, kind := range nodeKinds {
		for m := 0; m < kind.share/kind.perMet; m++ {
			for t := range targets {
				for range kind.perMet {
					vs := make([]float64, 240)
					v := kind.first(r)
					for i := range vs {
						if i > 0 {
							v = kind.next(r, v, i)
						}
						vs[i] = v
					}
					q, val := floatRow(times[t], vs, f64)
					rows = append(rows, genRow{k, metric, t, cellOf(q, val, 1700006400000+uint64(r.IntN(60000)))})
				}
			}
			metric++
		}
	}
	return rows
}

// blockSizes concatenates values into blocks of about size bytes, as
// Pebble fills a data block, and returns the total compressed by snappy
// and by zstd (each block on its own).
func blockSizes(t testing.TB, vals [][]byte, size int) (snap, zs int) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var blk []byte
	flush := func() {
		if len(blk) == 0 {
			return
		}
		snap += len(snappy.Encode(nil, blk))
		zs += len(enc.EncodeAll(blk, nil))
		blk = blk[:0]
	}
	for _, v := range vals {
		blk = append(blk, v...)
		if len(blk) >= size {
			flush()
		}
	}
	flush()
	return snap, zs
}

// sizeVariants are the row sets BenchmarkSize measures and
// TestTimestampSectionsShared checks: 40 targets, an hour, 4320 rows.
var sizeVariants = []struct {
	name         string
	aligned, f64 bool
}{
	{"jitter", false, false},    // 0..5 ms jitter, shortest encodings
	{"aligned", true, false},    // aligned timestamps, shortest encodings
	{"jitter-f64", false, true}, // 0..5 ms jitter, 8-byte floats
}

// sizeTargets is the number of targets of the rows of sizeVariants.
const sizeTargets = 40

// BenchmarkSize reports the bytes per sample of node-exporter-like rows,
// per kind of series and for all of them: the dense form (header, times,
// values: dense-B/sample the three together), the compacted column it
// replaces (column-B/sample), and both compressed in blocks as Pebble
// would (snappy, its default, and zstd; 4 and 32 KiB), the timestamp
// sections alone as well; and the share of rows in each value mode
// (delta, delta2, xor). The time measured is the encoding of the rows;
// the sizes are those of one encoding.
//
//	go test ./mapping/dense -run '^$' -bench BenchmarkSize -benchtime 1x
func BenchmarkSize(b *testing.B) {
	for _, v := range sizeVariants {
		rows := genNodeRows(sizeTargets, 7, v.aligned, v.f64)
		b.Run(v.name, func(b *testing.B) {
			for k, kind := range nodeKinds {
				var of []genRow
				for _, row := range rows {
					if row.kind == k {
						of = append(of, row)
					}
				}
				b.Run(kind.key, func(b *testing.B) { benchSize(b, of) })
			}
			b.Run("all", func(b *testing.B) { benchSize(b, rows) })
		})
	}
}

// benchSize encodes rows in its loop and reports their sizes.
func benchSize(b *testing.B, rows []genRow) {
	var c Codec
	var hdr, times, vals, column int
	var modes [3]int
	var dense, columns, timeSections [][]byte
	for _, row := range rows {
		cell := row.cells[0]
		d, ok := c.Encode(nil, testRow, row.cells)
		if !ok {
			b.Fatalf("row of kind %d refused", row.kind)
		}
		hdr, times, vals = hdr+c.sizes[0], times+c.sizes[1], vals+c.sizes[2]
		column += len(cell.Qualifier) + len(cell.Value)
		modes[d[1]>>valShift&valMask]++
		dense = append(dense, d)
		columns = append(columns, append(append([]byte{}, cell.Qualifier...), cell.Value...))
		timeSections = append(timeSections, d[c.sizes[0]:c.sizes[0]+c.sizes[1]])
	}
	samples := float64(240 * len(rows))
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for _, row := range rows {
			dst, _ = c.Encode(dst[:0], testRow, row.cells)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/samples, "ns/sample")
	perSample := func(n int, unit string) { b.ReportMetric(float64(n)/samples, unit) }
	perSample(hdr, "header-B/sample")
	perSample(times, "times-B/sample")
	perSample(vals, "values-B/sample")
	perSample(hdr+times+vals, "dense-B/sample")
	perSample(column, "column-B/sample")
	for _, x := range []struct {
		name string
		vals [][]byte
	}{{"dense", dense}, {"column", columns}, {"times", timeSections}} {
		for _, size := range []int{4 << 10, 32 << 10} {
			snap, zs := blockSizes(b, x.vals, size)
			perSample(snap, fmt.Sprintf("%s-snappy%dK-B/sample", x.name, size>>10))
			perSample(zs, fmt.Sprintf("%s-zstd%dK-B/sample", x.name, size>>10))
		}
	}
	for m, name := range []string{"delta", "delta2", "xor"} {
		b.ReportMetric(float64(modes[m])/float64(len(rows)), name+"-rows/row")
	}
}

// TestTimestampSectionsShared: every series of a target shares its
// scrape times, so the rows of sizeVariants have one distinct timestamp
// section per target, which block compression then finds repeated.
func TestTimestampSectionsShared(t *testing.T) {
	for _, v := range sizeVariants {
		t.Run(v.name, func(t *testing.T) {
			var c Codec
			seen := map[string]bool{}
			for _, row := range genNodeRows(sizeTargets, 7, v.aligned, v.f64) {
				d, ok := c.Encode(nil, testRow, row.cells)
				if !ok {
					t.Fatalf("row of kind %d refused", row.kind)
				}
				seen[string(d[c.sizes[0]:c.sizes[0]+c.sizes[1]])] = true
			}
			if len(seen) != sizeTargets {
				t.Errorf("%d distinct timestamp sections, want one per target (%d)", len(seen), sizeTargets)
			}
		})
	}
}
