package engine

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/kahansum"

	"github.com/promhbase/promhbase/query"
)

// rangeSeries evaluates fn over one series: at each step, the samples in
// the window (t - offset - range, t - offset], staleness markers left
// out, as Prometheus's engine selects them. The window's two ends move
// forward with the steps; the counter resets and value changes of the
// series are found once, so rate, increase, resets and changes take O(1)
// per step (and a step over the resets inside its window).
func (ev *evaluator) rangeSeries(sel *selector, fn *rangeFn, sc *scratch, ls labels.Labels, samples []query.Sample, out *stepSeries) bool {
	ts, vs := sc.ts[:0], sc.vs[:0]
	for _, s := range samples {
		if !value.IsStaleNaN(s.V) {
			ts = append(ts, s.T)
			vs = append(vs, s.V)
		}
	}
	sc.ts, sc.vs = ts, vs
	if len(ts) == 0 {
		return false
	}
	var resets []int32 // indices i with vs[i] < vs[i-1]
	var counts []int32 // counts[i]: resets or changes at indices <= i
	switch fn.name {
	case "rate", "increase":
		resets = sc.resets[:0]
		for i := 1; i < len(vs); i++ {
			if vs[i] < vs[i-1] {
				resets = append(resets, int32(i))
			}
		}
		sc.resets = resets
	case "resets", "changes":
		counts = slices.Grow(sc.counts[:0], len(vs))[:len(vs)]
		counts[0] = 0
		for i := 1; i < len(vs); i++ {
			c := counts[i-1]
			if fn.name == "resets" && vs[i] < vs[i-1] ||
				fn.name == "changes" && vs[i] != vs[i-1] && !(math.IsNaN(vs[i]) && math.IsNaN(vs[i-1])) {
				c++
			}
			counts[i] = c
		}
		sc.counts = counts
	}
	rangeSeconds := (time.Duration(fn.rng) * time.Millisecond).Seconds()
	fixed := sel.at != nil || sel.startOrEnd != 0
	found := false
	lo, hi := 0, 0
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
		for hi < len(ts) && ts[hi] <= maxt {
			hi++
		}
		for lo < len(ts) && ts[lo] <= mint {
			lo++
		}
		if lo >= hi {
			continue
		}
		var (
			v  float64
			ok = true
		)
		wt, wv := ts[lo:hi], vs[lo:hi]
		switch fn.name {
		case "rate", "increase", "delta":
			var add float64
			counter := fn.name != "delta"
			v, ok = extrapolatedRate(wt, wv, mint, maxt, rangeSeconds, counter, fn.name == "rate", func(result float64) float64 {
				add = result
				r := sort.Search(len(resets), func(k int) bool { return int(resets[k]) > lo })
				for ; r < len(resets) && int(resets[r]) < hi; r++ {
					add += vs[resets[r]-1]
				}
				return add
			})
		case "irate", "idelta":
			v, ok = instantValue(wt, wv, fn.name == "irate")
		case "deriv":
			if len(wt) < 2 {
				ok = false
				break
			}
			v, _ = linearRegression(wt, wv, wt[0])
		case "resets", "changes":
			v = float64(counts[hi-1] - counts[lo])
		case "sum_over_time":
			v = sumOverTime(wv)
		case "avg_over_time":
			v = avgOverTime(wv)
		case "min_over_time":
			v = compareOverTime(wv, func(cur, m float64) bool { return cur < m || math.IsNaN(m) })
		case "max_over_time":
			v = compareOverTime(wv, func(cur, m float64) bool { return cur > m || math.IsNaN(m) })
		case "count_over_time":
			v = float64(len(wv))
		case "last_over_time":
			v = wv[len(wv)-1]
		case "present_over_time":
			v = 1
		case "stddev_over_time":
			v = math.Sqrt(varianceOverTime(wv))
		case "stdvar_over_time":
			v = varianceOverTime(wv)
		case "quantile_over_time":
			sc.sorted = append(sc.sorted[:0], wv...)
			v = quantile(fn.param, sc.sorted)
		}
		if ok {
			out.vals[i], out.has[i] = v, true
			found = true
		}
	}
	if !found {
		return false
	}
	switch fn.name {
	case "rate", "increase":
		if name := ls.Get(labels.MetricName); name != "" && !strings.HasSuffix(name, "_total") &&
			!strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") && !strings.HasSuffix(name, "_bucket") {
			ev.addAnnotation(annotations.NewPossibleNonCounterInfo(name, fn.argPos))
		}
	case "quantile_over_time":
		if q := fn.param; math.IsNaN(q) || q < 0 || q > 1 {
			ev.addAnnotation(annotations.NewInvalidQuantileWarning(q, fn.argPos))
		}
	}
	return true
}

// extrapolatedRate is rate, increase and delta of one window (ts, vs),
// extrapolated towards the window's ends (mint, maxt] as Prometheus's
// engine does. withResets adds the window's counter-reset corrections,
// in order, to the difference of its last and first values.
func extrapolatedRate(ts []int64, vs []float64, mint, maxt int64, rangeSeconds float64, counter, rate bool, withResets func(float64) float64) (float64, bool) {
	n := len(ts)
	if n < 2 {
		return 0, false
	}
	firstT, lastT := ts[0], ts[n-1]
	result := vs[n-1] - vs[0]
	if counter {
		result = withResets(result)
	}
	durationToStart := float64(firstT-mint) / 1000
	durationToEnd := float64(maxt-lastT) / 1000
	sampledInterval := float64(lastT-firstT) / 1000
	avg := sampledInterval / float64(n-1)
	threshold := avg * 1.1
	if durationToStart >= threshold {
		durationToStart = avg / 2
	}
	if counter {
		// A counter does not go below zero: extrapolate no further back
		// than where it would have been zero.
		durationToZero := durationToStart
		if result > 0 && vs[0] >= 0 {
			durationToZero = sampledInterval * (vs[0] / result)
		}
		if durationToZero < durationToStart {
			durationToStart = durationToZero
		}
	}
	if durationToEnd >= threshold {
		durationToEnd = avg / 2
	}
	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if rate {
		factor /= rangeSeconds
	}
	return result * factor, true
}

// instantValue is irate (rate: true) and idelta of a window: from its
// last two samples.
func instantValue(ts []int64, vs []float64, rate bool) (float64, bool) {
	n := len(ts)
	if n < 2 {
		return 0, false
	}
	t0, v0, t1, v1 := ts[n-2], vs[n-2], ts[n-1], vs[n-1]
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
func linearRegression(ts []int64, vs []float64, interceptTime int64) (slope, intercept float64) {
	var (
		n          float64
		sumX, cX   float64
		sumY, cY   float64
		sumXY, cXY float64
		sumX2, cX2 float64
	)
	initY := vs[0]
	constY := true
	for i, y := range vs {
		if constY && i > 0 && y != initY {
			constY = false
		}
		n += 1.0
		x := float64(ts[i]-interceptTime) / 1e3
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

func sumOverTime(vs []float64) float64 {
	var sum, c float64
	for _, v := range vs {
		sum, c = kahansum.Inc(v, sum, c)
	}
	if math.IsInf(sum, 0) {
		return sum
	}
	return sum + c
}

// avgOverTime is the mean with Kahan sums, turning to an incremental mean
// once the sum would overflow, as avg_over_time computes it.
func avgOverTime(vs []float64) float64 {
	var (
		sum, count      = vs[0], 1.
		mean, kahanC    float64
		incrementalMean bool
	)
	for i, v := range vs[1:] {
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

func compareOverTime(vs []float64, better func(cur, best float64) bool) float64 {
	best := vs[0]
	for _, v := range vs {
		if better(v, best) {
			best = v
		}
	}
	return best
}

// varianceOverTime is the population variance by Welford's method with
// Kahan sums, as stdvar_over_time computes it.
func varianceOverTime(vs []float64) float64 {
	var count, mean, cMean, aux, cAux float64
	for _, v := range vs {
		count++
		delta := v - (mean + cMean)
		mean, cMean = kahansum.Inc(delta/count, mean, cMean)
		aux, cAux = kahansum.Inc(delta*(v-(mean+cMean)), aux, cAux)
	}
	return (aux + cAux) / count
}

// quantile is the φ-quantile of vs (which it sorts), interpolated between
// the two nearest ranks, as Prometheus's quantile functions compute it.
func quantile(q float64, vs []float64) float64 {
	if len(vs) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(+1)
	}
	slices.SortFunc(vs, func(a, b float64) int {
		an, bn := math.IsNaN(a), math.IsNaN(b)
		switch {
		case an && bn:
			return 0
		case an:
			return -1
		case bn:
			return 1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	n := float64(len(vs))
	rank := q * (n - 1)
	lower := math.Max(0, math.Floor(rank))
	upper := math.Min(n-1, lower+1)
	weight := rank - math.Floor(rank)
	return vs[int(lower)]*(1-weight) + vs[int(upper)]*weight
}
