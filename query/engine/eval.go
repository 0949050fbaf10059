package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/promhbase/promhbase/query"
)

// node is one expression of the engine's: eval returns its output series,
// each with a value or none at every step of the query.
type node interface {
	eval(ev *evaluator) ([]*stepSeries, error)
}

// stepSeries is one output series of a node: its labels and its value at
// each step of the query (has[i]: a value at step i).
type stepSeries struct {
	labels labels.Labels
	vals   []float64
	has    []bool
}

func newStepSeries(ls labels.Labels, steps int) *stepSeries {
	return &stepSeries{labels: ls, vals: make([]float64, steps), has: make([]bool, steps)}
}

func (s *stepSeries) count() int {
	n := 0
	for _, ok := range s.has {
		if ok {
			n++
		}
	}
	return n
}

// floatSelector is the optional capability of a queryable whose float
// samples can be read without chunks (query.Storage).
type floatSelector interface {
	FloatSelection() *query.FloatSelection
}

// evaluator is the state of one query's evaluation.
type evaluator struct {
	ctx      context.Context
	q        *ownQuery
	workers  int
	start    int64 // ms
	end      int64 // ms
	interval int64 // ms; 0 for an instant query (one step)
	steps    int
	lookback int64 // ms

	fs *query.FloatSelection // nil: read through queryable's iterators

	mu       sync.Mutex
	annos    annotations.Annotations
	queriers []storage.Querier
	samples  int64 // read through iterators, against MaxSamples
}

func newEvaluator(ctx context.Context, q *ownQuery, workers int) *evaluator {
	ev := &evaluator{ctx: ctx, q: q, workers: workers,
		start: timestamp.FromTime(q.stmt.Start), end: timestamp.FromTime(q.stmt.End),
		interval: q.stmt.Interval.Milliseconds(), lookback: q.stmt.LookbackDelta.Milliseconds()}
	ev.steps = 1
	if ev.interval > 0 {
		ev.steps = int((ev.end-ev.start)/ev.interval) + 1
	}
	if f, ok := q.queryable.(floatSelector); ok {
		ev.fs = f.FloatSelection()
	}
	return ev
}

// fork is an evaluator of the same query and steps reading through fs
// (a view of ev's float selection), with annotations of its own; for a
// side of a binary operation evaluated at once with the other.
func (ev *evaluator) fork(fs *query.FloatSelection) *evaluator {
	return &evaluator{ctx: ev.ctx, q: ev.q, workers: ev.workers, start: ev.start, end: ev.end,
		interval: ev.interval, steps: ev.steps, lookback: ev.lookback, fs: fs}
}

func (ev *evaluator) close() {
	for _, q := range ev.queriers {
		_ = q.Close()
	}
}

// stepTime is the time of step i (ms).
func (ev *evaluator) stepTime(i int) int64 { return ev.start + int64(i)*ev.interval }

// addAnnotation records an annotation of the answer.
func (ev *evaluator) addAnnotation(err error) {
	ev.mu.Lock()
	ev.annos.Add(err)
	ev.mu.Unlock()
}

func (ev *evaluator) annotations() annotations.Annotations {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.annos
}

// evalTimes are the first and last evaluation times of sel (ms): @'s
// time, or the query's range.
func (ev *evaluator) evalTimes(sel *selector) (int64, int64) {
	switch {
	case sel.startOrEnd == parser.START:
		return ev.start, ev.start
	case sel.startOrEnd == parser.END:
		return ev.end, ev.end
	case sel.at != nil:
		return *sel.at, *sel.at
	}
	return ev.start, ev.end
}

// workerMem is a worker's memory kept between queries.
type workerMem struct {
	dec query.RowDecoder
	buf []query.Sample
}

// maxPooledSamples bounds the samples buffer a worker keeps for a later
// query (4 MiB: a larger one is left to the collector).
const maxPooledSamples = 1 << 18

// workerMem returns a worker's memory, from an earlier query if any, and
// the function that keeps it for a later one with its buffer (dropped
// when too large) and its decoder's times cache (see
// query.RowDecoder.Reuse).
func (e *Engine) workerMem() (*workerMem, func()) {
	wm, _ := e.workers.Get().(*workerMem)
	if wm == nil {
		wm = &workerMem{}
	}
	return wm, func() {
		wm.dec.Reuse()
		if cap(wm.buf) <= maxPooledSamples {
			e.workers.Put(wm)
		}
	}
}

// job is one series handed to a worker: its rows as stored (a
// FloatSelection's), or its samples.
type job struct {
	idx     int
	rows    *query.RowSeries
	labels  labels.Labels
	samples []query.Sample
}

// each reads the series of sel and calls fn with each on Options.Workers
// workers at once (w: the worker, 0..workers-1; idx: the series'
// position in label order), worker 0 the caller's goroutine (seriesPool).
// fn's samples are its until it returns.
func (ev *evaluator) each(sel *selector, fn func(w, idx int, ls labels.Labels, samples []query.Sample) error) error {
	first, last := ev.evalTimes(sel)
	window := sel.rng
	if window == 0 {
		window = ev.lookback
	}
	// As Prometheus's engine selects: the window's start is exclusive.
	mint, maxt := first-sel.offset-window+1, last-sel.offset
	ctx, cancel := context.WithCancel(ev.ctx)
	defer cancel()
	p := newSeriesPool(ctx, cancel, ev.workers, ev.q.e.workerMem, fn)
	defer p.abandon()
	err := ev.read(ctx, sel, mint, maxt, p.send)
	if err != nil {
		cancel() // the series waiting are released, not evaluated
	}
	if firstErr := p.finish(); firstErr != nil {
		return firstErr
	}
	if err != nil {
		if ev.ctx.Err() != nil {
			return ev.ctx.Err()
		}
		return handOver("storage", "%v", err)
	}
	return ev.ctx.Err()
}

// read selects the series of sel with their samples in [mint, maxt].
func (ev *evaluator) read(ctx context.Context, sel *selector, mint, maxt int64, send func(job) error) error {
	downsampled := slices.ContainsFunc(sel.matchers, func(m *labels.Matcher) bool { return m.Name == query.DownsampleLabel })
	if ev.fs != nil && !downsampled {
		return ev.fs.Select(ctx, mint, maxt, sel.matchers, func(rs *query.RowSeries) error {
			return send(job{rows: rs})
		})
	}
	q, err := ev.q.queryable.Querier(mint, maxt)
	if err != nil {
		return err
	}
	ev.mu.Lock()
	ev.queriers = append(ev.queriers, q)
	ev.mu.Unlock()
	hints := &storage.SelectHints{Start: mint, End: maxt, Step: ev.interval, Range: sel.rng, Func: sel.fn}
	set := q.Select(ctx, true, hints, sel.matchers...)
	var it chunkenc.Iterator
	for set.Next() {
		s := set.At()
		it = s.Iterator(it)
		var pts []query.Sample
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				return errors.New("native histograms")
			}
			t, v := it.At()
			pts = append(pts, query.Sample{T: t, V: v})
		}
		if err := it.Err(); err != nil {
			return err
		}
		ev.mu.Lock()
		ev.samples += int64(len(pts))
		over := ev.q.e.opts.MaxSamples > 0 && ev.samples > int64(ev.q.e.opts.MaxSamples)
		ev.mu.Unlock()
		if over {
			return fmt.Errorf("more than %d samples", ev.q.e.opts.MaxSamples)
		}
		if err := send(job{labels: s.Labels(), samples: pts}); err != nil {
			return err
		}
	}
	if err := set.Err(); err != nil {
		return err
	}
	if ws := set.Warnings(); len(ws) > 0 {
		return errors.New("storage warnings")
	}
	return nil
}

// seriesNode is an expression evaluated one input series at a time: a
// selector or a function of a range selector, then scalar operations and
// negations.
type seriesNode struct {
	sel      *selector
	fn       *rangeFn // nil: an instant selector
	dropName bool     // fn drops the metric name
	ops      []transform
}

// scratch is a worker's reusable memory.
type scratch struct {
	pts    []query.Sample
	resets []int32
	counts []int32
	sorted []float64
	// quantile_over_time's: the sorted window of the series, and whether
	// its values allow one (plainValues).
	win   sortedWindow
	plain bool
}

// series evaluates the series ls with samples into out (len steps), and
// returns whether out has a value at some step. dupKey is, when n drops
// the metric name and the series had a value when it did, the key of its
// labels from then on: two series with one dupKey have the same labels
// in Prometheus's engine, which answers that with an error (or a merge),
// even when a comparison filters one out later; the caller hands the
// query over.
func (n *seriesNode) series(ev *evaluator, sc *scratch, ls labels.Labels, samples []query.Sample, out *stepSeries) (found bool, dupKey string) {
	clear(out.has)
	if n.fn == nil {
		found = ev.instantSeries(n.sel, samples, out)
	} else {
		found = ev.rangeSeries(n.sel, n.fn, sc, ls, samples, out)
	}
	out.labels = ls
	dropped := false
	if n.dropName {
		out.labels = dropMetadata(ls)
		dropped = true
		if found {
			dupKey = string(out.labels.Bytes(nil))
		}
	}
	for _, t := range n.ops {
		if !found {
			break
		}
		found = t.apply(out)
		if !dropped && t.dropsName() {
			// A transform that drops the name filters nothing.
			dropped = true
			dupKey = string(out.labels.Bytes(nil))
		}
	}
	return found, dupKey
}

func (n *seriesNode) eval(ev *evaluator) ([]*stepSeries, error) {
	var (
		mu   sync.Mutex
		out  []*stepSeries
		seen = map[string]struct{}{}
		dup  error
	)
	scs := make([]scratch, ev.workers)
	err := ev.each(n.sel, func(w, idx int, ls labels.Labels, samples []query.Sample) error {
		s := newStepSeries(labels.EmptyLabels(), ev.steps)
		ok, key := n.series(ev, &scs[w], ls, samples, s)
		mu.Lock()
		defer mu.Unlock()
		if key != "" {
			if _, d := seen[key]; d && dup == nil {
				dup = handOver("duplicate labels", "%s", s.labels)
			}
			seen[key] = struct{}{}
		}
		if !ok {
			return nil
		}
		for len(out) <= idx {
			out = append(out, nil)
		}
		out[idx] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	if dup != nil {
		return nil, dup
	}
	return slices.DeleteFunc(out, func(s *stepSeries) bool { return s == nil }), nil
}

// dropsName reports whether n's output may have lost the metric name, so
// that two of its series may have the same labels.
func (n *seriesNode) dropsName() bool {
	if n.dropName {
		return true
	}
	for _, t := range n.ops {
		if t.dropsName() {
			return true
		}
	}
	return false
}

// checkUnique hands the query over when two series have the same labels
// (Prometheus's engine answers an error, or merges them, depending on the
// expression and the steps).
func checkUnique(ss []*stepSeries) error {
	seen := make(map[string]struct{}, len(ss))
	for _, s := range ss {
		k := string(s.labels.Bytes(nil))
		if _, dup := seen[k]; dup {
			return handOver("duplicate labels", "%s", s.labels)
		}
		seen[k] = struct{}{}
	}
	return nil
}

// dropMetadata drops the metric name (and the other metadata labels), as
// Prometheus's functions and operators do.
func dropMetadata(ls labels.Labels) labels.Labels {
	return ls.DropReserved(schema.IsMetadataLabel)
}

// instantSeries evaluates an instant selector: at each step, the newest
// sample within the lookback delta up to the step (less the offset),
// unless it is a staleness marker.
func (ev *evaluator) instantSeries(sel *selector, samples []query.Sample, out *stepSeries) bool {
	found := false
	j := 0
	for i := range ev.steps {
		t := ev.stepTime(i)
		switch {
		case sel.startOrEnd == parser.START:
			t = ev.start
		case sel.startOrEnd == parser.END:
			t = ev.end
		case sel.at != nil:
			t = *sel.at
		}
		ref := t - sel.offset
		if j > 0 && samples[j-1].T > ref {
			j = 0 // @: the same time every step
		}
		for j < len(samples) && samples[j].T <= ref {
			j++
		}
		if j == 0 {
			continue
		}
		s := samples[j-1]
		if s.T <= ref-ev.lookback || value.IsStaleNaN(s.V) {
			continue
		}
		out.vals[i], out.has[i] = s.V, true
		found = true
	}
	return found
}

// transform is an operation on each value of a series: a binary
// operation with a number (swap: the number is on the left), or a
// negation.
type transform struct {
	neg        bool
	op         parser.ItemType
	scalar     float64
	swap       bool
	returnBool bool
}

func (t transform) dropsName() bool { return t.neg || t.returnBool || isArithmetic(t.op) }

// apply applies t to every value of s; false when none is left.
func (t transform) apply(s *stepSeries) bool {
	if t.dropsName() {
		s.labels = dropMetadata(s.labels)
	}
	found := false
	for i, ok := range s.has {
		if !ok {
			continue
		}
		if t.neg {
			s.vals[i] = -s.vals[i]
			found = true
			continue
		}
		l, r := s.vals[i], t.scalar
		if t.swap {
			l, r = r, l
		}
		v, keep := binop(t.op, l, r)
		if t.op.IsComparisonOperator() && t.swap {
			v = r
		}
		if t.returnBool {
			v = 0
			if keep {
				v = 1
			}
			keep = true
		}
		if !keep {
			s.has[i] = false
			continue
		}
		s.vals[i] = v
		found = true
	}
	return found
}

// binop is Prometheus's binary operation of two floats: the value, and
// for comparisons whether it holds (the value is then lhs).
func binop(op parser.ItemType, lhs, rhs float64) (float64, bool) {
	switch op {
	case parser.ADD:
		return lhs + rhs, true
	case parser.SUB:
		return lhs - rhs, true
	case parser.MUL:
		return lhs * rhs, true
	case parser.DIV:
		return lhs / rhs, true
	case parser.POW:
		return math.Pow(lhs, rhs), true
	case parser.MOD:
		return math.Mod(lhs, rhs), true
	case parser.ATAN2:
		return math.Atan2(lhs, rhs), true
	case parser.EQLC:
		return lhs, lhs == rhs
	case parser.NEQ:
		return lhs, lhs != rhs
	case parser.GTR:
		return lhs, lhs > rhs
	case parser.LSS:
		return lhs, lhs < rhs
	case parser.GTE:
		return lhs, lhs >= rhs
	case parser.LTE:
		return lhs, lhs <= rhs
	}
	panic(fmt.Sprintf("engine: binary operator %s", op))
}

// transformNode applies a transform to the output of a node that is not a
// seriesNode.
type transformNode struct {
	inner node
	t     transform
}

func (n *transformNode) eval(ev *evaluator) ([]*stepSeries, error) {
	in, err := n.inner.eval(ev)
	if err != nil {
		return nil, err
	}
	out := in[:0]
	for _, s := range in {
		if n.t.apply(s) {
			out = append(out, s)
		}
	}
	if n.t.dropsName() {
		if err := checkUnique(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sortMatrix sorts a range query's answer by labels, as Prometheus's
// engine does.
func sortMatrix(m promql.Matrix) {
	slices.SortFunc(m, func(a, b promql.Series) int { return labels.Compare(a.Metric, b.Metric) })
}
