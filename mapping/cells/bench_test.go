package cells

import (
	"math"
	"slices"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// BenchmarkMerge: one row of 360 single millisecond cells (a sample every
// 10 s for an hour), in time order (Merge's shortcut) and with one
// timestamp written twice (the general merge of versions).
func BenchmarkMerge(b *testing.B) {
	const base = 1292148000
	var inOrder []store.Cell
	for i := range 360 {
		v, flags := mapping.AppendValue(nil, float64(i)*0.5)
		inOrder = append(inOrder, store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(i)*10_000, flags), Value: v, Timestamp: 1})
	}
	rewritten := append(slices.Clone(inOrder), inOrder[100])
	for _, c := range []struct {
		name  string
		cells []store.Cell
	}{{"in_order", inOrder}, {"rewritten", rewritten}} {
		b.Run(c.name, func(b *testing.B) {
			var m Merger
			b.ReportAllocs()
			for b.Loop() {
				pts, err := m.Merge(base, c.cells, 0, math.MaxInt64)
				if err != nil || len(pts) != 360 {
					b.Fatalf("%d points, %v", len(pts), err)
				}
			}
			b.ReportMetric(float64(b.N)*360/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
