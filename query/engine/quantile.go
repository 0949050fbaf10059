package engine

import (
	"math"
	"slices"

	"github.com/promhbase/promhbase/query"
)

// sortedWindow keeps the values of a series' window, pts[lo:hi], sorted
// while the window slides forward step by step, for quantile_over_time:
// the values that left the window are found by binary search and
// removed, those that entered inserted in place, instead of sorting every
// step's window anew (a 1 h window of 15 s samples at a 288 s step: 240
// values, 38 of them changed a step). A window that moved by more than
// half its length, or not at all the way before, is sorted anew.
//
// Only for windows without NaN and without negative zero (plainValues):
// their values then have one sorted order, bit for bit, whatever sorted
// them, so the quantile is Prometheus's; others sort each window as
// Prometheus's engine does (sortForQuantile).
type sortedWindow struct {
	vals   []float64
	lo, hi int // the window vals holds; hi 0: none yet
}

// reset forgets the window, for the next series; the memory stays.
func (s *sortedWindow) reset() { s.vals, s.lo, s.hi = s.vals[:0], 0, 0 }

// slide returns the values of pts[lo:hi] sorted. Between two resets lo
// and hi never decrease.
func (s *sortedWindow) slide(pts []query.Sample, lo, hi int) []float64 {
	if s.hi == 0 || lo >= s.hi || (lo-s.lo)+(hi-s.hi) > (hi-lo)/2 {
		s.vals = s.vals[:0]
		for _, p := range pts[lo:hi] {
			s.vals = append(s.vals, p.V)
		}
		slices.Sort(s.vals)
	} else {
		for _, p := range pts[s.lo:lo] {
			i, _ := slices.BinarySearch(s.vals, p.V) // the first of its value
			s.vals = slices.Delete(s.vals, i, i+1)
		}
		for _, p := range pts[s.hi:hi] {
			i, _ := slices.BinarySearch(s.vals, p.V)
			s.vals = slices.Insert(s.vals, i, p.V)
		}
	}
	s.lo, s.hi = lo, hi
	return s.vals
}

// quantileOverTime is quantile_over_time(q) of the window pts[lo:hi]
// of the series rangeSteps evaluates (sc.win and sc.plain set for it).
func (sc *scratch) quantileOverTime(q float64, pts []query.Sample, lo, hi int) float64 {
	if !validQuantile(q) {
		var any [1]float64 // the window is not empty; its values do not matter
		return quantileSorted(q, any[:])
	}
	if sc.plain {
		return quantileSorted(q, sc.win.slide(pts, lo, hi))
	}
	sc.sorted = sc.sorted[:0]
	for _, p := range pts[lo:hi] {
		sc.sorted = append(sc.sorted, p.V)
	}
	return quantile(q, sc.sorted)
}

// plainValues reports whether pts holds neither NaN nor negative zero.
func plainValues(pts []query.Sample) bool {
	for _, p := range pts {
		if p.V != p.V || p.V == 0 && math.Signbit(p.V) {
			return false
		}
	}
	return true
}

// validQuantile reports whether q needs the values (0 <= q <= 1);
// quantile answers the others without them.
func validQuantile(q float64) bool { return q >= 0 && q <= 1 }

// quantile is Prometheus's quantile of vs (sorted first, as its engine
// sorts them: NaN first) for φ = q: NaN for no values or a NaN q, -Inf
// below 0, +Inf above 1, else the values at the two ranks around
// q*(n-1) weighted.
func quantile(q float64, vs []float64) float64 {
	if validQuantile(q) {
		sortForQuantile(vs)
	}
	return quantileSorted(q, vs)
}

// sortForQuantile sorts vs with NaN first, as Prometheus's engine does.
func sortForQuantile(vs []float64) {
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
}

// quantileSorted is quantile of vs already sorted.
func quantileSorted(q float64, vs []float64) float64 {
	if len(vs) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(+1)
	}
	n := float64(len(vs))
	rank := q * (n - 1)
	lower := math.Max(0, math.Floor(rank))
	upper := math.Min(n-1, lower+1)
	weight := rank - math.Floor(rank)
	return vs[int(lower)]*(1-weight) + vs[int(upper)]*weight
}
