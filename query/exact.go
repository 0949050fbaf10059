package query

import "github.com/promhbase/promhbase/mapping"

// Exact downsampled selections (WindowRequest.Exact). A step at t reads
// its range (t'-Range, t'], t' = t-Offset, as PromQL does. The range is
// cut into pieces at the cuts: the window grid, every step's t' and every
// step's t'-Range. A piece (a, b] is a rollup window when no cut falls
// inside the window, raw samples otherwise; each step merges, in time
// order, the pieces inside its range, which are exactly its range's
// samples: the aggregates of rollup.Range are those of the samples
// themselves, the rate's first and last samples and resets included.
//
// Rollup rows and raw rows are both read an hour at a time: an hour whose
// windows no cut falls inside is read from the rollup table where its
// rollups are built (WindowRequest.Built); an hour with a cut inside one
// of its windows, or not built, is read raw, its samples cut into pieces.
// With steps, ranges and offsets that are whole windows, no hour built is
// read raw.

// exactSteps returns the steps [from, to) whose range holds the piece
// (start, end]: those with t' >= end and t'-Range <= start.
func (r *WindowRequest) exactSteps(start, end int64) (from, to int) {
	base := r.Start - r.Offset
	if r.Step <= 0 {
		if base >= end && base-r.Range <= start {
			return 0, 1
		}
		return 0, 0
	}
	f := max(ceilDiv(end-base, r.Step), 0)
	t := min(floorDiv(start+r.Range-base, r.Step)+1, int64(r.steps()))
	if f >= t {
		return 0, 0
	}
	return int(f), int(t)
}

// cutter returns the function that gives the piece (from, end] holding a
// sample at t: for an exact selection, between the cuts around t; else
// the window holding t.
func (r *WindowRequest) cutter() func(t int64) (from, end int64) {
	w := r.width()
	if !r.Exact {
		return func(t int64) (int64, int64) {
			end := ceilDiv(t, w) * w
			return end - w, end
		}
	}
	n := int64(r.steps())
	step := max(r.Step, 1)
	ends, starts := r.Start-r.Offset, r.Start-r.Offset-r.Range
	// around returns the last point of the grid base+j*step (0 <= j < n)
	// before t and the first at or after it (ok false: none).
	around := func(base, t int64) (prev int64, okPrev bool, next int64, okNext bool) {
		j := ceilDiv(t-base, step) // the first at or after t
		if j < n {
			next, okNext = base+max(j, 0)*step, true
		}
		if j = min(j-1, n-1); j >= 0 {
			prev, okPrev = base+j*step, true
		}
		return prev, okPrev, next, okNext
	}
	return func(t int64) (int64, int64) {
		end := ceilDiv(t, w) * w
		from := end - w
		for _, base := range [2]int64{ends, starts} {
			p, okp, nx, okn := around(base, t)
			if okp && p > from {
				from = p
			}
			if okn && nx < end {
				end = nx
			}
		}
		return from, end
	}
}

// readPart is a span (lo, hi] of window ends read from one source.
type readPart struct {
	lo, hi int64
	rolled bool // from the rollup table; else from raw samples
}

// parts splits (lo, hi] into the spans read from raw samples and from the
// rollup table, in time order: the rollup table for the windows of the
// hours built (r.Built), where the request's cuts fall on window ends.
func (r *WindowRequest) parts(lo, hi int64) []readPart {
	return r.partsOf(lo, hi, r.Built.Contains)
}

// partsOf is parts with built saying which hours (Unix s) are built.
func (r *WindowRequest) partsOf(lo, hi int64, built func(hour int64) bool) []readPart {
	const hour = mapping.MaxTimespan * 1000
	w := r.width()
	// The hours (H, H+1h] holding a cut inside a window.
	rawHours := map[int64]bool{}
	if r.Exact && !r.Aligned() {
		for j := range int64(r.steps()) {
			t := r.Start - r.Offset + j*r.Step
			for _, c := range [2]int64{t, t - r.Range} {
				if floorMod(c, w) != 0 {
					rawHours[floorDiv(c, hour)*hour] = true
				}
			}
		}
	}
	var out []readPart
	for a := lo; a < hi; {
		h := floorDiv(a, hour) * hour
		b := min(h+hour, hi)
		rolled := h >= 0 && built(h/1000) && !rawHours[h]
		if n := len(out); n > 0 && out[n-1].rolled == rolled {
			out[n-1].hi = b
		} else {
			out = append(out, readPart{a, b, rolled})
		}
		a = b
	}
	return out
}

// Reads reports whether a selection of the windows ending in (lo, hi]
// reads rollup rows, and whether it reads raw samples.
func (r *WindowRequest) Reads(lo, hi int64) (rolled, raw bool) {
	for _, p := range r.parts(lo, hi) {
		rolled = rolled || p.rolled
		raw = raw || !p.rolled
	}
	return rolled, raw
}

// RolledShare is the share of the span an exact selection reads that it
// would read from rollups were they built over all of it: 1 when its
// steps, range and offset are whole windows, less where its cuts fall
// inside windows (their hours are read raw).
func (r WindowRequest) RolledShare() float64 {
	lo, hi := r.ends()
	if hi <= lo {
		return 0
	}
	var rolled int64
	for _, p := range r.partsOf(lo, hi, func(int64) bool { return true }) {
		if p.rolled {
			rolled += p.hi - p.lo
		}
	}
	return float64(rolled) / float64(hi-lo)
}
