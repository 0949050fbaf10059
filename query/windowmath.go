package query

import "github.com/promhbase/promhbase/jobs/rollup"

// HoursOf returns the hours holding (lo, hi] (Unix ms) as Unix seconds
// [from, to), neither below 0: the span of rollup.Hours a selection
// reading (lo, hi] asks about.
func HoursOf(lo, hi int64) (from, to int64) {
	const hour = rollup.HourMs
	return max(floorDiv(lo, hour)*hour/1000, 0), max((floorDiv(hi-1, hour)+1)*hour/1000, 0)
}

// The window arithmetic of the downsampled read, its one home: divisions
// round toward minus infinity, so that times before 1970 (negative) fall
// in the window that holds them.

// floorDiv is a/b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// floorMod is a - floorDiv(a, b)*b: in [0, b) for b > 0.
func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// ceilDiv is a/b rounded up.
func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
