package query

import (
	"context"
	"slices"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// Storage is q as Prometheus's storage interfaces, for its PromQL engine and
// HTTP API: a storage.SampleAndChunkQueryable and a
// storage.ExemplarQueryable.
//
// Contracts:
//   - Select reads [hints.Start, hints.End] when hints are given (the
//     engine's range: the query's, widened by the lookback and the range
//     selectors), else the querier's [mint, maxt]. With hints.Func
//     "series" (the series API) no sample is kept: the series are those
//     with a sample in the range (only the rows at its edges are decoded).
//   - Every series is sorted by labels, samples by time; a series'
//     iterator yields its float and histogram samples merged by time.
//   - LabelNames and LabelValues answer from the series in [mint, maxt]
//     that the matchers select (all series when there are none), sorted,
//     cut at hints.Limit. Without matchers, and for a range the series
//     index covers, they answer from the index at day granularity (the
//     series with data on the days the range touches), as Prometheus
//     answers from a whole block or head.
type Storage struct{ q *Querier }

// Storage returns q as Prometheus's storage interfaces.
func (q *Querier) Storage() *Storage { return &Storage{q: q} }

// Querier implements storage.Queryable.
func (s *Storage) Querier(mint, maxt int64) (storage.Querier, error) {
	return &storageQuerier{q: s.q, mint: mint, maxt: maxt}, nil
}

// ChunkQuerier implements storage.ChunkQueryable, by encoding Querier's
// series into chunks.
func (s *Storage) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	return &chunkQuerier{storageQuerier{q: s.q, mint: mint, maxt: maxt}}, nil
}

// ExemplarQuerier implements storage.ExemplarQueryable.
func (s *Storage) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	return exemplarQuerier{ctx: ctx, q: s.q}, nil
}

type storageQuerier struct {
	q          *Querier
	mint, maxt int64
}

func (sq *storageQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	start, end := sq.mint, sq.maxt
	if hints != nil {
		start, end = hints.Start, hints.End
	}
	if hints != nil && hints.Func == "series" {
		ls, err := sq.q.SelectLabels(ctx, start, end, ms...)
		if err != nil {
			return storage.ErrSeriesSet(err)
		}
		ss := make([]Series, len(ls))
		for i, l := range ls {
			ss[i].Labels = l
		}
		return limitSet(&seriesSet{series: ss}, hints)
	}
	ss, err := sq.q.Select(ctx, start, end, ms...)
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	return limitSet(&seriesSet{series: ss}, hints)
}

func limitSet(s *seriesSet, hints *storage.SelectHints) storage.SeriesSet {
	if hints != nil && hints.Limit > 0 && len(s.series) > hints.Limit {
		s.series = s.series[:hints.Limit]
	}
	return s
}

// allSeries is the matcher of every stored series.
var allSeries = labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")

func (sq *storageQuerier) labelSets(ctx context.Context, ms []*labels.Matcher) ([]labels.Labels, error) {
	if len(ms) == 0 {
		ms = []*labels.Matcher{allSeries}
	}
	return sq.q.SelectLabels(ctx, sq.mint, sq.maxt, ms...)
}

func (sq *storageQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if len(ms) == 0 {
		covered, err := sq.q.indexCovers(ctx, sq.mint, sq.maxt)
		if err != nil {
			return nil, nil, err
		}
		if covered {
			out, err := sq.q.opts.Index.LabelValues(ctx, name, sq.mint, sq.maxt)
			if err != nil {
				return nil, nil, err
			}
			return limitStrings(out, hints), nil, nil
		}
	}
	if name == labels.MetricName && len(ms) == 0 {
		// The metric names of the range: the metrics that have rows in
		// it. A name without rows is not scanned past its first row.
		names, err := sq.q.allMetricNames(ctx)
		if err != nil {
			return nil, nil, err
		}
		var out []string
		for _, n := range names {
			has, err := sq.q.hasRows(ctx, n, sq.mint, sq.maxt)
			if err != nil {
				return nil, nil, err
			}
			if has {
				out = append(out, n)
				if hints != nil && hints.Limit > 0 && len(out) >= hints.Limit {
					break
				}
			}
		}
		return out, nil, nil
	}
	ls, err := sq.labelSets(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, l := range ls {
		if v := l.Get(name); v != "" {
			out = append(out, v)
		}
	}
	return limitStrings(out, hints), nil, nil
}

func (sq *storageQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if len(ms) == 0 {
		covered, err := sq.q.indexCovers(ctx, sq.mint, sq.maxt)
		if err != nil {
			return nil, nil, err
		}
		if covered {
			out, err := sq.q.opts.Index.LabelNames(ctx, sq.mint, sq.maxt)
			if err != nil {
				return nil, nil, err
			}
			return limitStrings(out, hints), nil, nil
		}
	}
	ls, err := sq.labelSets(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, l := range ls {
		l.Range(func(l labels.Label) { out = append(out, l.Name) })
	}
	return limitStrings(out, hints), nil, nil
}

func limitStrings(out []string, hints *storage.LabelHints) []string {
	slices.Sort(out)
	out = slices.Compact(out)
	if hints != nil && hints.Limit > 0 && len(out) > hints.Limit {
		out = out[:hints.Limit]
	}
	return out
}

func (sq *storageQuerier) Close() error { return nil }

type chunkQuerier struct{ storageQuerier }

func (cq *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return storage.NewSeriesSetToChunkSet(cq.storageQuerier.Select(ctx, sortSeries, hints, ms...))
}

type exemplarQuerier struct {
	ctx context.Context
	q   *Querier
}

// Select returns the exemplars of the series any of the matcher sets
// selects (a union; each set an intersection), one result per series,
// sorted by series labels.
func (eq exemplarQuerier) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	bySeries := map[string]int{}
	var out []exemplar.QueryResult
	for _, ms := range matchers {
		ss, err := eq.q.SelectExemplars(eq.ctx, start, end, ms...)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			key := s.Labels.String()
			if _, dup := bySeries[key]; dup {
				continue
			}
			bySeries[key] = len(out)
			r := exemplar.QueryResult{SeriesLabels: s.Labels}
			for _, e := range s.Exemplars {
				r.Exemplars = append(r.Exemplars, exemplar.Exemplar{Labels: e.Labels, Value: e.V, Ts: e.T, HasTs: true})
			}
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b exemplar.QueryResult) int { return labels.Compare(a.SeriesLabels, b.SeriesLabels) })
	return out, nil
}

// seriesSet iterates over a sorted slice of series.
type seriesSet struct {
	series []Series
	i      int
	cur    storageSeries
}

func (s *seriesSet) Next() bool {
	if s.i >= len(s.series) {
		return false
	}
	s.cur = storageSeries{&s.series[s.i]}
	s.i++
	return true
}

func (s *seriesSet) At() storage.Series                { return s.cur }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

type storageSeries struct{ s *Series }

func (s storageSeries) Labels() labels.Labels { return s.s.Labels }

func (s storageSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if si, ok := it.(*seriesIterator); ok {
		si.reset(s.s)
		return si
	}
	si := &seriesIterator{}
	si.reset(s.s)
	return si
}

// seriesIterator yields a series' float and histogram samples merged by
// time (a timestamp holds one or the other: see Series). Histograms are
// copied into the caller's when the caller passes one, so the engine may
// keep or change what it gets.
type seriesIterator struct {
	s      *Series
	fi, hi int // next float, next histogram
	cur    chunkenc.ValueType
	t      int64
	f      float64
	h      HistogramSample
}

func (it *seriesIterator) reset(s *Series) {
	*it = seriesIterator{s: s, cur: chunkenc.ValNone}
}

func (it *seriesIterator) Next() chunkenc.ValueType {
	fs, hs := it.s.Samples, it.s.Histograms
	switch {
	case it.fi < len(fs) && (it.hi >= len(hs) || fs[it.fi].T <= hs[it.hi].T):
		it.t, it.f = fs[it.fi].T, fs[it.fi].V
		it.fi++
		if it.hi < len(hs) && hs[it.hi].T == it.t {
			it.hi++ // never both at one time; if so, the float wins
		}
		it.cur = chunkenc.ValFloat
	case it.hi < len(hs):
		it.h = hs[it.hi]
		it.t = it.h.T
		it.hi++
		it.cur = chunkenc.ValHistogram
		if it.h.FH != nil {
			it.cur = chunkenc.ValFloatHistogram
		}
	default:
		it.cur = chunkenc.ValNone
	}
	return it.cur
}

func (it *seriesIterator) Seek(t int64) chunkenc.ValueType {
	if it.cur != chunkenc.ValNone && it.t >= t {
		return it.cur
	}
	// Skip what is before t in both lists, then step once.
	fs, hs := it.s.Samples, it.s.Histograms
	it.fi += sortSearch(len(fs)-it.fi, func(i int) bool { return fs[it.fi+i].T >= t })
	it.hi += sortSearch(len(hs)-it.hi, func(i int) bool { return hs[it.hi+i].T >= t })
	return it.Next()
}

func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (it *seriesIterator) At() (int64, float64) { return it.t, it.f }

func (it *seriesIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	if it.h.H == nil {
		return it.t, nil
	}
	if h == nil {
		return it.t, it.h.H.Copy()
	}
	it.h.H.CopyTo(h)
	return it.t, h
}

func (it *seriesIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	switch {
	case it.h.FH != nil:
		if fh == nil {
			return it.t, it.h.FH.Copy()
		}
		it.h.FH.CopyTo(fh)
		return it.t, fh
	case it.h.H != nil:
		return it.t, it.h.H.ToFloat(fh)
	}
	return it.t, nil
}

func (it *seriesIterator) AtT() int64  { return it.t }
func (it *seriesIterator) AtST() int64 { return 0 }
func (it *seriesIterator) Err() error  { return nil }
