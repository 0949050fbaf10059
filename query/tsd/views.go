package tsd

import "math"

// RateOptions are a sub-query's rateOptions.
type RateOptions struct {
	Counter    bool
	CounterMax int64 // Long.MAX_VALUE unless given
	ResetValue int64
	DropResets bool
}

// downsampled returns a series' points downsampled as a TSD's Downsampler
// does with fill none: buckets [t, t+interval) with t aligned on the
// Unix epoch, each the function's double over the doubles of its points,
// stamped with its start; empty buckets absent.
func downsampled(pts []Point, intervalMs int64, fn aggregator) []Point {
	out := make([]Point, 0, len(pts))
	var vals []float64
	for i := 0; i < len(pts); {
		bucket := pts[i].T - pts[i].T%intervalMs
		vals = vals[:0]
		for ; i < len(pts) && pts[i].T < bucket+intervalMs; i++ {
			vals = append(vals, pts[i].double())
		}
		out = append(out, Point{T: bucket, F: fn.double(vals), Float: true})
	}
	return out
}

// filled returns a series' points downsampled as a TSD's
// FillingDownsampler does: every bucket from the one holding start up to
// (not including) the one holding end, each the function over its points
// or, when it has none, NaN (fill nan and null) or 0 (zero); fill scalar
// fails there, as a TSD's does at run time.
func filled(pts []Point, intervalMs int64, fn aggregator, fill string, start, end int64) ([]Point, error) {
	var out []Point
	var vals []float64
	i := 0
	for t := start - start%intervalMs; t < end-end%intervalMs; t += intervalMs {
		for i < len(pts) && pts[i].T < t {
			i++ // a bucket before t: consumed, not emitted
		}
		vals = vals[:0]
		for ; i < len(pts) && pts[i].T < t+intervalMs; i++ {
			vals = append(vals, pts[i].double())
		}
		v := 0.0
		switch {
		case len(vals) > 0:
			v = fn.double(vals)
		case fill == "nan", fill == "null":
			v = math.NaN()
		case fill == "scalar":
			return nil, &Error{Message: "unhandled fill policy"}
		}
		out = append(out, Point{T: t, F: v, Float: true})
	}
	return out, nil
}

// rates returns a series' rates as a TSD's RateSpan computes them: each
// point against the one before, the first against (0, 0) (an integer);
// an integer difference when both are integers; for a counter, a drop
// either skipped (dropResets: the next rate is from the drop) or taken
// as a wrap at CounterMax, zeroed when above ResetValue. Rates are
// doubles stamped with the later point's time.
func rates(pts []Point, o RateOptions) ([]Point, error) {
	out := make([]Point, 0, len(pts))
	prev := Point{}
	for _, p := range pts {
		if p.T <= prev.T {
			return nil, &Error{Message: "Next timestamp (" + itoa(p.T) + ") is supposed to be  strictly greater than the previous one (" + itoa(prev.T) + "), but it's not."}
		}
		secs := float64(p.T-prev.T) / 1000.0
		ints := !prev.Float && !p.Float
		var diff float64
		if ints {
			diff = float64(p.I - prev.I)
		} else {
			diff = p.double() - prev.double()
		}
		var rate float64
		switch {
		case o.Counter && diff < 0 && o.DropResets:
			prev = p
			continue
		case o.Counter && diff < 0:
			if ints {
				diff = float64(o.CounterMax - prev.I + p.I)
			} else {
				diff = float64(o.CounterMax) - prev.double() + p.double()
			}
			rate = diff / secs
			if o.ResetValue > 0 && rate > float64(o.ResetValue) {
				rate = 0
			}
		default:
			rate = diff / secs
		}
		out = append(out, Point{T: p.T, F: rate, Float: true})
		prev = p
	}
	return out, nil
}
