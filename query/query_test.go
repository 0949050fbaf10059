package query

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

func TestRowRegexGolden(t *testing.T) {
	salted := mapping.DefaultLayout()
	salted.SaltWidth = 1
	for _, tc := range []struct {
		name   string
		layout mapping.Layout
		cs     []tagConstraint
		want   string
	}{
		{"none", mapping.DefaultLayout(), nil, ""},
		{"one value", mapping.DefaultLayout(), []tagConstraint{{tagk: []byte{0, 0, 1}, values: [][]byte{{0, 0, 5}}}},
			`(?s)^.{7}(?:.{6})*\x00\x00\x01(?:\x00\x00\x05)(?:.{6})*\z`},
		{"set and presence", mapping.DefaultLayout(), []tagConstraint{
			{tagk: []byte{0, 0, 1}, values: [][]byte{{0, 0, 5}, {0, 0x5C, 0x45}}},
			{tagk: []byte{0, 0x0A, 0x5C}},
		}, `(?s)^.{7}(?:.{6})*\x00\x00\x01(?:\x00\x00\x05|\x00\x5C\x45)(?:.{6})*\x00\x0A\x5C.{3}(?:.{6})*\z`},
		{"salted", salted, []tagConstraint{{tagk: []byte{0xFF, 0x5C, 0x45}, values: [][]byte{{0x5C, 0x45, 0x45}}}},
			`(?s)^.{8}(?:.{6})*\xFF\x5C\x45(?:\x5C\x45\x45)(?:.{6})*\z`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RowRegex(tc.layout, tc.cs)
			// The helper may write hex digits in either case; compare folded.
			if !regexp.MustCompile(`(?i)^` + regexp.QuoteMeta(tc.want) + `$`).MatchString(got) {
				t.Errorf("RowRegex =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestRowRegexSelects checks the regex against keys decoded as Latin-1:
// it keeps every row a constraint allows and drops the others.
func TestRowRegexSelects(t *testing.T) {
	l := mapping.DefaultLayout()
	key := func(tags ...byte) []byte {
		return l.AppendRowKey(nil, []byte{0, 0, 1}, 1700002800, tags)
	}
	cs := []tagConstraint{
		{tagk: []byte{0, 0, 2}, values: [][]byte{{0x5C, 0x45, 0x45}, {0, 0x0A, 0}}},
		{tagk: []byte{0, 0x5C, 0x45}},
	}
	re := regexp.MustCompile(RowRegex(l, cs))
	for _, tc := range []struct {
		key  []byte
		want bool
	}{
		{key(0, 0, 2, 0x5C, 0x45, 0x45, 0, 0x5C, 0x45, 1, 1, 1), true},
		{key(0, 0, 1, 9, 9, 9, 0, 0, 2, 0, 0x0A, 0, 0, 0x5C, 0x45, 0xFF, 0xFF, 0xFF), true},
		{key(0, 0, 2, 0x5C, 0x45, 0x44, 0, 0x5C, 0x45, 1, 1, 1), false}, // other value
		{key(0, 0, 2, 0x5C, 0x45, 0x45), false},                         // second tag missing
		{key(0, 0x5C, 0x45, 1, 1, 1), false},                            // first tag missing
		{key(0, 0, 3, 0, 0, 2, 0x5C, 0x45, 0x45, 0, 0x5C, 0x45), false}, // 0,0,2 not on a pair boundary
	} {
		if got := re.MatchString(mapping.Latin1String(tc.key)); got != tc.want {
			t.Errorf("key %X: match %v, want %v", tc.key, got, tc.want)
		}
	}
}

// writeCells writes samples the way OpenTSDB may have: one compacted
// column and single cells for the same row, overlapping.
func TestMergeCompactedAndSingleCells(t *testing.T) {
	q, m, st := newQuerier(t)
	ctx := context.Background()
	s, err := m.Resolve(ctx, []byte("k"), []mapping.Label{{Name: []byte("__name__"), Value: []byte("m")}, {Name: []byte("a"), Value: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	base := uint32(1700002800)
	row := m.AppendRowKey(nil, s, base)
	pts := []mapping.Point{{T: int64(base)*1000 + 1000, V: 1}, {T: int64(base)*1000 + 2000, V: 2}, {T: int64(base)*1000 + 3000, V: 3}}
	cq, cv := mapping.AppendCompacted(nil, nil, base, pts)
	single := func(off uint32, v float64) store.Cell {
		val, flags := mapping.AppendValue(nil, v)
		return store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, off, flags), Value: val}
	}
	if err := st.Put(ctx, "tsdb", []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: cq, Value: cv}}}}); err != nil {
		t.Fatal(err)
	}
	// Written later: a newer version of t=2000 and a new point.
	if err := st.Put(ctx, "tsdb", []store.Put{{Row: row, Cells: []store.Cell{single(2000, 20), single(2500, 25)}}}); err != nil {
		t.Fatal(err)
	}
	got, err := q.Select(ctx, 0, 1<<42, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d series", len(got))
	}
	if s := fmt.Sprint(got[0].Samples); s != "[{1700002801000 1} {1700002802000 20} {1700002802500 25} {1700002803000 3}]" {
		t.Errorf("samples = %s", s)
	}
	checkFloatSelection(t, q, 0, 1<<42, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
}

// benchRows writes 1000 series × 1 hour of 10 s samples (360 000
// samples), one cell a sample, and returns a querier over them and the
// hour's start, the benchmark's timer reset and its allocations reported.
func benchRows(b *testing.B) (*Querier, uint32) {
	q, m, st := newQuerier(b)
	base := uint32(1700002800)
	putRows(b, m, st, "bench", base, 1000, 360, 10000, func(_, j int) float64 { return float64(j) * 1.5 })
	b.ReportAllocs()
	b.ResetTimer()
	return q, base
}

// putRows writes n series of metric name (instance="host-i"), each one
// row at the hour base of samples cells, one a sample, step ms apart,
// sample j of series i valued value(i, j).
func putRows(tb testing.TB, m *series.Mapper, st store.Store, name string, base uint32, n, samples, step int, value func(i, j int) float64) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		lbls := []mapping.Label{{Name: []byte("__name__"), Value: []byte(name)}, {Name: []byte("instance"), Value: []byte(fmt.Sprintf("host-%d", i))}}
		s, err := m.Resolve(ctx, []byte(fmt.Sprint(i)), lbls)
		if err != nil {
			tb.Fatal(err)
		}
		p := store.Put{Row: m.AppendRowKey(nil, s, base)}
		for j := range samples {
			val, flags := mapping.AppendValue(nil, value(i, j))
			p.Cells = append(p.Cells, store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(j*step), flags), Value: val})
		}
		if err := st.Put(ctx, "tsdb", []store.Put{p}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSelect reads benchRows through Select on the embedded store.
func BenchmarkSelect(b *testing.B) {
	q, base := benchRows(b)
	ctx := context.Background()
	var n int
	for b.Loop() {
		got, err := q.Select(ctx, int64(base)*1000, int64(base)*1000+3600_000, labels.MustNewMatcher(labels.MatchEqual, "__name__", "bench"))
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for _, s := range got {
			n += len(s.Samples)
		}
	}
	reportSamples(b, n)
}

// BenchmarkFloatSelection reads benchRows as the engine does: a
// FloatSelection, each series' rows decoded by one RowDecoder.
func BenchmarkFloatSelection(b *testing.B) {
	q, base := benchRows(b)
	ctx := context.Background()
	var (
		n   int
		dec RowDecoder
		buf []Sample
	)
	for b.Loop() {
		n = 0
		err := q.Storage().FloatSelection().Select(ctx, int64(base)*1000, int64(base)*1000+3600_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "bench")}, func(rs *RowSeries) error {
			var err error
			buf, err = dec.Decode(buf[:0], rs)
			rs.Release()
			n += len(buf)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportSamples(b, n)
}

// TestMetricNamesFresh: a metric written after a name-less query is seen by
// the next one, and "a|a" returns each sample once.
func TestMetricNamesFresh(t *testing.T) {
	q, m, st := newQuerier(t)
	ctx := context.Background()
	write := func(name string, ts int64) {
		t.Helper()
		s, err := m.Resolve(ctx, []byte(name), []mapping.Label{{Name: []byte("__name__"), Value: []byte(name)}, {Name: []byte("job"), Value: []byte("a")}})
		if err != nil {
			t.Fatal(err)
		}
		base := uint32(ts / 1000 / 3600 * 3600)
		val, flags := mapping.AppendValue(nil, 1)
		if err := st.Put(ctx, "tsdb", []store.Put{{Row: m.AppendRowKey(nil, s, base), Cells: []store.Cell{{
			Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(ts-int64(base)*1000), flags), Value: val,
		}}}}); err != nil {
			t.Fatal(err)
		}
	}
	job := labels.MustNewMatcher(labels.MatchEqual, "job", "a")
	write("foo", 1_700_000_000_000)
	if got, err := q.Select(ctx, 0, 1<<42, job); err != nil || len(got) != 1 {
		t.Fatalf("first read: %d series, %v", len(got), err)
	}
	write("bar", 1_700_000_000_000)
	if got, err := q.Select(ctx, 0, 1<<42, job); err != nil || len(got) != 2 {
		t.Fatalf("read after a new metric: %d series, %v; want 2", len(got), err)
	}
	got, err := q.Select(ctx, 0, 1<<42, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "foo|foo"))
	if err != nil || len(got) != 1 || len(got[0].Samples) != 1 {
		t.Fatalf(`{__name__=~"foo|foo"} = %v, %v; want one series with one sample`, got, err)
	}
}

// TestOneSeriesTwoRowKeys: a label-less series written without its
// reserved tag (earlier versions) and with it, and a tag value stored in
// its legacy UTF-8 form and in Latin-1, each read back as one series with
// every sample once.
func TestOneSeriesTwoRowKeys(t *testing.T) {
	q, m, st := newQuerier(t)
	ctx := context.Background()
	base := uint32(1700002800)
	put := func(row []byte, off uint32, v float64) {
		t.Helper()
		val, flags := mapping.AppendValue(nil, v)
		if err := st.Put(ctx, "tsdb", []store.Put{{Row: row, Cells: []store.Cell{{
			Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, off, flags), Value: val,
		}}}}); err != nil {
			t.Fatal(err)
		}
	}
	uidRow := func(row, fam, qual, val string) {
		t.Helper()
		if err := st.Put(ctx, "tsdb-uid", []store.Put{{Row: []byte(row), Cells: []store.Cell{{Family: []byte(fam), Qualifier: []byte(qual), Value: []byte(val)}}}}); err != nil {
			t.Fatal(err)
		}
	}

	s, err := m.Resolve(ctx, []byte("k1"), []mapping.Label{{Name: []byte("__name__"), Value: []byte("scalar_result")}})
	if err != nil {
		t.Fatal(err)
	}
	put(m.AppendRowKey(nil, s, base), 1000, 1)
	put(m.AppendRowKey(nil, series.Series{Metric: s.Metric}, base), 2000, 2) // no tag pair
	put(m.AppendRowKey(nil, series.Series{Metric: s.Metric}, base), 1000, 1)
	got, err := q.Select(ctx, 0, 1<<42, labels.MustNewMatcher(labels.MatchEqual, "__name__", "scalar_result"))
	if err != nil || len(got) != 1 || got[0].Labels.String() != `{__name__="scalar_result"}` || fmt.Sprint(got[0].Samples) != "[{1700002801000 1} {1700002802000 2}]" {
		t.Errorf("label-less series: %v, %v", got, err)
	}

	// Tag value "zürich": legacy UTF-8 uid 0000F0, Latin-1 uid 0000F1.
	uidRow("z\xc3\xbcrich", "id", "tagv", "\x00\x00\xf0")
	uidRow("\x00\x00\xf0", "name", "tagv", "z\xc3\xbcrich")
	uidRow("z\xfcrich", "id", "tagv", "\x00\x00\xf1")
	uidRow("\x00\x00\xf1", "name", "tagv", "z\xfcrich")
	s, err = m.Resolve(ctx, []byte("k2"), []mapping.Label{{Name: []byte("__name__"), Value: []byte("temp")}, {Name: []byte("city"), Value: []byte("zürich")}})
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Tags[len(s.Tags)-3:]; fmt.Sprintf("%X", v) != "0000F1" {
		t.Fatalf("write resolved zürich to %X, want the Latin-1 form's 0000F1", v)
	}
	put(m.AppendRowKey(nil, s, base), 1000, 10)
	legacy := series.Series{Metric: s.Metric, Tags: append(append([]byte{}, s.Tags[:3]...), 0, 0, 0xf0)}
	put(m.AppendRowKey(nil, legacy, base), 2000, 20)
	for _, mt := range []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, "city", "zürich"),
		labels.MustNewMatcher(labels.MatchRegexp, "city", "zürich|bern"),
		labels.MustNewMatcher(labels.MatchRegexp, "city", "z.rich"),
	} {
		got, err := q.Select(ctx, 0, 1<<42, labels.MustNewMatcher(labels.MatchEqual, "__name__", "temp"), mt)
		if err != nil || len(got) != 1 || got[0].Labels.String() != `{__name__="temp", city="zürich"}` || fmt.Sprint(got[0].Samples) != "[{1700002801000 10} {1700002802000 20}]" {
			t.Errorf("%s: %v, %v", mt, got, err)
		}
		checkFloatSelection(t, q, 0, 1<<42, labels.MustNewMatcher(labels.MatchEqual, "__name__", "temp"), mt)
	}
	checkFloatSelection(t, q, 0, 1<<42, labels.MustNewMatcher(labels.MatchEqual, "__name__", "scalar_result"))
}

// TestParallelScans: a salted layout spreads one metric over 20 buckets,
// each its own scan; run 4 at a time, they answer what one after the
// other answers, and the sample limit still counts the whole query.
func TestParallelScans(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, embedded.Options{})
	layout := mapping.DefaultLayout()
	layout.SaltWidth, layout.SaltBuckets = 1, 20
	m := layoutMapper(t, st, layout, uid.UIDOptions{})
	base := uint32(1700002800)
	putRows(t, m, st, "par", base, 200, 10, 1000, func(i, j int) float64 { return float64(i*100 + j) })
	sel := labels.MustNewMatcher(labels.MatchEqual, "__name__", "par")
	var answers []string
	for _, conc := range []int{1, 4} {
		q := New(st, m, Options{ScanConcurrency: conc})
		got, err := q.Select(ctx, int64(base)*1000, int64(base)*1000+3600_000, sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 200 {
			t.Fatalf("concurrency %d: %d series, want 200", conc, len(got))
		}
		answers = append(answers, seriesString(got))
		q = New(st, m, Options{ScanConcurrency: conc, MaxSamples: 1999})
		if _, err := q.Select(ctx, int64(base)*1000, int64(base)*1000+3600_000, sel); !errors.Is(err, ErrTooManySamples) {
			t.Errorf("concurrency %d, limit 1999 of 2000 samples: err %v, want ErrTooManySamples", conc, err)
		}
	}
	if answers[0] != answers[1] {
		t.Errorf("4 scans at once answered differently from 1")
	}
}
