package resultcache

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/util/teststorage"

	"github.com/promhbase/promhbase/query"
)

const (
	scrape   = 15 * time.Second
	dataSpan = 8 * time.Hour
	lookback = 5 * time.Minute
)

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// rig is a Prometheus TSDB (out-of-order writes allowed, for writes of
// old samples) with generated counters, gauges and classic histograms, the
// engine over it, and a cache with a clock the test sets.
type rig struct {
	t     *testing.T
	db    *teststorage.TestStorage
	ng    *promql.Engine
	now   time.Time
	cache *Cache
	eng   *Engine
	reg   *prometheus.Registry
}

func newRig(t *testing.T, maxBytes int64, seed uint64) *rig {
	t.Helper()
	r := &rig{t: t, reg: prometheus.NewRegistry()}
	r.db = teststorage.New(t, func(o *tsdb.Options) { o.OutOfOrderTimeWindow = int64(48 * time.Hour / time.Millisecond) })
	r.ng = promql.NewEngine(promql.EngineOpts{MaxSamples: 1e9, Timeout: time.Minute, LookbackDelta: lookback, EnableAtModifier: true, EnableNegativeOffset: true})
	r.cache = New(Options{MaxBytes: maxBytes, Offset: 5 * time.Minute, MaxAge: time.Hour, Now: func() time.Time { return r.now }, Registerer: r.reg})
	r.eng = r.cache.Engine("tenant", r.ng, parser.NewParser(parser.Options{}), lookback)
	rng := rand.New(rand.NewPCG(seed, 7))
	app := r.db.Appender(context.Background())
	add := func(ls labels.Labels, ts time.Time, v float64) {
		if _, err := app.Append(0, ls, ts.UnixMilli(), v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		job := fmt.Sprint("job", i%3)
		counter := labels.FromStrings("__name__", "requests_total", "job", job, "instance", fmt.Sprint(i))
		gauge := labels.FromStrings("__name__", "temperature", "job", job, "instance", fmt.Sprint(i))
		c := 0.0
		// Some series start late or stop early; some have gaps.
		from, to := time.Duration(rng.IntN(3))*time.Hour, dataSpan-time.Duration(rng.IntN(2))*time.Hour
		for ts := epoch.Add(from); ts.Before(epoch.Add(to)); ts = ts.Add(scrape) {
			if rng.IntN(50) == 0 {
				continue
			}
			c += float64(rng.IntN(10))
			if rng.IntN(500) == 0 {
				c = 0 // a counter reset
			}
			add(counter, ts, c)
			add(gauge, ts, 20+10*math.Sin(float64(ts.Unix())/1000)+rng.Float64())
			for _, le := range []string{"0.1", "1", "+Inf"} {
				b := labels.FromStrings("__name__", "latency_seconds_bucket", "job", job, "instance", fmt.Sprint(i), "le", le)
				add(b, ts, c*map[string]float64{"0.1": 0.3, "1": 0.8, "+Inf": 1}[le])
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	return r
}

// run evaluates qs over [start, end] through the cache (cached) or the
// engine alone.
func (r *rig) run(qs string, start, end time.Time, step time.Duration, cached bool) *promql.Result {
	r.t.Helper()
	var qe promql.QueryEngine = r.ng
	if cached {
		qe = r.eng
	}
	q, err := qe.NewRangeQuery(context.Background(), r.db, nil, qs, start, end, step)
	if err != nil {
		r.t.Fatal(err)
	}
	res := q.Exec(context.Background())
	// The answer is read after Close, as the cache must not keep what
	// the engine recycles: render it first, then close.
	out := &promql.Result{Err: res.Err, Warnings: res.Warnings}
	if m, ok := res.Value.(promql.Matrix); ok {
		out.Value = copyMatrix(m)
	} else {
		out.Value = res.Value
	}
	q.Close()
	return out
}

func copyMatrix(m promql.Matrix) promql.Matrix {
	out := make(promql.Matrix, len(m))
	for i, s := range m {
		out[i] = promql.Series{Metric: s.Metric, Floats: append([]promql.FPoint(nil), s.Floats...), Histograms: append([]promql.HPoint(nil), s.Histograms...)}
	}
	return out
}

// same fails the test when a and b differ in any series, point or float bit.
func same(t *testing.T, what string, a, b *promql.Result) {
	t.Helper()
	if (a.Err == nil) != (b.Err == nil) {
		t.Fatalf("%s: errors differ: %v / %v", what, a.Err, b.Err)
	}
	if a.Err != nil {
		return
	}
	wa, ia := a.Warnings.AsStrings("", 0, 0)
	wb, ib := b.Warnings.AsStrings("", 0, 0)
	if fmt.Sprint(wa, ia) != fmt.Sprint(wb, ib) {
		t.Fatalf("%s: annotations differ: %v %v / %v %v", what, wa, ia, wb, ib)
	}
	ma, mb := a.Value.(promql.Matrix), b.Value.(promql.Matrix)
	if len(ma) != len(mb) {
		t.Fatalf("%s: %d series with the cache, %d without", what, len(ma), len(mb))
	}
	for i := range ma {
		if !labels.Equal(ma[i].Metric, mb[i].Metric) {
			t.Fatalf("%s: series %d: %s / %s", what, i, ma[i].Metric, mb[i].Metric)
		}
		if len(ma[i].Floats) != len(mb[i].Floats) {
			t.Fatalf("%s: %s: %d points with the cache, %d without", what, ma[i].Metric, len(ma[i].Floats), len(mb[i].Floats))
		}
		for j, p := range ma[i].Floats {
			q := mb[i].Floats[j]
			if p.T != q.T || math.Float64bits(p.F) != math.Float64bits(q.F) {
				t.Fatalf("%s: %s: point %d: %v / %v", what, ma[i].Metric, j, p, q)
			}
		}
	}
}

// dashboard is what the tests refresh: the shapes of Grafana panels.
var dashboard = []string{
	`sum by (job) (rate(requests_total[5m]))`,
	`rate(requests_total[1m])`,
	`increase(requests_total[1h])`,
	`max_over_time(temperature[10m])`,
	`avg by (job) (temperature)`,
	`histogram_quantile(0.9, sum by (le) (rate(latency_seconds_bucket[5m])))`,
	`temperature offset 30m - temperature`,
	`max_over_time(rate(requests_total[5m])[30m:1m])`,
	`topk(3, temperature)`,
	`count(requests_total > 1000)`,
	`time() - timestamp(temperature)`,
	`sum(rate(requests_total[5m])) / sum(rate(requests_total[5m] offset 1h))`,
}

// TestRefreshesEqualUncached refreshes each dashboard query with its
// range moved a step at a time, the clock moving with it, and checks every
// answer against the engine's alone; then the range jumps, shrinks and
// grows, and the step phase changes.
func TestRefreshesEqualUncached(t *testing.T) {
	for seed := range uint64(2) {
		r := newRig(t, 64<<20, seed)
		for _, qs := range dashboard {
			t.Run(fmt.Sprintf("seed%d/%s", seed, qs), func(t *testing.T) {
				r.t = t
				step := time.Minute
				start := epoch.Add(time.Hour)
				for i := range 25 {
					s := start.Add(time.Duration(i) * step)
					e := s.Add(3 * time.Hour)
					r.now = e.Add(time.Duration(i%4) * time.Minute) // steps after now − 5 m are not kept
					same(t, fmt.Sprintf("refresh %d", i), r.run(qs, s, e, step, true), r.run(qs, s, e, step, false))
				}
				for i, rg := range []struct{ start, end time.Duration }{
					{90 * time.Minute, 7 * time.Hour}, {2 * time.Hour, 3 * time.Hour}, {30 * time.Minute, 8 * time.Hour},
					{90*time.Minute + 20*time.Second, 5 * time.Hour}, // another phase
				} {
					s, e := epoch.Add(rg.start), epoch.Add(rg.end)
					r.now = e.Add(time.Minute)
					same(t, fmt.Sprintf("range %d", i), r.run(qs, s, e, step, true), r.run(qs, s, e, step, false))
				}
			})
		}
		if h := testutil.ToFloat64(r.cache.m.hits) + testutil.ToFloat64(r.cache.m.partial); h < float64(len(dashboard)*20) {
			t.Errorf("seed %d: %v answers used kept steps, want most refreshes to", seed, h)
		}
	}
}

// TestInvalidate writes samples older than the offset into the middle of
// kept steps: told, the cache answers as the engine does; not told, its
// answer differs (so the data change is one the answers see).
func TestInvalidate(t *testing.T) {
	for _, qs := range []string{`sum(rate(requests_total[5m]))`, `max_over_time(temperature[10m])`, `count_over_time(temperature[2m])`} {
		t.Run(qs, func(t *testing.T) {
			r := newRig(t, 64<<20, 3)
			s, e, step := epoch.Add(time.Hour), epoch.Add(4*time.Hour), time.Minute
			r.now = e.Add(10 * time.Minute)
			r.run(qs, s, e, step, true) // kept
			at := epoch.Add(2*time.Hour + 7*time.Second)
			app := r.db.Appender(context.Background())
			for i := range 12 {
				for _, name := range []string{"requests_total", "temperature"} {
					ls := labels.FromStrings("__name__", name, "job", fmt.Sprint("job", i%3), "instance", fmt.Sprint(i))
					if _, err := app.Append(0, ls, at.UnixMilli(), 1e6); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			stale := r.run(qs, s, e, step, true)
			fresh := r.run(qs, s, e, step, false)
			if equalResults(stale, fresh) {
				t.Fatal("the old write changed no answer: the test proves nothing")
			}
			r.cache.Invalidate("other tenant", at.UnixMilli(), at.UnixMilli())
			if !equalResults(r.run(qs, s, e, step, true), stale) {
				t.Fatal("another tenant's change dropped this tenant's steps")
			}
			r.cache.Invalidate("tenant", at.UnixMilli(), at.UnixMilli())
			same(t, "after Invalidate", r.run(qs, s, e, step, true), fresh)
		})
	}
}

func equalResults(a, b *promql.Result) bool {
	ok := true
	t := &testing.T{}
	func() {
		defer func() { ok = recover() == nil && !t.Failed() }()
		sameNoFatal(t, a, b)
	}()
	return ok
}

// sameNoFatal reports a difference on t without stopping the test.
func sameNoFatal(t *testing.T, a, b *promql.Result) {
	ma, mb := a.Value.(promql.Matrix), b.Value.(promql.Matrix)
	if len(ma) != len(mb) {
		t.Fail()
		return
	}
	for i := range ma {
		if !labels.Equal(ma[i].Metric, mb[i].Metric) || len(ma[i].Floats) != len(mb[i].Floats) {
			t.Fail()
			return
		}
		for j := range ma[i].Floats {
			if ma[i].Floats[j] != mb[i].Floats[j] {
				t.Fail()
				return
			}
		}
	}
}

// TestRunningQuerySeesInvalidation: an invalidation that comes while a
// query evaluates (after it read the store) is applied to what it keeps.
func TestRunningQuerySeesInvalidation(t *testing.T) {
	r := newRig(t, 64<<20, 4)
	qs := `sum(rate(requests_total[5m]))`
	s, e, step := epoch.Add(time.Hour), epoch.Add(4*time.Hour), time.Minute
	r.now = e.Add(10 * time.Minute)
	q, err := r.eng.NewRangeQuery(context.Background(), r.db, nil, qs, s, e, step)
	if err != nil {
		t.Fatal(err)
	}
	// The query's lookup happens in Exec: invalidate from inside the
	// evaluation, through a queryable that tells the cache when selected.
	at := epoch.Add(3 * time.Hour).UnixMilli()
	hooked := hookQueryable{r.db, func() { r.cache.Invalidate("tenant", at, at) }}
	q.(*cachedQuery).inner = func(from time.Time) (promql.Query, error) {
		return r.ng.NewRangeQuery(context.Background(), hooked, nil, qs, from, e, step)
	}
	q.Exec(context.Background())
	q.Close()
	r.cache.mu.Lock()
	kept := r.cache.entries[q.(*cachedQuery).k]
	r.cache.mu.Unlock()
	if kept == nil || kept.end >= at {
		t.Fatalf("kept %+v: want the steps before %d only", kept, at)
	}
}

// TestBytesBounded runs many distinct queries into a small cache: its
// bytes stay under the bound, and it evicts.
func TestBytesBounded(t *testing.T) {
	const limit = 1 << 20
	r := newRig(t, limit, 5)
	s, e := epoch.Add(time.Hour), epoch.Add(5*time.Hour)
	r.now = e.Add(time.Hour)
	for i := range 60 {
		qs := fmt.Sprintf(`rate(requests_total[%dm]) * %d`, 1+i%5, i)
		r.run(qs, s, e, 30*time.Second, true)
		r.cache.mu.Lock()
		b := r.cache.bytes
		r.cache.mu.Unlock()
		if b > limit {
			t.Fatalf("after %d queries the cache holds %d bytes, over its %d", i+1, b, limit)
		}
	}
	if testutil.ToFloat64(r.cache.m.evictions) == 0 {
		t.Fatal("no eviction: the test did not fill the cache")
	}
}

// TestMaxAge: a kept step older than MaxAge is evaluated again.
func TestMaxAge(t *testing.T) {
	r := newRig(t, 64<<20, 6)
	qs := `sum(rate(requests_total[5m]))`
	s, e := epoch.Add(time.Hour), epoch.Add(3*time.Hour)
	r.now = e.Add(10 * time.Minute)
	r.run(qs, s, e, time.Minute, true)
	r.run(qs, s, e, time.Minute, true)
	if got := testutil.ToFloat64(r.cache.m.hits); got != 1 {
		t.Fatalf("%v hits, want 1", got)
	}
	r.now = r.now.Add(time.Hour + time.Second)
	r.run(qs, s, e, time.Minute, true)
	if got := testutil.ToFloat64(r.cache.m.misses); got != 2 {
		t.Fatalf("%v misses after MaxAge, want 2", got)
	}
}

// TestBypass: what the cache cannot answer exactly goes to the engine.
func TestBypass(t *testing.T) {
	r := newRig(t, 64<<20, 7)
	s, e := epoch.Add(time.Hour), epoch.Add(3*time.Hour)
	r.now = e.Add(time.Hour)
	for _, qs := range []string{`temperature @ 7200`, `temperature offset -5m`, `rate(requests_total[5m] @ end())`, `max_over_time(temperature[10m:1m] offset -1m)`} {
		r.run(qs, s, e, time.Minute, true)
	}
	q, err := r.eng.NewRangeQuery(Bypass(context.Background()), r.db, nil, `temperature`, s, e, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	q.Exec(context.Background())
	q.Close()
	if got := testutil.ToFloat64(r.cache.m.bypassed); got != 5 {
		t.Fatalf("%v bypassed, want 5", got)
	}
	if len(r.cache.entries) != 0 {
		t.Fatalf("%d answers kept, want none", len(r.cache.entries))
	}
}

func TestAffected(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ev                 event
		wantStart, wantEnd int64
		wantHit            bool
	}{
		{"before, beyond the window", event{mint: 0, maxt: 40}, 100, 200, false},
		{"after", event{mint: 201, maxt: 300}, 100, 200, false},
		{"reaches the first steps", event{mint: 0, maxt: 60}, 120, 200, true},
		{"middle: the steps before it stay", event{mint: 150, maxt: 150}, 100, 140, true},
		{"all", event{mint: 0, maxt: 1000}, 1, 0, true},
		{"tenant reset", event{all: true}, 1, 0, true},
		{"to the end of time", event{mint: 0, maxt: maxTime}, 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, e, ok := affected(100, 200, 20, 50, tc.ev)
			if ok != tc.wantHit || (ok && (s != tc.wantStart || e != tc.wantEnd)) {
				t.Fatalf("affected = %d, %d, %v; want %d, %d, %v", s, e, ok, tc.wantStart, tc.wantEnd, tc.wantHit)
			}
		})
	}
}

// hookQueryable calls hook when a querier is opened, then queries q.
type hookQueryable struct {
	q    storage.Queryable
	hook func()
}

func (h hookQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	h.hook()
	return h.q.Querier(mint, maxt)
}

// TestFromStep: the evaluation of the steps not kept starts the window
// functions' downsampling markers at its first step; the points
// functions' markers and other queries are left as they are.
func TestFromStep(t *testing.T) {
	start, from := time.UnixMilli(3_600_000), time.UnixMilli(7_200_000)
	marker := func(fn string, s int64) string {
		return fmt.Sprintf(`x{%s="%s;5m;300000;0;%d;86400000;60000;0;86400000"}`, query.DownsampleLabel, fn, s)
	}
	for _, tc := range []struct {
		name, qs, want string
		s              time.Time
	}{
		{"rate", `sum(` + marker("rate", 3_600_000) + `)`, `sum(` + marker("rate", 7_200_000) + `)`, from},
		{"two markers", marker("max_over_time", 3_600_000) + ` / ` + marker("last", 3_600_000),
			marker("max_over_time", 7_200_000) + ` / ` + marker("last", 7_200_000), from},
		{"points keep their range", marker("points_avg", 3_600_000), marker("points_avg", 3_600_000), from},
		{"from the start", marker("rate", 3_600_000), marker("rate", 3_600_000), start},
		{"no marker", `sum(rate(x[5m]))`, `sum(rate(x[5m]))`, from},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := parser.NewParser(parser.Options{})
			expr, err := p.ParseExpr(tc.qs)
			if err != nil {
				t.Fatal(err)
			}
			before := expr.String()
			want, err := p.ParseExpr(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got := fromStep(expr.String(), expr, start, tc.s); got != want.String() {
				t.Fatalf("fromStep = %s\nwant      %s", got, want)
			}
			if expr.String() != before {
				t.Fatalf("fromStep changed the expression: %s", expr)
			}
		})
	}
}
