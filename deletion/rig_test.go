package deletion

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"go.uber.org/goleak"

	"github.com/promhbase/promhbase/compact"
	"github.com/promhbase/promhbase/index"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/internal/testkit/testbackend"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/uid"
)

// TestMain fails the package's tests when they leave goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// On HBase (PROMHBASE_TEST_BACKEND=hbase) the store's admin
		// client, which creates and drops the test tables, cannot be
		// closed (gohbase's AdminClient panics in Close, see
		// hbase.Store.Close): the reader of its connection to the master
		// stays.
		goleak.IgnoreAnyFunction("github.com/tsuna/gohbase/region.(*client).receiveRPCs"),
	)
}

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix seconds.
const t0 = 1700002800

const hourMs = mapping.MaxOffsetMs

// rig is the write path (exemplars and the series index on), the read
// path, a compactor and a Deleter on a fresh store of the backend
// PROMHBASE_TEST_BACKEND chooses.
type rig struct {
	t      testing.TB
	st     store.Store
	tables testbackend.Tables
	layout mapping.Layout
	mapper *series.Mapper
	w      *ingest.Writer
	q      *query.Querier
	ix     *index.Reader
	ixw    *index.Writer
	c      *compact.Compactor
	now    time.Time
}

func newRig(t testing.TB, layout mapping.Layout) *rig {
	t.Helper()
	st, tb := testbackend.New(t)
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tb.UID, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, st: st, tables: tb, layout: layout, now: time.Unix(t0+30*24*3600, 0)}
	g.mapper = series.NewMapper(uids, layout, 0)
	ixw := index.NewWriter(st, index.Options{MetaTable: tb.Meta, IndexTable: tb.Index, Layout: layout}, nil)
	if err := ixw.MarkCoverage(ctxFor(t), 0); err != nil {
		t.Fatal(err)
	}
	g.ixw = ixw
	g.w = ingest.New(g.mapper, st, ingest.Options{Table: tb.Data, ExemplarTable: tb.Exemplar, ExemplarSlots: 720, Indexer: ixw})
	// A reader with caches of its own, as another process would have.
	readUIDs, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tb.UID})
	if err != nil {
		t.Fatal(err)
	}
	g.ix = index.NewReader(st, tb.Index, readUIDs, layout)
	g.q = query.New(st, series.NewMapper(readUIDs, layout, 0), query.Options{DataTable: tb.Data, UIDTable: tb.UID,
		ExemplarTable: tb.Exemplar, MetricNamesTTL: time.Nanosecond, Index: g.ix})
	g.c = compact.New(st, compact.Options{DataTable: tb.Data, UIDTable: tb.UID, Layout: layout, Now: func() time.Time { return g.now }})
	return g
}

// deleter returns a Deleter of the rig's tables, its compactor as the
// fence, with opts' other fields.
func (g *rig) deleter(opts Options) *Deleter {
	g.t.Helper()
	opts.DataTable, opts.ExemplarTable, opts.IndexTable, opts.Layout = g.tables.Data, g.tables.Exemplar, g.tables.Index, g.layout
	if opts.Fence == nil {
		opts.Fence = g.c
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return g.now }
	}
	d, err := New(g.st, g.q, opts)
	if err != nil {
		g.t.Fatal(err)
	}
	return d
}

func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// write sends series through the write path, as one request.
func (g *rig) write(ts ...prompb.TimeSeries) {
	g.t.Helper()
	body, err := proto.Marshal(&prompb.WriteRequest{Timeseries: ts})
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.w.Write(ctxFor(g.t), body, false); err != nil {
		g.t.Fatalf("write: %v", err)
	}
}

// labelsOf parses "name k v ..." into prompb labels.
func labelsOf(name string, kv ...string) []prompb.Label {
	ls := []prompb.Label{{Name: "__name__", Value: name}}
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return ls
}

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

var all = labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")

// data renders every series' float and histogram sample times and the
// floats' value bits: one line a series.
func (g *rig) data() string {
	g.t.Helper()
	got, err := g.q.Select(ctxFor(g.t), 0, math.MaxUint32*1000, all)
	if err != nil {
		g.t.Fatalf("select: %v", err)
	}
	var sb strings.Builder
	for _, s := range got {
		fmt.Fprintf(&sb, "%s:", s.Labels)
		for _, p := range s.Samples {
			fmt.Fprintf(&sb, " %d=%x", p.T, math.Float64bits(p.V))
		}
		for _, h := range s.Histograms {
			fmt.Fprintf(&sb, " h%d", h.T)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// exemplars renders every series' exemplar times, one line a series.
func (g *rig) exemplars() string {
	g.t.Helper()
	got, err := g.q.SelectExemplars(ctxFor(g.t), 0, math.MaxUint32*1000, all)
	if err != nil {
		g.t.Fatalf("select exemplars: %v", err)
	}
	var sb strings.Builder
	for _, s := range got {
		fmt.Fprintf(&sb, "%s:", s.Labels)
		for _, e := range s.Exemplars {
			fmt.Fprintf(&sb, " %d", e.T)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// rowKey returns the data row key of the series ls for the hour base.
func (g *rig) rowKey(ls []prompb.Label, base uint32) []byte {
	g.t.Helper()
	lbls := make([]mapping.Label, len(ls))
	for i, l := range ls {
		lbls[i] = mapping.Label{Name: []byte(l.Name), Value: []byte(l.Value)}
	}
	s, err := g.mapper.Resolve(ctxFor(g.t), fmt.Appendf(nil, "%v", ls), lbls)
	if err != nil {
		g.t.Fatal(err)
	}
	return g.mapper.AppendRowKey(nil, s, base)
}

// row returns the row key of table, read now.
func (g *rig) row(table string, key []byte) store.Row {
	g.t.Helper()
	r, err := g.st.Get(ctxFor(g.t), table, key, "")
	if err != nil {
		g.t.Fatalf("get %x: %v", key, err)
	}
	return r
}

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
	g.t.Helper()
	st, err := g.c.CompactRange(ctxFor(g.t), time.Unix(0, 0), g.now, nil)
	if err != nil || st.Errors > 0 {
		g.t.Fatalf("compact: %v %s", err, st)
	}
}

// putCells writes raw cells into a data row.
func (g *rig) putCells(key []byte, cells ...store.Cell) {
	g.t.Helper()
	for i := range cells {
		cells[i].Family = []byte("t")
	}
	if err := g.st.Put(ctxFor(g.t), g.tables.Data, []store.Put{{Row: key, Cells: cells}}); err != nil {
		g.t.Fatal(err)
	}
}

func salted() mapping.Layout {
	l := mapping.DefaultLayout()
	l.SaltWidth, l.SaltBuckets = 1, 4
	return l
}
