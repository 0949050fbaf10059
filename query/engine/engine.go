// Package engine is promhbase's own PromQL evaluator for the expression
// shapes dashboards run, with Prometheus's engine (promql.Engine) for
// everything else. It implements promql.QueryEngine, so Prometheus's HTTP
// API (web/api/v1) serves its answers unchanged.
//
// What it evaluates (everything else goes to the fallback engine,
// unchanged):
//
//   - vector selectors, with offset and @;
//   - f(selector[range]) for rate, increase, delta, irate, idelta, deriv,
//     resets, changes and the sum, avg, min, max, count, last, present,
//     stddev, stdvar and quantile _over_time functions;
//   - sum, avg, min, max, count and group of any supported expression, by
//     or without labels; topk and bottomk of a selector or range function
//     in range queries;
//   - histogram_quantile(φ, v) of a supported v (classic buckets);
//   - arithmetic and comparisons of a supported expression with a number,
//     and between two with one-to-one matching (on, ignoring, bool);
//     unary minus; parentheses.
//
// The answers are Prometheus's: lookback and staleness, left-open range
// windows, rate's extrapolation, Kahan sums and the same algorithms for
// every function, annotations. Any condition whose answer is an error in
// Prometheus's engine (duplicate label sets, many-to-many matches), any
// native histogram met, and any storage failure sends the whole query to
// the fallback engine, so errors and rare cases are exactly its own.
//
// How it is fast:
//
//   - samples come from the store's rows straight into per-series slices
//     (query.FloatSelection) when the queryable offers it, not through
//     XOR chunks; any other storage.Queryable (federation, downsampled
//     selections) is read through its iterators;
//   - series are evaluated on every core (Options.Workers), each folded
//     into the aggregation groups as soon as it is done, so memory grows
//     with groups × steps, not with the series selected;
//   - range windows move with two cursors; counter resets and value
//     changes are found once per series, so rate, increase, resets and
//     changes cost O(1) per step (plus the resets inside the window).
//
// Files by job: compile.go (the plan compiled from Prometheus's parse),
// eval.go (series read and evaluated on every core), rangefn.go (windows
// with cursors), aggr.go (groups folded per worker). docs/query-engine.md
// describes it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/stats"
)

// Paths of a query's answer, as Path reports them.
const (
	PathPromhbase  = "promhbase"
	PathPrometheus = "prometheus"
)

// Options configure an Engine.
type Options struct {
	// Fallback evaluates what the engine does not: Prometheus's engine.
	Fallback promql.QueryEngine
	// Parser parses queries, with the same options as Fallback's.
	Parser parser.Parser
	// LookbackDelta is the default lookback of instant selectors: 5m.
	LookbackDelta time.Duration
	// Timeout bounds one query's evaluation: 2m.
	Timeout time.Duration
	// Tracker, when set, is the query slots (promql.QueryTracker), taken
	// for the evaluation as Prometheus's engine takes them.
	Tracker promql.QueryTracker
	// MaxSamples bounds the samples a query reads through a queryable's
	// iterators (query.FloatSelection has its own budget): past it the
	// query goes to Fallback, which answers its error.
	MaxSamples int
	// Workers evaluate the series of one query at once: GOMAXPROCS.
	Workers int
	// Disabled sends every query to Fallback (--query.engine=prometheus).
	Disabled bool
	// Registerer receives promhbase_query_engine_queries_total; nil: none.
	Registerer prometheus.Registerer
}

// Engine evaluates PromQL queries: the shapes it supports itself, the
// others with Options.Fallback. It is safe for concurrent use.
type Engine struct {
	opts    Options
	queries *prometheus.CounterVec
	// workers keeps the workers' decoders and sample buffers between
	// queries (*workerMem): a query of long series does not grow new
	// ones each time.
	workers sync.Pool
}

// New returns an Engine.
func New(opts Options) *Engine {
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = 5 * time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Parser == nil {
		opts.Parser = parser.NewParser(parser.Options{})
	}
	e := &Engine{opts: opts, queries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhbase_query_engine_queries_total",
		Help: "PromQL queries evaluated, by the evaluator that answered them (promhbase: its own; prometheus: Prometheus's engine) and why the fallback was taken.",
	}, []string{"path", "reason"})}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(e.queries)
	}
	return e
}

// NewInstantQuery implements promql.QueryEngine.
func (e *Engine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, ts, ts, 0)
}

// NewRangeQuery implements promql.QueryEngine.
func (e *Engine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, start, end, interval)
}

func (e *Engine) newQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	fallback := func() (promql.Query, error) {
		if interval == 0 && start.Equal(end) {
			return e.opts.Fallback.NewInstantQuery(ctx, q, opts, qs, start)
		}
		return e.opts.Fallback.NewRangeQuery(ctx, q, opts, qs, start, end, interval)
	}
	if e.opts.Disabled {
		e.queries.WithLabelValues(PathPrometheus, "disabled").Inc()
		return fallback()
	}
	expr, err := e.opts.Parser.ParseExpr(qs)
	if err != nil {
		return fallback() // its error, as Prometheus words it
	}
	if interval == 0 && !start.Equal(end) || interval < 0 || end.Before(start) {
		return fallback()
	}
	lookback := e.opts.LookbackDelta
	if opts != nil && opts.LookbackDelta() > 0 {
		lookback = opts.LookbackDelta()
	}
	st := &parser.EvalStmt{Expr: expr, Start: start, End: end, Interval: interval, LookbackDelta: lookback}
	instant := interval == 0
	n, reason := compile(expr, instant)
	if n == nil {
		e.queries.WithLabelValues(PathPrometheus, reason).Inc()
		return fallback()
	}
	return &ownQuery{e: e, queryable: q, qs: qs, stmt: st, root: n, fallback: fallback,
		stats: &stats.Statistics{Timers: stats.NewQueryTimers(), Samples: stats.NewQuerySamples(false)}}, nil
}

// ownQuery is one query of the engine's own: Exec evaluates it, or hands it
// to the fallback engine when the evaluation meets what only that engine
// answers.
type ownQuery struct {
	e         *Engine
	queryable storage.Queryable
	qs        string
	stmt      *parser.EvalStmt
	root      node
	fallback  func() (promql.Query, error)

	path  string
	fq    promql.Query // the fallback's query, once made
	stats *stats.Statistics

	mu       sync.Mutex
	cancel   context.CancelFunc
	canceled bool
}

// Path reports which evaluator answered q's Exec: PathPromhbase or
// PathPrometheus ("" before the Exec of a query the engine took from the
// parse; PathPrometheus for one it gave the fallback at once).
func Path(q promql.Query) string {
	if q, ok := q.(*ownQuery); ok {
		return q.path
	}
	return PathPrometheus
}

// Exec implements promql.Query: the engine's evaluation, or the
// fallback's when the evaluation is handed over.
func (q *ownQuery) Exec(ctx context.Context) *promql.Result {
	ctx, cancel := context.WithTimeout(ctx, q.e.opts.Timeout)
	defer cancel()
	q.mu.Lock()
	q.cancel = cancel
	if q.canceled {
		cancel()
	}
	q.mu.Unlock()
	val, annos, err := q.evalInSlot(ctx)
	var qe *queueError
	if errors.As(err, &qe) {
		return &promql.Result{Err: contextErr(qe.err, "query queue")}
	}
	if err == nil {
		q.path = PathPromhbase
		q.e.queries.WithLabelValues(PathPromhbase, "").Inc()
		return &promql.Result{Value: val, Warnings: annos}
	}
	if ctx.Err() != nil {
		q.path = PathPromhbase
		return &promql.Result{Err: contextErr(ctx.Err(), "expression evaluation")}
	}
	// Handed over: the fallback answers, its error included; it takes a
	// query slot of its own.
	reason := "evaluation"
	var fe *fallbackError
	if errors.As(err, &fe) {
		reason = fe.reason
	}
	q.e.queries.WithLabelValues(PathPrometheus, reason).Inc()
	q.path = PathPrometheus
	fq, ferr := q.fallback()
	if ferr != nil {
		return &promql.Result{Err: ferr}
	}
	q.mu.Lock()
	q.fq = fq
	q.mu.Unlock()
	return fq.Exec(ctx)
}

// queueError is a query that got no query slot.
type queueError struct{ err error }

func (e *queueError) Error() string { return "query queue: " + e.err.Error() }

// evalInSlot evaluates the query in a query slot of Options.Tracker.
func (q *ownQuery) evalInSlot(ctx context.Context) (parser.Value, annotations.Annotations, error) {
	if t := q.e.opts.Tracker; t != nil {
		idx, err := t.Insert(ctx, q.qs)
		if err != nil {
			return nil, nil, &queueError{err}
		}
		defer t.Delete(idx)
	}
	timer := q.stats.Timers.GetTimer(stats.EvalTotalTime).Start()
	defer timer.Stop()
	return q.eval(ctx)
}

// contextErr is ctx's error as Prometheus's engine reports it.
func contextErr(err error, env string) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return promql.ErrQueryTimeout(env)
	case errors.Is(err, context.Canceled):
		return promql.ErrQueryCanceled(env)
	}
	return err
}

// Close implements promql.Query.
func (q *ownQuery) Close() {
	if q.fq != nil {
		q.fq.Close()
	}
}

// Statement implements promql.Query.
func (q *ownQuery) Statement() parser.Statement { return q.stmt }

// Stats implements promql.Query.
func (q *ownQuery) Stats() *stats.Statistics {
	if q.fq != nil {
		return q.fq.Stats()
	}
	return q.stats
}

// Cancel implements promql.Query.
func (q *ownQuery) Cancel() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.canceled = true
	if q.cancel != nil {
		q.cancel()
	}
	if q.fq != nil {
		q.fq.Cancel()
	}
}

// String implements promql.Query.
func (q *ownQuery) String() string { return q.qs }

// fallbackError hands a query over to the fallback engine.
type fallbackError struct{ reason, detail string }

func (e *fallbackError) Error() string {
	return fmt.Sprintf("handed to Prometheus's engine: %s: %s", e.reason, e.detail)
}

func handOver(reason, format string, args ...any) error {
	return &fallbackError{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// eval evaluates the query: a Matrix for a range query, a Vector or
// Scalar for an instant query.
func (q *ownQuery) eval(ctx context.Context) (parser.Value, annotations.Annotations, error) {
	ev := newEvaluator(ctx, q, q.e.opts.Workers)
	defer ev.close()
	out, err := q.root.eval(ev)
	if err != nil {
		return nil, nil, err
	}
	annos := ev.annotations()
	start := timestamp.FromTime(q.stmt.Start)
	if q.stmt.Interval == 0 {
		vec := make(promql.Vector, 0, len(out))
		for _, s := range out {
			if s.has[0] {
				vec = append(vec, promql.Sample{Metric: s.labels, T: start, F: s.vals[0]})
			}
		}
		return vec, annos, nil
	}
	mat := make(promql.Matrix, 0, len(out))
	for _, s := range out {
		pts := make([]promql.FPoint, 0, s.count())
		for i, ok := range s.has {
			if ok {
				pts = append(pts, promql.FPoint{T: ev.stepTime(i), F: s.vals[i]})
			}
		}
		if len(pts) > 0 {
			mat = append(mat, promql.Series{Metric: s.labels, Floats: pts})
		}
	}
	sortMatrix(mat)
	return mat, annos, nil
}
