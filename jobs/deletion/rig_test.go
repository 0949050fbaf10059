package deletion

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix seconds.
const t0 = 1700002800

const hourMs = mapping.MaxOffsetMs

// rig is the test stack (teststack) with exemplars and the series index
// on, and a compactor on its store and clock.
type rig struct {
	*teststack.Stack
	c   *compact.Compactor
	now time.Time
}

func newRig(t testing.TB, layout mapping.Layout) *rig {
	t.Helper()
	g := &rig{Stack: teststack.New(t, teststack.Options{Layout: layout, Exemplars: true, Index: true}), now: time.Unix(t0+30*24*3600, 0)}
	g.c = compact.New(g.Store, compact.Options{DataTable: g.Tables.Data, UIDTable: g.Tables.UID, Layout: layout, Now: func() time.Time { return g.now }})
	return g
}

// deleter returns a Deleter of the rig's tables, its compactor as the
// fence, with opts' other fields.
func (g *rig) deleter(opts Options) *Deleter {
	g.T.Helper()
	return g.deleterOn(g.Store, opts)
}

// deleterOn is deleter over st (a wrapper of the rig's store).
func (g *rig) deleterOn(st store.Store, opts Options) *Deleter {
	g.T.Helper()
	opts.DataTable, opts.ExemplarTable, opts.IndexTable, opts.Layout = g.Tables.Data, g.Tables.Exemplar, g.Tables.Index, g.Layout
	if opts.Fence == nil {
		opts.Fence = g.c
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return g.now }
	}
	d, err := New(st, g.Querier, opts)
	if err != nil {
		g.T.Fatal(err)
	}
	return d
}

func ctxFor(t testing.TB) context.Context { return teststack.Context(t) }

// write sends series through the write path, as one request.
func (g *rig) write(ts ...prompb.TimeSeries) { g.T.Helper(); g.Write(ts...) }

// labelsOf parses "name k v ..." into prompb labels.
func labelsOf(name string, kv ...string) []prompb.Label { return teststack.Labels(name, kv...) }

// floats is a series with a sample (value: its index) and an exemplar at
// each of ts (Unix ms).
func floats(ls []prompb.Label, ts ...int64) prompb.TimeSeries {
	s := prompb.TimeSeries{Labels: ls}
	for i, t := range ts {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: t, Value: float64(i) + 0.5})
		s.Exemplars = append(s.Exemplars, prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprint(i)}}, Value: float64(i), Timestamp: t})
	}
	return s
}

// hists is a series with a native histogram at each of ts.
func hists(ls []prompb.Label, ts ...int64) prompb.TimeSeries {
	s := prompb.TimeSeries{Labels: ls}
	for i, t := range ts {
		h := &histogram.Histogram{Count: uint64(i + 1), Sum: float64(i), Schema: 0, ZeroThreshold: 0.001, ZeroCount: uint64(i + 1)}
		s.Histograms = append(s.Histograms, prompb.FromIntHistogram(t, h))
	}
	return s
}

// every returns the times from start (ms) every step up to end, inclusive.
func every(start, end, step int64) []int64 {
	var out []int64
	for t := start; t <= end; t += step {
		out = append(out, t)
	}
	return out
}

// data renders every series' float and histogram sample times and the
// floats' value bits: one line a series.
func (g *rig) data() string { g.T.Helper(); return teststack.RenderValues(g.Select()) }

// exemplars renders every series' exemplar times, one line a series.
func (g *rig) exemplars() string { g.T.Helper(); return teststack.RenderTimes(g.SelectExemplars()) }

// row returns the row key of table, read now.
func (g *rig) row(table string, key []byte) store.Row { g.T.Helper(); return g.Get(table, key, "") }

// renderCells renders cells as "qualifier=value", sorted.
func renderCells(cells []store.Cell) string {
	parts := make([]string, 0, len(cells))
	for _, c := range cells {
		parts = append(parts, fmt.Sprintf("%X=%X", c.Qualifier, c.Value))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// compactAll compacts every row whose hour ended by the rig's clock.
func (g *rig) compactAll() {
	g.T.Helper()
	st, err := g.c.CompactRange(ctxFor(g.T), time.Unix(0, 0), g.now, nil)
	if err != nil || st.Errors > 0 {
		g.T.Fatalf("compact: %v %s", err, st)
	}
}

// putCells writes raw cells into a data row.
func (g *rig) putCells(key []byte, cells ...store.Cell) {
	g.T.Helper()
	for i := range cells {
		cells[i].Family = []byte("t")
	}
	if err := g.Store.Put(ctxFor(g.T), g.Tables.Data, []store.Put{{Row: key, Cells: cells}}); err != nil {
		g.T.Fatal(err)
	}
}

func salted() mapping.Layout {
	l := mapping.DefaultLayout()
	l.SaltWidth, l.SaltBuckets = 1, 4
	return l
}
