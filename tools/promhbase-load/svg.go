package main

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// writeSVG draws the results as grouped bar charts, one panel per measure
// (write samples/s, first round, p99, peak RSS, remote read streamed), one
// group per series count, one bar per system.
func writeSVG(path, title string, rs []result) error {
	type measure struct {
		name string
		unit string
		val  func(result) float64
	}
	measures := []measure{
		{"write throughput", "samples/s", func(r result) float64 { return float64(r.samples) / r.elapsed.Seconds() }},
		{"first round (all series new)", "s", func(r result) float64 { return r.firstRound.Seconds() }},
		{"p99 request latency", "ms", func(r result) float64 { return float64(r.p99.Microseconds()) / 1000 }},
		{"p99 after the first round", "ms", func(r result) float64 { return float64(r.steadyP99.Microseconds()) / 1000 }},
		{"peak RSS", "MB", func(r result) float64 { return float64(r.peakRSS) / 1e6 }},
		{"remote read, streamed", "samples/s", func(r result) float64 { return r.streamRate }},
		{"query_range", "points/s", func(r result) float64 { return r.queryRate }},
	}
	var counts []int
	for _, r := range rs {
		if len(counts) == 0 || counts[len(counts)-1] != r.series {
			counts = append(counts, r.series)
		}
	}
	colors := map[string]string{"prometheus": "#e6522c", "promhbase": "#3b7dd8", "promhbase-hbase": "#2a9d3f"}
	const pw, ph, top = 360, 220, 40
	var b strings.Builder
	width := pw * len(measures)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, ph+top+40)
	fmt.Fprintf(&b, `<text x="8" y="18" font-size="14">%s</text>`+"\n", title)
	for mi, m := range measures {
		x0 := mi * pw
		maxV := 0.0
		for _, r := range rs {
			maxV = math.Max(maxV, m.val(r))
		}
		if maxV == 0 {
			maxV = 1
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s (%s)</text>`+"\n", x0+10, top, m.name, m.unit)
		groupW := (pw - 40) / max(len(counts), 1)
		for gi, n := range counts {
			gx := x0 + 30 + gi*groupW
			bi := 0
			for _, r := range rs {
				if r.series != n {
					continue
				}
				v := m.val(r)
				h := int(float64(ph-40) * v / maxV)
				x := gx + bi*(groupW/3)
				y := top + ph - h
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s %d series: %.4g %s</title></rect>`+"\n",
					x, y, groupW/3-4, h, colors[r.system], r.system, n, v, m.unit)
				fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9">%.3g</text>`+"\n", x, y-3, v)
				bi++
			}
			rounds := 0
			for _, r := range rs {
				if r.series == n {
					rounds = r.rounds
					break
				}
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s×%d</text>`+"\n", gx, top+ph+14, shortCount(n), rounds)
		}
	}
	fmt.Fprintf(&b, `<rect x="8" y="%d" width="10" height="10" fill="%s"/><text x="22" y="%d">Prometheus receiver</text>`+"\n", top+ph+24, colors["prometheus"], top+ph+33)
	fmt.Fprintf(&b, `<rect x="160" y="%d" width="10" height="10" fill="%s"/><text x="174" y="%d">promhbase (embedded)</text>`+"\n", top+ph+24, colors["promhbase"], top+ph+33)
	fmt.Fprintf(&b, `<rect x="312" y="%d" width="10" height="10" fill="%s"/><text x="326" y="%d">promhbase (standalone HBase)</text>`+"\n", top+ph+24, colors["promhbase-hbase"], top+ph+33)
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func shortCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%d M series", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%d k series", n/1000)
	}
	return fmt.Sprintf("%d series", n)
}
