package query

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/store/storetest"
)

// TestColdCacheLabels: a querier whose UID caches are empty (after a
// restart, or over data OpenTSDB wrote) answers as one whose caches are
// warm, through Select, SelectLabels and Stream, reading the names its
// series lack in a batch per kind and maxPending series, never a Get per
// UID; series that the names show not to match are dropped and give back
// what they were charged.
func TestColdCacheLabels(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one scan: batches counted exactly
	es, warm := warmStore(t)
	const series = 2*maxPending + 88
	for i := range series {
		writeSeries(t, warm, es, t0, 3, func(j int) float64 { return float64(i*10 + j) },
			"__name__", "cold_me", "instance", fmt.Sprintf("host-%04d", i), "job", "node", "zone", fmt.Sprintf("z%d", i%7))
	}
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "cold_me")
	inZ3, endIn5 := 0, 0
	for i := range series {
		if i%7 == 3 {
			inZ3++
		}
		if i%10 == 5 {
			endIn5++
		}
	}
	for _, tc := range []struct {
		name     string
		matchers []*labels.Matcher
		want     int // series
	}{
		{"every series", []*labels.Matcher{name}, series},
		{"tag pushed down", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchEqual, "zone", "z3")}, inZ3},
		{"post-filtered regex", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-0.*5")}, endIn5},
		{"post-filtered negation", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchNotRegexp, "instance", "host-0.*5")}, series - endIn5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantSel, wantLbls, wantStream := answers(t, New(es, warm, Options{}), tc.matchers)
			if n := strings.Count(wantLbls, "{"); n != tc.want {
				t.Fatalf("warm querier: %d series, want %d", n, tc.want)
			}
			for _, api := range []string{"Select", "SelectLabels", "Stream"} {
				st := &storetest.ReadCounter{Table: "tsdb-uid", Family: "name", CellsStore: es}
				q := New(st, coldMapper(t, st), Options{})
				var got, want string
				switch api {
				case "Select":
					got, want = selectString(t, q, tc.matchers), wantSel
				case "SelectLabels":
					got, want = labelsString(t, q, tc.matchers), wantLbls
				case "Stream":
					b := q.NewBudget()
					got, want = streamString(t, q, b, tc.matchers), wantStream
					if held := b.Held(); held != 0 {
						t.Errorf("Stream: budget holds %d after every series was released", held)
					}
				}
				if got != want {
					t.Errorf("%s, cold caches:\n%.300s\nwant (warm caches)\n%.300s", api, got, want)
				}
				// Per batch of maxPending series a GetCells for the tag
				// values, one for the tag names at most, and the metric's.
				batches := int64((series + maxPending - 1) / maxPending)
				if g, c := st.Gets.Load(), st.Batches.Load(); g != 0 || c < 1 || c > 3*batches {
					t.Errorf("%s read names with %d Gets and %d GetCells; want none and 1..%d", api, g, c, 3*batches)
				}
			}
		})
	}
}

// answers returns what q answers through Select, SelectLabels and Stream.
func answers(t *testing.T, q *Querier, ms []*labels.Matcher) (sel, lbls, stream string) {
	t.Helper()
	return selectString(t, q, ms), labelsString(t, q, ms), streamString(t, q, q.NewBudget(), ms)
}

func selectString(t *testing.T, q *Querier, ms []*labels.Matcher) string {
	t.Helper()
	ss, err := q.Select(context.Background(), t0, t0+3_600_000, ms...)
	if err != nil {
		t.Fatal(err)
	}
	return seriesString(ss)
}

// seriesString prints the labels and samples of ss, a series a line.
func seriesString(ss []Series) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintln(&b, s.Labels, s.Samples)
	}
	return b.String()
}

func labelsString(t *testing.T, q *Querier, ms []*labels.Matcher) string {
	t.Helper()
	ls, err := q.SelectLabels(context.Background(), t0, t0+3_600_000, ms...)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintln(&b, l)
	}
	return b.String()
}

func streamString(t *testing.T, q *Querier, bud *Budget, ms []*labels.Matcher) string {
	t.Helper()
	var b strings.Builder
	err := q.Stream(context.Background(), bud, t0, t0+3_600_000, ms, func(cs *ChunkSeries) error {
		defer bud.Release(cs.Bytes)
		fmt.Fprintln(&b, cs.Labels, cs.Samples, len(cs.Chunks))
		for _, c := range cs.Chunks {
			fmt.Fprintf(&b, " %d %d %x\n", c.MinT, c.MaxT, c.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestColdCacheAlternation: a query naming many values (a regex
// alternation of metric names and of label values, as a Grafana variable
// with several values selected sends) reads their UIDs in one batch a
// kind when the caches lack them, not a Get a name.
func TestColdCacheAlternation(t *testing.T) {
	es, warm := warmStore(t)
	var hosts []string
	for i := range 100 {
		writeSeries(t, warm, es, t0, 2, func(j int) float64 { return float64(j) },
			"__name__", fmt.Sprintf("alt_%d", i%2), "instance", fmt.Sprintf("host-%04d", i))
		if i%5 == 0 {
			hosts = append(hosts, fmt.Sprintf("host-%04d", i))
		}
	}
	ms := []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchRegexp, "__name__", "alt_0|alt_1|alt_2"),
		labels.MustNewMatcher(labels.MatchRegexp, "instance", strings.Join(hosts, "|")),
	}
	want := labelsString(t, New(es, warm, Options{}), ms)
	if n := strings.Count(want, "{"); n != len(hosts) {
		t.Fatalf("warm querier: %d series, want %d", n, len(hosts))
	}
	st := &storetest.ReadCounter{Table: "tsdb-uid", Family: "id", CellsStore: es}
	if got := labelsString(t, New(st, coldMapper(t, st), Options{}), ms); got != want {
		t.Errorf("cold caches:\n%s\nwant\n%s", got, want)
	}
	// One Get for the label name; the metric names and the 20 values in
	// a batch each (alt_2 has no UID: read once more on its own).
	if g, b := st.Gets.Load(), st.Batches.Load(); g > 2 || b != 2 {
		t.Errorf("UIDs read with %d Gets and %d batches; want at most 2 and 2", g, b)
	}
}

// TestColdCachePendingRows: a series waiting for its labels holds one row
// (hour) at most: at its next row the pending series are resolved, so
// that a query post-filtering most of a metric's series away does not
// hold all their hours meanwhile. With a budget that the data of every
// series' three hours would exceed, the cold query answers as the warm
// one.
func TestColdCachePendingRows(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	es, warm := warmStore(t)
	const series, hours = 100, 3
	for i := range series {
		writeSeries(t, warm, es, t0, hours*360, func(j int) float64 { return float64(i*j) * 1.37 },
			"__name__", "few", "instance", fmt.Sprintf("host-%04d", i))
	}
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "few"), labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-0.*42")}
	const maxBytes = 500 << 10
	opts := Options{MaxBytes: maxBytes}
	answer := func(q *Querier) (string, error) {
		ss, err := q.Select(context.Background(), t0, t0+hours*3_600_000, ms...)
		var b strings.Builder
		for _, s := range ss {
			fmt.Fprintln(&b, s.Labels, len(s.Samples), s.Samples[len(s.Samples)-1])
		}
		return b.String(), err
	}
	want, err := answer(New(es, warm, opts))
	if err != nil || want != fmt.Sprintln(`{__name__="few", instance="host-0042"}`, hours*360, Sample{T: t0 + (hours*360-1)*10_000, V: float64(42*(hours*360-1)) * 1.37}) {
		t.Fatalf("warm querier: %s, %v", want, err)
	}
	st := &storetest.ReadCounter{Table: "tsdb-uid", Family: "name", CellsStore: es}
	got, err := answer(New(st, coldMapper(t, st), opts))
	if err != nil {
		t.Fatalf("cold caches, budget %d bytes: %v", maxBytes, err)
	}
	if got != want {
		t.Errorf("cold caches: %s, want %s", got, want)
	}
}

// TestHourParts: SelectLabels scans the whole hours inside its range for
// their keys only, and decodes the hours at its edges; other modes, and
// ranges without a whole hour inside, scan as one part.
func TestHourParts(t *testing.T) {
	const h = int64(3_600_000)
	for _, tc := range []struct {
		name       string
		mode       mode
		start, end int64
		want       string
	}{
		{"samples", modeSamples, 0, 10 * h, "[0 36000000 false]"},
		{"aligned", modeLabels, 2 * h, 5*h - 1, "[7200000 17999999 true]"},
		{"both edges", modeLabels, 2*h + 1, 5 * h, "[7200001 10799999 false] [10800000 17999999 true] [18000000 18000000 false]"},
		{"within an hour", modeLabels, 2*h + 1, 3*h - 1, "[7200001 10799999 false]"},
		{"across one boundary", modeLabels, 2*h + 1, 3*h + 5, "[7200001 10800005 false]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &selection{mode: tc.mode, start: tc.start, end: tc.end}
			var got []string
			covered := tc.start
			for _, p := range s.hourParts() {
				got = append(got, fmt.Sprint([]any{p.from, p.to, p.keysOnly}))
				if p.from != covered {
					t.Errorf("part %v after %d", p, covered)
				}
				if p.keysOnly && (p.from%h != 0 || (p.to+1)%h != 0) {
					t.Errorf("keys-only part %v is not whole hours", p)
				}
				covered = p.to + 1
			}
			if covered != tc.end+1 {
				t.Errorf("parts end at %d, want %d", covered-1, tc.end)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("parts %s, want %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}
