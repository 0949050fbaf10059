package rollup_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testrollup"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// h0 is an hour boundary (2023-11-14T23:00:00Z) in Unix seconds.
const h0 = 1700002800

// rig is the test stack (teststack) with the rollup tables.
type rig struct{ *teststack.Stack }

func newRig(t testing.TB, layout mapping.Layout) *rig {
	t.Helper()
	return &rig{teststack.New(t, teststack.Options{Layout: layout, Rollups: true})}
}

func ctxFor(t testing.TB) context.Context { return teststack.Context(t) }

func (g *rig) write(ts ...prompb.TimeSeries) { g.T.Helper(); g.Write(ts...) }

// builder returns a Builder of the rig's rollups putting 3 rows at a
// time.
func (g *rig) builder() *rollup.Builder { g.T.Helper(); return g.Builder(rollup.Options{PutBatch: 3}) }

// windows reads back every window of iv in table order (series by
// series).
func (g *rig) windows(iv rollup.Interval) map[string][]rollup.DecodedWindow {
	g.T.Helper()
	ids, err := g.Rollups.IDs()
	if err != nil {
		g.T.Fatal(err)
	}
	d := rollup.NewDecoder(ids)
	sc := g.Store.Scan(ctxFor(g.T), store.ScanRequest{Table: iv.Table})
	defer sc.Close()
	out := map[string][]rollup.DecodedWindow{}
	for sc.Next() {
		row := sc.Row()
		if rollup.IsProgressRow(row.Key) {
			continue // the builds' progress and lease
		}
		_, metric, base, tags, err := g.Layout.ParseRowKey(row.Key)
		if err != nil {
			g.T.Fatalf("rollup row %x: %v", row.Key, err)
		}
		ws, err := d.Decode(iv, base, row.Cells, math.MinInt64, math.MaxInt64)
		if err != nil {
			g.T.Fatalf("rollup row %x: %v", row.Key, err)
		}
		k := fmt.Sprintf("%x/%x", metric, tags)
		out[k] = append(out[k], ws...)
	}
	if err := sc.Err(); err != nil {
		g.T.Fatal(err)
	}
	return out
}

type sample struct {
	t int64
	v float64
}

// want computes the windows of width ms ending in (from, to] of samples
// directly: the right-closed rule.
func want(samples []sample, width, from, to int64) []rollup.Window {
	ss := make([]testrollup.Sample, len(samples))
	for i, s := range samples {
		ss[i] = testrollup.Sample{T: s.t, V: s.v}
	}
	return testrollup.Windows(ss, width, from, to)
}

func promSeries(name, job string, samples []sample) prompb.TimeSeries {
	s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: job}}}
	for _, p := range samples {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: p.t, Value: p.v})
	}
	return s
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestBuildHour: the windows read back from the rollup tables equal those
// computed from the samples with the right-closed rule, for a counter with
// resets, samples on every kind of boundary (hour start, window edges, the
// next hour's first millisecond), a stale marker, a NaN, a series whose
// only sample in the hour is the next row's first, on both layouts.
func TestBuildHour(t *testing.T) {
	t.Parallel()
	for _, layout := range []struct {
		name string
		l    mapping.Layout
	}{{"unsalted", mapping.DefaultLayout()}, {"salted", func() mapping.Layout {
		l := mapping.DefaultLayout()
		l.SaltWidth, l.SaltBuckets = 1, 4
		return l
	}()}} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, layout.l)
			H := int64(h0) * 1000
			var counter []sample
			v := 0.0
			for ts := H - 15_000; ts <= H+rollup.HourMs+15_000; ts += 15_000 {
				v += 3.5
				if ts == H+20*60_000 || ts == H+47*60_000+15_000 {
					v = 1 // resets, one on a window boundary
				}
				counter = append(counter, sample{ts, v})
			}
			gauge := []sample{{H, 1}, {H + 1, 2}, {H + 5*60_000, 3}, {H + 5*60_000 + 1, -4}, {H + 30*60_000, math.NaN()},
				{H + 31*60_000, math.Float64frombits(value.StaleNaN)}, {H + 59*60_000 + 59_999, 0.25}, {H + rollup.HourMs, 100}, {H + rollup.HourMs + 1, 7}}
			edge := []sample{{H + rollup.HourMs, 42}}
			g.write(promSeries("c_total", "a", counter), promSeries("g", "b", gauge), promSeries("g", "edge", edge))

			b := g.builder()
			stats, err := b.BuildHour(ctxFor(t), h0)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Series != 3 {
				t.Errorf("built %d series, want 3", stats.Series)
			}
			for _, iv := range b.Intervals() {
				got := g.windows(iv)
				if len(got) != 3 {
					t.Errorf("%s: %d series, want 3", iv.Name, len(got))
				}
				var all [][]rollup.DecodedWindow
				for _, ws := range got {
					all = append(all, ws)
				}
				width := iv.Seconds() * 1000
				for _, in := range [][]sample{counter, gauge, edge} {
					exp := want(in, width, H, H+rollup.HourMs)
					found := false
					for _, ws := range all {
						if len(ws) != len(exp) || len(ws) == 0 || ws[0].FirstT != exp[0].FirstT || ws[0].First != exp[0].First {
							continue
						}
						found = true
						for i := range ws {
							gw, ew := ws[i], exp[i]
							if gw.Has != rollup.HasAll {
								t.Errorf("%s window %d: aggregates %b, want %b", iv.Name, ew.End, gw.Has, rollup.HasAll)
							}
							if gw.End != ew.End || gw.Count != ew.Count || gw.FirstT != ew.FirstT || gw.LastT != ew.LastT ||
								!sameFloat(gw.Sum, ew.Sum) || !sameFloat(gw.Min, ew.Min) || !sameFloat(gw.Max, ew.Max) ||
								!sameFloat(gw.First, ew.First) || !sameFloat(gw.Last, ew.Last) || !sameFloat(gw.Resets, ew.Resets) {
								t.Errorf("%s window %d:\n got %+v\nwant %+v", iv.Name, ew.End, gw.Window, ew)
							}
						}
					}
					if !found {
						t.Errorf("%s: no series with windows %+v", iv.Name, exp)
					}
				}
			}
			// Building again rewrites the same cells.
			again, err := b.BuildHour(ctxFor(t), h0)
			if err != nil {
				t.Fatal(err)
			}
			if again != stats {
				t.Errorf("second build %+v, first %+v", again, stats)
			}
		})
	}
}
