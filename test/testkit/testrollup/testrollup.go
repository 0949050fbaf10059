// Package testrollup computes what promhbase's rollups must hold the
// slow and obvious way, for tests to compare with what was built. It is
// for tests only.
package testrollup

import "github.com/promhbase/promhbase/jobs/rollup"

// Sample is one raw sample: time (Unix ms) and value.
type Sample struct {
	T int64
	V float64
}

// Windows returns the windows of width ms ending in (from, to] that hold
// a sample, by the right-closed rule: the window ending at E holds the
// samples in (E-width, E].
func Windows(samples []Sample, width, from, to int64) []rollup.Window {
	var out []rollup.Window
	for end := from + width; end <= to; end += width {
		w := rollup.Window{End: end}
		for _, s := range samples {
			if s.T > end-width && s.T <= end {
				w.Add(s.T, s.V)
			}
		}
		if w.Count > 0 {
			w.Finish()
			out = append(out, w)
		}
	}
	return out
}
