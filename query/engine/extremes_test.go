package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/promhbase/promhbase/query"
)

// TestExtremes: the moving window's min and max are, at every step and
// bit for bit, what Prometheus's loop over the window gives, over series
// of NaNs, signed zeros, infinities and ties, with windows that move by
// any amount or stay.
func TestExtremes(t *testing.T) {
	// Prometheus's loop, written out again.
	fold := func(w []query.Sample, max bool) float64 {
		best := w[0].V
		for _, p := range w {
			if max {
				if p.V > best || math.IsNaN(best) {
					best = p.V
				}
			} else if p.V < best || math.IsNaN(best) {
				best = p.V
			}
		}
		return best
	}
	special := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), 1, 1, -1}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name  string
		value func() float64
	}{
		{"specials", func() float64 { return special[r.IntN(len(special))] }},
		{"few values", func() float64 { return float64(r.IntN(4)) }},
		{"mostly NaN", func() float64 {
			if r.IntN(5) > 0 {
				return math.Float64frombits(0x7ff8000000000000 | uint64(r.IntN(100)))
			}
			return r.NormFloat64()
		}},
		{"noise", r.NormFloat64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				pts := make([]query.Sample, 1+r.IntN(60))
				for i := range pts {
					pts[i] = query.Sample{T: int64(i), V: tc.value()}
				}
				for _, max := range []bool{false, true} {
					x := extremes{at: -1}
					lo, hi := 0, 0
					for hi < len(pts) {
						hi = min(len(pts), hi+r.IntN(4))
						lo = min(hi, lo+r.IntN(4))
						if lo >= hi {
							continue
						}
						got, want := x.value(pts, lo, hi, max), fold(pts[lo:hi], max)
						if math.Float64bits(got) != math.Float64bits(want) {
							t.Fatalf("max %v, window [%d, %d) of %v: got %v, want %v", max, lo, hi, pts, got, want)
						}
					}
				}
			}
		})
	}
}

// BenchmarkExtremes: max_over_time[1h] of a 15 s gauge at a 288 s step
// over a day, by the moving window and by a pass over each window.
func BenchmarkExtremes(b *testing.B) {
	for _, window := range []int64{288000, 3600000} {
		b.Run(fmt.Sprint(window), func(b *testing.B) { benchExtremes(b, window) })
	}
}

func benchExtremes(b *testing.B, window int64) {
	r := rand.New(rand.NewPCG(5, 6))
	pts := make([]query.Sample, 5760)
	v := 1.0
	for i := range pts {
		v += r.NormFloat64()
		pts[i] = query.Sample{T: int64(i) * 15000, V: v}
	}
	windows := func(f func(lo, hi int)) {
		lo, hi := 0, 0
		for t := int64(0); t <= 86400000; t += 288000 {
			for hi < len(pts) && pts[hi].T <= t {
				hi++
			}
			for lo < len(pts) && pts[lo].T <= t-window {
				lo++
			}
			if lo < hi {
				f(lo, hi)
			}
		}
	}
	b.Run("moving", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x := extremes{at: -1}
			windows(func(lo, hi int) { x.value(pts, lo, hi, true) })
		}
	})
	b.Run("pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			windows(func(lo, hi int) { compareOverTime(pts[lo:hi], true) })
		}
	})
}

// compareOverTime is Prometheus's loop over a window for min_over_time
// and max_over_time, the benchmark's pass.
func compareOverTime(w []query.Sample, max bool) float64 {
	best := w[0].V
	for _, p := range w {
		if max && (p.V > best || math.IsNaN(best)) || !max && (p.V < best || math.IsNaN(best)) {
			best = p.V
		}
	}
	return best
}

// TestSortedWindow: as a window slides forward (by a sample or two, by
// many, by none, past its end), the sorted window holds exactly the
// values of pts[lo:hi] in order, for values with many repeats and for
// distinct ones; plainValues turns away NaN and negative zero only.
func TestSortedWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values func(r *rand.Rand) float64
	}{
		{"repeats", func(r *rand.Rand) float64 { return float64(r.IntN(5)) }},
		{"distinct", func(r *rand.Rand) float64 { return r.NormFloat64() * 1e3 }},
		{"decimals", func(r *rand.Rand) float64 { return float64(r.IntN(2000)-1000) / 100 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			pts := make([]query.Sample, 5000)
			for i := range pts {
				pts[i] = query.Sample{T: int64(i), V: tc.values(r)}
			}
			var w sortedWindow
			for round := range 20 {
				w.reset()
				lo, hi := 0, 0
				for hi < len(pts) {
					switch r.IntN(10) {
					case 0: // a jump
						hi = min(hi+r.IntN(400), len(pts))
					case 1: // no move
					default:
						hi = min(hi+r.IntN(3), len(pts))
					}
					lo = max(lo, hi-1-r.IntN(240))
					if lo >= hi {
						continue
					}
					got := w.slide(pts, lo, hi)
					want := make([]float64, 0, hi-lo)
					for _, p := range pts[lo:hi] {
						want = append(want, p.V)
					}
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Fatalf("round %d, window [%d, %d): %v, want %v", round, lo, hi, got, want)
					}
				}
			}
		})
	}
	t.Run("plainValues", func(t *testing.T) {
		for _, tc := range []struct {
			v    float64
			want bool
		}{{0, true}, {1.5, true}, {math.Inf(-1), true}, {math.NaN(), false}, {math.Copysign(0, -1), false}} {
			if got := plainValues([]query.Sample{{V: 1}, {V: tc.v}}); got != tc.want {
				t.Errorf("plainValues with %v = %v, want %v", tc.v, got, tc.want)
			}
		}
	})
}

// BenchmarkQuantileOverTime: quantile_over_time(0.95, x[1h]) of a series
// of a day of 15 s samples at a 288 s step (300 steps of 240 values), by
// the sliding sorted window and by sorting each window.
func BenchmarkQuantileOverTime(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	pts := make([]query.Sample, 5760)
	for i := range pts {
		pts[i] = query.Sample{T: int64(i) * 15000, V: float64(r.IntN(1600)) / 100}
	}
	run := func(b *testing.B, plain bool) {
		var sc scratch
		b.ReportAllocs()
		for b.Loop() {
			sc.win.reset()
			sc.plain = plain
			lo, hi := 0, 0
			for step := range 300 {
				maxt := int64(step+1) * 288_000
				for hi < len(pts) && pts[hi].T <= maxt {
					hi++
				}
				for lo < hi && pts[lo].T <= maxt-3600_000 {
					lo++
				}
				sc.quantileOverTime(0.95, pts, lo, hi)
			}
		}
	}
	b.Run("sliding", func(b *testing.B) { run(b, true) })
	b.Run("sorting", func(b *testing.B) { run(b, false) })
}
