package resultcache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/stats"
)

// stepsEngine answers every range query with the same series, a point at
// each step of the range: the evaluation the cache wraps, at no cost of
// its own.
type stepsEngine struct{ series []labels.Labels }

func (e stepsEngine) NewInstantQuery(context.Context, storage.Queryable, promql.QueryOpts, string, time.Time) (promql.Query, error) {
	return nil, fmt.Errorf("instant queries are not benchmarked")
}

func (e stepsEngine) NewRangeQuery(_ context.Context, _ storage.Queryable, _ promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	m := make(promql.Matrix, len(e.series))
	for i, ls := range e.series {
		m[i].Metric = ls
		for t := start; !t.After(end); t = t.Add(step) {
			m[i].Floats = append(m[i].Floats, promql.FPoint{T: t.UnixMilli(), F: float64(i)})
		}
	}
	return &matrixQuery{qs: qs, m: m}, nil
}

type matrixQuery struct {
	qs string
	m  promql.Matrix
}

func (q *matrixQuery) Exec(context.Context) *promql.Result { return &promql.Result{Value: q.m} }
func (q *matrixQuery) Close()                              {}
func (q *matrixQuery) Statement() parser.Statement         { return nil }
func (q *matrixQuery) Stats() *stats.Statistics            { return nil }
func (q *matrixQuery) Cancel()                             {}
func (q *matrixQuery) String() string                      { return q.qs }

// BenchmarkRefresh is a dashboard's refresh: a range of 300 steps of 20
// or 1000 series, moved one step each time, of which the cache answers
// all but the newest step (the wrapped engine's part costs nothing here).
// It measures the cache's own work: the lookup, the kept points cut to
// the range, the join with the evaluated step, and keeping the answer.
func BenchmarkRefresh(b *testing.B) {
	for _, n := range []int{20, 1000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			var e stepsEngine
			for i := range n {
				e.series = append(e.series, labels.FromStrings("__name__", "node_load1", "instance", fmt.Sprintf("host-%04d", i), "job", "node"))
			}
			const step = 288 * time.Second
			start := epoch
			now := start.Add(300 * step)
			c := New(Options{MaxBytes: 1 << 30, Offset: 5 * time.Minute, Now: func() time.Time { return now }})
			eng := c.Engine("tenant", e, parser.NewParser(parser.Options{}), lookback)
			ctx := context.Background()
			refresh := func() {
				q, err := eng.NewRangeQuery(ctx, nil, nil, "max_over_time(node_load1[288s])", start, start.Add(300*step), step)
				if err != nil {
					b.Fatal(err)
				}
				if res := q.Exec(ctx); res.Err != nil {
					b.Fatal(res.Err)
				}
				q.Close()
			}
			refresh()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start, now = start.Add(step), now.Add(step)
				refresh()
			}
		})
	}
}

// TestConcurrentInvalidate: refreshes and invalidations of the same kept
// answer at once (run with -race: an invalidation trims the entry a
// refresh has looked up); every answer has a point at each step.
func TestConcurrentInvalidate(t *testing.T) {
	e := stepsEngine{series: []labels.Labels{labels.FromStrings("__name__", "a"), labels.FromStrings("__name__", "b")}}
	const step = time.Minute
	now := epoch.Add(200 * step)
	c := New(Options{MaxBytes: 1 << 30, Offset: 5 * time.Minute, Now: func() time.Time { return now }})
	eng := c.Engine("tenant", e, parser.NewParser(parser.Options{}), lookback)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				start := epoch.Add(time.Duration(i%7) * step)
				q, err := eng.NewRangeQuery(ctx, nil, nil, "a", start, start.Add(150*step), step)
				if err != nil {
					t.Error(err)
					return
				}
				res := q.Exec(ctx)
				m, ok := res.Value.(promql.Matrix)
				if res.Err != nil || !ok || len(m) != 2 || len(m[0].Floats) != 151 || len(m[1].Floats) != 151 {
					t.Errorf("worker %d, refresh %d: %v, %v", w, i, res.Err, res.Value)
				}
				q.Close()
			}
		})
	}
	wg.Go(func() {
		for i := range 400 {
			t0 := epoch.Add(time.Duration(i%150) * step).UnixMilli()
			c.Invalidate("tenant", t0, t0+1)
		}
	})
	wg.Wait()
}
