package promapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/query"
)

// ResolutionHeader is the response header that names the resolutions a
// query read: "raw", or a rollup interval ("5m"), comma-separated when
// selectors or parts of the range read different ones.
const ResolutionHeader = "X-Promhbase-Resolution"

// Downsampling configures the use of rollups by the query API.
type Downsampling struct {
	// Config names the rollup intervals.
	Config *rollup.Config
	// Intervals are those of Config that are built, shortest first.
	Intervals []rollup.Interval
	// Auto makes max_source_resolution default to auto
	// (--query.auto-downsampling); off, queries read raw samples unless
	// they ask otherwise.
	Auto bool
	// Built returns the hours whose rollups (of every interval) are built
	// and current: their windows are read from rollups, the others
	// computed from raw samples.
	Built func(ctx context.Context) rollup.Hours
	// Approximate makes auto read rollups as Thanos does
	// (--query.auto-downsampling.approximate), as an explicit
	// max_source_resolution always does: a step reads the whole windows
	// of its range rounded to the windows, a plain selector the average
	// of the window before the step. Off, auto answers exactly.
	Approximate bool
	// MinRolledShare is the least share of an exact selection's span
	// it reads from rollups (query.WindowRequest.RolledShare) for it to
	// read them at all: below it, the evaluator reads raw samples faster.
	// 0: 0.5; negative: any share.
	MinRolledShare float64
	// RawFrom, when set, returns the oldest time (Unix ms) raw samples
	// are kept to (--storage.retention.resolution-raw): a selection
	// reaching before it reads the rollups approximately, and the answer
	// warns of it.
	RawFrom func() int64
}

// Approximate is what ResolutionHeader adds when an answer read rollups
// approximately (see Downsampling.Approximate).
const approximateNote = "; approximate"

// The functions that read one aggregate of the windows of their range,
// evaluated by the query package per step.
var windowFuncs = map[string]query.WindowFunc{
	"sum_over_time": query.WinSum, "count_over_time": query.WinCount, "min_over_time": query.WinMin,
	"max_over_time": query.WinMax, "avg_over_time": query.WinAvg, "rate": query.WinRate, "increase": query.WinIncrease,
}

// The functions whose selectors are never downsampled: their answer
// depends on the selector's matchers or on the samples' own times.
var rawOnlyFuncs = map[string]bool{"absent": true, "absent_over_time": true, "info": true, "timestamp": true,
	"present_over_time": true, "ts_of_last_over_time": true, "ts_of_min_over_time": true, "ts_of_max_over_time": true}

// rewriter replaces the selectors of one query that rollups can answer by
// downsampled selections (query.DownsampleLabel matchers).
type rewriter struct {
	d      *Downsampling
	maxRes int64 // ms; 0: raw
	// start, end and step of the evaluation (ms; step 0: instant).
	start, end, step int64
	used             map[string]bool // resolution names read
	// approx allows approximate selections (an explicit resolution, or
	// Downsampling.Approximate); inexact records that one was made.
	approx, inexact bool
	// rawFrom is Downsampling.RawFrom's answer (0: every raw sample
	// kept); warnings are the answer's.
	rawFrom  int64
	warnings []string
	// ctx is the request's; built the hours built (Downsampling.Built),
	// read at the first selection that asks.
	ctx   context.Context
	built rollup.Hours
	read  bool
}

// rawGone reports whether a selection reading back to lo (Unix ms) meets
// raw samples retention deleted; the first time, it warns of it.
func (rw *rewriter) rawGone(lo int64, iv rollup.Interval) bool {
	if lo >= rw.rawFrom {
		return false
	}
	if len(rw.warnings) == 0 {
		rw.warnings = append(rw.warnings, fmt.Sprintf("raw samples before %s are deleted (--storage.retention.resolution-raw): "+
			"the answer reads the %s rollups there and is approximate", time.UnixMilli(rw.rawFrom).UTC().Format(time.RFC3339), iv.Name))
	}
	return true
}

// errLeave is downsample's answer for a request it leaves alone: one it
// cannot parse (the API then answers the error).
var errLeave = errors.New("promapi: request left as it is")

// downsample rewrites the query of an instant or range query request for
// the resolution it asks for (max_source_resolution, default auto when
// d.Auto) and reports the resolutions it reads. It returns errLeave when
// it cannot parse the request, which then goes on as it is.
func (a *API) downsample(r *http.Request, instant bool) (resolutions string, warnings []string, err error) {
	rw, err := a.rewrite(r, instant)
	if err != nil || rw == nil {
		return "raw", nil, err
	}
	names := make([]string, 0, len(rw.used))
	for n := range rw.used {
		names = append(names, n)
	}
	slices.SortFunc(names, func(x, y string) int { return cmpResolution(rw.d, x, y) })
	out := strings.Join(names, ",")
	if rw.inexact {
		out += approximateNote
	}
	return out, rw.warnings, nil
}

// rewrite rewrites the request's query for downsampling (see downsample);
// nil: it reads raw samples only.
func (a *API) rewrite(r *http.Request, instant bool) (*rewriter, error) {
	d := a.opts.Downsampling
	if err := r.ParseForm(); err != nil {
		return nil, errLeave
	}
	res := r.Form.Get("max_source_resolution")
	if d == nil || len(d.Intervals) == 0 {
		if res != "" && !isRaw(res) && res != "auto" {
			return nil, fmt.Errorf("max_source_resolution %q: no rollups are configured", res)
		}
		return nil, nil
	}
	rw := &rewriter{d: d, used: map[string]bool{}, ctx: r.Context()}
	if d.RawFrom != nil {
		rw.rawFrom = d.RawFrom()
	}
	if instant {
		t := time.Now()
		if s := r.Form.Get("time"); s != "" {
			var err error
			if t, err = parseTime(s); err != nil {
				return nil, errLeave
			}
		} else {
			r.Form.Set("time", strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64))
		}
		rw.start, rw.end = t.UnixMilli(), t.UnixMilli()
	} else {
		start, err1 := parseTime(r.Form.Get("start"))
		end, err2 := parseTime(r.Form.Get("end"))
		step, err3 := parseDuration(r.Form.Get("step"))
		if err1 != nil || err2 != nil || err3 != nil || step <= 0 || end.Before(start) {
			return nil, errLeave
		}
		rw.start, rw.end, rw.step = start.UnixMilli(), end.UnixMilli(), step.Milliseconds()
		if rw.step <= 0 || (rw.end-rw.start)/rw.step >= 11000 {
			return nil, errLeave
		}
	}
	switch {
	case res == "" && !d.Auto, isRaw(res):
		return nil, nil
	case res == "" || res == "auto":
		rw.maxRes = rw.step / 5
		rw.approx = d.Approximate
	default:
		rw.approx = true
		dur, err := parseDuration(res)
		if err != nil || dur < 0 {
			return nil, fmt.Errorf("max_source_resolution %q: want 0s, raw, auto or a duration such as 5m", res)
		}
		rw.maxRes = dur.Milliseconds()
	}
	if rw.maxRes < d.Intervals[0].Seconds()*1000 {
		return nil, nil
	}
	expr, err := a.parser.ParseExpr(r.Form.Get("query"))
	if err != nil {
		return nil, errLeave
	}
	expr = rw.expr(expr, false)
	r.Form.Set("query", expr.String())
	return rw, nil
}

func isRaw(s string) bool { return s == "raw" || s == "0s" || s == "0" }

// cmpResolution orders resolution names raw first, then by width.
func cmpResolution(d *Downsampling, x, y string) int {
	width := func(n string) int64 {
		if iv, ok := d.Config.Interval(n); ok {
			return iv.Seconds()
		}
		return 0
	}
	return int(width(x) - width(y))
}

// interval returns the widest built interval no wider than limit (ms).
func (rw *rewriter) interval(limit int64) (rollup.Interval, bool) {
	for i := len(rw.d.Intervals) - 1; i >= 0; i-- {
		if iv := rw.d.Intervals[i]; iv.Seconds()*1000 <= limit {
			return iv, true
		}
	}
	return rollup.Interval{}, false
}

// expr rewrites e (in a subquery: nothing is rewritten there).
func (rw *rewriter) expr(e parser.Expr, inSub bool) parser.Expr {
	switch n := e.(type) {
	case *parser.Call:
		if inSub || rawOnlyFuncs[n.Func.Name] {
			rw.noteRaw(n)
			return n
		}
		if f, ok := windowFuncs[n.Func.Name]; ok && len(n.Args) == 1 {
			if ms, ok := n.Args[0].(*parser.MatrixSelector); ok {
				if sel := rw.window(f, ms); sel != nil {
					return sel
				}
			}
		}
		for i, arg := range n.Args {
			if ms, ok := arg.(*parser.MatrixSelector); ok {
				f := query.WinPointsAvg
				if n.Func.Name == "irate" || n.Func.Name == "resets" {
					f = query.WinPointsLast
				}
				rw.points(f, ms)
				continue
			}
			n.Args[i] = rw.expr(arg, inSub)
		}
		return n
	case *parser.VectorSelector:
		if sel := rw.last(n, inSub); sel != nil {
			return sel
		}
		rw.used["raw"] = true
		return n
	case *parser.MatrixSelector:
		rw.used["raw"] = true
		return n
	case *parser.AggregateExpr:
		n.Expr = rw.expr(n.Expr, inSub)
		if n.Param != nil {
			n.Param = rw.expr(n.Param, inSub)
		}
		return n
	case *parser.BinaryExpr:
		n.LHS = rw.expr(n.LHS, inSub)
		n.RHS = rw.expr(n.RHS, inSub)
		return n
	case *parser.ParenExpr:
		n.Expr = rw.expr(n.Expr, inSub)
		return n
	case *parser.UnaryExpr:
		n.Expr = rw.expr(n.Expr, inSub)
		return n
	case *parser.SubqueryExpr:
		n.Expr = rw.expr(n.Expr, true)
		return n
	case *parser.StepInvariantExpr:
		n.Expr = rw.expr(n.Expr, inSub)
		return n
	}
	return e
}

// noteRaw records that the selectors below n read raw samples.
func (rw *rewriter) noteRaw(n parser.Node) {
	parser.Inspect(n, func(c parser.Node, _ []parser.Node) error {
		switch c.(type) {
		case *parser.VectorSelector, *parser.MatrixSelector:
			rw.used["raw"] = true
		}
		return nil
	})
}

// plain reports whether vs can be read from rollups: no @, no duration
// expression, no extended range modifier.
func plain(vs *parser.VectorSelector) bool {
	return vs.Timestamp == nil && vs.StartOrEnd == 0 && vs.OriginalOffsetExpr == nil && !vs.Anchored && !vs.Smoothed
}

// marked returns a selector of vs's matchers and the marker of req.
func marked(vs *parser.VectorSelector, req *query.WindowRequest, keepOffset bool) *parser.VectorSelector {
	ms := slices.Clone(vs.LabelMatchers)
	ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, query.DownsampleLabel, req.Marker()))
	out := &parser.VectorSelector{LabelMatchers: ms, PosRange: vs.PosRange}
	if keepOffset {
		out.OriginalOffset = vs.OriginalOffset
	}
	return out
}

// note gives req the hours built of the selection of windows ending in
// (lo, hi], and records the resolutions it reads.
func (rw *rewriter) note(req *query.WindowRequest, lo, hi int64) {
	if !rw.read && rw.d.Built != nil {
		rw.built = rw.d.Built(rw.ctx)
	}
	rw.read = true
	req.Built = rw.built.Clip(query.HoursOf(lo, hi))
	rolled, raw := req.Reads(lo, hi)
	if rolled {
		rw.used[req.Interval.Name] = true
	}
	if raw {
		rw.used["raw"] = true
	}
}

// window rewrites f(ms) into a downsampled selection evaluated per step,
// or returns nil to leave it.
func (rw *rewriter) window(f query.WindowFunc, ms *parser.MatrixSelector) parser.Expr {
	vs, ok := ms.VectorSelector.(*parser.VectorSelector)
	if !ok || !plain(vs) || ms.RangeExpr != nil {
		return nil
	}
	r := ms.Range.Milliseconds()
	iv, ok := rw.interval(min(rw.maxRes, r))
	if !ok {
		return nil
	}
	req := &query.WindowRequest{Interval: iv, Func: f, Range: r, Offset: vs.OriginalOffset.Milliseconds(),
		Start: rw.start, End: rw.end, Step: rw.step}
	aligned := req.Aligned()
	gone := !rw.approx && !aligned && rw.rawGone(rw.start-req.Offset-r, iv)
	// Where most of the span is read raw anyway, the evaluator reads it
	// faster.
	if req.Exact = (!rw.approx && !gone) || aligned; req.Exact && req.RolledShare() < cmp.Or(rw.d.MinRolledShare, defaultMinRolledShare) {
		return nil
	}
	rw.inexact = rw.inexact || !req.Exact
	lo, hi := req.Covered()
	rw.note(req, lo, hi)
	return marked(vs, req, false)
}

// last rewrites a plain selector into the window average of each step, or
// returns nil to leave it.
func (rw *rewriter) last(vs *parser.VectorSelector, inSub bool) parser.Expr {
	if inSub || !plain(vs) {
		return nil
	}
	iv, ok := rw.interval(rw.maxRes)
	if !ok || (!rw.approx && !rw.rawGone(rw.start-vs.OriginalOffset.Milliseconds()-iv.Seconds()*1000, iv)) {
		return nil
	}
	rw.inexact = true
	req := &query.WindowRequest{Interval: iv, Func: query.WinLast, Offset: vs.OriginalOffset.Milliseconds(),
		Start: rw.start, End: rw.end, Step: rw.step}
	lo, hi := req.Covered()
	rw.note(req, lo, hi)
	return marked(vs, req, false)
}

// points marks the selector of ms for window samples (the engine
// evaluates the function over them), when it can.
func (rw *rewriter) points(f query.WindowFunc, ms *parser.MatrixSelector) {
	vs, ok := ms.VectorSelector.(*parser.VectorSelector)
	if !ok || !plain(vs) || ms.RangeExpr != nil {
		rw.used["raw"] = true
		return
	}
	iv, ok := rw.interval(min(rw.maxRes, ms.Range.Milliseconds()))
	if !ok || (!rw.approx && !rw.rawGone(rw.start-vs.OriginalOffset.Milliseconds()-ms.Range.Milliseconds(), iv)) {
		rw.used["raw"] = true
		return
	}
	rw.inexact = true
	req := &query.WindowRequest{Interval: iv, Func: f}
	off := vs.OriginalOffset.Milliseconds()
	rw.note(req, rw.start-off-ms.Range.Milliseconds(), rw.end-off)
	ms.VectorSelector = marked(vs, req, true)
}

// defaultMinRolledShare is Downsampling.MinRolledShare's default.
const defaultMinRolledShare = 0.5

// parseTime parses a time as Prometheus's API does: Unix seconds with
// up to millisecond precision, or RFC 3339.
func parseTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		sec, ns := math.Modf(t)
		ns = math.Round(ns*1000) / 1000
		return time.Unix(int64(sec), int64(ns*float64(time.Second))).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// parseDuration parses a duration as Prometheus's API does: seconds, or
// a Prometheus duration ("5m").
func parseDuration(s string) (time.Duration, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		ts := d * float64(time.Second)
		if ts > float64(math.MaxInt64) || ts < float64(math.MinInt64) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration: it overflows int64", s)
		}
		return time.Duration(ts), nil
	}
	d, err := model.ParseDuration(s)
	return time.Duration(d), err
}
