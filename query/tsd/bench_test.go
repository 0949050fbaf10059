package tsd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkAggregate: a Grafana panel's evaluation after the scan, 20
// series of 720 points (a 6 h panel at 30 s), misaligned by a few
// seconds: summed as is, and downsampled to 1 m then turned into rates.
func BenchmarkAggregate(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	views := make([][]Point, 20)
	for i := range views {
		var c int64
		for k := range 720 {
			c += int64(rng.IntN(100))
			views[i] = append(views[i], Point{T: int64(k*30_000 + i*1_000), I: c})
		}
	}
	sum, _ := lookupAggregator("sum")
	avg, _ := lookupAggregator("avg")
	for _, tc := range []struct {
		name string
		prep func(v []Point) []Point
		rate bool
	}{
		{"sum", func(v []Point) []Point { return v }, false},
		{"downsample-rate-sum", func(v []Point) []Point {
			r, _ := rates(downsampled(v, 60_000, avg), RateOptions{Counter: true, CounterMax: math.MaxInt64})
			return r
		}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				vs := make([][]Point, len(views))
				for i, v := range views {
					vs[i] = tc.prep(v)
				}
				it := newAggIter(vs, 0, math.MaxInt64-1, sum, tc.rate)
				for it.hasNext() {
					if _, err := it.next(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
