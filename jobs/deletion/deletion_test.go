package deletion

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

// without renders what rendered (rig.data or rig.exemplars) shows once
// the samples in [start, end] of the series named in gone are deleted:
// their tokens in the range dropped, series left empty dropped.
func without(rendered string, gone []string, start, end int64) string {
	var sb strings.Builder
	for line := range strings.Lines(rendered) {
		name, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		if !slices.Contains(gone, name) {
			sb.WriteString(line)
			continue
		}
		var kept []string
		for tok := range strings.FieldsSeq(rest) {
			ts, _, _ := strings.Cut(strings.TrimPrefix(tok, "h"), "=")
			t, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				panic(tok)
			}
			if t < start || t > end {
				kept = append(kept, tok)
			}
		}
		if len(kept) > 0 {
			fmt.Fprintf(&sb, "%s: %s\n", name, strings.Join(kept, " "))
		}
	}
	return sb.String()
}

const (
	seriesA = `{__name__="m", instance="x", job="a"}`
	seriesB = `{__name__="m", instance="y", job="b"}`
	seriesC = `{__name__="other", instance="x", job="a"}`
	seriesH = `{__name__="h", job="a"}`
)

// writeSet writes four series over the hours t0 .. t0+4h: A, B, C with a
// sample and an exemplar every 10 minutes plus at each of extra, H with
// a native histogram every 20 minutes plus at each of extra.
func (g *rig) writeSet(extra ...int64) {
	g.T.Helper()
	lo, hi := int64(t0)*1000, int64(t0)*1000+4*hourMs-1
	ts := every(lo, hi, 10*60*1000)
	hs := every(lo, hi, 20*60*1000)
	for _, e := range extra {
		if e >= lo && e <= hi {
			ts = append(ts, e)
			hs = append(hs, e)
		}
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	slices.Sort(hs)
	hs = slices.Compact(hs)
	g.write(floats(labelsOf("m", "job", "a", "instance", "x"), ts...), floats(labelsOf("m", "job", "b", "instance", "y"), ts...),
		floats(labelsOf("other", "job", "a", "instance", "x"), ts...), hists(labelsOf("h", "job", "a"), hs...))
}

// TestDeleteRanges: for each range and selector, the samples, histograms
// and exemplars of the selected series in the range go (both bounds
// inclusive); the samples just before and just after the range, the
// series not selected and the other hours stay. Rows hold single cells
// or compacted columns.
func TestDeleteRanges(t *testing.T) {
	t.Parallel()
	h := int64(t0) * 1000
	m := func(typ labels.MatchType, name, value string) *labels.Matcher {
		return labels.MustNewMatcher(typ, name, value)
	}
	for _, tc := range []struct {
		name       string
		matchers   []*labels.Matcher
		start, end int64
		gone       []string
	}{
		{"inside one hour", []*labels.Matcher{m(labels.MatchEqual, "__name__", "m"), m(labels.MatchEqual, "job", "a")},
			h + hourMs + 20*60*1000, h + hourMs + 40*60*1000, []string{seriesA}},
		{"odd milliseconds", []*labels.Matcher{m(labels.MatchEqual, "__name__", "m"), m(labels.MatchEqual, "job", "a")},
			h + hourMs + 1234567, h + hourMs + 2345679, []string{seriesA}},
		{"across hours", []*labels.Matcher{m(labels.MatchEqual, "job", "a")},
			h + 30*60*1000, h + 2*hourMs + 30*60*1000, []string{seriesA, seriesC, seriesH}},
		{"whole hours", []*labels.Matcher{m(labels.MatchRegexp, "__name__", "m|other"), m(labels.MatchEqual, "instance", "x")},
			h + hourMs, h + 3*hourMs - 1, []string{seriesA, seriesC}},
		{"a single millisecond", []*labels.Matcher{m(labels.MatchEqual, "instance", "y")},
			h + 2*hourMs + 10*60*1000, h + 2*hourMs + 10*60*1000, []string{seriesB}},
		{"all time", []*labels.Matcher{m(labels.MatchRegexp, "job", "a|c")},
			math.MinInt64, math.MaxInt64, []string{seriesA, seriesC, seriesH}},
		{"from the start of the first hour", []*labels.Matcher{m(labels.MatchEqual, "__name__", "h")},
			h, h + 50*60*1000, []string{seriesH}},
		{"no series", []*labels.Matcher{m(labels.MatchEqual, "job", "nope")},
			math.MinInt64, math.MaxInt64, nil},
		{"empty range", []*labels.Matcher{m(labels.MatchEqual, "job", "a")},
			h + 2*hourMs, h + hourMs, nil},
	} {
		for _, compacted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compacted=%v", tc.name, compacted), func(t *testing.T) {
				t.Parallel()
				g := newRig(t, mapping.DefaultLayout())
				var extra []int64
				for _, e := range []int64{tc.start, tc.end} {
					if e > math.MinInt64 && e < math.MaxInt64 {
						extra = append(extra, e-1, e, e+1)
					}
				}
				g.writeSet(extra...)
				if compacted {
					g.compactAll()
				}
				data, ex := g.data(), g.exemplars()
				st, err := g.deleter(Options{BatchRows: 3}).Delete(ctxFor(t), tc.matchers, tc.start, tc.end)
				if err != nil {
					t.Fatal(err)
				}
				start, end := max(tc.start, 0), tc.end
				if got, want := g.data(), without(data, tc.gone, start, end); got != want {
					t.Errorf("data after the delete:\n%s\nwant\n%s", got, want)
				}
				exGone := slices.DeleteFunc(slices.Clone(tc.gone), func(s string) bool { return s == seriesH })
				if got, want := g.exemplars(), without(ex, exGone, start, end); got != want {
					t.Errorf("exemplars after the delete:\n%s\nwant\n%s", got, want)
				}
				if tc.gone != nil && st.Samples+st.Histograms == 0 {
					t.Errorf("stats %s: nothing deleted", st)
				}
				if st.Malformed != 0 {
					t.Errorf("stats %s: malformed cells", st)
				}
				// Again: nothing left to do, nothing changes.
				after := g.data()
				st2, err := g.deleter(Options{}).Delete(ctxFor(t), tc.matchers, tc.start, tc.end)
				if err != nil {
					t.Fatal(err)
				}
				if st2 != (Stats{}) {
					t.Errorf("second run: %s, want nothing", st2)
				}
				if got := g.data(); got != after {
					t.Errorf("data after a second run:\n%s\nwant\n%s", got, after)
				}
			})
		}
	}
}

// TestDeleteSalted: the same on a salted layout, every bucket scanned.
func TestDeleteSalted(t *testing.T) {
	t.Parallel()
	g := newRig(t, salted())
	h := int64(t0) * 1000
	start, end := h+30*60*1000, h+2*hourMs+30*60*1000
	g.writeSet(start-1, start, end, end+1)
	data := g.data()
	ms := [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "instance", "x")}, {labels.MustNewMatcher(labels.MatchEqual, "job", "b")}}
	if _, err := g.deleter(Options{}).DeleteSeries(ctxFor(t), ms, start, end); err != nil {
		t.Fatal(err)
	}
	if got, want := g.data(), without(data, []string{seriesA, seriesB, seriesC}, start, end); got != want {
		t.Errorf("data after the delete:\n%s\nwant\n%s", got, want)
	}
}

// TestCutCompactedColumnKeepsExactBytes: a compacted column OpenTSDB wrote
// (second and millisecond qualifiers mixed, integers of every width, a
// long beyond 2^53, a float32) cut by a range keeps the other points'
// qualifier and value bytes exactly, in their order, with the meta byte
// of what is kept: 0x01 mixed, 0x00 not, none for a single point.
func TestCutCompactedColumnKeepsExactBytes(t *testing.T) {
	t.Parallel()
	secQ := func(off uint16, flags byte) []byte { return binary.BigEndian.AppendUint16(nil, off<<4|uint16(flags)) }
	msQ := func(off uint32, flags byte) []byte { return mapping.AppendMsQualifier(nil, off, flags) }
	type pt struct{ q, v []byte }
	pts := []pt{
		{secQ(10, 0x0), []byte{0x05}},
		{msQ(20_000, 0x1), []byte{0x01, 0x02}},
		{secQ(30, 0xB), []byte{0x3F, 0, 0, 0}},
		{msQ(40_000, 0xF), binary.BigEndian.AppendUint64(nil, math.Float64bits(0.1))},
		{secQ(50, 0x7), binary.BigEndian.AppendUint64(nil, 1<<53+1)},
	}
	column := func(idx ...int) (q, v []byte) {
		for _, i := range idx {
			q, v = append(q, pts[i].q...), append(v, pts[i].v...)
		}
		if len(idx) > 1 {
			mixed := false
			for _, i := range idx {
				mixed = mixed || len(pts[i].q) != len(pts[idx[0]].q)
			}
			meta := byte(0)
			if mixed {
				meta = 1
			}
			v = append(v, meta)
		}
		return q, v
	}
	h := int64(t0) * 1000
	for _, tc := range []struct {
		name       string
		start, end int64
		kept       []int
	}{
		{"one millisecond point", h + 20_000, h + 20_000, []int{0, 2, 3, 4}},
		{"seconds left", h + 20_000, h + 40_000, []int{0, 4}},
		{"one point left", h, h + 40_000, []int{4}},
		{"mixed left", h + 30_000, h + 59_999, []int{0, 1}},
		{"nothing in range", h + 51_000, h + 60_000, []int{0, 1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, mapping.DefaultLayout())
			ls := labelsOf("old", "host", "tsd")
			key := g.RowKey(ls, t0)
			q, v := column(0, 1, 2, 3, 4)
			annotation := store.Cell{Qualifier: []byte{0x01, 0x00, 0x0A}, Value: []byte(`{"description":"d"}`)}
			g.putCells(key, store.Cell{Qualifier: q, Value: v}, annotation)
			// Another hour of the series, untouched.
			other := g.RowKey(ls, t0+3600)
			g.putCells(other, store.Cell{Qualifier: q, Value: v})
			if _, err := g.deleter(Options{}).Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "host", "tsd")}, tc.start, tc.end); err != nil {
				t.Fatal(err)
			}
			kq, kv := column(tc.kept...)
			want := renderCells([]store.Cell{{Qualifier: kq, Value: kv}, annotation})
			if got := renderCells(g.row(g.Tables.Data, key).Cells); got != want {
				t.Errorf("row after the delete:\n%s\nwant\n%s", got, want)
			}
			if got, want := renderCells(g.row(g.Tables.Data, other).Cells), renderCells([]store.Cell{{Qualifier: q, Value: v}}); got != want {
				t.Errorf("other hour:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestCutAppendColumn: OpenTSDB's append column loses the points in the
// range, the others' bytes kept in their order; all in range, it goes.
func TestCutAppendColumn(t *testing.T) {
	t.Parallel()
	h := int64(t0) * 1000
	pair := func(off uint32, v byte) []byte { return append(mapping.AppendMsQualifier(nil, off, 0), v) }
	val := slices.Concat(pair(3000, 3), pair(1000, 1), pair(2000, 2))
	for _, tc := range []struct {
		name       string
		start, end int64
		want       []byte // nil: the column is gone
	}{
		{"middle", h + 2000, h + 2000, slices.Concat(pair(3000, 3), pair(1000, 1))},
		{"all", h, h + 3000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, mapping.DefaultLayout())
			key := g.RowKey(labelsOf("appended", "host", "tsd"), t0)
			g.putCells(key, store.Cell{Qualifier: mapping.AppendColumnQualifier(), Value: val}, store.Cell{Qualifier: mapping.AppendMsQualifier(nil, 3_599_999, 0), Value: []byte{9}})
			if _, err := g.deleter(Options{}).Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "host", "tsd")}, tc.start, tc.end); err != nil {
				t.Fatal(err)
			}
			cells := []store.Cell{{Qualifier: mapping.AppendMsQualifier(nil, 3_599_999, 0), Value: []byte{9}}}
			if tc.want != nil {
				cells = append(cells, store.Cell{Qualifier: mapping.AppendColumnQualifier(), Value: tc.want})
			}
			if got, want := renderCells(g.row(g.Tables.Data, key).Cells), renderCells(cells); got != want {
				t.Errorf("row:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestWholeRows: a row whose hour lies in the range goes whole; one that
// also holds an annotation keeps the annotation alone.
func TestWholeRows(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	h := int64(t0) * 1000
	lsA, lsN := labelsOf("m", "job", "a"), labelsOf("m", "job", "n")
	g.write(floats(lsA, every(h, h+2*hourMs-1, 60_000)...), floats(lsN, every(h, h+2*hourMs-1, 60_000)...))
	annotation := store.Cell{Qualifier: []byte{0x01, 0x00, 0x0A}, Value: []byte(`{"description":"d"}`)}
	keyN := g.RowKey(lsN, t0)
	g.putCells(keyN, annotation)
	st, err := g.deleter(Options{}).Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "job", "a|n")}, h, h+hourMs-1)
	if err != nil {
		t.Fatal(err)
	}
	if r := g.row(g.Tables.Data, g.RowKey(lsA, t0)); len(r.Cells) != 0 {
		t.Errorf("row of job=a: %d cells left, want none", len(r.Cells))
	}
	if got, want := renderCells(g.row(g.Tables.Data, keyN).Cells), renderCells([]store.Cell{annotation}); got != want {
		t.Errorf("row of job=n: %s, want the annotation alone: %s", got, want)
	}
	if st.Rows != 1 || st.RowsRewritten != 1 || st.Samples != 120 {
		t.Errorf("stats %s: want 1 row whole, 1 rewritten, 120 samples", st)
	}
	for _, ls := range [][]prompb.Label{lsA, lsN} {
		if r := g.row(g.Tables.Data, g.RowKey(ls, t0+3600)); len(r.Cells) != 60 {
			t.Errorf("next hour of %v: %d cells, want 60", ls, len(r.Cells))
		}
	}
}

// TestDeletedSamplesStayDeletedAfterCompaction: samples written late into
// a row a delete cut, then compacted with it, do not bring back what was
// deleted, whether the row was compacted before the delete or not.
func TestDeletedSamplesStayDeletedAfterCompaction(t *testing.T) {
	t.Parallel()
	h := int64(t0) * 1000
	for _, tc := range []struct {
		name       string
		compacted  bool
		start, end int64
	}{
		{"single cells cut", false, h + 20*60*1000, h + 30*60*1000},
		{"compacted column cut", true, h + 20*60*1000, h + 30*60*1000},
		{"row deleted whole", true, h, h + hourMs - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, mapping.DefaultLayout())
			ls := labelsOf("m", "job", "a")
			g.write(floats(ls, every(h, h+hourMs-1, 5*60*1000)...))
			if tc.compacted {
				g.compactAll()
			}
			data := g.data()
			if _, err := g.deleter(Options{}).Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}, tc.start, tc.end); err != nil {
				t.Fatal(err)
			}
			want := without(data, []string{`{__name__="m", job="a"}`}, tc.start, tc.end)
			// A late sample into the same row, then compaction. (Written in
			// a later millisecond than the delete: on HBase a delete
			// marker hides what is written in its own millisecond.)
			storetest.WaitPast(time.Now().UnixMilli())
			late := h + 57*60*1000 + 1
			g.write(floats(ls, late))
			g.compactAll()
			want = strings.Replace(want, "\n", fmt.Sprintf(" %d=%016x\n", late, math.Float64bits(0.5)), 1)
			if tc.start == h {
				want = fmt.Sprintf("{__name__=\"m\", job=\"a\"}: %d=%016x\n", late, math.Float64bits(0.5))
			}
			if got := g.data(); got != sortTokens(want) {
				t.Errorf("after a late sample and compaction:\n%s\nwant\n%s", got, sortTokens(want))
			}
			r := g.row(g.Tables.Data, g.RowKey(ls, t0))
			if dataCells := len(r.Cells); dataCells != 1 && tc.start != h {
				t.Errorf("row compacted into %d cells, want 1", dataCells)
			}
		})
	}
}

// sortTokens sorts the tokens of each line of a rendering by time.
func sortTokens(s string) string {
	var sb strings.Builder
	for line := range strings.Lines(s) {
		name, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
		toks := strings.Fields(rest)
		slices.SortFunc(toks, func(a, b string) int {
			ta, _, _ := strings.Cut(a, "=")
			tb, _, _ := strings.Cut(b, "=")
			x, _ := strconv.ParseInt(ta, 10, 64)
			y, _ := strconv.ParseInt(tb, 10, 64)
			return int(x - y)
		})
		fmt.Fprintf(&sb, "%s: %s\n", name, strings.Join(toks, " "))
	}
	return sb.String()
}

// cancelling is a store whose Delete cancels the delete's context after
// a number of calls, as an operator stopping a large delete would.
type cancelling struct {
	store.Store
	cancel func()
	after  int64
	n      atomic.Int64
}

func (c *cancelling) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if c.n.Add(1) > c.after {
		c.cancel()
		return fmt.Errorf("delete row %x: %w", row, context.Canceled)
	}
	return c.Store.Delete(ctx, table, row, columns)
}

// TestInterruptedDeleteCompletes: a delete stopped part way (its context
// cancelled) has done part of the work; run again, it completes, and the
// store ends as one uninterrupted delete leaves it.
func TestInterruptedDeleteCompletes(t *testing.T) {
	t.Parallel()
	h := int64(t0) * 1000
	start, end := h+30*60*1000, h+3*hourMs+30*60*1000
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}
	for _, after := range []int64{0, 1, 5, 12} {
		t.Run(fmt.Sprintf("after %d deletes", after), func(t *testing.T) {
			t.Parallel()
			g := newRig(t, mapping.DefaultLayout())
			g.writeSet(start, end)
			data, ex := g.data(), g.exemplars()
			ctx, cancel := context.WithCancel(ctxFor(t))
			cs := &cancelling{Store: g.Store, cancel: cancel, after: after}
			d, err := New(cs, g.Querier, Options{DataTable: g.Tables.Data, ExemplarTable: g.Tables.Exemplar, IndexTable: g.Tables.Index,
				Layout: g.Layout, Fence: g.c, BatchRows: 2, Concurrency: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Delete(ctx, ms, start, end); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted delete: %v, want context.Canceled", err)
			}
			if _, err := g.deleter(Options{}).Delete(ctxFor(t), ms, start, end); err != nil {
				t.Fatal(err)
			}
			gone := []string{seriesA, seriesC, seriesH}
			if got, want := g.data(), without(data, gone, start, end); got != want {
				t.Errorf("data after the re-run:\n%s\nwant\n%s", got, want)
			}
			if got, want := g.exemplars(), without(ex, gone[:2], start, end); got != want {
				t.Errorf("exemplars after the re-run:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// fenceCheck is a Fence that records its holds, and a store that fails
// the test when a data row is written or deleted outside a hold.
type fenceCheck struct {
	store.Store
	t     testing.TB
	table string
	mu    sync.Mutex
	held  [][2][]byte
	holds int
}

func (f *fenceCheck) Hold(_ context.Context, start, stop []byte) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := [2][]byte{bytes.Clone(start), bytes.Clone(stop)}
	f.held = append(f.held, r)
	f.holds++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.held = slices.DeleteFunc(f.held, func(h [2][]byte) bool { return bytes.Equal(h[0], r[0]) && bytes.Equal(h[1], r[1]) })
	}, nil
}

func (f *fenceCheck) check(table string, row []byte) {
	if table != f.table {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.held {
		if bytes.Compare(row, h[0]) >= 0 && bytes.Compare(row, h[1]) < 0 {
			return
		}
	}
	f.t.Errorf("row %x written outside a hold", row)
}

func (f *fenceCheck) Put(ctx context.Context, table string, puts []store.Put) error {
	for _, p := range puts {
		f.check(table, p.Row)
	}
	return f.Store.Put(ctx, table, puts)
}

func (f *fenceCheck) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	f.check(table, row)
	return f.Store.Delete(ctx, table, row, columns)
}

// TestRowsRewrittenUnderAHold: every write of a data row happens while
// the row is held against compaction.
func TestRowsRewrittenUnderAHold(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	h := int64(t0) * 1000
	g.writeSet()
	g.compactAll()
	fc := &fenceCheck{Store: g.Store, t: t, table: g.Tables.Data}
	d, err := New(fc, g.Querier, Options{DataTable: g.Tables.Data, Layout: g.Layout, Fence: fc, BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}, h+10*60*1000, h+2*hourMs+10*60*1000)
	if err != nil {
		t.Fatal(err)
	}
	if fc.holds == 0 || st.Rows == 0 || st.RowsRewritten == 0 {
		t.Errorf("%d holds, stats %s: want holds, whole and cut rows", fc.holds, st)
	}
}

// TestIndexPruned: the index cells only the deleted series supported go,
// for the days that ended (their series rows too: the day's cardinality);
// cells other series support, and today's, stay.
func TestIndexPruned(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	day := int64(t0) / mapping.DaySeconds
	dayMs := int64(mapping.DaySeconds) * 1000
	d0 := day * dayMs
	lsX, lsY := labelsOf("m", "job", "a", "instance", "x"), labelsOf("m", "job", "a", "instance", "y")
	lsZ := labelsOf("z", "only", "z")
	g.write(floats(lsX, d0+1000, d0+dayMs+1000), floats(lsY, d0+2000), floats(lsZ, d0+3000, d0+dayMs+3000))
	g.now = time.UnixMilli(d0 + dayMs + 5*hourMs) // day+1 is today: its cells stay
	values := func(name string, from, to int64) []string {
		t.Helper()
		v, err := g.Index.LabelValues(ctxFor(t), name, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	reg := prometheus.NewRegistry()
	d := g.deleter(Options{Registerer: reg})
	st, err := d.Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "instance", "x")}, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := values("instance", d0, d0+dayMs-1), []string{"y"}; !slices.Equal(got, want) {
		t.Errorf("instance values of the day after deleting x: %v, want %v", got, want)
	}
	if got, want := values("job", d0, d0+dayMs-1), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("job values of the day: %v, want %v (y has job=a)", got, want)
	}
	if got, want := values("instance", d0+dayMs, d0+2*dayMs-1), []string{"x"}; !slices.Equal(got, want) {
		t.Errorf("instance values of today: %v, want %v (today's cells stay)", got, want)
	}
	if st.IndexCells != 2 || testutil.ToFloat64(d.indexCells) != 2 {
		t.Errorf("stats %s: want 2 index cells (x's instance value and series of the day)", st)
	}
	series := func(d uint32) uint64 {
		t.Helper()
		c, err := g.Index.Cardinality(ctxFor(t), index.CardinalityQuery{From: d, To: d})
		if err != nil {
			t.Fatal(err)
		}
		return c.TotalSeries
	}
	if got0, got1 := series(uint32(day)), series(uint32(day+1)); got0 != 2 || got1 != 2 {
		t.Errorf("series of the day, of today: %d, %d; want 2 (y, z), 2 (x, z: today's cells stay)", got0, got1)
	}
	// The series left is still found by a selector without a name, which
	// the index plans.
	got, err := g.Querier.Select(ctxFor(t), d0, d0+dayMs-1, labels.MustNewMatcher(labels.MatchEqual, "job", "a"))
	if err != nil || len(got) != 1 || got[0].Labels.Get("instance") != "y" {
		t.Errorf("select job=a: %v %v, want the series of y", got, err)
	}

	// The last series of the metric and of its tag names on the day.
	if _, err := d.Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "instance", "y")}, d0, d0+dayMs-1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"instance", "job"} {
		if got := values(name, d0, d0+dayMs-1); len(got) != 0 {
			t.Errorf("%s values of the day: %v, want none", name, got)
		}
	}
	if got, want := values("__name__", d0, d0+dayMs-1), []string{"z"}; !slices.Equal(got, want) {
		t.Errorf("metric names of the day: %v, want %v", got, want)
	}
	names, err := g.Index.LabelNames(ctxFor(t), d0, d0+dayMs-1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"__name__", "only"}; !slices.Equal(names, want) {
		t.Errorf("label names of the day: %v, want %v", names, want)
	}
	if got := series(uint32(day)); got != 1 {
		t.Errorf("series of the day: %d, want 1 (z)", got)
	}
}

// TestReimportIndexed: a series' samples of a day deleted (its index
// cells of the day pruned), then written again through the same writer:
// with the index writer in Options.IndexWriter the day's cells are
// written again, and label values and a name-less selector of the day
// find the series; without it (another process's writer) they do not
// until a reindex.
func TestReimportIndexed(t *testing.T) {
	t.Parallel()
	for _, forget := range []bool{true, false} {
		t.Run(fmt.Sprintf("forget=%v", forget), func(t *testing.T) {
			t.Parallel()
			g := newRig(t, mapping.DefaultLayout())
			day := int64(t0) / mapping.DaySeconds
			d0 := day * mapping.DaySeconds * 1000
			dayEnd := d0 + mapping.DaySeconds*1000 - 1
			g.now = time.UnixMilli(d0 + 3*mapping.DaySeconds*1000)
			lsX, lsY := labelsOf("m", "shard", "x"), labelsOf("m", "shard", "y")
			ts := every(d0+hourMs, d0+3*hourMs, 10*60*1000)
			g.write(floats(lsX, ts...), floats(lsY, ts...))
			opts := Options{}
			if forget {
				opts.IndexWriter = g.IndexWriter
			}
			if _, err := g.deleter(opts).Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "shard", "x")}, d0, dayEnd); err != nil {
				t.Fatal(err)
			}
			values := func() []string {
				t.Helper()
				v, err := g.Index.LabelValues(ctxFor(t), "shard", d0, dayEnd)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if got, want := values(), []string{"y"}; !slices.Equal(got, want) {
				t.Fatalf("shard values after the delete: %v, want %v", got, want)
			}
			g.write(floats(lsX, ts...))
			want := []string{"x", "y"}
			if !forget {
				want = []string{"y"} // the caveat of the package doc
			}
			if got := values(); !slices.Equal(got, want) {
				t.Errorf("shard values after writing x again: %v, want %v", got, want)
			}
			got, err := g.Querier.Select(ctxFor(t), d0, dayEnd, labels.MustNewMatcher(labels.MatchEqual, "shard", "x"))
			if n := len(got); err != nil || forget && n != 1 {
				t.Errorf("select shard=x: %d series, %v; want 1", n, err)
			}
		})
	}
}

// TestRejects: matchers are required.
func TestRejects(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	d := g.deleter(Options{})
	if _, err := d.Delete(ctxFor(t), nil, 0, 1); !errors.Is(err, ErrNoMatchers) {
		t.Errorf("Delete without matchers: %v, want ErrNoMatchers", err)
	}
	if _, err := d.DeleteSeries(ctxFor(t), nil, 0, 1); !errors.Is(err, ErrNoMatchers) {
		t.Errorf("DeleteSeries without matchers: %v, want ErrNoMatchers", err)
	}
	if _, err := New(g.Store, g.Querier, Options{}); err == nil {
		t.Error("New with an invalid layout: no error")
	}
}

// TestMissingOptionalTables: without the exemplar or index table (the
// features off) a delete deletes the samples.
func TestMissingOptionalTables(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	h := int64(t0) * 1000
	g.write(floats(labelsOf("m", "job", "a"), h, h+1), floats(labelsOf("m", "job", "b"), h))
	q := g.NewQuerier(func(o *query.Options) { o.ExemplarTable, o.Index = "no-such-exemplars", nil })
	d, err := New(g.Store, q, Options{DataTable: g.Tables.Data, ExemplarTable: "no-such-exemplars", IndexTable: "no-such-index", Layout: g.Layout})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}, h, h); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: %d=%016x\n%s: %d=%016x\n", `{__name__="m", job="a"}`, h+1, math.Float64bits(1.5), `{__name__="m", job="b"}`, h, math.Float64bits(0.5))
	if got := g.data(); got != want {
		t.Errorf("data:\n%s\nwant\n%s", got, want)
	}
}
