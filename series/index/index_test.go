package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/storetest"
)

const (
	metaTable  = "tsdb-meta"
	indexTable = "tsdb-index"
	day        = int64(mapping.DaySeconds * 1000)
)

type rig struct {
	st     *embedded.Store
	mapper *series.Mapper
	w      *Writer
	r      *Reader
}

func newRig(t testing.TB) *rig {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb-uid", metaTable, indexTable}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	layout := mapping.DefaultLayout()
	uids := newUIDs(t, st, layout)
	now := time.Unix(1_700_000_000, 0)
	return &rig{st: st, mapper: series.NewMapper(uids, layout, 1000),
		w: NewWriter(st, Options{MetaTable: metaTable, IndexTable: indexTable, Layout: layout, Now: func() time.Time { return now }}, nil),
		r: NewReader(st, indexTable, uids, layout)}
}

// newUIDs maps names over st with empty caches, as a process does after a
// restart.
func newUIDs(t testing.TB, st store.Store, layout mapping.Layout) *uid.UIDs {
	t.Helper()
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return uids
}

// restart gives g a mapper over the same store whose UID caches are empty.
func (g *rig) restart(t testing.TB) {
	t.Helper()
	g.mapper = series.NewMapper(newUIDs(t, g.st, mapping.DefaultLayout()), mapping.DefaultLayout(), 1000)
}

// series resolves a label set given as "name", "k", "v", ...
func (g *rig) series(t testing.TB, name string, kv ...string) series.Series {
	t.Helper()
	lbls := []mapping.Label{{Name: []byte("__name__"), Value: []byte(name)}}
	for i := 0; i < len(kv); i += 2 {
		lbls = append(lbls, mapping.Label{Name: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	key := fmt.Appendf(nil, "%s%q", name, kv)
	s, err := g.mapper.Resolve(context.Background(), key, lbls)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIndex(t *testing.T) {
	ctx := context.Background()
	g := newRig(t)
	const d0 = 19700 // a day
	up1 := g.series(t, "up", "job", "node", "instance", "a")
	up2 := g.series(t, "up", "job", "api", "instance", "b")
	cpu := g.series(t, "cpu", "job", "node", "mode", "idle")
	bare := g.series(t, "bare") // label-less: the reserved tag
	late := g.series(t, "late", "job", "batch")
	if err := g.w.Write(ctx, []Entry{{up1, d0}, {up2, d0}, {cpu, d0}, {bare, d0}, {up1, d0}, {late, d0 + 2}}); err != nil {
		t.Fatal(err)
	}
	if err := g.w.MarkCoverage(ctx, d0); err != nil {
		t.Fatal(err)
	}
	in := func(d int64) (int64, int64) { return d * day, d*day + day - 1 }
	s0, e0 := in(d0)
	_, e2 := in(d0 + 2)

	check := func(t *testing.T, what string, got []string, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	t.Run("label names", func(t *testing.T) {
		got, err := g.r.LabelNames(ctx, s0, e0)
		check(t, "day 0", got, err, "__name__", "instance", "job", "mode")
		got, err = g.r.LabelNames(ctx, s0+day, e0+day)
		check(t, "day 1", got, err)
		got, err = g.r.LabelNames(ctx, s0, e2)
		check(t, "days 0-2", got, err, "__name__", "instance", "job", "mode")
	})
	t.Run("label values", func(t *testing.T) {
		got, err := g.r.LabelValues(ctx, "job", s0, e0)
		check(t, "job day 0", got, err, "api", "node")
		got, err = g.r.LabelValues(ctx, "job", s0, e2)
		check(t, "job days 0-2", got, err, "api", "batch", "node")
		got, err = g.r.LabelValues(ctx, "__name__", s0, e0)
		check(t, "__name__ day 0", got, err, "bare", "cpu", "up")
		got, err = g.r.LabelValues(ctx, "nope", s0, e0)
		check(t, "unknown label", got, err)
	})
	t.Run("metric names", func(t *testing.T) {
		for _, tc := range []struct {
			sel        string
			start, end int64
			want       []string
		}{
			{`{job="node"}`, s0, e0, []string{"cpu", "up"}},
			{`{job="api"}`, s0, e0, []string{"up"}},
			{`{job="node", mode="idle"}`, s0, e0, []string{"cpu"}},
			{`{job="api", mode="idle"}`, s0, e0, nil},
			{`{job=~"node|batch"}`, s0, e2, []string{"cpu", "late", "up"}},
			{`{job=~"n.*"}`, s0, e0, []string{"cpu", "up"}},
			{`{job!="node"}`, s0, e0, []string{"bare", "cpu", "up"}}, // matches absent: not narrowed
			{`{instance=~".+"}`, s0, e0, []string{"up"}},
			{`{job="batch"}`, s0, e0, nil},
			{`{job="nosuchvalue"}`, s0, e0, nil},
		} {
			ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.r.MetricNames(ctx, tc.start, tc.end, ms)
			check(t, tc.sel, got, err, tc.want...)
		}
	})
	t.Run("coverage", func(t *testing.T) {
		for _, tc := range []struct {
			start, end int64
			want       bool
		}{{s0, e0, true}, {s0 - day, e0, false}, {s0 + 5*day, e0 + 5*day, true}, {0, MaxDays * day, false}} {
			got, err := g.r.Covers(ctx, tc.start, tc.end)
			if err != nil || got != tc.want {
				t.Errorf("Covers(%d, %d) = %v, %v; want %v", tc.start, tc.end, got, err, tc.want)
			}
		}
	})
	t.Run("tsmeta", func(t *testing.T) {
		tsuid := up1.TSUID()
		row, err := g.st.Get(ctx, metaTable, tsuid, mapping.TSMetaFamily)
		if err != nil || len(row.Cells) != 1 {
			t.Fatalf("TSMeta row of %x: %v %v", tsuid, row, err)
		}
		want := fmt.Sprintf(`{"tsuid":"%X","displayName":"","description":"","notes":"","created":1700000000,"custom":null,"units":"","dataType":"","retention":0,"max":"NaN","min":"NaN"}`, tsuid)
		if got := string(row.Cells[0].Value); got != want {
			t.Errorf("ts_meta\n%s\nwant\n%s", got, want)
		}
		// Another process (a new writer, series new to it) leaves the row alone.
		edited := strings.Replace(want, `"notes":""`, `"notes":"edited"`, 1)
		if err := g.st.Put(ctx, metaTable, []store.Put{{Row: tsuid, Cells: []store.Cell{{Family: []byte("name"), Qualifier: []byte("ts_meta"), Value: []byte(edited)}}}}); err != nil {
			t.Fatal(err)
		}
		g2 := &rig{st: g.st, mapper: series.NewMapper(g.mapper.UIDs(), mapping.DefaultLayout(), 1000)}
		w2 := NewWriter(g.st, Options{MetaTable: metaTable, IndexTable: indexTable, Layout: mapping.DefaultLayout()}, nil)
		if err := w2.Write(ctx, []Entry{{g2.series(t, "up", "job", "node", "instance", "a"), d0}}); err != nil {
			t.Fatal(err)
		}
		row, _ = g.st.Get(ctx, metaTable, tsuid, mapping.TSMetaFamily)
		if got := string(row.Cells[0].Value); got != edited {
			t.Errorf("TSMeta replaced: %s", got)
		}
	})
	t.Run("written once", func(t *testing.T) {
		before := countCells(t, g.st, indexTable)
		if err := g.w.Write(ctx, []Entry{{up1, d0}, {up2, d0}, {cpu, d0}}); err != nil {
			t.Fatal(err)
		}
		if after := countCells(t, g.st, indexTable); after != before {
			t.Errorf("cells %d -> %d on a second write", before, after)
		}
	})
}

func countCells(t testing.TB, st store.Store, table string) int {
	t.Helper()
	sc := st.Scan(context.Background(), store.ScanRequest{Table: table})
	defer sc.Close()
	n := 0
	for sc.Next() {
		n += len(sc.Row().Cells)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReindex: rows written without the index (as OpenTSDB writes them)
// are found once reindexed, and the coverage moves back to the first whole
// day reindexed only when the range reaches the covered day.
func TestReindex(t *testing.T) {
	ctx := context.Background()
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb", "tsdb-uid", metaTable, indexTable}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	layout := mapping.Layout{SaltWidth: 1, SaltBuckets: 4, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
	uids := newUIDs(t, st, layout)
	g := &rig{st: st, mapper: series.NewMapper(uids, layout, 1000)}
	const d0 = 19700
	var puts []store.Put
	for i, s := range []series.Series{
		g.series(t, "old", "job", "a"),
		g.series(t, "old", "job", "b"),
		g.series(t, "other", "zone", "z"),
	} {
		for _, hour := range []uint32{0, 5, 25} { // days d0, d0, d0+1
			key := g.mapper.AppendRowKey(nil, s, uint32(d0*mapping.DaySeconds)+hour*3600)
			puts = append(puts, store.Put{Row: key, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{0, byte(i)}, Value: []byte{1}}}})
		}
	}
	if err := st.Put(ctx, "tsdb", puts); err != nil {
		t.Fatal(err)
	}
	now := time.Unix((d0+1)*mapping.DaySeconds+7200, 0)
	w := NewWriter(st, Options{MetaTable: metaTable, IndexTable: indexTable, Layout: layout, Now: func() time.Time { return now }}, nil)
	r := NewReader(st, indexTable, uids, layout)
	opts := ReindexOptions{DataTable: "tsdb", UIDTable: "tsdb-uid", Layout: layout, Batch: 2, Now: func() time.Time { return now }}

	// Day d0+1 only, up to now: the coverage starts at d0+1.
	stats, err := Reindex(ctx, st, w, opts, time.Unix((d0+1)*mapping.DaySeconds, 0), now)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows != 3 || stats.Entries != 3 {
		t.Errorf("day d0+1: %+v, want 3 rows, 3 entries", stats)
	}
	d1Start := int64(d0+1) * day
	if ok, err := r.Covers(ctx, d1Start, d1Start+day-1); err != nil || !ok {
		t.Errorf("day d0+1 not covered: %v %v", ok, err)
	}
	if ok, _ := r.Covers(ctx, d0*day, d0*day+day-1); ok {
		t.Errorf("day d0 covered before it was reindexed")
	}
	// Then day d0: the coverage moves back.
	r2 := NewReader(st, indexTable, uids, layout) // no cached coverage
	if _, err := Reindex(ctx, st, w, opts, time.Unix(d0*mapping.DaySeconds, 0), time.Unix((d0+1)*mapping.DaySeconds, 0)); err != nil {
		t.Fatal(err)
	}
	if ok, err := r2.Covers(ctx, d0*day, d0*day+day-1); err != nil || !ok {
		t.Errorf("day d0 not covered after its reindex: %v %v", ok, err)
	}
	got, err := r2.LabelValues(ctx, "job", d0*day, d0*day+day-1)
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("job values = %q, %v", got, err)
	}
	ms, _ := parser.NewParser(parser.Options{}).ParseMetricSelector(`{zone="z"}`)
	got, err = r2.MetricNames(ctx, d0*day, d0*day+day-1, ms)
	if err != nil || !slices.Equal(got, []string{"other"}) {
		t.Errorf("metrics of zone=z = %q, %v", got, err)
	}
	// A range that does not reach the covered day leaves the coverage.
	if _, err := Reindex(ctx, st, w, opts, time.Unix((d0-5)*mapping.DaySeconds, 0), time.Unix((d0-4)*mapping.DaySeconds, 0)); err != nil {
		t.Fatal(err)
	}
	r3 := NewReader(st, indexTable, uids, layout)
	if ok, _ := r3.Covers(ctx, (d0-5)*day, (d0-5)*day+1); ok {
		t.Errorf("a reindex that leaves a gap moved the coverage")
	}
	// TSMeta rows exist for the reindexed series.
	if n := countCells(t, st, metaTable); n != 3 {
		t.Errorf("%d TSMeta cells, want 3", n)
	}
}

// TestSkipTSMeta: with SkipTSMeta the Writer writes the label cells and no
// TSMeta row; without it, one row per series.
func TestSkipTSMeta(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip=%v", skip), func(t *testing.T) {
			ctx := context.Background()
			g := newRig(t)
			g.w = NewWriter(g.st, Options{MetaTable: metaTable, IndexTable: indexTable, Layout: mapping.DefaultLayout(), SkipTSMeta: skip}, nil)
			const d0 = 19700
			entries := []Entry{{g.series(t, "up", "job", "a"), d0}, {g.series(t, "up", "job", "b"), d0}}
			if err := g.w.Write(ctx, entries); err != nil {
				t.Fatal(err)
			}
			rows := func(table string) int { return storetest.CountRows(t, g.st, store.ScanRequest{Table: table}) }
			wantMeta := 2
			if skip {
				wantMeta = 0
			}
			if n := rows(metaTable); n != wantMeta {
				t.Errorf("%d TSMeta rows, want %d", n, wantMeta)
			}
			got, err := g.r.LabelValues(ctx, "job", d0*day, d0*day+day-1)
			if err != nil || !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("label values of job: %q, %v; want a, b", got, err)
			}
		})
	}
}

// TestGroupCells: cells in any order come out as one Put a row, rows in
// ascending byte order (rows that share their first 8 bytes, rows that
// are prefixes of others, zero bytes at the end), each with exactly its
// row's qualifiers.
func TestGroupCells(t *testing.T) {
	rows := []string{"A", "A\x00", "A\x00\x01", "K\x00\x00\x4c\xf4", "V\x00\x00\x4c\xf4\x00\x00\x01\x00\x00\x02",
		"V\x00\x00\x4c\xf4\x00\x00\x01\x00\x00\x03", "V\x00\x00\x4c\xf4\x00\x00\x01", "V\x00\x00\x4c\xf4\x00\x00\x01\x00", "\xff\xff\xff\xff\xff\xff\xff\xff\x01", "\xff\xff\xff\xff\xff\xff\xff\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		want := map[string][]string{}
		var cells []pendingCell
		var buf []byte
		for _, r := range rows {
			for q := range rng.IntN(4) {
				qual := fmt.Sprintf("q%d", q)
				want[r] = append(want[r], qual)
				at := len(buf)
				buf = append(buf, r...)
				cells = append(cells, pendingCell{prefix: rowPrefix([]byte(r)), start: uint32(at), end: uint32(len(buf)), qual: []byte(qual)})
			}
		}
		if len(cells) == 0 {
			continue
		}
		rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
		puts := new(cellScratch).group(cells, buf)
		got := map[string][]string{}
		for i, p := range puts {
			if i > 0 && string(puts[i-1].Row) >= string(p.Row) {
				t.Fatalf("round %d: row %q after %q", round, p.Row, puts[i-1].Row)
			}
			for _, c := range p.Cells {
				if string(c.Family) != mapping.IndexFamily || len(c.Value) != 0 {
					t.Fatalf("round %d: cell %+v", round, c)
				}
				got[string(p.Row)] = append(got[string(p.Row)], string(c.Qualifier))
			}
			slices.Sort(got[string(p.Row)])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: got %q, want %q", round, got, want)
		}
	}
}
