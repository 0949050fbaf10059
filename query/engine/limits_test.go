package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// blockingTracker is a query tracker whose one slot is taken.
type blockingTracker struct{}

func (blockingTracker) GetMaxConcurrent() int { return 1 }
func (blockingTracker) Insert(ctx context.Context, _ string) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}
func (blockingTracker) Delete(int)   {}
func (blockingTracker) Close() error { return nil }

// TestLimits: the engine's own evaluation ends as Prometheus's engine
// ends a query: at the timeout (promql.ErrQueryTimeout), when the caller
// cancels (promql.ErrQueryCanceled), and waiting for a query slot past
// the timeout.
func TestLimits(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 15s
	up{job="a"} 0+1x2000
	up{job="b"} 0+2x2000
`)
	p := parser.NewParser(parser.Options{})
	start, end := time.Unix(0, 0), time.Unix(30000, 0)
	const expr = `sum by (job) (rate(up[5m]))`
	for _, tc := range []struct {
		name    string
		opts    Options
		ctx     func() context.Context
		wantErr any
	}{
		{name: "answers", opts: Options{}, ctx: context.Background},
		{name: "timeout", opts: Options{Timeout: time.Nanosecond}, ctx: context.Background, wantErr: promql.ErrQueryTimeout("")},
		{name: "canceled", opts: Options{}, ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, wantErr: promql.ErrQueryCanceled("")},
		{name: "no slot", opts: Options{Timeout: 20 * time.Millisecond, Tracker: blockingTracker{}}, ctx: context.Background, wantErr: promql.ErrQueryTimeout("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Fallback, tc.opts.Parser = prometheusEngine(t, p), p
			e := New(tc.opts)
			q, err := e.NewRangeQuery(context.Background(), st, nil, expr, start, end, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			res := q.Exec(tc.ctx())
			switch tc.wantErr.(type) {
			case nil:
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if m, err := res.Matrix(); err != nil || len(m) != 2 {
					t.Errorf("answer %v, %v; want 2 series", res.Value, err)
				}
				if Path(q) != PathPromhbase {
					t.Errorf("path %q", Path(q))
				}
			case promql.ErrQueryTimeout:
				var got promql.ErrQueryTimeout
				if !errors.As(res.Err, &got) {
					t.Errorf("error %v (%T), want a timeout", res.Err, res.Err)
				}
			case promql.ErrQueryCanceled:
				var got promql.ErrQueryCanceled
				if !errors.As(res.Err, &got) {
					t.Errorf("error %v (%T), want a cancellation", res.Err, res.Err)
				}
			}
		})
	}
}
