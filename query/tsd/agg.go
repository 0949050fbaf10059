package tsd

import (
	"math"
	"slices"
)

// Point is a data point: its time in Unix milliseconds and its value, an
// integer (I) or, when Float, a double (F).
type Point struct {
	T     int64
	I     int64
	F     float64
	Float bool
}

// double is the point's value as a double.
func (p Point) double() float64 {
	if p.Float {
		return p.F
	}
	return float64(p.I)
}

// interpolation is how an aggregator fills in a series without a point
// at a timestamp another series has.
type interpolation int

const (
	lerp interpolation = iota // linear between its points around it
	zim                       // zero
	imax                      // the type's largest value
	imin                      // the type's smallest value
	prev                      // its previous value
)

// aggregator is one of a TSD's aggregators: how it fills in, and its
// long and double functions over the values of one timestamp. The long
// one runs only when every value is an integer.
type aggregator struct {
	name   string
	interp interpolation
	long   func(vs []int64) int64
	double func(vs []float64) float64
}

// aggregators are the TSD's, by name, but for the percentiles and
// estimates (not evaluated yet: unsupported).
var aggregators = map[string]aggregator{
	"sum":       {"sum", lerp, sumLong, sumDouble},
	"pfsum":     {"pfsum", prev, sumLong, sumDouble},
	"zimsum":    {"zimsum", zim, sumLong, sumDouble},
	"min":       {"min", lerp, minLong, minDouble},
	"mimmin":    {"mimmin", imax, minLong, minDouble},
	"max":       {"max", lerp, maxLong, maxDouble},
	"mimmax":    {"mimmax", imin, maxLong, maxDouble},
	"avg":       {"avg", lerp, avgLong, avgDouble},
	"median":    {"median", lerp, medianLong, medianDouble},
	"none":      {"none", zim, firstLong, firstDouble},
	"mult":      {"mult", lerp, multLong, multDouble},
	"dev":       {"dev", lerp, devLong, devDouble},
	"diff":      {"diff", lerp, diffLong, diffDouble},
	"count":     {"count", zim, countLong, countDouble},
	"squareSum": {"squareSum", zim, squareSumLong, squareSumDouble},
	"first":     {"first", zim, firstLong, firstDouble},
	"last":      {"last", zim, lastLong, lastDouble},
}

// percentiles are the percentile aggregators (PercentileAgg): the
// percentile, and the estimate of their long function (R-3, R-7, or
// Commons Math's legacy one); the double function always takes the legacy
// one, as a TSD's does.
var percentiles = map[string]struct {
	p   float64
	est estimate
}{
	"p999": {99.9, legacy}, "p99": {99, legacy}, "p95": {95, legacy}, "p90": {90, legacy}, "p75": {75, legacy}, "p50": {50, legacy},
	"ep999r3": {99.9, r3}, "ep99r3": {99, r3}, "ep95r3": {95, r3}, "ep90r3": {90, r3}, "ep75r3": {75, r3}, "ep50r3": {50, r3},
	"ep999r7": {99.9, r7}, "ep99r7": {99, r7}, "ep95r7": {95, r7}, "ep90r7": {90, r7}, "ep75r7": {75, r7}, "ep50r7": {50, r7},
}

// lookupAggregator returns the aggregator called name.
func lookupAggregator(name string) (aggregator, error) {
	if a, ok := aggregators[name]; ok {
		return a, nil
	}
	if pc, ok := percentiles[name]; ok {
		return aggregator{name: name, interp: lerp,
			long: func(vs []int64) int64 {
				ds := make([]float64, len(vs))
				for i, v := range vs {
					ds[i] = float64(v)
				}
				return int64(percentile(ds, pc.p, pc.est))
			},
			double: func(vs []float64) float64 {
				ds := make([]float64, 0, len(vs))
				for _, v := range vs {
					if !math.IsNaN(v) {
						ds = append(ds, v)
					}
				}
				if len(ds) == 0 {
					return math.NaN()
				}
				return percentile(ds, pc.p, legacy)
			}}, nil
	}
	return aggregator{}, &Error{Message: "No such aggregation function: " + name}
}

// The functions below are the TSD's (Aggregators.java), in Go's int64
// (which wraps as Java's long does) and float64. Each gets at least one
// value. The double ones skip NaN as the TSD's do, where they do.

func sumLong(vs []int64) int64 {
	var r int64
	for _, v := range vs {
		r += v
	}
	return r
}

func sumDouble(vs []float64) float64 {
	r, n := sumNotNaN(vs)
	if n == 0 {
		return math.NaN()
	}
	return r
}

// sumNotNaN is the sum of the values that are not NaN, and their count.
func sumNotNaN(vs []float64) (float64, int) {
	r, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			r += v
			n++
		}
	}
	return r, n
}

func squareSumLong(vs []int64) int64 {
	var r int64
	for _, v := range vs {
		r += v * v
	}
	return r
}

func squareSumDouble(vs []float64) float64 {
	r, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			r += float64(v * v)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return r
}

func minLong(vs []int64) int64 { return slices.Min(vs) }

func minDouble(vs []float64) float64 {
	m := vs[0]
	if math.IsNaN(m) {
		m = math.Inf(1)
	}
	for _, v := range vs[1:] {
		if !math.IsNaN(v) && v < m {
			m = v
		}
	}
	if math.IsInf(m, 1) {
		return math.NaN()
	}
	return m
}

func maxLong(vs []int64) int64 { return slices.Max(vs) }

func maxDouble(vs []float64) float64 {
	m := vs[0]
	if math.IsNaN(m) {
		m = math.Inf(-1)
	}
	for _, v := range vs[1:] {
		if !math.IsNaN(v) && v > m {
			m = v
		}
	}
	if math.IsInf(m, -1) {
		return math.NaN()
	}
	return m
}

func avgLong(vs []int64) int64 { return sumLong(vs) / int64(int32(len(vs))) }

func avgDouble(vs []float64) float64 {
	r, n := sumNotNaN(vs)
	if n == 0 {
		return math.NaN()
	}
	return r / float64(n)
}

func medianLong(vs []int64) int64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianDouble(vs []float64) float64 {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.SortFunc(s, javaDoubleCompare)
	return s[len(s)/2]
}

// javaDoubleCompare is Double.compareTo for values that are not NaN:
// -0.0 before 0.0.
func javaDoubleCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case math.Signbit(a) == math.Signbit(b):
		return 0
	case math.Signbit(a):
		return -1
	}
	return 1
}

func multLong(vs []int64) int64 {
	r := vs[0]
	for _, v := range vs[1:] {
		r *= v
	}
	return r
}

func multDouble(vs []float64) float64 {
	r := vs[0]
	for _, v := range vs[1:] {
		r *= v
	}
	return r
}

// devLong is StdDev.runLong: Welford's mean and M2 in doubles, the
// square root truncated to a long.
func devLong(vs []int64) int64 {
	if len(vs) == 1 {
		return 0
	}
	oldMean, n, m2 := float64(vs[0]), int64(2), 0.0
	for _, v := range vs[1:] {
		x := float64(v)
		newMean := oldMean + (x-oldMean)/float64(n)
		m2 += float64((x - oldMean) * (x - newMean))
		oldMean = newMean
		n++
	}
	return int64(math.Sqrt(m2 / float64(n-1)))
}

func devDouble(vs []float64) float64 {
	i := 0
	for i < len(vs)-1 && math.IsNaN(vs[i]) {
		i++
	}
	oldMean := vs[i]
	if math.IsNaN(oldMean) {
		return math.NaN()
	}
	if i == len(vs)-1 {
		return 0
	}
	n, m2 := int64(2), 0.0
	for _, x := range vs[i+1:] {
		if math.IsNaN(x) {
			continue
		}
		newMean := oldMean + (x-oldMean)/float64(n)
		m2 += float64((x - oldMean) * (x - newMean))
		oldMean = newMean
		n++
	}
	if n == 2 {
		return 0
	}
	return math.Sqrt(m2 / float64(n-1))
}

func diffLong(vs []int64) int64 {
	if len(vs) == 1 {
		return 0
	}
	return vs[len(vs)-1] - vs[0]
}

func diffDouble(vs []float64) float64 {
	i := 0
	for i < len(vs)-1 && math.IsNaN(vs[i]) {
		i++
	}
	if math.IsNaN(vs[i]) {
		return math.NaN()
	}
	if i == len(vs)-1 {
		return 0
	}
	return vs[len(vs)-1] - vs[i]
}

func countLong(vs []int64) int64 { return int64(len(vs)) }

func countDouble(vs []float64) float64 {
	n := 0.0
	for _, v := range vs {
		if !math.IsNaN(v) {
			n++
		}
	}
	return n
}

func firstLong(vs []int64) int64       { return vs[0] }
func firstDouble(vs []float64) float64 { return vs[0] }
func lastLong(vs []int64) int64        { return vs[len(vs)-1] }
func lastDouble(vs []float64) float64  { return vs[len(vs)-1] }

// estimate is a Commons Math Percentile estimation type: the position of
// percentile p (0..1] among n sorted values, 1-based.
type estimate func(p float64, n int) float64

func legacy(p float64, n int) float64 {
	if p == 1 {
		return float64(n)
	}
	return p * float64(n+1)
}

func r3(p float64, n int) float64 {
	if p <= 0.5/float64(n) {
		return 0
	}
	return math.RoundToEven(float64(n) * p)
}

func r7(p float64, n int) float64 {
	if p == 1 {
		return float64(n)
	}
	return 1 + float64(n-1)*p
}

// percentile is Commons Math's Percentile.evaluate of vs (at least one,
// no NaN) at percentile q (0..100]: the value at the estimate's position
// in sorted order, interpolated between its neighbours.
func percentile(vs []float64, q float64, est estimate) float64 {
	n := len(vs)
	if n == 1 {
		return vs[0]
	}
	s := slices.Clone(vs)
	slices.SortFunc(s, javaDoubleCompare)
	pos := est(q/100, n)
	fpos := math.Floor(pos)
	switch {
	case pos < 1:
		return s[0]
	case pos >= float64(n):
		return s[n-1]
	}
	i := int(fpos)
	lower, upper := s[i-1], s[i]
	return lower + float64((pos-fpos)*(upper-lower))
}
