package index_test

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// cardSeries is a generated series and the days it has data on.
type cardSeries struct {
	lbls labels.Labels
	days []uint32
}

// genCardSeries returns n series of skewed cardinality: five metrics of
// unequal sizes, job of three values, instance of about n/4, mode on two
// metrics only, zone on most series, a label of its own on one in ten; a
// label-less series; each on one to three of the days d0..d0+2.
func genCardSeries(n int, d0 uint32) []cardSeries {
	rng := rand.New(rand.NewPCG(55, 2))
	var out []cardSeries
	at := map[string]int{}
	for i := range n {
		metric := fmt.Sprintf("m%d", min(4, rng.IntN(8))) // m4 takes half
		b := labels.NewScratchBuilder(6)
		b.Add("__name__", metric)
		b.Add("job", []string{"api", "node", "db"}[rng.IntN(3)])
		b.Add("instance", fmt.Sprintf("i-%d", rng.IntN(max(1, n/4))))
		if metric == "m0" || metric == "m1" {
			b.Add("mode", []string{"idle", "user"}[i%2])
		}
		if rng.IntN(10) > 0 {
			b.Add("zone", fmt.Sprintf("z%d", rng.IntN(3)))
		}
		if i%10 == 0 {
			b.Add("uniq", fmt.Sprintf("u-%d-%s", i, strings.Repeat("x", i%7)))
		}
		b.Sort()
		first := d0 + uint32(rng.IntN(3))
		days := []uint32{first}
		for d := first + 1; d <= d0+2; d++ {
			if rng.IntN(2) == 0 {
				days = append(days, d)
			}
		}
		// Two draws of one label set are one series, of both's days.
		if j, ok := at[b.Labels().String()]; ok {
			for _, d := range days {
				if !slices.Contains(out[j].days, d) {
					out[j].days = append(out[j].days, d)
				}
			}
			continue
		}
		at[b.Labels().String()] = len(out)
		out = append(out, cardSeries{b.Labels(), days})
	}
	bare := labels.FromStrings("__name__", "bare")
	return append(out, cardSeries{bare, []uint32{d0}})
}

// want is Cardinality computed from the series themselves.
type want struct {
	series, labels, pairs                     uint64
	metrics, labelSeries, values, mem, byPair map[string]uint64
	focus                                     map[string]uint64
}

func expect(ss []cardSeries, q index.CardinalityQuery) want {
	w := want{metrics: map[string]uint64{}, labelSeries: map[string]uint64{}, values: map[string]uint64{},
		mem: map[string]uint64{}, byPair: map[string]uint64{}, focus: map[string]uint64{}}
	size := func(n int) uint64 { // Prometheus's stringlabels
		if n < 255 {
			return uint64(n + 1)
		}
		return uint64(n + 4)
	}
	for _, s := range ss {
		if !q.AllDays && !slices.ContainsFunc(s.days, func(d uint32) bool { return d >= q.From && d <= q.To }) {
			continue
		}
		if len(q.Match) > 0 && !slices.ContainsFunc(q.Match, func(ms []*labels.Matcher) bool {
			for _, m := range ms {
				if !m.Matches(s.lbls.Get(m.Name)) {
					return false
				}
			}
			return true
		}) {
			continue
		}
		w.series++
		s.lbls.Range(func(l labels.Label) {
			w.labels++
			pair := l.Name + "=" + l.Value
			if w.byPair[pair] == 0 {
				w.values[l.Name]++
				w.pairs++
			}
			w.byPair[pair]++
			w.labelSeries[l.Name]++
			w.mem[l.Name] += size(len(l.Name)) + size(len(l.Value))
			if l.Name == "__name__" {
				w.metrics[l.Value]++
			}
			if l.Name == q.FocusLabel {
				w.focus[l.Value]++
			}
		})
	}
	return w
}

// exactly ranks all as Cardinality does when every name is known: by
// value, then name, n kept.
func exactly(all map[string]uint64, n int) []index.Stat {
	out := []index.Stat{}
	for k, v := range all {
		out = append(out, index.Stat{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b index.Stat) int {
		if c := cmp.Compare(b.Value, a.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out[:min(n, len(out))]
}

// checkTop checks a ranking whose ties at the last place may be broken
// otherwise than by name: its length, its order, every count, and that
// nothing counted more than its last entry is left out.
func checkTop(t *testing.T, what string, got []index.Stat, all map[string]uint64, n int) {
	t.Helper()
	if len(got) != min(n, len(all)) {
		t.Errorf("%s: %d entries %v, want %d", what, len(got), got, min(n, len(all)))
		return
	}
	seen := map[string]bool{}
	for i, s := range got {
		if all[s.Name] != s.Value || seen[s.Name] {
			t.Errorf("%s: entry %d %v: want %d (or a repeated name)", what, i, s, all[s.Name])
		}
		seen[s.Name] = true
		if i > 0 && (got[i-1].Value < s.Value || got[i-1].Value == s.Value && got[i-1].Name > s.Name) {
			t.Errorf("%s: %v before %v", what, got[i-1], s)
		}
	}
	if len(got) > 0 {
		for name, v := range all {
			if v > got[len(got)-1].Value && !seen[name] {
				t.Errorf("%s: %s (%d) left out of %v", what, name, v, got)
			}
		}
	}
}

func selectors(t *testing.T, sels ...string) [][]*labels.Matcher {
	t.Helper()
	var out [][]*labels.Matcher
	for _, s := range sels {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms)
	}
	return out
}

// TestCardinality: the counts of the series index's 'S' rows against the
// counts of the series written, through the write path, on the backend in
// use (testbackend).
func TestCardinality(t *testing.T) {
	s := teststack.New(t, teststack.Options{Index: true})
	const d0 = 19700
	ss := genCardSeries(3000, d0)
	batch := make([]prompb.TimeSeries, 0, 500)
	for i, c := range ss {
		ts := prompb.TimeSeries{}
		c.lbls.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
		for _, d := range c.days {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: (int64(d)*mapping.DaySeconds + 3600*int64(1+i%20)) * 1000, Value: float64(i)})
		}
		batch = append(batch, ts)
		if len(batch) == cap(batch) || i == len(ss)-1 {
			s.Write(batch...)
			batch = batch[:0]
		}
	}
	day := func(d uint32) index.CardinalityQuery { return index.CardinalityQuery{From: d, To: d} }
	for _, tc := range []struct {
		name string
		q    index.CardinalityQuery
	}{
		{"day", day(d0)},
		{"another day", day(d0 + 2)},
		{"a day without series", day(d0 + 9)},
		{"top 3", index.CardinalityQuery{From: d0, To: d0, TopN: 3}},
		{"top 1000", index.CardinalityQuery{From: d0, To: d0 + 2, TopN: 1000}},
		{"range", index.CardinalityQuery{From: d0, To: d0 + 2}},
		{"every day", index.CardinalityQuery{AllDays: true, TopN: 20}},
		{"match equal", index.CardinalityQuery{From: d0, To: d0, Match: selectors(t, `{job="api"}`)}},
		{"match metric", index.CardinalityQuery{From: d0, To: d0 + 1, Match: selectors(t, `m1`)}},
		{"match metric regex and label", index.CardinalityQuery{From: d0, To: d0, Match: selectors(t, `{__name__=~"m[03]", zone!="z1"}`)}},
		{"match regex", index.CardinalityQuery{From: d0, To: d0, Match: selectors(t, `{instance=~"i-1.*"}`)}},
		{"match absent", index.CardinalityQuery{From: d0, To: d0, Match: selectors(t, `{zone=""}`)}},
		{"match two selectors", index.CardinalityQuery{From: d0, To: d0 + 2, Match: selectors(t, `{mode="idle"}`, `{job="db", zone=~"z0|z2"}`)}},
		{"match nothing", index.CardinalityQuery{From: d0, To: d0, Match: selectors(t, `{job="nosuch"}`)}},
		{"match unknown label", index.CardinalityQuery{From: d0, To: d0, Match: selectors(t, `{nosuch!="x"}`)}},
		{"focus", index.CardinalityQuery{From: d0, To: d0, FocusLabel: "zone"}},
		{"focus many values", index.CardinalityQuery{From: d0, To: d0 + 2, FocusLabel: "instance", TopN: 7}},
		{"focus metric name", index.CardinalityQuery{From: d0, To: d0, FocusLabel: "__name__"}},
		{"focus unknown", index.CardinalityQuery{From: d0, To: d0, FocusLabel: "nosuch"}},
		{"focus and match", index.CardinalityQuery{From: d0, To: d0, FocusLabel: "job", Match: selectors(t, `{__name__!="m4"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Index.Cardinality(s.Ctx(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			n := cmp.Or(tc.q.TopN, 10)
			w := expect(ss, tc.q)
			if got.TotalSeries != w.series || got.TotalLabelValuePairs != w.labels || got.LabelPairs != w.pairs {
				t.Errorf("series, labels, pairs = %d, %d, %d; want %d, %d, %d", got.TotalSeries, got.TotalLabelValuePairs, got.LabelPairs, w.series, w.labels, w.pairs)
			}
			for _, c := range []struct {
				what string
				got  []index.Stat
				all  map[string]uint64
			}{
				{"seriesCountByMetricName", got.SeriesCountByMetricName, w.metrics},
				{"seriesCountByLabelName", got.SeriesCountByLabelName, w.labelSeries},
				{"labelValueCountByLabelName", got.LabelValueCountByLabelName, w.values},
				{"memoryInBytesByLabelName", got.MemoryInBytesByLabelName, w.mem},
			} {
				if want := exactly(c.all, n); !slices.Equal(c.got, want) {
					t.Errorf("%s = %v\nwant %v", c.what, c.got, want)
				}
			}
			checkTop(t, "seriesCountByLabelValuePair", got.SeriesCountByLabelValuePair, w.byPair, n)
			checkTop(t, "seriesCountByFocusLabelValue", got.SeriesCountByFocusLabelValue, w.focus, n)
			if got.Partial {
				t.Errorf("partial, with every day covered")
			}
		})
	}
	t.Run("before the series rows", func(t *testing.T) {
		// An index kept before the 'S' rows: their coverage starts later.
		v := binary.BigEndian.AppendUint32(nil, d0+1)
		if err := s.Store.Put(s.Ctx(), s.Tables.Index, []store.Put{{Row: mapping.IndexCoverageKey, Cells: []store.Cell{{
			Family: []byte(mapping.IndexFamily), Qualifier: []byte(mapping.IndexSeriesSinceQual), Value: v}}}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			from    uint32
			partial bool
		}{{d0, true}, {d0 + 1, false}} {
			got, err := s.Index.Cardinality(s.Ctx(), index.CardinalityQuery{From: tc.from, To: d0 + 2})
			if err != nil || got.Partial != tc.partial {
				t.Errorf("from day %d: partial %v, %v; want %v", tc.from, got.Partial, err, tc.partial)
			}
		}
	})
}
