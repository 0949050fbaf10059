package engine

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/kahansum"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/query"
)

// fnKind is a range function, switched on once a step.
type fnKind int

// The range functions, in rangeFuncs.
const (
	fnRate fnKind = iota
	fnIncrease
	fnDelta
	fnIrate
	fnIdelta
	fnDeriv
	fnResets
	fnChanges
	fnSumOverTime
	fnAvgOverTime
	fnMinOverTime
	fnMaxOverTime
	fnCountOverTime
	fnLastOverTime
	fnPresentOverTime
	fnStddevOverTime
	fnStdvarOverTime
	fnQuantileOverTime
)

// fnKinds are the kinds of the range functions by name.
func fnKinds() map[string]fnKind {
	return map[string]fnKind{
		"rate":               fnRate,
		"increase":           fnIncrease,
		"delta":              fnDelta,
		"irate":              fnIrate,
		"idelta":             fnIdelta,
		"deriv":              fnDeriv,
		"resets":             fnResets,
		"changes":            fnChanges,
		"sum_over_time":      fnSumOverTime,
		"avg_over_time":      fnAvgOverTime,
		"min_over_time":      fnMinOverTime,
		"max_over_time":      fnMaxOverTime,
		"count_over_time":    fnCountOverTime,
		"last_over_time":     fnLastOverTime,
		"present_over_time":  fnPresentOverTime,
		"stddev_over_time":   fnStddevOverTime,
		"stdvar_over_time":   fnStdvarOverTime,
		"quantile_over_time": fnQuantileOverTime,
	}
}

// rangeSeries evaluates fn over one series: at each step, the samples in
// the window (t - offset - range, t - offset], staleness markers left
// out, as Prometheus's engine selects them. The window's two ends move
// forward with the steps; the counter resets and value changes of the
// series are found once, so rate, increase, resets and changes take O(1)
// per step (and a step over the resets inside its window). Staleness
// markers and counter resets are found as the windows' upper end moves
// over the samples, in that same pass; a series whose windows meet a
// staleness marker is evaluated again over its samples without them.
func (ev *evaluator) rangeSeries(sel *selector, fn *rangeFn, sc *scratch, ls labels.Labels, samples []query.Sample, out *stepSeries) bool {
	if found, ok := ev.rangeSteps(sel, fn, sc, ls, samples, out, true); ok {
		return found
	}
	clear(out.has)
	found, _ := ev.rangeSteps(sel, fn, sc, ls, samples, out, false)
	return found
}

// rangeSteps is rangeSeries' pass over the steps. When lazy (and fn needs
// no counts), it reads samples as they are and finds the resets as the
// windows reach them; it reports ok false, at the first staleness marker
// a window reaches, for the caller to evaluate the series again without
// lazy (rangePoints: the markers left out first).
// long: the loop over the steps with a case per range function, sharing the windows' cursors; split, the cursors would travel between functions.
func (ev *evaluator) rangeSteps(sel *selector, fn *rangeFn, sc *scratch, ls labels.Labels, samples []query.Sample, out *stepSeries, lazy bool) (found, ok bool) {
	lazy = lazy && fn.kind != fnResets && fn.kind != fnChanges
	counter := fn.kind == fnRate || fn.kind == fnIncrease
	var (
		pts            []query.Sample
		resets, counts []int32
	)
	if lazy {
		pts, resets = samples, sc.resets[:0]
		defer func() { sc.resets = resets }()
	} else {
		pts, resets, counts = rangePoints(fn, sc, samples)
	}
	if len(pts) == 0 {
		return false, true
	}
	rangeSeconds := (time.Duration(fn.rng) * time.Millisecond).Seconds()
	fixed := sel.at != nil || sel.startOrEnd != 0
	if fn.kind == fnQuantileOverTime {
		sc.win.reset()
		sc.plain = plainValues(pts)
	}
	lo, hi, ri := 0, 0, 0
	ext := extremes{at: -1}
	for i := range ev.steps {
		if fixed && i > 0 {
			out.vals[i], out.has[i] = out.vals[0], out.has[0]
			continue
		}
		t := ev.stepTime(i)
		if fixed {
			t, _ = ev.evalTimes(sel)
		}
		maxt := t - sel.offset
		mint := maxt - fn.rng
		for hi < len(pts) && pts[hi].T <= maxt {
			if lazy {
				v := pts[hi].V
				if value.IsStaleNaN(v) {
					return false, false
				}
				if counter && hi > 0 && v < pts[hi-1].V {
					resets = append(resets, int32(hi))
				}
			}
			hi++
		}
		for lo < len(pts) && pts[lo].T <= mint {
			lo++
		}
		if lo >= hi {
			continue
		}
		var (
			v  float64
			ok = true
		)
		w := pts[lo:hi]
		switch fn.kind {
		case fnRate, fnIncrease, fnDelta:
			if len(w) < 2 {
				ok = false
				break
			}
			result := w[len(w)-1].V - w[0].V
			if fn.kind != fnDelta {
				// The window's counter resets, in order: each adds the
				// value before it.
				for ri < len(resets) && int(resets[ri]) <= lo {
					ri++
				}
				for r := ri; r < len(resets) && int(resets[r]) < hi; r++ {
					result += pts[resets[r]-1].V
				}
			}
			v = rollup.Extrapolate(result, w[0].V, w[0].T, w[len(w)-1].T, len(w), mint, maxt, rangeSeconds, fn.kind != fnDelta, fn.kind == fnRate)
		case fnIrate, fnIdelta:
			v, ok = instantValue(w, fn.kind == fnIrate)
		case fnDeriv:
			if len(w) < 2 {
				ok = false
				break
			}
			v, _ = linearRegression(w, w[0].T)
		case fnResets, fnChanges:
			v = float64(counts[hi-1] - counts[lo])
		case fnSumOverTime:
			v = sumOverTime(w)
		case fnAvgOverTime:
			v = avgOverTime(w)
		case fnMinOverTime, fnMaxOverTime:
			v = ext.value(pts, lo, hi, fn.kind == fnMaxOverTime)
		case fnCountOverTime:
			v = float64(len(w))
		case fnLastOverTime:
			v = w[len(w)-1].V
		case fnPresentOverTime:
			v = 1
		case fnStddevOverTime:
			v = math.Sqrt(varianceOverTime(w))
		case fnStdvarOverTime:
			v = varianceOverTime(w)
		case fnQuantileOverTime:
			v = sc.quantileOverTime(fn.param, pts, lo, hi)
		}
		if ok {
			out.vals[i], out.has[i] = v, true
			found = true
		}
	}
	if !found {
		return false, true
	}
	ev.annotateRange(fn, ls)
	return true, true
}

// rangePoints returns the samples of a series that fn reads, staleness
// markers left out (into sc.pts when there are any), with the indices i
// where pts[i].V < pts[i-1].V (the counter resets) for rate and increase,
// and for resets and changes counts[i], the resets or changes at indices
// <= i; the slices are kept in sc for the next series.
func rangePoints(fn *rangeFn, sc *scratch, samples []query.Sample) (pts []query.Sample, resets, counts []int32) {
	// Staleness markers are left out; the counter resets of rate and
	// increase are found in the same pass when there is none.
	counter := fn.kind == fnRate || fn.kind == fnIncrease
	pts = samples
	var stale bool
	if counter {
		stale, resets = findResets(sc.resets[:0], samples)
	} else {
		stale = slices.ContainsFunc(samples, func(s query.Sample) bool { return value.IsStaleNaN(s.V) })
	}
	if stale {
		pts = sc.pts[:0]
		for _, s := range samples {
			if !value.IsStaleNaN(s.V) {
				pts = append(pts, s)
			}
		}
		sc.pts = pts
		if counter {
			_, resets = findResets(sc.resets[:0], pts)
		}
	}
	sc.resets = resets
	if len(pts) == 0 {
		return pts, resets, nil
	}
	switch fn.name {
	case "resets", "changes":
		counts = slices.Grow(sc.counts[:0], len(pts))[:len(pts)]
		counts[0] = 0
		for i := 1; i < len(pts); i++ {
			c := counts[i-1]
			cur, prev := pts[i].V, pts[i-1].V
			if fn.name == "resets" && cur < prev ||
				fn.name == "changes" && cur != prev && !(math.IsNaN(cur) && math.IsNaN(prev)) {
				c++
			}
			counts[i] = c
		}
		sc.counts = counts
	}
	return pts, resets, counts
}

// findResets appends to rs the indices i with pts[i].V < pts[i-1].V; it
// stops at the first staleness marker, reporting it.
func findResets(rs []int32, pts []query.Sample) (stale bool, _ []int32) {
	for i, p := range pts {
		if value.IsStaleNaN(p.V) {
			return true, rs
		}
		if i > 0 && p.V < pts[i-1].V {
			rs = append(rs, int32(i))
		}
	}
	return false, rs
}

// annotateRange adds the annotations of fn over the series ls that found
// a value, as Prometheus's engine does: a rate or increase of a metric
// whose name does not say counter, a quantile outside [0, 1].
func (ev *evaluator) annotateRange(fn *rangeFn, ls labels.Labels) {
	switch fn.name {
	case "rate", "increase":
		if name := ls.Get(model.MetricNameLabel); name != "" && !strings.HasSuffix(name, "_total") &&
			!strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") && !strings.HasSuffix(name, "_bucket") {
			ev.addAnnotation(annotations.NewPossibleNonCounterInfo(name, fn.argPos))
		}
	case "quantile_over_time":
		if q := fn.param; math.IsNaN(q) || q < 0 || q > 1 {
			ev.addAnnotation(annotations.NewInvalidQuantileWarning(q, fn.argPos))
		}
	}
}

// instantValue is irate (rate: true) and idelta of a window: from its
// last two samples.
func instantValue(w []query.Sample, rate bool) (float64, bool) {
	n := len(w)
	if n < 2 {
		return 0, false
	}
	t0, v0, t1, v1 := w[n-2].T, w[n-2].V, w[n-1].T, w[n-1].V
	interval := t1 - t0
	if interval == 0 {
		return 0, false
	}
	result := v1
	if !rate || !(v1 < v0) {
		result = v1 - v0
	}
	if rate {
		result /= float64(interval) / 1000
	}
	return result, true
}

// linearRegression is the least-squares line through the window, with
// Kahan sums, as deriv computes it.
func linearRegression(w []query.Sample, interceptTime int64) (slope, intercept float64) {
	var (
		n          float64
		sumX, cX   float64
		sumY, cY   float64
		sumXY, cXY float64
		sumX2, cX2 float64
	)
	initY := w[0].V
	constY := true
	for i, p := range w {
		y := p.V
		if constY && i > 0 && y != initY {
			constY = false
		}
		n += 1.0
		x := float64(p.T-interceptTime) / 1e3
		sumX, cX = kahansum.Inc(x, sumX, cX)
		sumY, cY = kahansum.Inc(y, sumY, cY)
		sumXY, cXY = kahansum.Inc(x*y, sumXY, cXY)
		sumX2, cX2 = kahansum.Inc(x*x, sumX2, cX2)
	}
	if constY {
		if math.IsInf(initY, 0) {
			return math.NaN(), math.NaN()
		}
		return 0, initY
	}
	sumX += cX
	sumY += cY
	sumXY += cXY
	sumX2 += cX2
	covXY := sumXY - sumX*sumY/n
	varX := sumX2 - sumX*sumX/n
	slope = covXY / varX
	intercept = sumY/n - slope*sumX/n
	return slope, intercept
}

func sumOverTime(w []query.Sample) float64 {
	var sum, c float64
	for _, p := range w {
		sum, c = kahansum.Inc(p.V, sum, c)
	}
	if math.IsInf(sum, 0) {
		return sum
	}
	return sum + c
}

// avgOverTime is the mean with Kahan sums, turning to an incremental mean
// once the sum would overflow, as avg_over_time computes it.
func avgOverTime(w []query.Sample) float64 {
	var (
		sum, count      = w[0].V, 1.
		mean, kahanC    float64
		incrementalMean bool
	)
	for i, p := range w[1:] {
		v := p.V
		count = float64(i + 2)
		if !incrementalMean {
			newSum, newC := kahansum.Inc(v, sum, kahanC)
			if !math.IsInf(newSum, 0) {
				sum, kahanC = newSum, newC
				continue
			}
			incrementalMean = true
			mean = sum / (count - 1)
			kahanC /= count - 1
		}
		q := (count - 1) / count
		mean, kahanC = kahansum.Inc(v/count, q*mean, q*kahanC)
	}
	if incrementalMean {
		return mean + kahanC
	}
	return sum/count + kahanC/count
}

// extremes is min_over_time's or max_over_time's moving window: the
// window's extreme and where it is, kept from step to step while it
// stays in the window, so that a step folds in only the samples that
// entered it, and passes over the whole window only when the extreme
// left it. It gives what Prometheus's loop over each window gives: that
// loop's value after a window's first samples is the extreme of those,
// the first of equal ones (a sample replaces the best when it is better
// or the best is NaN, so NaNs lose to every number and a window of NaNs
// gives its last), and so it is the earlier window's value as long as
// that value's sample is still in the window.
type extremes struct {
	at   int // the extreme's sample; -1: none yet
	best float64
	next int // the next sample to fold in
}

// value returns the extreme (max: the maximum, else the minimum) of
// pts[lo:hi] (lo < hi); lo and hi never decrease from one call to the
// next.
func (x *extremes) value(pts []query.Sample, lo, hi int, max bool) float64 {
	from := x.next
	if x.at < lo {
		// The extreme left the window (or there is none): the whole
		// window again.
		x.at, x.best, from = lo, pts[lo].V, lo
	}
	best, at := x.best, x.at
	if max {
		for i := from; i < hi; i++ {
			if v := pts[i].V; v > best || best != best {
				best, at = v, i
			}
		}
	} else {
		for i := from; i < hi; i++ {
			if v := pts[i].V; v < best || best != best {
				best, at = v, i
			}
		}
	}
	x.best, x.at, x.next = best, at, hi
	return best
}

// varianceOverTime is the population variance by Welford's method with
// Kahan sums, as stdvar_over_time computes it.
func varianceOverTime(w []query.Sample) float64 {
	var count, mean, cMean, aux, cAux float64
	for _, p := range w {
		v := p.V
		count++
		delta := v - (mean + cMean)
		mean, cMean = kahansum.Inc(delta/count, mean, cMean)
		aux, cAux = kahansum.Inc(delta*(v-(mean+cMean)), aux, cAux)
	}
	return (aux + cAux) / count
}
