package query

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
)

// TestMalformedHistogramCells: histogram cells in promhbase's codec whose
// histogram Prometheus's chunk encoding cannot hold (data promhbase never
// writes: buckets the spans do not account for, a schema outside -4..8
// and -53, a span going backwards) fail the read with an error naming the
// cell; they do not bring the process down.
func TestMalformedHistogramCells(t *testing.T) {
	cases := []struct {
		name string
		h    histogram.Histogram
	}{
		{"more buckets than the spans hold", histogram.Histogram{Schema: 3, Count: 9, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1, 1, 1}}},
		{"fewer negative buckets than the spans hold", histogram.Histogram{Schema: 3, Count: 9, NegativeSpans: []histogram.Span{{Offset: 0, Length: 4}}, NegativeBuckets: []int64{1}}},
		{"schema 9", histogram.Histogram{Schema: 9, Count: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}},
		{"schema -5", histogram.Histogram{Schema: -5, Count: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}},
		{"a span going backwards", histogram.Histogram{Schema: 3, Count: 2, PositiveSpans: []histogram.Span{{Offset: 4, Length: 1}, {Offset: -3, Length: 1}}, PositiveBuckets: []int64{1, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, m, st := newQuerier(t)
			ctx := context.Background()
			var cells []store.Cell
			for i := range 3 { // a chunk's first sample and two appended
				h := c.h
				h.Count += uint64(i)
				cells = append(cells, store.Cell{Family: []byte("t"),
					Qualifier: mapping.AppendHistogramQualifier(nil, uint32(i)*1000),
					Value:     mapping.AppendHistogramValue(nil, &h, nil)})
			}
			base := putMetricRow(t, m, st, "h", cells)
			err := q.Stream(ctx, q.NewBudget(), int64(base)*1000, int64(base)*1000+3_600_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "h")}, func(*ChunkSeries) error { return nil })
			if err == nil {
				t.Fatal("a malformed histogram cell read without an error")
			}
			t.Log(err)
		})
	}
}

// panicStore's scanners panic on their first row.
type panicStore struct{ store.Store }

func (p panicStore) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	return panicScanner{p.Store.Scan(ctx, req)}
}

type panicScanner struct{ store.Scanner }

func (panicScanner) Row() store.Row { panic("a defect") }

// TestScanPanicIsAnError: a panic while a scan reads its rows, which runs
// in a goroutine of its own when a query scans in parallel, fails the
// query with an error instead of ending the process.
func TestScanPanicIsAnError(t *testing.T) {
	_, m, st := newQuerier(t)
	ctx := context.Background()
	base := putMetricRow(t, m, st, "p", []store.Cell{{Family: []byte("t"), Qualifier: []byte{0, 0}, Value: []byte{1}}})
	for _, conc := range []int{1, 4} {
		q := New(panicStore{st}, m, Options{ScanConcurrency: conc})
		ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "p")}
		err := q.Stream(ctx, q.NewBudget(), int64(base)*1000, int64(base)*1000+3_600_000, ms, func(*ChunkSeries) error { return nil })
		if !errors.Is(err, errScanPanic) {
			t.Errorf("concurrency %d: Stream = %v, want the scan's panic as an error", conc, err)
		}
		if _, err := q.Select(ctx, int64(base)*1000, int64(base)*1000+3_600_000, ms...); !errors.Is(err, errScanPanic) {
			t.Errorf("concurrency %d: Select = %v, want the scan's panic as an error", conc, err)
		}
	}
}

// putMetricRow writes cells into the row of t0's hour of the label-less
// series of metric name and returns the hour (Unix seconds).
func putMetricRow(t *testing.T, m *series.Mapper, st store.Store, name string, cells []store.Cell) uint32 {
	t.Helper()
	ctx := context.Background()
	s, err := m.Resolve(ctx, []byte(name), []mapping.Label{{Name: []byte("__name__"), Value: []byte(name)}})
	if err != nil {
		t.Fatal(err)
	}
	base := uint32(t0 / 1000 / 3600 * 3600)
	if err := st.Put(ctx, "tsdb", []store.Put{{Row: m.AppendRowKey(nil, s, base), Cells: cells}}); err != nil {
		t.Fatal(err)
	}
	return base
}
