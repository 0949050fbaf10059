package dense

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
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
	name   string
	share  int // series of this kind per target
	perMet int // series of one metric per target (adjacent rows)
	next   func(r *rand.Rand, prev float64, i int) float64
	first  func(r *rand.Rand) float64
}

var nodeKinds = []seriesKind{
	{"cpu seconds counter (2 decimals)", 32, 16,
		func(r *rand.Rand, prev float64, i int) float64 {
			// The series' mode decides its share of the 15 s (in 1/100 s):
			// idle most of it, user and system some, the rest little.
			mean := [...]float64{1275, 120, 60, 15, 2, 8, 0, 0}[int(math.Float64bits(prev))%8]
			inc := mean + (r.Float64()*2-1)*math.Max(1, mean*0.3)
			return math.Round(prev*100+math.Max(0, math.Round(inc))) / 100
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(10000000)) / 100 }},
	{"small counter (+0..10)", 16, 4,
		func(r *rand.Rand, prev float64, _ int) float64 {
			if r.IntN(2000) == 0 {
				return 0 // reset
			}
			return prev + float64(r.IntN(11))
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(1000000)) }},
	{"byte counter (+0..100000)", 12, 4,
		func(r *rand.Rand, prev float64, _ int) float64 { return prev + float64(r.IntN(100001)) },
		func(r *rand.Rand) float64 { return float64(r.Int64N(1 << 40)) }},
	{"error counter (mostly +0)", 12, 4,
		func(r *rand.Rand, prev float64, _ int) float64 {
			if r.IntN(50) == 0 {
				return prev + 1
			}
			return prev
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(100)) }},
	{"gauge, 2 decimals", 10, 1,
		func(r *rand.Rand, prev float64, _ int) float64 {
			return math.Max(0, math.Round(prev*100+float64(r.IntN(21)-10))/100)
		},
		func(r *rand.Rand) float64 { return float64(r.IntN(400)) / 100 }},
	{"memory gauge (4 KiB pages)", 10, 1,
		func(r *rand.Rand, prev float64, _ int) float64 { return prev + 4096*float64(r.IntN(201)-100) },
		func(r *rand.Rand) float64 { return 4096 * float64(1<<20+r.IntN(1<<20)) }},
	{"constant", 16, 4,
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

// TestSizeReport logs the bytes per sample of node-exporter-like rows:
// dense (header, timestamps, values), the compacted column it replaces,
// and both compressed in blocks as Pebble would (snappy, its default, and
// zstd). Run with -v to see it; it asserts nothing about sizes.
func TestSizeReport(t *testing.T) {
	for _, c := range []struct {
		name         string
		aligned, f64 bool
	}{
		{"jitter 0..5 ms, shortest encodings", false, false},
		{"aligned timestamps, shortest encodings", true, false},
		{"jitter 0..5 ms, 8-byte floats", false, true},
	} {
		t.Run(c.name, func(t *testing.T) { sizeReport(t, c.aligned, c.f64) })
	}
}

func sizeReport(t *testing.T, aligned, f64 bool) {
	rows := genNodeRows(40, 7, aligned, f64)
	var c Codec
	type acc struct {
		rows, samples         int
		hdr, ts, vals, raw    int
		modes                 [3]int
		dense, compactedBytes [][]byte
	}
	per := make([]acc, len(nodeKinds))
	var all acc
	for _, row := range rows {
		cell := row.cells[0]
		d, ok := c.Encode(nil, testRow, row.cells)
		if !ok {
			t.Fatalf("row of kind %d refused", row.kind)
		}
		for _, a := range []*acc{&per[row.kind], &all} {
			a.rows++
			a.samples += 240
			a.hdr += c.sizes[0]
			a.ts += c.sizes[1]
			a.vals += c.sizes[2]
			a.raw += len(cell.Qualifier) + len(cell.Value)
			a.modes[d[1]>>valShift&valMask]++
			a.dense = append(a.dense, d)
			raw := append(append([]byte{}, cell.Qualifier...), cell.Value...)
			a.compactedBytes = append(a.compactedBytes, raw)
		}
	}
	perS := func(b, n int) string { return fmt.Sprintf("%.3f", float64(b)/float64(n)) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d rows of 240 samples (%d targets); bytes per sample\n", len(rows), 40)
	fmt.Fprintf(&sb, "%-34s %7s %7s %7s %7s %7s | %s\n", "kind", "header", "times", "values", "dense", "column", "modes delta/delta2/xor")
	line := func(name string, a acc) {
		fmt.Fprintf(&sb, "%-34s %7s %7s %7s %7s %7s | %v\n", name, perS(a.hdr, a.samples), perS(a.ts, a.samples),
			perS(a.vals, a.samples), perS(a.hdr+a.ts+a.vals, a.samples), perS(a.raw, a.samples), a.modes)
	}
	for k, a := range per {
		line(nodeKinds[k].name, a)
	}
	line("all", all)
	fmt.Fprintf(&sb, "\ncompressed in blocks, bytes per sample (values only; Pebble adds keys and block trailers)\n")
	fmt.Fprintf(&sb, "%-22s %10s %10s %10s %10s\n", "", "snappy 4K", "zstd 4K", "snappy 32K", "zstd 32K")
	for _, x := range []struct {
		name string
		vals [][]byte
	}{{"dense", all.dense}, {"compacted column", all.compactedBytes}} {
		s4, z4 := blockSizes(t, x.vals, 4096)
		s32, z32 := blockSizes(t, x.vals, 32768)
		fmt.Fprintf(&sb, "%-22s %10s %10s %10s %10s\n", x.name, perS(s4, all.samples), perS(z4, all.samples),
			perS(s32, all.samples), perS(z32, all.samples))
	}
	// Per kind, in 32 KiB blocks of that kind only.
	fmt.Fprintf(&sb, "\ndense per kind in 32K blocks:%23s %10s\n", "snappy", "zstd")
	for k, a := range per {
		s, z := blockSizes(t, a.dense, 32768)
		fmt.Fprintf(&sb, "%-52s %10s %10s\n", nodeKinds[k].name, perS(s, a.samples), perS(z, a.samples))
	}
	// Timestamps alone: what sharing leaves of them.
	var tsOnly [][]byte
	for _, row := range rows {
		d, _ := c.Encode(nil, testRow, row.cells)
		start := c.sizes[0]
		tsOnly = append(tsOnly, d[start:start+c.sizes[1]])
	}
	s4, z4 := blockSizes(t, tsOnly, 4096)
	s32, z32 := blockSizes(t, tsOnly, 32768)
	fmt.Fprintf(&sb, "\ntimestamp sections alone: raw %s, snappy 4K %s, zstd 4K %s, snappy 32K %s, zstd 32K %s\n",
		perS(all.ts, all.samples), perS(s4, all.samples), perS(z4, all.samples), perS(s32, all.samples), perS(z32, all.samples))
	t.Log(sb.String())

	// Distinct timestamp sections: one per target.
	seen := map[string]bool{}
	for _, s := range tsOnly {
		seen[string(s)] = true
	}
	if len(seen) != 40 {
		t.Errorf("%d distinct timestamp sections, want one per target (40)", len(seen))
	}
}
