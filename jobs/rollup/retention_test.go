package rollup_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/retention"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// TestRetentionPerResolution: with raw samples kept 1 day, 5m rollups 2
// days and 1h rollups as long as --storage.retention.time (none), a cycle
// deletes the raw hours older than a day, the 5m rollup rows (days) whose
// whole day is older than two days, and no 1h rollup row; the progress
// row stays.
func TestRetentionPerResolution(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	day := int64(86400)
	d0 := int64(h0) / day * day // a midnight
	var samples []sample
	for ts := d0 * 1000; ts < (d0+4*day)*1000; ts += 60_000 {
		samples = append(samples, sample{ts, float64(ts % 1000)})
	}
	g.write([]prompb.TimeSeries{promSeries("m", "a", samples)}...)
	b := g.builder()
	for h := d0; h < d0+4*day-3600; h += 3600 {
		if _, err := b.BuildHour(ctxFor(t), h); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(d0+4*day-1800, 0) // late on the fourth day
	iv5, _ := g.Rollups.Interval("5m")
	iv1, _ := g.Rollups.Interval("1h")
	r, err := retention.New(g.Store, retention.Options{RawTime: 24 * time.Hour, DataTable: g.Tables.Data, Layout: g.Layout,
		Rollups: []retention.RollupTable{{Table: iv5.Table, Span: iv5.Span(), Time: 48 * time.Hour}, {Table: iv1.Table, Span: iv1.Span()}},
		Now:     func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cycle(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	bases := func(table string) []int64 {
		sc := g.Store.Scan(ctxFor(t), store.ScanRequest{Table: table, KeysOnly: true})
		defer sc.Close()
		var out []int64
		for sc.Next() {
			if base, ok := g.Layout.BaseTimeOf(sc.Row().Key); ok {
				out = append(out, int64(base))
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	rawCut := (now.Unix() - day) / 3600 * 3600
	if got := bases(g.Tables.Data); len(got) == 0 || got[0] != rawCut {
		t.Errorf("raw hours from %v, want from %d", got[:min(len(got), 2)], rawCut)
	}
	if got, want := bases(iv5.Table), []int64{d0 + day, d0 + 2*day, d0 + 3*day}; !slices.Equal(got, want) {
		t.Errorf("5m rollup rows %v, want %v (the days not entirely older than 2 days)", got, want)
	}
	if got := bases(iv1.Table); len(got) == 0 || got[0] > d0 {
		t.Errorf("1h rollup rows %v, want them all", got)
	}
	if p, err := rollup.ReadProgress(ctxFor(t), g.Store, iv5.Table); err != nil || p.Hours().Count() != 4*24-1 {
		t.Errorf("progress after retention: %d hours built (%v), want %d", p.Hours().Count(), err, 4*24-1)
	}
}

// TestRetentionStreamsRollups: a retention policy with a stream
// ({job="short"} 48h) and no time for the rest (kept): the short
// series loses its raw hours older than 48h and its 5m rollup rows
// (days) entirely older, its 1h rollup row (a month) stays; the other
// series keeps everything in every table.
func TestRetentionStreamsRollups(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	day := int64(86400)
	d0 := int64(h0) / day * day
	var samples []sample
	for ts := d0 * 1000; ts < (d0+4*day)*1000; ts += 60_000 {
		samples = append(samples, sample{ts, float64(ts % 1000)})
	}
	g.write(promSeries("m", "short", samples), promSeries("m", "long", samples))
	b := g.builder()
	for h := d0; h < d0+4*day-3600; h += 3600 {
		if _, err := b.BuildHour(ctxFor(t), h); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(d0+4*day-1800, 0)
	iv5, _ := g.Rollups.Interval("5m")
	iv1, _ := g.Rollups.Interval("1h")
	r, err := retention.New(g.Store, retention.Options{DataTable: g.Tables.Data, Layout: g.Layout, Labels: g.Mapper.Labels,
		Rollups: []retention.RollupTable{{Table: iv5.Table, Span: iv5.Span()}, {Table: iv1.Table, Span: iv1.Span()}},
		Now:     func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	short := retention.Stream{Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "short")}, Period: 48 * time.Hour}
	if err := r.SetPolicy(retention.Policy{Streams: []retention.Stream{short}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cycle(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	// The first row base of each series of a table.
	first := func(table string) map[string]int64 {
		sc := g.Store.Scan(ctxFor(t), store.ScanRequest{Table: table, KeysOnly: true})
		defer sc.Close()
		out := map[string]int64{}
		for sc.Next() {
			k := sc.Row().Key
			base, ok := g.Layout.BaseTimeOf(k)
			if !ok {
				continue
			}
			ls, err := g.Mapper.Labels(ctxFor(t), k[:g.Layout.MetricWidth], k[g.Layout.MetricWidth+mapping.TimestampBytes:])
			if err != nil {
				t.Fatal(err)
			}
			if f, seen := out[ls.Get("job")]; !seen || int64(base) < f {
				out[ls.Get("job")] = int64(base)
			}
		}
		return out
	}
	rawCut := (now.Unix() - 2*day) / 3600 * 3600
	for _, tc := range []struct {
		table string
		want  map[string]int64
	}{
		{g.Tables.Data, map[string]int64{"short": rawCut, "long": d0}},
		{iv5.Table, map[string]int64{"short": d0 + day, "long": d0}}, // the day holding the cutoff stays
		{iv1.Table, map[string]int64{"short": int64(iv1.Span().BaseTime(uint32(d0))), "long": int64(iv1.Span().BaseTime(uint32(d0)))}},
	} {
		if got := first(tc.table); !maps.Equal(got, tc.want) {
			t.Errorf("%s: first rows %v, want %v", tc.table, got, tc.want)
		}
	}
}
