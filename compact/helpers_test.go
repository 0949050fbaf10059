package compact

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/cells"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/internal/testkit/testbackend"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/uid"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix seconds.
const t0 = 1700002800

// env is promhbase's write path, read path and a compactor on a fresh store
// of the backend PROMHBASE_TEST_BACKEND chooses.
type env struct {
	t      testing.TB
	st     store.Store
	tables testbackend.Tables
	layout mapping.Layout
	mapper *series.Mapper
	w      *ingest.Writer
	q      *query.Querier
	c      *Compactor
	now    time.Time // the compactor's clock
}

func newEnv(t testing.TB, layout mapping.Layout) *env {
	t.Helper()
	st, tb := testbackend.New(t)
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tb.UID, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, tables: tb, layout: layout, now: time.Unix(t0+48*3600, 0)}
	e.mapper = series.NewMapper(uids, layout, 0)
	e.w = ingest.New(e.mapper, st, ingest.Options{Table: tb.Data})
	// A reader with its own caches, as another process would be.
	readUIDs, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tb.UID})
	if err != nil {
		t.Fatal(err)
	}
	e.q = query.New(st, series.NewMapper(readUIDs, layout, 0), query.Options{DataTable: tb.Data, UIDTable: tb.UID, MetricNamesTTL: time.Nanosecond})
	e.c = e.compactor()
	return e
}

// compactor returns a new Compactor on the env's store and clock.
func (e *env) compactor() *Compactor {
	return New(e.st, Options{DataTable: e.tables.Data, UIDTable: e.tables.UID, Layout: e.layout, Now: func() time.Time { return e.now }})
}

func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// write sends series through the real write path, as one request.
func (e *env) write(series ...prompb.TimeSeries) {
	e.t.Helper()
	body, err := proto.Marshal(&prompb.WriteRequest{Timeseries: series})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.w.Write(ctxFor(e.t), body, false); err != nil {
		e.t.Fatalf("write: %v", err)
	}
}

// series builds a series of metric with labels k=v pairs and samples.
func promSeries(metric string, kv []string, samples ...prompb.Sample) prompb.TimeSeries {
	ls := []prompb.Label{{Name: "__name__", Value: metric}}
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return prompb.TimeSeries{Labels: ls, Samples: samples}
}

// read returns every sample of every series, rendered with the values'
// bits, one line per series.
func (e *env) read() string {
	e.t.Helper()
	got, err := e.q.Select(ctxFor(e.t), 0, math.MaxUint32*1000, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	if err != nil {
		e.t.Fatalf("select: %v", err)
	}
	var sb strings.Builder
	for _, s := range got {
		fmt.Fprintf(&sb, "%s:", s.Labels)
		for _, p := range s.Samples {
			fmt.Fprintf(&sb, " %d=%016x", p.T, math.Float64bits(p.V))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// rows returns copies of every row of the data table.
func (e *env) rows() []store.Row {
	e.t.Helper()
	sc := e.st.Scan(ctxFor(e.t), store.ScanRequest{Table: e.tables.Data, Family: family})
	defer sc.Close()
	var out []store.Row
	for sc.Next() {
		out = append(out, copyRow(sc.Row()))
	}
	if err := sc.Err(); err != nil {
		e.t.Fatalf("scan: %v", err)
	}
	return out
}

// row returns the row key, read now.
func (e *env) row(key []byte) store.Row {
	e.t.Helper()
	r, err := e.st.Get(ctxFor(e.t), e.tables.Data, key, family)
	if err != nil {
		e.t.Fatalf("get %x: %v", key, err)
	}
	return r
}

func copyRow(r store.Row) store.Row {
	cp := store.Row{Key: bytes.Clone(r.Key)}
	for _, c := range r.Cells {
		cp.Cells = append(cp.Cells, store.Cell{Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier), Value: bytes.Clone(c.Value), Timestamp: c.Timestamp})
	}
	return cp
}

// compactAll compacts every row whose hour ended by the env's clock.
func (e *env) compactAll(c *Compactor) Stats {
	e.t.Helper()
	st, err := c.CompactRange(ctxFor(e.t), time.Unix(0, 0), e.now, nil)
	if err != nil {
		e.t.Fatalf("compact range: %v", err)
	}
	if st.Errors > 0 {
		e.t.Fatalf("compact range: %s", st)
	}
	return st
}

// merged returns the points a reader sees in row.
func (e *env) merged(r store.Row) []mapping.Point {
	e.t.Helper()
	_, _, base, _, err := e.layout.ParseRowKey(r.Key)
	if err != nil {
		e.t.Fatalf("row %x: %v", r.Key, err)
	}
	var m cells.Merger
	pts, err := m.Merge(base, r.Cells, math.MinInt64, math.MaxInt64)
	if err != nil {
		e.t.Fatalf("row %x: %v", r.Key, err)
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

// waitPast waits until the clock (of this machine, which is also the test
// HBase's) is past version, so that a write gets a newer version.
func waitPast(version uint64) {
	for uint64(time.Now().UnixMilli()) <= version {
		time.Sleep(time.Millisecond)
	}
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
