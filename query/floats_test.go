package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// checkFloatSelection requires that a FloatSelection, its rows decoded by
// a RowDecoder, gives bit for bit the series and samples Select gives.
func checkFloatSelection(t *testing.T, q *Querier, start, end int64, ms ...*labels.Matcher) {
	t.Helper()
	ctx := context.Background()
	want, err := q.Select(ctx, start, end, ms...)
	if err != nil {
		t.Fatal(err)
	}
	var (
		dec RowDecoder
		got []Series
	)
	err = q.Storage().FloatSelection().Select(ctx, start, end, ms, func(rs *RowSeries) error {
		pts, err := dec.Decode(nil, rs)
		rs.Release()
		if err != nil {
			return err
		}
		if len(pts) > 0 {
			got = append(got, Series{Labels: rs.Labels, Samples: pts})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("float selection [%d, %d]: %v", start, end, err)
	}
	if len(got) != len(want) {
		t.Fatalf("float selection [%d, %d]: %d series, Select %d", start, end, len(got), len(want))
	}
	for i := range want {
		if !labels.Equal(got[i].Labels, want[i].Labels) || len(got[i].Samples) != len(want[i].Samples) {
			t.Fatalf("float selection [%d, %d]: series %d %s with %d samples, Select %s with %d", start, end, i,
				got[i].Labels, len(got[i].Samples), want[i].Labels, len(want[i].Samples))
		}
		for j, w := range want[i].Samples {
			g := got[i].Samples[j]
			if g.T != w.T || math.Float64bits(g.V) != math.Float64bits(w.V) {
				t.Fatalf("float selection [%d, %d]: %s sample %d = %d %x, Select %d %x", start, end, want[i].Labels, j, g.T, math.Float64bits(g.V), w.T, math.Float64bits(w.V))
			}
		}
	}
}

// TestFloatSelectionRows: rows as the write path leaves them (one cell a
// sample, merged when kept), a later write over a sample, rows cut by the
// range, and a series with a native histogram ending the selection with
// ErrHistograms.
func TestFloatSelectionRows(t *testing.T) {
	q, m, st := newQuerier(t)
	ctx := context.Background()
	const base = uint32(1700002800)
	stale := math.Float64frombits(value.StaleNaN)
	for i := range 3 {
		s, err := m.Resolve(ctx, fmt.Appendf(nil, "k%d", i), []mapping.Label{{Name: []byte("__name__"), Value: []byte("m")}, {Name: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		for h := range uint32(2) {
			hb := base + 3600*h
			p := store.Put{Row: m.AppendRowKey(nil, s, hb)}
			for j := range 100 - 40*i { // 100, 60 and 20 cells a row
				v := float64(j) * 1.25
				if j == 7 {
					v = stale
				}
				val, flags := mapping.AppendValue(nil, v)
				p.Cells = append(p.Cells, store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(j*15000+i), flags), Value: val, Timestamp: 1})
			}
			if i == 2 && h == 1 {
				p.Cells = p.Cells[:2] // a row of two cells: kept as cells
			}
			if err := st.Put(ctx, "tsdb", []store.Put{p}); err != nil {
				t.Fatal(err)
			}
		}
		// A later version of one sample.
		val, flags := mapping.AppendValue(nil, -3)
		if err := st.Put(ctx, "tsdb", []store.Put{{Row: m.AppendRowKey(nil, s, base), Cells: []store.Cell{{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(15000+i), flags), Value: val, Timestamp: 2}}}}); err != nil {
			t.Fatal(err)
		}
	}
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	for _, rng := range [][2]int64{{0, 1 << 42}, {int64(base)*1000 + 30_000, int64(base)*1000 + 3600_000 + 45_001}, {int64(base)*1000 + 3600_000, int64(base)*1000 + 3600_000}} {
		t.Run(fmt.Sprint(rng), func(t *testing.T) {
			checkFloatSelection(t, q, rng[0], rng[1], name)
			checkFloatSelection(t, q, rng[0], rng[1], name, labels.MustNewMatcher(labels.MatchRegexp, "i", "1|2"))
		})
	}

	t.Run("histogram", func(t *testing.T) {
		s, err := m.Resolve(ctx, []byte("h"), []mapping.Label{{Name: []byte("__name__"), Value: []byte("m")}, {Name: []byte("i"), Value: []byte("h")}})
		if err != nil {
			t.Fatal(err)
		}
		h := &histogram.Histogram{Count: 1, Sum: 1, Schema: 0, ZeroThreshold: 0.001, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}
		if err := st.Put(ctx, "tsdb", []store.Put{{Row: m.AppendRowKey(nil, s, base), Cells: []store.Cell{{Family: []byte("t"),
			Qualifier: mapping.AppendHistogramQualifier(nil, 5000), Value: mapping.AppendHistogramValue(nil, h, nil)}}}}); err != nil {
			t.Fatal(err)
		}
		err = q.Storage().FloatSelection().Select(ctx, 0, 1<<42, []*labels.Matcher{name}, func(rs *RowSeries) error {
			rs.Release()
			return nil
		})
		if !errors.Is(err, ErrHistograms) {
			t.Errorf("selection of a series with a histogram: %v, want ErrHistograms", err)
		}
	})
}

// TestFloatSelectionAfter: a select of a view made by After waits for the
// budget while the other select it runs after is running, instead of
// failing as a plain select does when the memory held leaves no room,
// and reads every series once that one ended.
func TestFloatSelectionAfter(t *testing.T) {
	st := openStore(t, embedded.Options{})
	m := coldMapper(t, st)
	const maxBytes = 1 << 20
	q := New(st, m, Options{MaxBytes: maxBytes})
	ctx := context.Background()
	const base = uint32(1700002800)
	for i := range 4 {
		s, err := m.Resolve(ctx, fmt.Appendf(nil, "k%d", i), []mapping.Label{{Name: []byte("__name__"), Value: []byte("m")}, {Name: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		p := store.Put{Row: m.AppendRowKey(nil, s, base)}
		val, flags := mapping.AppendValue(nil, float64(i))
		p.Cells = append(p.Cells, store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, 1000, flags), Value: val, Timestamp: 1})
		if err := st.Put(ctx, "tsdb", []store.Put{p}); err != nil {
			t.Fatal(err)
		}
	}
	name := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}
	count := func(fs *FloatSelection) (int, error) {
		n := 0
		err := fs.Select(ctx, 0, 1<<42, name, func(rs *RowSeries) error {
			n++
			rs.Release()
			return nil
		})
		return n, err
	}
	// The other select holds all but a few bytes of the budget.
	fs := q.Storage().FloatSelection()
	if err := fs.b.Reserve(maxBytes - 10); err != nil {
		t.Fatal(err)
	}
	if _, err := count(fs); !errors.Is(err, ErrTooManyBytes) {
		t.Fatalf("plain select with the budget held: %v, want ErrTooManyBytes", err)
	}
	var (
		ended atomic.Bool
		asked atomic.Int32
	)
	after := fs.After(func() bool {
		asked.Add(1)
		return !ended.Load()
	})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := count(after)
		done <- result{n, err}
	}()
	for asked.Load() == 0 { // until the select met the budget
		select {
		case r := <-done:
			t.Fatalf("select after the other ended without waiting: %d series, %v", r.n, r.err)
		default:
			runtime.Gosched()
		}
	}
	fs.b.Release(maxBytes - 10)
	ended.Store(true)
	fs.Wake()
	if r := <-done; r.err != nil || r.n != 4 {
		t.Fatalf("select after the other: %d series, %v; want 4, nil", r.n, r.err)
	}
}
