package rollup_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestSchedulerSpan drives a Scheduler by hand, one hour a check: its
// span claims no hour it has not built. At the first start on empty
// tables it builds forwards from the hour due; a write into an older hour
// H makes it build backwards down to the hour before H (whose last window
// holds H's first instant), and only then does the span reach back to
// the beginning; a write at the first instant of the hour after the built
// span makes the last built hour stale, for this scheduler and for
// another one over the same tables.
func TestSchedulerSpan(t *testing.T) {
	t.Parallel()
	g := newRig(t, mapping.DefaultLayout())
	const hour = mapping.MaxTimespan
	now := time.Unix(h0+8*hour+30*60, 0) // the hour due: h0+7h
	s := rollup.NewScheduler(g.Builder(rollup.Options{}), g.Store, rollup.SchedulerOptions{MaxHoursPerCycle: 1, Now: func() time.Time { return now }})
	ctx := ctxFor(t)
	span := func(s *rollup.Scheduler) (int64, int64) { from, to := s.Span(); return from / 1000, to / 1000 }

	s.Check(ctx)
	if from, to := span(s); from != 0 || to != h0+8*hour {
		t.Fatalf("first start on empty tables: span (%d, %d], want (0, %d]", from, to, h0+8*hour)
	}
	row := func(base int64, offsets ...uint32) store.Put {
		p := store.Put{Row: g.Layout.AppendRowKey(nil, []byte{0, 0, 1}, uint32(base), []byte{0, 0, 1, 0, 0, 1})}
		for _, off := range offsets {
			p.Cells = append(p.Cells, store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, off, 0x07)})
		}
		return p
	}
	// A backfill from h0 on: h0-1h .. h0+6h are built backwards, one a
	// check, and the span claims the beginning only after the last.
	if err := s.NoteWritten(ctx, g.Layout, []store.Put{row(h0, 1000), row(h0+3*hour, 1000)}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if from, _ := span(s); from != h0+7*hour-int64(i)*hour {
			t.Fatalf("after %d backward builds: span from %d, want %d", i, from, h0+7*hour-int64(i)*hour)
		}
		if !s.Check(ctx) && i < 7 {
			t.Errorf("check %d: not behind, want behind", i)
		}
	}
	if from, to := span(s); from != 0 || to != h0+8*hour {
		t.Errorf("backfill built: span (%d, %d], want (0, %d]", from, to, h0+8*hour)
	}
	p, err := rollup.ReadProgress(ctx, g.Store, g.Tables.Rollup5m)
	if err != nil || p.Hours().String() != fmt.Sprintf("%d-%d", h0-hour, h0+8*hour) || p.Want != h0 {
		t.Errorf("progress: hours built %v, oldest written %d (%v), want %d-%d and %d", p.Hours(), p.Want, err, h0-hour, h0+8*hour, h0)
	}
	// A late write at the first instant of the hour after the span: the
	// last hour built is stale until built again, here and for another
	// scheduler over the same tables; a sample later in that hour makes
	// no hour stale.
	other := rollup.NewScheduler(g.Builder(rollup.Options{}), g.Store, rollup.SchedulerOptions{RefreshInterval: time.Nanosecond, Now: func() time.Time { return now }})
	if h := other.Hours(ctx); !h.Contains(h0 + 7*hour) {
		t.Errorf("another scheduler: hours built %v, want h0+7h among them", h)
	}
	if err := s.NoteWritten(ctx, g.Layout, []store.Put{row(h0+8*hour, 1000)}); err != nil {
		t.Fatal(err)
	}
	if _, to := span(s); to != h0+8*hour {
		t.Errorf("write into h0+8h after its first instant: span to %d, want %d", to, h0+8*hour)
	}
	if err := s.NoteWritten(ctx, g.Layout, []store.Put{row(h0+8*hour, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, to := span(s); to != h0+7*hour {
		t.Errorf("late write at h0+8h's first instant: span to %d, want %d", to, h0+7*hour)
	}
	if h := other.Hours(ctx); h.Contains(h0+7*hour) || !h.Contains(h0+6*hour) {
		t.Errorf("another scheduler after the late write: hours built %v, want h0+6h and not h0+7h", h)
	}
	s.Check(ctx)
	if _, to := span(s); to != h0+8*hour {
		t.Errorf("stale hour built again: span to %d, want %d", to, h0+8*hour)
	}
	if h := other.Hours(ctx); !h.Contains(h0 + 7*hour) {
		t.Errorf("another scheduler after the rebuild: hours built %v, want h0+7h among them", h)
	}

	// A sample at h0-3h written by a process that stopped before its
	// scheduler heard of it: the next process's first check finds it.
	g.write(prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}}, Samples: []prompb.Sample{{Timestamp: (h0 - 3*hour) * 1000, Value: 1}}})
	s = rollup.NewScheduler(g.Builder(rollup.Options{}), g.Store, rollup.SchedulerOptions{Now: func() time.Time { return now }})
	for s.Check(ctx) {
	}
	if from, to := span(s); from != 0 || to != h0+8*hour {
		t.Errorf("after a restart: span (%d, %d], want (0, %d]", from, to, h0+8*hour)
	}
	if p, err := rollup.ReadProgress(ctx, g.Store, g.Tables.Rollup5m); err != nil || len(p.Hours()) != 1 || p.Hours()[0].From != h0-4*hour {
		t.Errorf("after a restart: hours built %v (%v), want from %d", p.Hours(), err, h0-4*hour)
	}
}

// TestBackfillHourBoundaries: a backfill written into a serving promhbase
// whose rollups started on empty tables, with samples on every hour's
// first instant (the backfill's first hour, its last, after a gap of
// hours, and after a series' own empty hour), is rolled up by the
// background builder alone; every window holds what the raw samples
// hold: count, sum, min and max of each 5m and 1h window, read through
// max_source_resolution, equal the raw *_over_time answers point for
// point, the windows of the backfill's first instant included.
func TestBackfillHourBoundaries(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithRollups(t)
	const hour = mapping.MaxTimespan
	now := time.Unix(h0+8*hour+30*60, 0)
	srv := startAuto(t, st, tb, now, 10*time.Millisecond, false)
	waitFor(t, "the first check", func() bool {
		return testproc.GatherSum(t, srv.Registry, "promhbase_rollup_built_until_timestamp_seconds") > 0
	})

	mk := func(name, inst string) prompb.TimeSeries {
		return prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "instance", Value: inst}, {Name: "job", Value: "backfill"}}}
	}
	c, ga, gb := mk("bf_requests_total", "a"), mk("bf_temperature", "a"), mk("bf_temperature", "b")
	cv := 100.0
	for i := int64(0); i <= 6*240; i++ {
		ts := (h0 + i*15) * 1000
		if ts > (h0+3*hour)*1000 && ts < (h0+5*hour)*1000 {
			continue // two hours without data
		}
		cv += float64(i%7 + 1)
		if ts%(hour*1000) == 0 && i%480 == 240 {
			cv = 2 // a reset on an hour's first instant
		}
		c.Samples = append(c.Samples, prompb.Sample{Timestamp: ts, Value: cv})
		ga.Samples = append(ga.Samples, prompb.Sample{Timestamp: ts, Value: 20 + float64(i%53)*0.173 - float64(i%11)*0.61})
		if ts <= (h0+hour)*1000 || ts >= (h0+2*hour)*1000 { // an empty hour of its own
			gb.Samples = append(gb.Samples, prompb.Sample{Timestamp: ts, Value: float64(i%17)/3 - 2.5})
		}
	}
	srv.Write(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{c, ga, gb}})
	waitFor(t, "the backfill's rollups", func() bool {
		return testproc.GatherSum(t, srv.Registry, "promhbase_rollup_built_from_timestamp_seconds") == 0 &&
			testproc.GatherSum(t, srv.Registry, "promhbase_rollup_hours_stale") == 0
	})

	for _, res := range []struct {
		name  string
		width int64
	}{{"5m", 5 * 60_000}, {"1h", rollup.HourMs}} {
		// From the first window of the hour before the backfill's (the
		// earlier hours are not built: nothing was written there).
		start, end := int64(h0-hour)*1000+res.width, int64(h0+7*hour)*1000
		for _, fn := range []string{"count_over_time", "sum_over_time", "min_over_time", "max_over_time"} {
			for _, m := range []string{"bf_requests_total", "bf_temperature"} {
				q := fn + "(" + m + "[" + res.name + "])"
				t.Run(q, func(t *testing.T) {
					raw, _ := queryRange(t, srv.URL, q, start, end, res.width, "0s")
					down, got := queryRange(t, srv.URL, q, start, end, res.width, res.name)
					if got != res.name {
						t.Errorf("resolution %q, want %s", got, res.name)
					}
					if pts := raw.points(); pts < int(4*rollup.HourMs/res.width) { // 4 hours of data, at least one series
						t.Errorf("%d raw points: the data is not all there", pts)
					}
					sameAnswers(t, raw, down)
					for k, rs := range raw {
						if _, ok := rs[h0*1000]; !ok {
							t.Errorf("%s: no raw point at the backfill's first instant", k)
						}
					}
				})
			}
		}
	}
}

// points counts r's points.
func (r promResult) points() int {
	n := 0
	for _, s := range r {
		n += len(s)
	}
	return n
}

// sameAnswers fails t unless down has raw's series and points, with
// values within 1e-9 relative.
func sameAnswers(t *testing.T, raw, down promResult) {
	t.Helper()
	if len(raw) == 0 {
		t.Fatal("no raw answer")
	}
	if len(down) != len(raw) {
		t.Errorf("%d series downsampled, %d raw", len(down), len(raw))
	}
	for k, rs := range raw {
		ds := down[k]
		for ts, rv := range rs {
			dv, ok := ds[ts]
			if !ok {
				t.Errorf("%s at %s: missing, raw %v", k, time.UnixMilli(ts).UTC().Format(time.RFC3339), rv)
				continue
			}
			if math.Abs(dv-rv) > 1e-9*math.Max(math.Abs(rv), 1) {
				t.Errorf("%s at %s: %v, raw %v", k, time.UnixMilli(ts).UTC().Format(time.RFC3339), dv, rv)
			}
		}
		if len(ds) != len(rs) {
			t.Errorf("%s: %d points, raw %d", k, len(ds), len(rs))
		}
	}
}

// waitFor polls cond until it holds, failing t after five minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 5*time.Minute, 20*time.Millisecond, what, func() (bool, string) { return cond(), "not yet" })
}
