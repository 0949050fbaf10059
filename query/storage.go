package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
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
//   - Select's set (but for "series") runs its query from its first Next
//     on and hands on each series as it is complete (see Querier.Stream);
//     Close ends the queries of sets not drained.
//   - The selects of one querier (one PromQL query) share one Budget of
//     the Querier's limits: their samples are held as chunks, and past the
//     budget the set fails with ErrTooManySamples or ErrTooManyBytes (the
//     API answers 422, as for Prometheus's own storage errors).
//   - Under a request's read limits (WithReadLimits), every select
//     reads from their minimum time on and counts the series it hands
//     on against their series limit.
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
	return &storageQuerier{q: s.q, mint: mint, maxt: maxt, budget: s.q.NewBudget()}, nil
}

// ChunkQuerier implements storage.ChunkQueryable, by encoding Querier's
// series into chunks.
func (s *Storage) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	return &chunkQuerier{storageQuerier{q: s.q, mint: mint, maxt: maxt, budget: s.q.NewBudget()}}, nil
}

// ExemplarQuerier implements storage.ExemplarQueryable.
func (s *Storage) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	return exemplarQuerier{ctx: ctx, q: s.q}, nil
}

type storageQuerier struct {
	q          *Querier
	mint, maxt int64
	budget     *Budget // of the querier's query: all its selects

	mu      sync.Mutex
	streams []*seriesStream // of its selects, for Close
}

func (sq *storageQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	set, err := sq.selectChunks(ctx, hints, ms)
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	return set
}

// selectChunks selects the series, their samples held as chunks (none
// for hints.Func "series").
func (sq *storageQuerier) selectChunks(ctx context.Context, hints *storage.SelectHints, ms []*labels.Matcher) (*chunkSeriesSet, error) {
	start, end := sq.mint, sq.maxt
	if hints != nil {
		start, end = hints.Start, hints.End
	}
	limit := 0
	if hints != nil {
		limit = hints.Limit
	}
	set := &chunkSeriesSet{}
	if i := slices.IndexFunc(ms, func(m *labels.Matcher) bool { return m.Name == DownsampleLabel }); i >= 0 {
		r, err := sq.q.parseMarker(ms[i].Value)
		if err != nil {
			return nil, err
		}
		if r.points() && hints != nil {
			r.Start, r.End = hints.Start, hints.End
		}
		rest := slices.Delete(slices.Clone(ms), i, i+1)
		if set.series, err = sq.q.SelectWindows(ctx, sq.budget, r, rest); err != nil {
			return nil, err
		}
		return set, nil
	}
	if hints != nil && hints.Func == "series" {
		ls, err := sq.q.SelectLabels(ctx, start, end, ms...)
		if err != nil {
			return nil, err
		}
		if limit > 0 && len(ls) > limit {
			ls = ls[:limit]
		}
		lim := readLimitsOf(ctx)
		set.series = make([]*ChunkSeries, len(ls))
		for i, l := range ls {
			if err := lim.addSeries(l); err != nil {
				return nil, err
			}
			set.series[i] = &ChunkSeries{Labels: l}
		}
		return set, nil
	}
	b := sq.budget
	set.stream = newSeriesStream(ctx, b, func(ctx context.Context, emit func(*ChunkSeries) error) error {
		n := 0
		return sq.q.Stream(ctx, b, start, end, ms, func(cs *ChunkSeries) error {
			if limit > 0 && n >= limit {
				b.Release(cs.Bytes)
				return nil
			}
			n++
			return emit(cs)
		})
	})
	sq.mu.Lock()
	sq.streams = append(sq.streams, set.stream)
	sq.mu.Unlock()
	return set, nil
}

// errQuerierClosed ends the streams of a storageQuerier that is closed.
var errQuerierClosed = errors.New("querier closed")

// seriesStream is the series of one Stream pulled one at a time: the
// stream runs in a goroutine of its own from the first next on, and hands
// on each series as it is complete (see Querier.Stream), waiting for the
// puller: it holds a group's series at most, within the budget, besides
// the series pulled. next and err are for one goroutine; close for any.
type seriesStream struct {
	run    func(ctx context.Context, emit func(*ChunkSeries) error) error
	ctx    context.Context
	cancel context.CancelCauseFunc
	budget *Budget
	ch     chan *ChunkSeries // closed once run has returned
	done   chan struct{}     // closed once the goroutine has ended
	result error             // run's error, set before ch is closed

	start   sync.Once
	started atomic.Bool
	ended   bool // ch was seen closed
}

func newSeriesStream(ctx context.Context, b *Budget, run func(ctx context.Context, emit func(*ChunkSeries) error) error) *seriesStream {
	ctx, cancel := context.WithCancelCause(ctx)
	return &seriesStream{run: run, ctx: ctx, cancel: cancel, budget: b, ch: make(chan *ChunkSeries), done: make(chan struct{})}
}

// next returns the next series; false once the stream has ended (see
// err).
func (s *seriesStream) next() (*ChunkSeries, bool) {
	if s.ended {
		return nil, false
	}
	s.start.Do(func() {
		s.started.Store(true)
		go func() {
			defer close(s.done)
			s.result = s.run(s.ctx, s.send)
			close(s.ch)
		}()
	})
	if !s.started.Load() { // closed before the first next
		s.ended, s.result = true, errQuerierClosed
		return nil, false
	}
	cs, ok := <-s.ch
	if !ok {
		s.ended = true
		return nil, false
	}
	return cs, true
}

// send hands cs to next, or releases it when the stream is closed.
func (s *seriesStream) send(cs *ChunkSeries) error {
	select {
	case s.ch <- cs:
		return nil
	case <-s.ctx.Done():
		s.budget.Release(cs.Bytes)
		return context.Cause(s.ctx)
	}
}

// err is the stream's error once next has returned false.
func (s *seriesStream) err() error {
	if !s.ended {
		return nil
	}
	return s.result
}

// close ends the stream, if it runs, and waits for its goroutine.
func (s *seriesStream) close() {
	s.start.Do(func() {}) // no start after close
	s.cancel(errQuerierClosed)
	if s.started.Load() {
		<-s.done
	}
}

// allSeries is the matcher of every stored series.
var allSeries = labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+")

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
	if name == model.MetricNameLabel && len(ms) == 0 {
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

// Close ends the query; the series its selects returned must no longer be
// used.
func (sq *storageQuerier) Close() error {
	sq.mu.Lock()
	streams := sq.streams
	sq.streams = nil
	sq.mu.Unlock()
	for _, st := range streams {
		st.close()
	}
	return nil
}

type chunkQuerier struct{ storageQuerier }

func (cq *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	set, err := cq.selectChunks(ctx, hints, ms)
	if err != nil {
		return storage.ErrChunkSeriesSet(err)
	}
	return chunkSet{set}
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

// chunkSeriesSet iterates over sorted series, of a slice or pulled from a
// stream, as a storage.SeriesSet; its series decode their chunks as they
// are iterated.
type chunkSeriesSet struct {
	series []*ChunkSeries
	stream *seriesStream // when not nil, the series instead of series
	i      int
	cur    *ChunkSeries
}

func (s *chunkSeriesSet) Next() bool {
	if s.stream != nil {
		cs, ok := s.stream.next()
		s.cur = cs
		return ok
	}
	if s.i >= len(s.series) {
		return false
	}
	s.cur = s.series[s.i]
	s.i++
	return true
}

func (s *chunkSeriesSet) At() storage.Series { return storageSeries{s.cur} }
func (s *chunkSeriesSet) Err() error {
	if s.stream != nil {
		return s.stream.err()
	}
	return nil
}

func (s *chunkSeriesSet) Warnings() annotations.Annotations { return nil }

// chunkSet is a chunkSeriesSet as a storage.ChunkSeriesSet.
type chunkSet struct{ *chunkSeriesSet }

func (s chunkSet) At() storage.ChunkSeries { return chunkSeries{s.cur} }

type chunkSeries struct{ s *ChunkSeries }

func (s chunkSeries) Labels() labels.Labels { return s.s.Labels }

func (s chunkSeries) Iterator(it chunks.Iterator) chunks.Iterator {
	metas := make([]chunks.Meta, 0, len(s.s.Chunks))
	for _, c := range s.s.Chunks {
		ch, err := chunkenc.FromData(c.Enc, c.Data)
		if err != nil {
			return errChunksIterator{err}
		}
		metas = append(metas, chunks.Meta{MinTime: c.MinT, MaxTime: c.MaxT, Chunk: ch})
	}
	return storage.NewListChunkSeriesIterator(metas...)
}

type errChunksIterator struct{ err error }

func (errChunksIterator) At() chunks.Meta { return chunks.Meta{} }
func (errChunksIterator) Next() bool      { return false }
func (e errChunksIterator) Err() error    { return e.err }

type storageSeries struct{ s *ChunkSeries }

func (s storageSeries) Labels() labels.Labels { return s.s.Labels }

func (s storageSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	ci, ok := it.(*chunksIterator)
	if !ok {
		ci = &chunksIterator{}
	}
	ci.reset(s.s.Chunks)
	return ci
}

// chunksIterator yields the samples of a series' chunks (sorted, not
// overlapping) one chunk after the other, decoding each as it goes.
// Histograms are copied into the caller's when the caller passes one, so
// the engine may keep or change what it gets.
type chunksIterator struct {
	chunks []Chunk
	idx    int               // the current chunk; -1 before the first
	cur    chunkenc.Iterator // over chunks[idx]; nil before the first
	// Per encoding (XOR, histogram, float histogram; 0: any other), a
	// chunk and an iterator reused from chunk to chunk.
	chks [4]chunkenc.Chunk
	pool [4]chunkenc.Iterator
	vt   chunkenc.ValueType
	err  error
}

func (it *chunksIterator) reset(chunks []Chunk) {
	it.chunks, it.idx, it.cur, it.vt, it.err = chunks, -1, nil, chunkenc.ValNone, nil
}

// nextChunk moves to the next chunk; false at the end or on an error.
func (it *chunksIterator) nextChunk() bool {
	if it.err != nil || it.idx+1 >= len(it.chunks) {
		it.cur, it.idx = nil, len(it.chunks)
		return false
	}
	it.idx++
	c := it.chunks[it.idx]
	enc := c.Enc
	if int(enc) >= len(it.pool) || enc == chunkenc.EncNone {
		enc = 0
	}
	if ch := it.chks[enc]; ch != nil && ch.Encoding() == c.Enc {
		ch.Reset(c.Data)
	} else {
		ch, err := chunkenc.FromData(c.Enc, c.Data)
		if err != nil {
			it.err, it.cur = fmt.Errorf("chunk [%d, %d]: %w", c.MinT, c.MaxT, err), nil
			return false
		}
		it.chks[enc] = ch
	}
	it.pool[enc] = it.chks[enc].Iterator(it.pool[enc])
	it.cur = it.pool[enc]
	return true
}

// settle ends a chunk's iteration: its error, if any, ends the series.
func (it *chunksIterator) settle() {
	if it.cur != nil && it.cur.Err() != nil && it.err == nil {
		it.err = it.cur.Err()
	}
}

func (it *chunksIterator) Next() chunkenc.ValueType {
	if it.idx >= len(it.chunks) {
		return chunkenc.ValNone
	}
	for {
		if it.cur != nil {
			if it.vt = it.cur.Next(); it.vt != chunkenc.ValNone {
				return it.vt
			}
			it.settle()
		}
		if !it.nextChunk() {
			it.vt = chunkenc.ValNone
			return it.vt
		}
	}
}

// Seek is chunkenc.Iterator's, not io.Seeker's: `go vet`'s stdmethods
// check flags the name, so the project vets with -stdmethods=false (make
// vet); every chunkenc.Iterator has this method.
func (it *chunksIterator) Seek(t int64) chunkenc.ValueType {
	if it.idx >= len(it.chunks) {
		return chunkenc.ValNone
	}
	if it.vt != chunkenc.ValNone && it.cur.AtT() >= t {
		return it.vt
	}
	// Skip the chunks that end before t, then seek within one.
	for it.cur == nil || it.chunks[it.idx].MaxT < t {
		if it.cur != nil {
			it.settle()
		}
		if !it.nextChunk() {
			it.vt = chunkenc.ValNone
			return it.vt
		}
	}
	if it.vt = it.cur.Seek(t); it.vt != chunkenc.ValNone {
		return it.vt
	}
	it.settle()
	return it.Next()
}

func (it *chunksIterator) At() (int64, float64) { return it.cur.At() }

func (it *chunksIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	return it.cur.AtHistogram(h)
}

func (it *chunksIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.cur.AtFloatHistogram(fh)
}

func (it *chunksIterator) AtT() int64  { return it.cur.AtT() }
func (it *chunksIterator) AtST() int64 { return 0 }
func (it *chunksIterator) Err() error  { return it.err }
