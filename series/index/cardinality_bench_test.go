package index

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
)

// loadLabels are the labels of series i as promhbase-load writes them
// (its seriesLabels): 100 metrics, nine labels, instance shared by 100
// series, series unique.
func loadLabels(i int) [][2]string {
	return [][2]string{
		{"__name__", fmt.Sprintf("load_metric_%d", i%100)},
		{"cpu", fmt.Sprint(i % 16)},
		{"datacenter", fmt.Sprintf("dc-%d", i%3)},
		{"device", fmt.Sprintf("sd%c", 'a'+i%8)},
		{"env", "production"},
		{"instance", fmt.Sprintf("host-%05d:9100", i/100)},
		{"job", "node"},
		{"mode", []string{"idle", "user", "system", "iowait"}[i%4]},
		{"rack", fmt.Sprintf("r%02d", i%40)},
		{"series", fmt.Sprint(i)},
	}
}

// writeLoadSeries indexes series [0, n) of loadLabels for day, their
// names given UIDs in batches (as the write path does), through g's
// Writer.
func writeLoadSeries(tb testing.TB, g *rig, n int, day uint32) {
	tb.Helper()
	ctx := context.Background()
	uids := g.mapper.UIDs()
	layout := mapping.DefaultLayout()
	const batch = 10000
	for lo := 0; lo < n; lo += batch {
		hi := min(n, lo+batch)
		var reqs []uid.UIDRequest
		for i := lo; i < hi; i++ {
			for j, l := range loadLabels(i) {
				if j == 0 {
					reqs = append(reqs, uid.UIDRequest{Kind: uid.KindMetric, Name: []byte(l[1])})
					continue
				}
				reqs = append(reqs, uid.UIDRequest{Kind: uid.KindTagK, Name: []byte(l[0])}, uid.UIDRequest{Kind: uid.KindTagV, Name: []byte(l[1])})
			}
		}
		uids.GetOrCreateBatch(ctx, reqs)
		entries := make([]Entry, 0, hi-lo)
		for at := 0; at < len(reqs); {
			var s series.Series
			for j := range 19 {
				r := reqs[at+j]
				if r.Err != nil {
					tb.Fatal(r.Err)
				}
				if j == 0 {
					s.Metric = r.UID
				} else {
					s.Tags = append(s.Tags, r.UID...)
				}
			}
			at += 19
			layout.SortTags(s.Tags)
			entries = append(entries, Entry{Series: s, Day: day})
		}
		if err := g.w.Write(ctx, entries); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkCardinality: /api/v1/status/tsdb's count of the series of a
// day, from the index of promhbase-load's series (100 metrics, ten
// labels, one unique a series) on the embedded store; built once per
// size, then counted: every series (top 10), with a focus label, and a
// match[] of a quarter of them. The first count of a Reader also reads
// the lengths of the label values' names (memoryInBytesByLabelName),
// which later counts find kept.
func BenchmarkCardinality(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			if testing.Short() && n > 100_000 {
				b.Skip("1M series take a minute to build")
			}
			g := newRig(b)
			const d0 = 19700
			writeLoadSeries(b, g, n, d0)
			for _, tc := range []struct {
				name string
				q    CardinalityQuery
			}{
				{"all", CardinalityQuery{From: d0, To: d0, TopN: 10}},
				{"focus", CardinalityQuery{From: d0, To: d0, TopN: 10, FocusLabel: "instance"}},
				{"match", CardinalityQuery{From: d0, To: d0, TopN: 10, Match: mustSelectors(b, `{mode="idle"}`)}},
			} {
				b.Run(tc.name, func(b *testing.B) {
					b.ReportAllocs()
					var res *Cardinality
					for b.Loop() {
						var err error
						if res, err = g.r.Cardinality(context.Background(), tc.q); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(res.TotalSeries), "series")
				})
			}
		})
	}
}

// mustSelectors parses series selectors into match[]'s sets.
func mustSelectors(tb testing.TB, sels ...string) [][]*labels.Matcher {
	tb.Helper()
	var out [][]*labels.Matcher
	for _, s := range sels {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(s)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ms)
	}
	return out
}

// BenchmarkTally: the count of 1 000 000 series of promhbase-load's shape
// (UIDs as the write path hands them out), in the order of their 'S'
// cells, without a store: the pair counts' own cost.
func BenchmarkTally(b *testing.B) {
	const n = 1_000_000
	layout := mapping.DefaultLayout()
	uidb := func(dst []byte, v int) []byte { return append(dst, byte(v>>16), byte(v>>8), byte(v)) }
	type cell struct{ key, tags []byte }
	cells := make([]cell, n)
	for i := range cells {
		m := uidb(nil, i%100+1)
		var tags []byte
		for k, v := range [...]int{i % 16, i % 3, i % 8, 0, 1000 + i/100, 0, i % 4, i % 40, 100000 + i} {
			tags = uidb(uidb(tags, k+1), v+1)
		}
		cells[i] = cell{append(append(m, mapping.IndexSeriesBucket(tags)), tags...), tags}
	}
	slices.SortFunc(cells, func(a, b cell) int { return bytes.Compare(a.key, b.key) })
	// One buffer, in order, as a scan reads them.
	var buf []byte
	for _, c := range cells {
		buf = append(buf, c.key...)
	}
	w := len(cells[0].key)
	b.ReportAllocs()
	for b.Loop() {
		t := newTally(layout.TagKWidth, layout.PairLen(), nil, nil)
		for at := 0; at+w <= len(buf); at += w {
			t.add(buf[at:at+3], buf[at+4:at+w])
		}
		t.finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
}
