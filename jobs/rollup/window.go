package rollup

import (
	"math"

	"github.com/prometheus/prometheus/model/value"
)

// Window is the aggregate of one series' float samples in one rollup
// window. A window of width W ends at a multiple E of W (Unix ms) and
// holds the samples with E-W < T <= E: right-closed, as Prometheus's
// range selectors (t-r, t] are, so that a range aligned to W reads exactly
// the windows inside it, and a sample exactly on a boundary belongs to
// the window it ends. (OpenTSDB's downsampling buckets are left-closed,
// [E-W, E); its cell for the window is stamped at E-W, see Cells.)
//
// Stale markers (value.StaleNaN) are not samples, as PromQL's range
// functions skip them; other NaNs are.
type Window struct {
	End   int64 // Unix ms, a multiple of the width
	Count int64 // samples
	Sum   float64
	Min   float64 // NaN only when every sample is NaN, as min_over_time
	Max   float64
	// First and Last are the window's first and last samples.
	FirstT, LastT int64
	First, Last   float64
	// Resets is the sum of the values before each drop (v[i] < v[i-1]):
	// the counter aggregate. The reset-adjusted increase over the window
	// is Last - First + Resets, as Prometheus's rate computes it.
	Resets float64
	// Histograms is the number of native-histogram samples in the window,
	// which the aggregates above leave out.
	Histograms int64

	c float64 // Kahan compensation of Sum while samples are added
}

// Add adds a sample later than every sample added so far.
func (w *Window) Add(t int64, v float64) {
	if value.IsStaleNaN(v) {
		return
	}
	if w.Count == 0 {
		w.Count, w.Sum, w.c, w.Min, w.Max = 1, v, 0, v, v
		w.FirstT, w.First, w.LastT, w.Last = t, v, t, v
		w.Resets = 0
		return
	}
	w.Count++
	w.Sum, w.c = kahanSumInc(v, w.Sum, w.c)
	if v < w.Min || math.IsNaN(w.Min) {
		w.Min = v
	}
	if v > w.Max || math.IsNaN(w.Max) {
		w.Max = v
	}
	if v < w.Last {
		w.Resets += w.Last
	}
	w.LastT, w.Last = t, v
}

// Finish folds the Kahan compensation into Sum; call it once after the
// last Add.
func (w *Window) Finish() {
	if !math.IsInf(w.Sum, 0) {
		w.Sum += w.c
	}
	w.c = 0
}

// kahanSumInc adds inc to sum with Kahan-Babuska compensation c, as
// PromQL's sum_over_time does.
func kahanSumInc(inc, sum, c float64) (newSum, newC float64) {
	t := sum + inc
	switch {
	case math.IsInf(t, 0):
		c = 0
	case math.Abs(sum) >= math.Abs(inc):
		c += (sum - t) + inc
	default:
		c += (inc - t) + sum
	}
	return t, c
}

// Range is the aggregate of consecutive windows of one series, in time
// order: what a PromQL range function needs of the samples they hold.
type Range struct {
	Count         int64
	Sum, c        float64
	Min, Max      float64
	FirstT, LastT int64
	First, Last   float64
	Resets        float64
	Histograms    int64
}

// Add adds the next window (later than every window added so far); a
// window without samples adds only its histogram count.
func (r *Range) Add(w *Window) {
	r.Merge(&Range{Count: w.Count, Sum: w.Sum, Min: w.Min, Max: w.Max, FirstT: w.FirstT, LastT: w.LastT,
		First: w.First, Last: w.Last, Resets: w.Resets, Histograms: w.Histograms})
}

// Merge adds o, the range of the windows right after r's.
func (r *Range) Merge(o *Range) {
	r.Histograms += o.Histograms
	if o.Count == 0 {
		return
	}
	if r.Count == 0 {
		h := r.Histograms
		*r = *o
		r.Histograms = h
		return
	}
	r.Count += o.Count
	r.Sum, r.c = kahanSumInc(o.Sum, r.Sum, r.c)
	if o.c != 0 {
		r.Sum, r.c = kahanSumInc(o.c, r.Sum, r.c)
	}
	if o.Min < r.Min || math.IsNaN(r.Min) {
		r.Min = o.Min
	}
	if o.Max > r.Max || math.IsNaN(r.Max) {
		r.Max = o.Max
	}
	if o.First < r.Last {
		r.Resets += r.Last
	}
	r.Resets += o.Resets
	r.LastT, r.Last = o.LastT, o.Last
}

// SumValue is sum_over_time of the range's samples.
func (r *Range) SumValue() float64 {
	if math.IsInf(r.Sum, 0) {
		return r.Sum
	}
	return r.Sum + r.c
}

// AvgValue is avg_over_time of the range's samples: the sum over the
// count (an infinite sum stays infinite).
func (r *Range) AvgValue() float64 { return r.SumValue() / float64(r.Count) }

// Rate is PromQL's extrapolated rate (isRate) or increase of the range's
// samples over the range selector's (start, end] (Unix ms), as
// Prometheus's extrapolatedRate computes it from the first and last
// sample, the sample count and the reset-adjusted increase, for a
// counter (isCounter) or a gauge (delta). ok is false with fewer than two
// samples, when PromQL returns nothing.
func (r *Range) Rate(start, end int64, isCounter, isRate bool) (v float64, ok bool) {
	if r.Count < 2 {
		return 0, false
	}
	result := r.Last - r.First
	if isCounter {
		result += r.Resets
	}
	return Extrapolate(result, r.First, r.FirstT, r.LastT, int(r.Count), start, end, float64(end-start)/1000, isCounter, isRate), true
}

// Extrapolate is Prometheus's extrapolation of rate (isRate), increase
// and delta (not isCounter) over a range selector's (start, end] (Unix
// ms) of rangeSeconds: result is the difference of the last and the
// first of count >= 2 samples (the first valued first, at firstT; the
// last at lastT), counter resets corrected, extrapolated towards the
// range's ends as Prometheus's extrapolatedRate does. The rollup windows
// (Range.Rate) and promhbase's evaluator (package engine) share it.
func Extrapolate(result, first float64, firstT, lastT int64, count int, start, end int64, rangeSeconds float64, isCounter, isRate bool) float64 {
	durationToStart := float64(firstT-start) / 1000
	durationToEnd := float64(end-lastT) / 1000
	sampledInterval := float64(lastT-firstT) / 1000
	averageDurationBetweenSamples := sampledInterval / float64(count-1)

	extrapolationThreshold := averageDurationBetweenSamples * 1.1
	if durationToStart >= extrapolationThreshold {
		durationToStart = averageDurationBetweenSamples / 2
	}
	if isCounter && result > 0 && first >= 0 {
		// A counter does not go below zero: extrapolate to the start at
		// most as far as it would reach zero.
		durationToZero := sampledInterval * (first / result)
		if durationToZero < durationToStart {
			durationToStart = durationToZero
		}
	}
	if durationToEnd >= extrapolationThreshold {
		durationToEnd = averageDurationBetweenSamples / 2
	}
	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if isRate {
		factor /= rangeSeconds
	}
	return result * factor
}
