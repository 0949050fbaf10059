package retention

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix seconds.
const t0 = 1700002800

// rig is the test stack (teststack) with exemplars and the series index
// on.
type rig struct{ *teststack.Stack }

func newRig(t testing.TB, layout mapping.Layout) *rig {
	t.Helper()
	return &rig{teststack.New(t, teststack.Options{Layout: layout, Exemplars: true, Index: true})}
}

func ctxFor(t testing.TB) context.Context { return teststack.Context(t) }

// write sends series through the write path, as one request.
func (g *rig) write(ts ...prompb.TimeSeries) { g.T.Helper(); g.Write(ts...) }

// promSeries builds a series "metric{k=v...}" with a sample and an
// exemplar at each of ts (Unix ms), value the index.
func promSeries(metric string, kv []string, ts ...int64) prompb.TimeSeries {
	s := prompb.TimeSeries{Labels: teststack.Labels(metric, kv...)}
	for i, t := range ts {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: t, Value: float64(i)})
		s.Exemplars = append(s.Exemplars, prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprint(i)}}, Value: float64(i), Timestamp: t})
	}
	return s
}

// samples renders the sample times of every series, one line a series.
func (g *rig) samples() string { g.T.Helper(); return teststack.RenderTimes(g.Select()) }

// exemplars renders the exemplar times of every series, one line a series.
func (g *rig) exemplars() string { g.T.Helper(); return teststack.RenderTimes(g.SelectExemplars()) }

// keys returns the row keys of table.
func (g *rig) keys(table string) [][]byte { g.T.Helper(); return g.Keys(table) }

// hours returns the distinct hours (Unix seconds) of the rows of a table
// of data row keys, sorted.
func (g *rig) hours(table string) []int64 {
	g.T.Helper()
	var out []int64
	for _, k := range g.keys(table) {
		if b, ok := g.Layout.BaseTimeOf(k); ok {
			out = append(out, int64(b))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// indexRows renders the rows of the index table as kind/day ("K19675"),
// or the kind alone for the rows without a day, sorted and distinct.
func (g *rig) indexRows() []string {
	g.T.Helper()
	var out []string
	for _, k := range g.keys(g.Tables.Index) {
		if len(k) >= 5 && (k[0] == mapping.IndexKindTagKs || k[0] == mapping.IndexKindMetrics || k[0] == mapping.IndexKindValues || k[0] == mapping.IndexKindSeries) {
			out = append(out, fmt.Sprintf("%c%d", k[0], uint32(k[1])<<24|uint32(k[2])<<16|uint32(k[3])<<8|uint32(k[4])))
		} else {
			out = append(out, string(k[:1]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func salted() mapping.Layout {
	l := mapping.DefaultLayout()
	l.SaltWidth, l.SaltBuckets = 1, 4
	return l
}

// clock returns a clock fixed at t, movable through the pointer.
func clock(t time.Time) (*time.Time, func() time.Time) {
	now := t
	return &now, func() time.Time { return now }
}
