// Package query answers queries over the data table: it selects the series
// that Prometheus label matchers select, with their samples (or their
// label sets, or their exemplars) in a time range, for remote read
// (Querier.Stream, Querier.StreamFloats) and for the PromQL engine and HTTP
// API (Querier.Storage).
//
// Plan of a query:
//
//  1. Metrics (names.go): `__name__="x"` names one metric; any other
//     matcher on `__name__` (or none) selects among the metric names of
//     the series index or of tsdb-uid.
//  2. Scans (plan.go): one per metric UID and salt bucket, over the rows
//     [salt] metric hour(start) .. [salt] metric hour(end)+1h, with a
//     row-key regex in OpenTSDB's shape (and its in-process twin,
//     rowmatch.go) that requires the tags which equality and literal-set
//     matchers pin down; it is only a necessary condition. A single
//     metric's scans are split in parts that run at once.
//  3. Scheduling (schedule.go): the scans run up to ScanConcurrency at
//     once, in groups (a metric each for Stream) handed on in order, under
//     the request's Budget (budget.go).
//  4. Rows (decode.go): labels resolved from UIDs, every matcher applied
//     exactly (absent label = ""), samples kept in [start, end] inclusive,
//     cells of a row merged (newest cell wins for a repeated timestamp),
//     appended to the series' chunks (chunks.go).
//  5. Series (join.go): the parts of a series found by different scans
//     (parts of a split scan, several row keys of one label set) joined,
//     sorted by labels, and handed on; storage.go serves them to PromQL.
//
// Rows stream through; only the samples of matching series are kept.
//
// For package engine, floats.go hands over each series' rows as stored
// (FloatSelection), decoded by the evaluator's workers (RowDecoder), with
// no chunks. Downsampled selections: windows.go reads rollup windows per
// step and raw samples where rollups do not reach; exact.go gives each step
// its exact range, with raw pieces where a range's end cuts a window.
package query

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// ErrTooManySamples means a query selected more samples than the limit.
var ErrTooManySamples = errors.New("query selects too many samples")

// scanner is the part of store.Store the query path uses.
type scanner interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
}

// Sample is one sample: Unix milliseconds and value.
type Sample = mapping.Point

// HistogramSample is one native-histogram sample: Unix milliseconds and
// exactly one of H (integer counts) and FH (float counts).
type HistogramSample struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// Series is one series of a query's answer: its float samples and its
// native-histogram samples, each sorted by time with one sample per
// timestamp.
type Series struct {
	Labels     labels.Labels
	Samples    []Sample
	Histograms []HistogramSample
	// Exemplars are filled by SelectExemplars only, sorted by time.
	Exemplars []Exemplar

	pending bool         // its labels wait for resolvePending
	inRange bool         // SelectLabels: a sample in the range was seen
	cc      *chunkCutter // Stream: the chunks so far
	acc     *winAcc      // SelectWindows: the windows so far
	rows    []rawRow     // FloatSelection: the rows as stored
	charged int64        // Stream: bytes charged to the budget so far
}

// Exemplar is one stored exemplar: its own labels, value and time.
type Exemplar struct {
	Labels labels.Labels
	V      float64
	T      int64
}

// mode is what a selection reads of the rows it scans.
type mode int

const (
	modeSamples   mode = iota // float and histogram samples (data table)
	modeLabels                // the label sets of rows in range only: no cell is decoded
	modeExemplars             // exemplars (exemplar table)
	modeWindows               // rollup windows (a rollup table; see SelectWindows)
)

// Options configure a Querier.
type Options struct {
	DataTable string // "tsdb" by default
	UIDTable  string // "tsdb-uid" by default
	// ExemplarTable is promhbase's exemplar table; "" means
	// SelectExemplars finds none.
	ExemplarTable string
	// MaxSamples bounds the samples of one request (see Budget); 0 means
	// 50,000,000.
	MaxSamples int
	// MaxBytes bounds the bytes one request holds at once (see Budget);
	// 0 means DefaultMaxBytes.
	MaxBytes int64
	// ScanConcurrency bounds the scans (metrics × salt buckets) one query
	// runs at once; 0 means 4, 1 scans one after the other.
	ScanConcurrency int
	// MetricNamesTTL is how long the list of metric names read from the UID
	// table is reused; 0 means 10s.
	MetricNamesTTL time.Duration
	// Index, when set, is the series index (index.Reader): selectors
	// without a metric name scan only the metrics it names, and label
	// names and values without matchers come from it, for ranges it
	// covers.
	Index SeriesIndex
	// Rollups is the rollup configuration downsampled selections
	// (SelectWindows, the DownsampleLabel matcher) name their intervals
	// in; nil: none.
	Rollups *rollup.Config
}

// SeriesIndex answers label questions by day without reading data rows
// (index.Reader). Answers may hold more than the range (day granularity)
// but never less, for ranges Covers accepts.
type SeriesIndex interface {
	Covers(ctx context.Context, start, end int64) (bool, error)
	MetricNames(ctx context.Context, start, end int64, ms []*labels.Matcher) ([]string, error)
	LabelNames(ctx context.Context, start, end int64) ([]string, error)
	LabelValues(ctx context.Context, name string, start, end int64) ([]string, error)
	IndexedMetrics(ctx context.Context) ([]string, error)
}

// Querier runs queries. It is safe for concurrent use.
type Querier struct {
	st     scanner
	mapper *series.Mapper
	opts   Options

	names metricNameSource // of the UID table
	// maxSamples is Options.MaxSamples, or what SetMaxSamples set.
	maxSamples atomic.Int64
}

// SetMaxSamples sets the samples one request may load from now on
// (Options.MaxSamples; 0 means its default), for a tenant's limits
// changed at runtime. Requests under way keep theirs.
func (q *Querier) SetMaxSamples(n int) {
	if n <= 0 {
		n = defaultMaxSamples
	}
	q.maxSamples.Store(int64(n))
}

// defaultMaxSamples is Options.MaxSamples' default.
const defaultMaxSamples = 50_000_000

// New returns a Querier over st.
func New(st scanner, m *series.Mapper, opts Options) *Querier {
	if opts.DataTable == "" {
		opts.DataTable = mapping.DefaultDataTable
	}
	if opts.UIDTable == "" {
		opts.UIDTable = mapping.DefaultUIDTable
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = defaultMaxSamples
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.ScanConcurrency <= 0 {
		opts.ScanConcurrency = 4
	}
	if opts.MetricNamesTTL <= 0 {
		opts.MetricNamesTTL = 10 * time.Second
	}
	q := &Querier{st: st, mapper: m, opts: opts, names: uid.NewListing(st, opts.UIDTable, m.UIDs())}
	q.maxSamples.Store(int64(opts.MaxSamples))
	return q
}

// Select returns the series that the matchers select, with their samples in
// [start, end] (Unix ms, inclusive), sorted by labels, every sample
// decoded, under a budget of q's limits: for tests and tools. The server's
// paths use Stream, which holds samples as chunks.
func (q *Querier) Select(ctx context.Context, start, end int64, matchers ...*labels.Matcher) ([]Series, error) {
	var out []Series
	err := q.Stream(ctx, q.NewBudget(), start, end, matchers, func(cs *ChunkSeries) error {
		fs, hs, err := DecodeChunks(cs.Chunks)
		if err != nil {
			return err
		}
		out = append(out, Series{Labels: cs.Labels, Samples: fs, Histograms: hs})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stream runs one query under budget b: it selects the series that the
// matchers select, with their samples in [start, end] (Unix ms,
// inclusive), and calls emit with each, in label order, as soon as the
// series is complete: the scans run metric by metric in name order (and
// a series' labels start with its name: see stream), so the series of a
// metric are handed on once the scans of that metric are done, while the
// scans of the next metrics run ahead.
//
// emit runs in the caller's goroutine, one series at a time. The series is
// emit's, charged to b: emit must b.Release(cs.Bytes) once it no longer
// holds it (at once when it sends it on). An error of emit ends the query
// and is returned. Samples are counted against b's sample limit, bytes
// held against its byte limit (ErrTooManySamples, ErrTooManyBytes).
func (q *Querier) Stream(ctx context.Context, b *Budget, start, end int64, matchers []*labels.Matcher, emit func(*ChunkSeries) error) error {
	return q.stream(ctx, b, start, end, matchers, false, emit)
}

// StreamFloats is Stream for answers that carry samples, not chunks (a
// SAMPLES remote read): a series without native histograms comes with its
// float samples in ChunkSeries.Floats, not encoded into XOR chunks only to
// be decoded again. They are held (and charged) at 16 bytes a sample,
// up to about twice that while a series' slice grows, instead of the 1–3
// bytes of chunks; the SAMPLES answer built beside them takes about 18
// bytes a sample, and its snappy block, held with it at the end, about
// 21 more, so the peak of such a request moves little.
func (q *Querier) StreamFloats(ctx context.Context, b *Budget, start, end int64, matchers []*labels.Matcher, emit func(*ChunkSeries) error) error {
	return q.stream(ctx, b, start, end, matchers, true, emit)
}

// streamRows is Stream for a FloatSelection: each series with its rows
// as stored (ChunkSeries.rows), decoded by the caller.
// behind, when not nil, makes every scan work ahead (see Budget.reserve)
// while it reports true.
func (q *Querier) streamRows(ctx context.Context, b *Budget, behind func() bool, start, end int64, matchers []*labels.Matcher, emit func(*ChunkSeries) error) error {
	return q.streamMode(ctx, b, behind, start, end, matchers, false, true, emit)
}

func (q *Querier) stream(ctx context.Context, b *Budget, start, end int64, matchers []*labels.Matcher, rawFloats bool, emit func(*ChunkSeries) error) error {
	return q.streamMode(ctx, b, nil, start, end, matchers, rawFloats, false, emit)
}

func (q *Querier) streamMode(ctx context.Context, b *Budget, behind func() bool, start, end int64, matchers []*labels.Matcher, rawFloats, rawRows bool, emit func(*ChunkSeries) error) error {
	lim := readLimitsOf(ctx)
	start, ok := lim.clamp(start, end)
	if ok {
		start, ok = clampRange(start, end)
	}
	if !ok {
		return nil
	}
	sel := &selection{q: q, mode: modeSamples, rawFloats: rawFloats, rawRows: rawRows, start: start, end: end, matchers: matchers, budget: b, behind: behind}
	take := chunkSeriesOf
	if rawRows {
		take = rowSeriesOf
	}
	return run(ctx, sel, start, true, take, func(css []*ChunkSeries) error {
		for i, cs := range css {
			css[i] = nil
			err := lim.addSeries(cs.Labels)
			if err != nil {
				b.Release(cs.Bytes)
			} else {
				err = emit(cs)
			}
			if err != nil {
				for _, rest := range css[i+1:] {
					b.Release(rest.Bytes)
				}
				return err
			}
		}
		return nil
	})
}

// clampRange returns the start of a query of [start, end] (Unix ms) from
// 0 on; ok is false when the range holds no row time (start after end,
// end before 1970, start past OpenTSDB's 32-bit seconds).
func clampRange(start, end int64) (int64, bool) {
	if start > end || end < 0 || start/1000 > math.MaxUint32 {
		return 0, false
	}
	return max(start, 0), true
}

// run is the one pipeline of the package's selections; sel says what
// the scans read (its mode: the table, the family, the per-row decoding)
// and over which range. It
//
//  1. looks up the metric names the matchers select in
//     [namesFrom, sel.end] (names.go);
//  2. resolves the matchers to tag constraints, the row filter (plan.go);
//  3. plans the scans: a group per metric name in name order when
//     byMetric (Stream: series handed on metric by metric; one group
//     when tag names may precede the metric name, see earlyTagNames),
//     else one group of all;
//  4. splits a lone group's scans in parts that run at once (split);
//  5. runs them (schedule) and hands on, group by group in the caller's
//     goroutine, the parts that take accepts of the series found,
//     sorted by labels, joined across split scans and row keys (collect).
//
// An error of handOn ends the query and is returned.
func run[P part[P]](ctx context.Context, sel *selection, namesFrom int64, byMetric bool, take func(*Series) (P, bool), handOn func([]P) error) error {
	q := sel.q
	metrics, err := q.metricNames(ctx, namesFrom, sel.end, sel.matchers)
	if err != nil || len(metrics) == 0 {
		return err
	}
	cs, ok, err := sel.constraints(ctx)
	if err != nil || !ok {
		return err
	}
	f := newRowFilter(q.mapper.Layout(), cs)
	var groups [][]store.ScanRequest
	n := 1
	if byMetric {
		n = len(metrics)
	}
	for i := range n {
		names := metrics
		if byMetric {
			names = metrics[i : i+1]
		}
		reqs, err := sel.scans(ctx, names, f)
		if err != nil {
			return err
		}
		if len(reqs) > 0 {
			groups = append(groups, reqs)
		}
	}
	if len(groups) == 1 {
		// One group: its scans cut into parts that run at once. (The
		// scans of many metrics already do.)
		if groups[0], err = sel.split(ctx, groups[0]); err != nil {
			return err
		}
	}
	if len(groups) > 1 {
		early, err := q.earlyTagNames(ctx)
		if err != nil {
			return err
		}
		if early {
			// Series do not come metric by metric: one group, sorted whole.
			groups = [][]store.ScanRequest{slices.Concat(groups...)}
		}
	}
	return sel.schedule(ctx, groups, func(subs []*selection) error {
		ps, err := collect(subs, take)
		if err != nil {
			return err
		}
		return handOn(ps)
	})
}

// SelectLabels returns the label sets of the series that the matchers
// select and that have a sample in [start, end], sorted, keeping no
// sample: a row whose hour lies inside the range counts at once, only rows
// at the range's edges are decoded.
func (q *Querier) SelectLabels(ctx context.Context, start, end int64, matchers ...*labels.Matcher) ([]labels.Labels, error) {
	ss, err := q.selectMode(ctx, modeLabels, start, end, matchers)
	if err != nil {
		return nil, err
	}
	out := make([]labels.Labels, len(ss))
	for i := range ss {
		out[i] = ss[i].Labels
	}
	return out, nil
}

// SelectExemplars returns the series that the matchers select that have
// exemplars in [start, end], with those exemplars.
func (q *Querier) SelectExemplars(ctx context.Context, start, end int64, matchers ...*labels.Matcher) ([]Series, error) {
	if q.opts.ExemplarTable == "" {
		return nil, nil
	}
	return q.selectMode(ctx, modeExemplars, start, end, matchers)
}

func (q *Querier) selectMode(ctx context.Context, md mode, start, end int64, matchers []*labels.Matcher) ([]Series, error) {
	start, ok := readLimitsOf(ctx).clamp(start, end)
	if ok {
		start, ok = clampRange(start, end)
	}
	if !ok {
		return nil, nil
	}
	sel := &selection{q: q, mode: md, start: start, end: end, matchers: matchers, budget: q.NewBudget()}
	// One group of all the scans: the answer is sorted whole.
	var out []Series
	err := run(ctx, sel, start, false, seriesFound, func(ss []*Series) error {
		for _, s := range ss {
			out = append(out, *s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
