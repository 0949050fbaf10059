package compact

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix seconds.
const t0 = 1700002800

// env is the test stack (teststack) with a compactor on its store and
// clock.
type env struct {
	*teststack.Stack
	c   *Compactor
	now time.Time // the compactor's clock
}

func newEnv(t testing.TB, layout mapping.Layout) *env {
	t.Helper()
	e := &env{Stack: teststack.New(t, teststack.Options{Layout: layout}), now: time.Unix(t0+48*3600, 0)}
	e.c = e.compactor()
	return e
}

// compactor returns a new Compactor on the env's store and clock.
func (e *env) compactor() *Compactor {
	return New(e.Store, Options{DataTable: e.Tables.Data, UIDTable: e.Tables.UID, Layout: e.Layout, Now: func() time.Time { return e.now }})
}

func ctxFor(t testing.TB) context.Context { return teststack.Context(t) }

// write sends series through the real write path, as one request.
func (e *env) write(series ...prompb.TimeSeries) { e.T.Helper(); e.Write(series...) }

// series builds a series of metric with labels k=v pairs and samples.
func promSeries(metric string, kv []string, samples ...prompb.Sample) prompb.TimeSeries {
	return prompb.TimeSeries{Labels: teststack.Labels(metric, kv...), Samples: samples}
}

// read returns every sample of every series, rendered with the values'
// bits, one line per series.
func (e *env) read() string { e.T.Helper(); return teststack.RenderValues(e.Select()) }

// rows returns copies of every row of the data table.
func (e *env) rows() []store.Row { e.T.Helper(); return e.Rows(e.Tables.Data, family) }

// row returns the row key, read now.
func (e *env) row(key []byte) store.Row { e.T.Helper(); return e.Get(e.Tables.Data, key, family) }

// compactAll compacts every row whose hour ended by the env's clock.
func (e *env) compactAll(c *Compactor) Stats {
	e.T.Helper()
	st, err := c.CompactRange(ctxFor(e.T), time.Unix(0, 0), e.now, nil)
	if err != nil {
		e.T.Fatalf("compact range: %v", err)
	}
	if st.Errors > 0 {
		e.T.Fatalf("compact range: %s", st)
	}
	return st
}

// merged returns the points a reader sees in row.
func (e *env) merged(r store.Row) []mapping.Point {
	e.T.Helper()
	_, _, base, _, err := e.Layout.ParseRowKey(r.Key)
	if err != nil {
		e.T.Fatalf("row %x: %v", r.Key, err)
	}
	var m cells.Merger
	pts, err := m.Merge(base, r.Cells, math.MinInt64, math.MaxInt64)
	if err != nil {
		e.T.Fatalf("row %x: %v", r.Key, err)
	}
	return append([]mapping.Point(nil), pts...)
}

// dataCells returns the cells of r that hold data points (even-length
// qualifiers).
func dataCells(r store.Row) []store.Cell {
	var out []store.Cell
	for _, c := range r.Cells {
		if len(c.Qualifier)%2 == 0 {
			out = append(out, c)
		}
	}
	return out
}

// renderCells renders cells as "qualifier=value@version", sorted.
func renderCells(cells []store.Cell) string {
	parts := make([]string, 0, len(cells))
	for _, c := range cells {
		parts = append(parts, fmt.Sprintf("%X=%X@%d", c.Qualifier, c.Value, c.Timestamp))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func renderPoints(pts []mapping.Point) string {
	var sb strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&sb, "%d=%016x ", p.T, math.Float64bits(p.V))
	}
	return sb.String()
}

// maxVersion is the newest version among cells.
func maxVersion(cells []store.Cell) uint64 {
	var v uint64
	for _, c := range cells {
		v = max(v, c.Timestamp)
	}
	return v
}

func salted() mapping.Layout {
	l := mapping.DefaultLayout()
	l.SaltWidth, l.SaltBuckets = 1, 4
	return l
}
