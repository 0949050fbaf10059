package retention

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"go.uber.org/goleak"

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

// rig is the write path (with exemplars and the series index) and the
// read path on a fresh store of the backend PROMHBASE_TEST_BACKEND
// chooses.
type rig struct {
	t      testing.TB
	st     store.Store
	tables testbackend.Tables
	layout mapping.Layout
	w      *ingest.Writer
	ixw    *index.Writer
	q      *query.Querier
}

func newRig(t testing.TB, layout mapping.Layout) *rig {
	t.Helper()
	st, tb := testbackend.New(t)
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tb.UID, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	m := series.NewMapper(uids, layout, 0)
	ixw := index.NewWriter(st, index.Options{MetaTable: tb.Meta, IndexTable: tb.Index, Layout: layout}, nil)
	if err := ixw.MarkCoverage(ctxFor(t), 0); err != nil {
		t.Fatal(err)
	}
	w := ingest.New(m, st, ingest.Options{Table: tb.Data, ExemplarTable: tb.Exemplar, ExemplarSlots: 720, Indexer: ixw})
	readUIDs, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tb.UID})
	if err != nil {
		t.Fatal(err)
	}
	q := query.New(st, series.NewMapper(readUIDs, layout, 0), query.Options{DataTable: tb.Data, UIDTable: tb.UID,
		ExemplarTable: tb.Exemplar, MetricNamesTTL: time.Nanosecond, Index: index.NewReader(st, tb.Index, readUIDs, layout)})
	return &rig{t: t, st: st, tables: tb, layout: layout, w: w, ixw: ixw, q: q}
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

// promSeries builds a series "metric{k=v...}" with a sample and an
// exemplar at each of ts (Unix ms), value the index.
func promSeries(metric string, kv []string, ts ...int64) prompb.TimeSeries {
	ls := []prompb.Label{{Name: "__name__", Value: metric}}
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	s := prompb.TimeSeries{Labels: ls}
	for i, t := range ts {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: t, Value: float64(i)})
		s.Exemplars = append(s.Exemplars, prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprint(i)}}, Value: float64(i), Timestamp: t})
	}
	return s
}

var all = labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")

// samples renders the samples of every series, one line a series.
func (g *rig) samples() string {
	g.t.Helper()
	got, err := g.q.Select(ctxFor(g.t), 0, math.MaxUint32*1000, all)
	if err != nil {
		g.t.Fatalf("select: %v", err)
	}
	var sb strings.Builder
	for _, s := range got {
		fmt.Fprintf(&sb, "%s:", s.Labels)
		for _, p := range s.Samples {
			fmt.Fprintf(&sb, " %d", p.T)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// exemplars renders the exemplar times of every series, one line a series.
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

// keys returns the row keys of table.
func (g *rig) keys(table string) [][]byte {
	g.t.Helper()
	sc := g.st.Scan(ctxFor(g.t), store.ScanRequest{Table: table, KeysOnly: true})
	defer sc.Close()
	var out [][]byte
	for sc.Next() {
		out = append(out, bytes.Clone(sc.Row().Key))
	}
	if err := sc.Err(); err != nil {
		g.t.Fatalf("scan %s: %v", table, err)
	}
	return out
}

// hours returns the distinct hours (Unix seconds) of the rows of a table
// of data row keys, sorted.
func (g *rig) hours(table string) []int64 {
	g.t.Helper()
	var out []int64
	for _, k := range g.keys(table) {
		if b, ok := g.layout.BaseTimeOf(k); ok {
			out = append(out, int64(b))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// indexRows renders the rows of the index table as kind/day ("K19675"),
// or the kind alone for the rows without a day, sorted and distinct.
func (g *rig) indexRows() []string {
	g.t.Helper()
	var out []string
	for _, k := range g.keys(g.tables.Index) {
		if len(k) >= 5 && (k[0] == mapping.IndexKindTagKs || k[0] == mapping.IndexKindMetrics || k[0] == mapping.IndexKindValues) {
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
