package engine

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
)

// BenchmarkEngine runs dashboard shapes over the differential test's data
// (84 series × 4 h of 15 s samples, written through the write path,
// compacted and settled) on promhbase's evaluator and on Prometheus's
// engine, range 4 h at a 60 s step; the query API's HTTP excluded.
// BenchmarkQueryRange (promapi) is the same over a day of 1000 series.
func BenchmarkEngine(b *testing.B) {
	qy := diffQueryable(b, genData(1), dataVariant{name: "settled", compact: true, settle: true})
	prom := newPrometheusEngine()
	engines := []struct {
		name string
		qe   promql.QueryEngine
	}{
		{"prometheus", prom},
		{"promhbase", New(Options{Fallback: prom, Parser: diffParser, LookbackDelta: diffLookback, Timeout: time.Minute})},
	}
	start, end := time.UnixMilli(diffStart), time.UnixMilli(diffEnd)
	for _, expr := range []string{
		`sum by (mode) (rate(node_cpu_seconds_total[5m]))`,
		`max_over_time(temperature_celsius[10m])`,
		`histogram_quantile(0.9, sum by (le) (rate(latency_seconds_bucket[5m])))`,
		`avg by (job) (up)`,
	} {
		for _, e := range engines {
			b.Run(expr+"/"+e.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					q, err := e.qe.NewRangeQuery(ctx, qy, nil, expr, start, end, time.Minute)
					if err != nil {
						b.Fatal(err)
					}
					if res := q.Exec(ctx); res.Err != nil {
						b.Fatal(res.Err)
					}
					q.Close()
				}
			})
		}
	}
}
