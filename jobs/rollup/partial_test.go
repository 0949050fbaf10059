package rollup_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testserver"
	"github.com/promhbase/promhbase/web/promapi"
)

// TestPartlyBuiltRollups is the differential test of auto downsampling
// over rollups built for only part of the range (issue 88): every
// default answer equals Prometheus's over the raw samples, at aligned and
// unaligned steps, with offsets and @, while
//
//   - a serve started on empty tables built hours before the data was
//     written into them through a replica that stopped before building
//     them again (hours built, then made stale);
//   - `promhbase rollup` built the hours up to some hour, and later ones
//     after a gap of hours left unbuilt;
//   - a serve builds the rest in the background;
//   - a replica writes late samples into built hours (one at the first
//     instant of the hour after a built one), which are not built again.
func TestPartlyBuiltRollups(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithRollups(t)
	const hours int64 = 30
	H := int64(h0) * 1000
	hour := int64(rollup.HourMs)
	late := H + (hours+1)*hour + 30*60_000 // a clock an hour and a half after the data's last hour began
	serve := func(t *testing.T, now *atomic.Int64, check time.Duration, share float64) *testserver.Server {
		t.Helper()
		return testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Rollup: &server.RollupConfig{
			Enabled: true, AutoDownsampling: true, Config: tb.RollupConfig(), CheckInterval: check, MinRolledShare: share,
			Now: func() time.Time { return time.UnixMilli(now.Load()) }}})
	}
	clock := func(ms int64) *atomic.Int64 { c := &atomic.Int64{}; c.Store(ms); return c }
	gauge := func(t *testing.T, srv *testserver.Server, name string) float64 {
		return testproc.GatherSum(t, srv.Registry, name)
	}

	// 1. A serve on empty tables builds the hours [8h, 12h) as they end.
	t.Run("serve on empty tables", func(t *testing.T) {
		now := clock(H + 9*hour + 30*60_000)
		srv := serve(t, now, 10*time.Millisecond, 0)
		waitFor(t, "the first hour built", func() bool {
			return gauge(t, srv, "promhbase_rollup_built_until_timestamp_seconds") >= float64((H+9*hour)/1000)
		})
		now.Store(H + 12*hour + 30*60_000)
		waitFor(t, "hours to 12h built", func() bool {
			return gauge(t, srv, "promhbase_rollup_built_until_timestamp_seconds") >= float64((H+12*hour)/1000)
		})
	})
	// 2. A replica whose clock is past the data builds the hours to the
	// data's end (still empty), takes the data, and stops before it
	// builds those hours again.
	series := nodeSeries(rand.New(rand.NewPCG(88, 1)), H, H+hours*hour)
	t.Run("writes through a replica", func(t *testing.T) {
		srv := serve(t, clock(late), time.Hour, 0)
		waitFor(t, "the replica's first check", func() bool {
			return gauge(t, srv, "promhbase_rollup_built_until_timestamp_seconds") >= float64((H+(hours+1)*hour)/1000)
		})
		for i := 0; i < len(series); i += 8 {
			srv.Write(t, &prompb.WriteRequest{Timeseries: series[i:min(i+8, len(series))]})
		}
	})
	// 3. `promhbase rollup` over [0h, 8h), then over [14h, 20h).
	builder, err := rollup.NewBuilder(st, rollup.Options{Config: tb.RollupConfig(), DataTable: tb.Data, UIDTable: tb.UID, Layout: mapping.DefaultLayout()})
	if err != nil {
		t.Fatal(err)
	}
	command := func(from, to int64) {
		for h := (from - hour) / 1000; h < to/1000; h += mapping.MaxTimespan {
			if _, err := builder.BuildHour(ctxFor(t), h); err != nil {
				t.Fatal(err)
			}
		}
	}
	command(H, H+8*hour)
	command(H+14*hour, H+20*hour)

	prom := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Engine: promapi.EnginePrometheus})
	// A serve whose clock is early builds nothing: it reads what the
	// others built, any whole window of it (MinRolledShare -1).
	frozen := serve(t, clock(H+hour+30*60_000), 20*time.Millisecond, -1)
	waitFor(t, "the frozen serve's first check", func() bool {
		return gauge(t, frozen, "promhbase_rollup_built_until_timestamp_seconds") > 0
	})
	var total diffCount
	total.add(t, "partly built", compareGrid(t, prom, frozen, H, hours))

	// 4. A serve builds the rest in the background: answers while it
	// builds, from it and from the frozen one.
	t.Run("background build", func(t *testing.T) {
		live := serve(t, clock(late), 20*time.Millisecond, 0)
		built := func() float64 { return gauge(t, live, "promhbase_rollup_hours_built_total") }
		before := built()
		total.add(t, "while building (live)", compareGrid(t, prom, live, H, hours))
		total.add(t, "while building (frozen)", compareGrid(t, prom, frozen, H, hours))
		t.Logf("the live serve built %v hours before the answers, %v after", before, built())
		waitFor(t, "every hour built", func() bool {
			return gauge(t, live, "promhbase_rollup_built_from_timestamp_seconds") == 0 &&
				gauge(t, live, "promhbase_rollup_built_until_timestamp_seconds") >= float64((H+(hours+1)*hour)/1000) &&
				gauge(t, live, "promhbase_rollup_hours_stale") == 0
		})
		total.add(t, "built (live)", compareGrid(t, prom, live, H, hours))
	})

	// 5. Late samples through a replica into built hours: a new series
	// in hour 3h, and one whose only sample is at exactly 5h (in the
	// last window of hour 4h).
	t.Run("late write", func(t *testing.T) {
		r := serve(t, clock(late), time.Hour, 0)
		waitFor(t, "the replica's first check (nothing to build)", func() bool {
			return gauge(t, r, "promhbase_rollup_built_until_timestamp_seconds") >= float64((H+(hours+1)*hour)/1000)
		})
		lateSeries := []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: "node_load1"}, {Name: "instance", Value: "late:9100"}, {Name: "job", Value: "node"}},
				Samples: []prompb.Sample{{Timestamp: H + 3*hour + 7*60_000 + 1, Value: 42}, {Timestamp: H + 3*hour + 8*60_000, Value: 43}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "node_memory_MemAvailable_bytes"}, {Name: "instance", Value: "edge:9100"}, {Name: "job", Value: "node"}},
				Samples: []prompb.Sample{{Timestamp: H + 5*hour, Value: 1e12}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "node_cpu_seconds_total"}, {Name: "instance", Value: "late:9100"}, {Name: "job", Value: "node"}, {Name: "mode", Value: "user"}},
				Samples: []prompb.Sample{{Timestamp: H + 3*hour + 60_000, Value: 1}, {Timestamp: H + 3*hour + 30*60_000, Value: 100}, {Timestamp: H + 4*hour, Value: 200}}},
		}
		r.Write(t, &prompb.WriteRequest{Timeseries: lateSeries})
		waitFor(t, "the frozen serve to see the late hours", func() bool {
			return gauge(t, frozen, "promhbase_rollup_hours_stale") >= 2
		})
		total.add(t, "after a late write (frozen)", compareGrid(t, prom, frozen, H, hours))
	})
	t.Logf("in all: %d queries, %d points compared, %d points differ", total.queries, total.points, total.bad)
}

// diffCount counts the queries and points compared, those that differ,
// and the queries by the resolutions they read.
type diffCount struct {
	queries, points, bad int
	read                 map[string]int
}

func (d *diffCount) add(t *testing.T, what string, o diffCount) {
	t.Helper()
	t.Logf("%s: %d queries, %d points compared, %d differ; resolutions read: %v", what, o.queries, o.points, o.bad, o.read)
	d.queries += o.queries
	d.points += o.points
	d.bad += o.bad
}

// compareGrid compares got's default answers with want's over a grid of
// queries (the functions the rollups answer, with offsets and @, their
// ranges), steps and starts, aligned to the windows or not.
func compareGrid(t *testing.T, want, got *testserver.Server, H int64, hours int64) diffCount {
	t.Helper()
	hour := int64(rollup.HourMs)
	at := (H + 10*hour) / 1000
	shapes := []string{
		"rate(node_cpu_seconds_total[R])", "increase(node_network_receive_bytes_total[R])",
		"sum_over_time(node_memory_MemAvailable_bytes[R])", "count_over_time(node_load1[R])",
		"min_over_time(node_load1[R])", "max_over_time(node_memory_MemAvailable_bytes[R])", "avg_over_time(node_load1[R])",
		"sum by (instance) (rate(node_cpu_seconds_total[R]))", "rate(node_network_receive_bytes_total[R] offset 1h)",
		"avg_over_time(node_load1[R] offset 37m)", fmt.Sprintf("max_over_time(node_load1[R] @ %d)", at),
		"histogram_quantile(0.9, sum by (le) (rate(http_request_duration_seconds_bucket[R])))",
	}
	ranges := []string{"1h", "2h", "75m"}
	grid := []struct{ step, start int64 }{
		{hour, H}, {hour, H + 431_000}, {30 * 60_000, H}, {2016_000, H + 7*60_000}, {5 * hour, H}, {4020_000, H + 11*60_000},
	}
	d := diffCount{read: map[string]int{}}
	for _, s := range shapes {
		for _, r := range ranges {
			q := replaceR(s, r)
			for _, g := range grid {
				end := H + hours*hour
				name := fmt.Sprintf("%s step=%ds start=+%ds", q, g.step/1000, (g.start-H)/1000)
				w, _ := queryRange(t, want.URL, q, g.start, end, g.step, "")
				o, res := queryRange(t, got.URL, q, g.start, end, g.step, "")
				d.queries++
				d.read[res]++
				pts, bad := diffAnswers(w, o)
				d.points += pts
				d.bad += bad
				if bad > 0 {
					t.Errorf("%s (resolution %q): %d of %d points differ", name, res, bad, pts)
				}
			}
		}
	}
	return d
}

func replaceR(s, r string) string {
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); i++ {
		if s[i] == 'R' && i > 0 && s[i-1] == '[' {
			out = append(out, r...)
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// diffAnswers returns how many points want has (and got's points want
// lacks) and how many of them got lacks or holds another value of (more
// than 1e-9 relative; NaN equal to NaN).
func diffAnswers(want, got promResult) (points, bad int) {
	for k, ws := range want {
		gs := got[k]
		for ts, wv := range ws {
			points++
			gv, ok := gs[ts]
			if !ok || !(gv == wv || (math.IsNaN(gv) && math.IsNaN(wv)) || math.Abs(gv-wv) <= 1e-9*math.Max(math.Abs(gv), math.Abs(wv))) {
				bad++
			}
		}
	}
	for k, gs := range got {
		for ts := range gs {
			if _, ok := want[k][ts]; !ok {
				points++
				bad++
			}
		}
	}
	return points, bad
}
