// Package teststack is promhbase's write and read path in one process for
// tests: on a store of the backend testbackend chooses (embedded by
// default, HBase with PROMHBASE_TEST_BACKEND=hbase), a UID table, the
// writer's series mapper, an ingest.Writer, a query.Querier with caches of
// its own (as another process would have), and on request the exemplar
// table, the series index and the rollup configuration. Everything it
// opens is closed or dropped when the test ends (t.Cleanup).
//
// It imports neither compact nor deletion, so that their own tests can
// use it: they build a compactor or a Deleter over Store, Tables and
// Layout. Only tests import it.
package teststack

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// Options says which parts of the stack a test wants; the zero Options
// is the data and UID tables, the writer and the querier on OpenTSDB's
// default layout.
type Options struct {
	// Layout is the row-key layout; the zero Layout means
	// mapping.DefaultLayout().
	Layout mapping.Layout
	// Exemplars keeps exemplars in the exemplar table
	// (ingest.DefaultExemplarSlots per series and hour), read back by
	// SelectExemplars; off, the writer drops them.
	Exemplars bool
	// Index keeps the series index: IndexWriter (coverage marked from day
	// 0) is the writer's Indexer, Index the querier's.
	Index bool
	// Rollups creates the rollup tables on every backend and sets Rollups
	// (testbackend.Tables.RollupConfig), which the querier's downsampled
	// selections name.
	Rollups bool
	// Open, when set, opens the store and names its tables instead of
	// testbackend (a store of options of its own, say); it registers its
	// own cleanups. With Rollups, the store must have the rollup tables.
	Open func(testing.TB) (store.Store, testbackend.Tables)
	// Ingest, when set, edits the writer's options (Limits, RowNoter, HA,
	// Metadata) before the writer is made.
	Ingest func(*ingest.Options)
}

// Stack is the parts New made. Its fields may be replaced by a test (a
// Writer with a RowNoter, say); Write and the reads use what they hold
// then.
type Stack struct {
	T      testing.TB
	Store  store.Store
	Tables testbackend.Tables
	Layout mapping.Layout
	// UIDs and Mapper are the writer's (UID metrics on a registry of
	// their own).
	UIDs   *uid.UIDs
	Mapper *series.Mapper
	Writer *ingest.Writer
	// Querier reads with UID caches of its own and lists metric names
	// afresh at every query, so it sees every write at once.
	Querier *query.Querier
	// IndexWriter and Index are the series index's writer and reader;
	// nil without Options.Index.
	IndexWriter *index.Writer
	Index       *index.Reader
	// Rollups is the rollup configuration over Tables; nil without
	// Options.Rollups.
	Rollups *rollup.Config

	opts Options
}

// New builds a stack on fresh tables of the backend in use.
func New(t testing.TB, opts Options) *Stack {
	t.Helper()
	if opts.Layout == (mapping.Layout{}) {
		opts.Layout = mapping.DefaultLayout()
	}
	var st store.Store
	var tb testbackend.Tables
	switch {
	case opts.Open != nil:
		st, tb = opts.Open(t)
	case opts.Rollups:
		st, tb = testbackend.NewWithRollups(t)
	default:
		st, tb = testbackend.New(t)
	}
	s := &Stack{T: t, Store: st, Tables: tb, Layout: opts.Layout, opts: opts}
	uids, err := uid.NewUIDs(st, opts.Layout, uid.UIDOptions{Table: tb.UID, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	s.UIDs, s.Mapper = uids, series.NewMapper(uids, opts.Layout, 0)
	if opts.Index {
		s.IndexWriter = index.NewWriter(st, index.Options{MetaTable: tb.Meta, IndexTable: tb.Index, Layout: opts.Layout}, nil)
		if err := s.IndexWriter.MarkCoverage(Context(t), 0); err != nil {
			t.Fatal(err)
		}
	}
	if opts.Rollups {
		s.Rollups = tb.RollupConfig()
	}
	s.Writer = s.NewWriter(nil)
	s.Querier, s.Index = s.newQuerier(nil)
	return s
}

// NewWriter returns another writer over the stack's mapper and store,
// with the options New gave Writer edited by edit (nil: as they are).
func (s *Stack) NewWriter(edit func(*ingest.Options)) *ingest.Writer {
	o := ingest.Options{Table: s.Tables.Data}
	if s.opts.Exemplars {
		o.ExemplarTable, o.ExemplarSlots = s.Tables.Exemplar, ingest.DefaultExemplarSlots
	}
	if s.IndexWriter != nil {
		o.Indexer = s.IndexWriter
	}
	if s.opts.Ingest != nil {
		s.opts.Ingest(&o)
	}
	if edit != nil {
		edit(&o)
	}
	return ingest.New(s.Mapper, s.Store, o)
}

// NewQuerier returns a querier with UID caches of its own, with the
// options of Querier edited by edit (nil: as they are).
func (s *Stack) NewQuerier(edit func(*query.Options)) *query.Querier {
	s.T.Helper()
	q, _ := s.newQuerier(edit)
	return q
}

// newQuerier is NewQuerier, and its series index reader.
func (s *Stack) newQuerier(edit func(*query.Options)) (*query.Querier, *index.Reader) {
	s.T.Helper()
	uids, err := uid.NewUIDs(s.Store, s.Layout, uid.UIDOptions{Table: s.Tables.UID})
	if err != nil {
		s.T.Fatal(err)
	}
	o := query.Options{DataTable: s.Tables.Data, UIDTable: s.Tables.UID, MetricNamesTTL: time.Nanosecond, Rollups: s.Rollups}
	if s.opts.Exemplars {
		o.ExemplarTable = s.Tables.Exemplar
	}
	var ix *index.Reader
	if s.opts.Index {
		ix = index.NewReader(s.Store, s.Tables.Index, uids, s.Layout)
		o.Index = ix
	}
	if edit != nil {
		edit(&o)
	}
	return query.New(s.Store, series.NewMapper(uids, s.Layout, 0), o), ix
}

// Context returns a context of five minutes, cancelled when the test
// ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Ctx is Context of the stack's test.
func (s *Stack) Ctx() context.Context { return Context(s.T) }

// TryWrite sends ts through Writer as one remote write 1.0 request.
func (s *Stack) TryWrite(ts ...prompb.TimeSeries) (ingest.Result, error) {
	s.T.Helper()
	body, err := proto.Marshal(&prompb.WriteRequest{Timeseries: ts})
	if err != nil {
		s.T.Fatal(err)
	}
	return s.Writer.Write(s.Ctx(), body, false)
}

// Write is TryWrite failing the test on an error.
func (s *Stack) Write(ts ...prompb.TimeSeries) ingest.Result {
	s.T.Helper()
	res, err := s.TryWrite(ts...)
	if err != nil {
		s.T.Fatalf("write: %v", err)
	}
	return res
}

// all matches every series.
var all = labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")

// Select returns the samples of the series ms select (every series when
// none) at any time, through Querier.
func (s *Stack) Select(ms ...*labels.Matcher) []query.Series {
	s.T.Helper()
	return s.selectAll("select", s.Querier.Select, ms)
}

// SelectExemplars is Select of the exemplars.
func (s *Stack) SelectExemplars(ms ...*labels.Matcher) []query.Series {
	s.T.Helper()
	return s.selectAll("select exemplars", s.Querier.SelectExemplars, ms)
}

// selectAll calls sel over all time with ms, or all when ms is empty.
func (s *Stack) selectAll(what string, sel func(context.Context, int64, int64, ...*labels.Matcher) ([]query.Series, error), ms []*labels.Matcher) []query.Series {
	s.T.Helper()
	if len(ms) == 0 {
		ms = []*labels.Matcher{all}
	}
	got, err := sel(s.Ctx(), 0, math.MaxUint32*1000, ms...)
	if err != nil {
		s.T.Fatalf("%s: %v", what, err)
	}
	return got
}

// Rows returns copies of the rows of table, their cells of family
// ("" every family).
func (s *Stack) Rows(table, family string) []store.Row {
	s.T.Helper()
	sc := s.Store.Scan(s.Ctx(), store.ScanRequest{Table: table, Family: family})
	defer sc.Close()
	var out []store.Row
	for sc.Next() {
		out = append(out, CopyRow(sc.Row()))
	}
	if err := sc.Err(); err != nil {
		s.T.Fatalf("scan %s: %v", table, err)
	}
	return out
}

// Keys returns the row keys of table.
func (s *Stack) Keys(table string) [][]byte {
	s.T.Helper()
	sc := s.Store.Scan(s.Ctx(), store.ScanRequest{Table: table, KeysOnly: true})
	defer sc.Close()
	var out [][]byte
	for sc.Next() {
		out = append(out, bytes.Clone(sc.Row().Key))
	}
	if err := sc.Err(); err != nil {
		s.T.Fatalf("scan %s: %v", table, err)
	}
	return out
}

// Get returns the row key of table, its cells of family ("" every
// family), read now.
func (s *Stack) Get(table string, key []byte, family string) store.Row {
	s.T.Helper()
	r, err := s.Store.Get(s.Ctx(), table, key, family)
	if err != nil {
		s.T.Fatalf("get %s %x: %v", table, key, err)
	}
	return r
}

// CopyRow returns a copy of r owning all its bytes.
func CopyRow(r store.Row) store.Row {
	cp := store.Row{Key: bytes.Clone(r.Key)}
	for _, c := range r.Cells {
		cp.Cells = append(cp.Cells, store.Cell{Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier), Value: bytes.Clone(c.Value), Timestamp: c.Timestamp})
	}
	return cp
}

// RowKey returns the data row key of the series ls at hour base (Unix
// seconds), assigning its UIDs if need be.
func (s *Stack) RowKey(ls []prompb.Label, base uint32) []byte {
	s.T.Helper()
	lbls := make([]mapping.Label, len(ls))
	for i, l := range ls {
		lbls[i] = mapping.Label{Name: []byte(l.Name), Value: []byte(l.Value)}
	}
	sr, err := s.Mapper.Resolve(s.Ctx(), fmt.Appendf(nil, "%v", ls), lbls)
	if err != nil {
		s.T.Fatal(err)
	}
	return s.Mapper.AppendRowKey(nil, sr, base)
}

// Builder returns a rollup builder of Rollups over the stack's tables
// and layout, with opts' other fields. It needs Options.Rollups.
func (s *Stack) Builder(opts rollup.Options) *rollup.Builder {
	s.T.Helper()
	if s.Rollups == nil {
		s.T.Fatal("teststack: Builder needs Options.Rollups")
	}
	opts.Config, opts.DataTable, opts.UIDTable, opts.Layout = s.Rollups, s.Tables.Data, s.Tables.UID, s.Layout
	b, err := rollup.NewBuilder(s.Store, opts)
	if err != nil {
		s.T.Fatal(err)
	}
	return b
}

// Labels returns the labels {__name__=name, kv[0]=kv[1], ...}.
func Labels(name string, kv ...string) []prompb.Label {
	ls := []prompb.Label{{Name: "__name__", Value: name}}
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return ls
}

// RenderValues renders ss one line a series: its labels, a colon, then
// " T=BITS" for each float sample (BITS: the value's 16 hex digits) and
// " hT" for each native histogram.
func RenderValues(ss []query.Series) string {
	var sb strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&sb, "%s:", s.Labels)
		for _, p := range s.Samples {
			fmt.Fprintf(&sb, " %d=%016x", p.T, math.Float64bits(p.V))
		}
		for _, h := range s.Histograms {
			fmt.Fprintf(&sb, " h%d", h.T)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// RenderTimes renders ss one line a series: its labels, a colon, then
// " T" for each float sample, " hT" for each native histogram and " T"
// for each exemplar.
func RenderTimes(ss []query.Series) string {
	var sb strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&sb, "%s:", s.Labels)
		for _, p := range s.Samples {
			fmt.Fprintf(&sb, " %d", p.T)
		}
		for _, h := range s.Histograms {
			fmt.Fprintf(&sb, " h%d", h.T)
		}
		for _, e := range s.Exemplars {
			fmt.Fprintf(&sb, " %d", e.T)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
