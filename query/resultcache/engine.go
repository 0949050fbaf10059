package resultcache

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/stats"

	"github.com/promhbase/promhbase/query"
)

type bypassKey struct{}

// Bypass returns ctx with the cache bypassed for the queries run with it
// (nocache=1 on a request, or per-query statistics asked for).
func Bypass(ctx context.Context) context.Context { return context.WithValue(ctx, bypassKey{}, true) }

func bypassed(ctx context.Context) bool { b, _ := ctx.Value(bypassKey{}).(bool); return b }

// Engine answers range queries of one tenant from the cache, evaluating
// with the engine it wraps the steps the cache does not hold. Instant
// queries, and range queries the cache cannot answer exactly (an @
// modifier or a negative offset, whose steps read outside their own
// window), go to the wrapped engine unchanged.
type Engine struct {
	c        *Cache
	tenant   string
	next     promql.QueryEngine
	parser   parser.Parser
	lookback time.Duration
}

// Engine returns the cache's view for tenant over next; p parses as next
// does, lookback is next's default lookback delta.
func (c *Cache) Engine(tenant string, next promql.QueryEngine, p parser.Parser, lookback time.Duration) *Engine {
	return &Engine{c: c, tenant: tenant, next: next, parser: p, lookback: lookback}
}

// NewInstantQuery is the wrapped engine's.
func (e *Engine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	return e.next.NewInstantQuery(ctx, q, opts, qs, ts)
}

// NewRangeQuery returns a query answered from the cache where it can be.
func (e *Engine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	var expr parser.Expr // set below, before inner is called past start
	inner := func(s time.Time) (promql.Query, error) {
		return e.next.NewRangeQuery(ctx, q, opts, fromStep(qs, expr, start, s), s, end, step)
	}
	if !e.c.Enabled() || bypassed(ctx) || step <= 0 || end.Before(start) {
		e.c.m.bypassed.Inc()
		return inner(start)
	}
	var err error
	if expr, err = e.parser.ParseExpr(qs); err != nil {
		return inner(start) // the wrapped engine words the error
	}
	lookback := e.lookback
	if opts != nil && opts.LookbackDelta() > 0 {
		lookback = opts.LookbackDelta()
	}
	window, norm, ok := analyze(expr, lookback.Milliseconds())
	if !ok {
		e.c.m.bypassed.Inc()
		return inner(start)
	}
	stepMs, startMs := step.Milliseconds(), start.UnixMilli()
	k := key{tenant: e.tenant, query: norm, step: stepMs, phase: mod(startMs, stepMs), lookback: lookback.Milliseconds(),
		downsampled: strings.Contains(norm, query.DownsampleLabel)}
	return &cachedQuery{e: e, k: k, window: window, qs: qs, expr: expr, start: start, end: end, step: step, lookback: lookback, inner: inner}, nil
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// cachedQuery is one range query answered from kept steps and the
// evaluation of the rest.
type cachedQuery struct {
	e          *Engine
	k          key
	window     int64
	qs         string
	expr       parser.Expr
	start, end time.Time
	step       time.Duration
	lookback   time.Duration
	inner      func(start time.Time) (promql.Query, error)
	ran        promql.Query // the evaluation of the steps not kept
}

// Exec answers the query: the kept steps from start on, the rest
// evaluated, joined series by series in the order of the labels
// (Prometheus's order of a range query's answer).
func (q *cachedQuery) Exec(ctx context.Context) *promql.Result {
	c := q.e.c
	stepMs, startMs, endMs := q.step.Milliseconds(), q.start.UnixMilli(), q.end.UnixMilli()
	// The last step of the range, on its grid.
	endMs = startMs + (endMs-startMs)/stepMs*stepMs
	kept, seq := c.lookup(q.k)
	var (
		mat      promql.Matrix
		warnings annotations.Annotations
		from     = startMs // the first step evaluated
		born     = c.now()
	)
	if kept != nil && kept.start <= startMs && startMs <= kept.end+stepMs {
		last := min(kept.end, endMs)
		mat = restrict(kept.mat, startMs, last)
		warnings = warnings.Merge(kept.warnings)
		from, born = last+stepMs, kept.born
	}
	switch {
	case kept == nil || from == startMs:
		c.m.misses.Inc()
	case from > endMs:
		c.m.hits.Inc()
	default:
		c.m.partial.Inc()
	}
	if from <= endMs {
		qry, err := q.inner(time.UnixMilli(from))
		if err != nil {
			return &promql.Result{Err: err}
		}
		q.ran = qry
		res := qry.Exec(ctx)
		if res.Err != nil {
			return res
		}
		fresh, ok := res.Value.(promql.Matrix)
		if !ok {
			return res // not an answer the cache knows how to join
		}
		mat = join(mat, fresh)
		warnings = warnings.Merge(res.Warnings)
	}
	// A downsampled selection that met native histograms fails the
	// request's answer over to raw samples (promapi): nothing of it is kept.
	rep := query.DownsampleReportFrom(ctx)
	if horizon := c.now().Add(-c.opts.Offset).UnixMilli(); horizon >= startMs && (rep == nil || !rep.Raw.Load()) {
		last := startMs + (min(horizon, endMs)-startMs)/stepMs*stepMs
		var w annotations.Annotations
		c.store(&entry{key: q.k, start: startMs, end: last, window: q.window, mat: restrict(mat, startMs, last),
			warnings: w.Merge(warnings), born: born}, seq)
	}
	return &promql.Result{Value: mat, Warnings: warnings}
}

// Close releases the evaluation's memory.
func (q *cachedQuery) Close() {
	if q.ran != nil {
		q.ran.Close()
	}
}

// Statement is the parsed query.
func (q *cachedQuery) Statement() parser.Statement {
	return &parser.EvalStmt{Expr: q.expr, Start: q.start, End: q.end, Interval: q.step, LookbackDelta: q.lookback}
}

// Stats are the evaluation's, or empty when every step was kept.
func (q *cachedQuery) Stats() *stats.Statistics {
	if q.ran != nil {
		return q.ran.Stats()
	}
	return &stats.Statistics{Timers: stats.NewQueryTimers()}
}

// Cancel cancels the evaluation.
func (q *cachedQuery) Cancel() {
	if q.ran != nil {
		q.ran.Cancel()
	}
}

func (q *cachedQuery) String() string { return q.qs }

// restrict returns the points of m at steps start..end, the series left
// with none dropped. It copies nothing it keeps whole.
func restrict(m promql.Matrix, start, end int64) promql.Matrix {
	out := make(promql.Matrix, 0, len(m))
	for _, s := range m {
		s.Floats = cutFloats(s.Floats, start, end)
		s.Histograms = cutHistograms(s.Histograms, start, end)
		if len(s.Floats)+len(s.Histograms) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func cutFloats(ps []promql.FPoint, start, end int64) []promql.FPoint {
	return cut(ps, start, end, func(p promql.FPoint) int64 { return p.T })
}

func cutHistograms(ps []promql.HPoint, start, end int64) []promql.HPoint {
	return cut(ps, start, end, func(p promql.HPoint) int64 { return p.T })
}

// cut returns the points of ps (in time order) from start to end.
func cut[P any](ps []P, start, end int64, t func(P) int64) []P {
	i := 0
	for i < len(ps) && t(ps[i]) < start {
		i++
	}
	j := len(ps)
	for j > i && t(ps[j-1]) > end {
		j--
	}
	return ps[i:j:j]
}

// join returns the series of a (earlier steps) and b (later steps), both
// sorted by labels, each series' points those of a then those of b. The
// points are copied out of b, whose memory its query recycles when it is
// closed; a's are kept points, never written.
func join(a, b promql.Matrix) promql.Matrix {
	out := make(promql.Matrix, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var cmp int
		switch {
		case i == len(a):
			cmp = 1
		case j == len(b):
			cmp = -1
		default:
			cmp = labels.Compare(a[i].Metric, b[j].Metric)
		}
		switch {
		case cmp < 0:
			out = append(out, a[i])
			i++
		case cmp > 0:
			s := b[j]
			s.Floats = append([]promql.FPoint(nil), s.Floats...)
			s.Histograms = append([]promql.HPoint(nil), s.Histograms...)
			out = append(out, s)
			j++
		default:
			s := a[i]
			s.Floats = append(s.Floats[:len(s.Floats):len(s.Floats)], b[j].Floats...)
			s.Histograms = append(s.Histograms[:len(s.Histograms):len(s.Histograms)], b[j].Histograms...)
			out = append(out, s)
			i++
			j++
		}
	}
	return out
}

// analyze returns how far back (ms) a step of expr reads, and expr
// normalised for the key: printed again, with the evaluation range of
// promhbase's downsampling markers left out (it differs with every
// refresh; the steps a marker's selection answers do not). It reports
// false for what the cache cannot answer exactly: an @ modifier, or a
// negative offset (a step reading after itself).
func analyze(expr parser.Expr, lookback int64) (int64, string, bool) {
	ok := true
	var walk func(n parser.Node) int64
	walk = func(n parser.Node) int64 {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if n.Timestamp != nil || n.StartOrEnd != 0 || n.OriginalOffset < 0 {
				ok = false
			}
			w := n.OriginalOffset.Milliseconds() + lookback
			for _, m := range n.LabelMatchers {
				if m.Name == query.DownsampleLabel {
					w += markerReach(m.Value)
				}
			}
			return w
		case *parser.MatrixSelector:
			return n.Range.Milliseconds() + walk(n.VectorSelector)
		case *parser.SubqueryExpr:
			if n.Timestamp != nil || n.StartOrEnd != 0 || n.OriginalOffset < 0 {
				ok = false
			}
			return n.OriginalOffset.Milliseconds() + n.Range.Milliseconds() + walk(n.Expr)
		}
		var w int64
		for _, ch := range parser.Children(n) {
			w = max(w, walk(ch))
		}
		return w
	}
	w := walk(expr)
	if !ok {
		return 0, "", false
	}
	return w, normalise(expr), true
}

// fromStep returns qs for an evaluation from step s on instead of start:
// the downsampling markers of the window functions in expr (their
// selection computes the windows of every step from the marker's start)
// start at s. qs itself when s is start or there is no such marker. The
// marker's other fields (the built span, the resolution) stay, so the
// steps from s on are those of the whole evaluation.
func fromStep(qs string, expr parser.Expr, start, s time.Time) string {
	if !s.After(start) || !strings.Contains(qs, query.DownsampleLabel) {
		return qs
	}
	out, changed := printMarkers(expr, func(parts []string) bool {
		if f, ok := query.ParseWindowFunc(parts[0]); !ok || f == query.WinPointsAvg || f == query.WinPointsLast {
			return false // the points functions take their range from the engine's hints
		}
		parts[4] = strconv.FormatInt(s.UnixMilli(), 10)
		return true
	})
	if !changed {
		return qs
	}
	return out
}

// markerReach is how far back a downsampled selection reads beyond the
// lookback: its range and offset, and a day for the rollup windows.
func markerReach(v string) int64 {
	parts := strings.Split(v, ";")
	reach := int64(24 * time.Hour / time.Millisecond)
	if len(parts) > 3 {
		r, _ := strconv.ParseInt(parts[2], 10, 64)
		o, _ := strconv.ParseInt(parts[3], 10, 64)
		reach += max(r, 0) + max(o, 0)
	}
	return reach
}

// normalise prints expr, the start and end fields of downsampling markers
// blanked (expr is left as it was).
func normalise(expr parser.Expr) string {
	s, _ := printMarkers(expr, func(parts []string) bool {
		parts[4], parts[5] = "", ""
		return true
	})
	return s
}

// printMarkers prints expr with each downsampling marker's fields (split
// at ';', at least 6) as edit leaves them where it reports a change, and
// whether it did; expr is left as it was.
func printMarkers(expr parser.Expr, edit func(parts []string) bool) (string, bool) {
	type swap struct {
		vs *parser.VectorSelector
		i  int
		m  *labels.Matcher
	}
	var swaps []swap
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for i, m := range vs.LabelMatchers {
			parts := strings.Split(m.Value, ";")
			if m.Name != query.DownsampleLabel || len(parts) < 6 || !edit(parts) {
				continue
			}
			swaps = append(swaps, swap{vs, i, m})
			vs.LabelMatchers[i] = &labels.Matcher{Type: m.Type, Name: m.Name, Value: strings.Join(parts, ";")}
		}
		return nil
	})
	out := expr.String()
	for _, sw := range swaps {
		sw.vs.LabelMatchers[sw.i] = sw.m
	}
	return out, len(swaps) > 0
}
