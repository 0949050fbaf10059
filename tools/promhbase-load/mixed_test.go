package main

import (
	"slices"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// TestMixedSmoke runs the mixed command small against a freshly built
// promhbase (embedded store) and the project's VictoriaMetrics: 300
// series with 2 h of history, then 10 s of 1 500 samples/s by 2 senders
// while 2 dashboards (1 h and 6 h) refresh every 2 s. Every sample
// scheduled must be acknowledged, none fail, and each system must count
// exactly the samples it acknowledged; every refresh's six panels must
// answer with series, and the latencies be recorded. (The command itself
// is a benchmark, docs/bench/mixed-load.md; this keeps it working.)
func TestMixedSmoke(t *testing.T) {
	t.Parallel()
	vm, promhbase := vmAndPromhbase(t)
	o := options{series: 300, batch: 200, concurrency: 2, duration: 10 * time.Second}
	m := mixedOptions{promhbase: promhbase, victoriaMetrics: vm, systems: []string{"promhbase", "victoriametrics"}, runs: 1,
		senders: 2, rate: 1500, dashboards: 2, refresh: 2 * time.Second, history: 2 * time.Hour, historyInterval: 15 * time.Second,
		settle: 10 * time.Second, dir: t.TempDir()}
	rs, err := runMixed(o, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results, want 2", len(rs))
	}
	const history, live = 300 * 480, 300 * 50 // 2 h every 15 s; 10 s every 200 ms
	for _, r := range rs {
		ws := r.writes
		if r.history != history || ws.samples != live || ws.errors != 0 || ws.unsent != 0 {
			t.Errorf("%s: %d history and %d load samples acknowledged, %d requests failed (%v), %d samples unsent; want %d, %d, none",
				r.system, r.history, ws.samples, ws.errors, ws.firstErr, ws.unsent, history, live)
		}
		if r.counted != r.acknowledged() || !r.countsExact() {
			t.Errorf("%s: counted %d samples, acknowledged %d", r.system, r.counted, r.acknowledged())
		}
		if len(ws.lat) != ws.requests || ws.requests < 50 || quantile(ws.lat, 0.5) <= 0 {
			t.Errorf("%s: %d write latencies of %d requests, median %s: want one a request, at least 50", r.system, len(ws.lat), ws.requests, quantile(ws.lat, 0.5))
		}
		for _, rng := range []time.Duration{time.Hour, 6 * time.Hour} {
			// 5 refreshes (at 0, 2, ... 8 s, the second dashboard a
			// second later) of six panels.
			qs := r.dash.byRange[rng]
			if qs.queries != 5*6 || qs.errors != 0 || qs.empty != 0 || len(qs.lat) != 5*6 || len(qs.cpuLat) != 5 {
				t.Errorf("%s, %s: %d queries, %d failed (%v), %d empty, %d latencies (%d of %s); want 30, none, none, 30 (5)",
					r.system, rng, qs.queries, qs.errors, qs.firstErr, qs.empty, len(qs.lat), len(qs.cpuLat), cpuPanel)
			}
		}
		if r.peakRSS <= 0 || r.cpu <= 0 || r.rate() <= 0 {
			t.Errorf("%s: peak RSS %d, CPU %v s, %v samples/s: want positive", r.system, r.peakRSS, r.cpu, r.rate())
		}
	}
}

// TestLiveSenders: the senders' schedule writes every series a sample
// every interval over the window, in order, stamped with its scheduled
// time, each series with one sender; requests hold at most a batch (and
// the rest of a scrape) and go when their last scrape was made, or once
// their first sample is 5 s old.
func TestLiveSenders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		series, senders, batch int
		interval, window       time.Duration
		wantDeadline           bool
	}{
		{"batches", 1000, 3, 250, 200 * time.Millisecond, 3 * time.Second, false},
		{"deadline", 100, 1, 2000, time.Second, 12 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := options{series: tc.series}
			m := mixedOptions{senders: tc.senders, interval: tc.interval, history: 10 * time.Minute, historyInterval: 15 * time.Second}
			hist := m.historyConfig(o, time.Now().Add(-time.Minute))
			senders := newLiveSenders(hist, m, tc.batch)
			start := time.Now().Truncate(time.Second).UnixMilli()
			end := start + tc.window.Milliseconds()
			seen := map[string][]int64{} // series → timestamps
			owner := map[string]int{}
			deadline := false
			for si, ls := range senders {
				ls.startMs, ls.endMs = start, end
				for {
					req, ok := ls.nextRequest()
					if !ok {
						break
					}
					if req.samples > tc.batch+99 || req.lastTs > req.sched {
						t.Errorf("sender %d: %d samples, newest %d, due %d", si, req.samples, req.lastTs, req.sched)
					}
					deadline = deadline || req.sched > req.lastTs
					for _, ts := range decodeLive(t, req) {
						k := labelsString(ts.Labels)
						if o, ok := owner[k]; ok && o != si {
							t.Fatalf("%s sent by senders %d and %d", k, o, si)
						}
						owner[k] = si
						for _, s := range ts.Samples {
							seen[k] = append(seen[k], s.Timestamp)
						}
					}
				}
			}
			if deadline != tc.wantDeadline {
				t.Errorf("a request cut by the deadline: %v, want %v", deadline, tc.wantDeadline)
			}
			checkLiveSeries(t, seen, tc.series, start, end, tc.interval)
		})
	}
}

// decodeLive decodes a request of the senders.
func decodeLive(t *testing.T, req liveRequest) []prompb.TimeSeries {
	t.Helper()
	raw, err := snappy.Decode(nil, req.body)
	if err != nil {
		t.Fatal(err)
	}
	var wr prompb.WriteRequest
	if err := proto.Unmarshal(raw, &wr); err != nil {
		t.Fatal(err)
	}
	if len(wr.Timeseries) != req.samples {
		t.Fatalf("%d series in a request of %d samples", len(wr.Timeseries), req.samples)
	}
	return wr.Timeseries
}

// checkLiveSeries checks that each of want series got a sample every
// interval from its phase in [start, end), in order.
func checkLiveSeries(t *testing.T, seen map[string][]int64, want int, start, end int64, interval time.Duration) {
	t.Helper()
	if len(seen) != want {
		t.Errorf("%d series, want %d", len(seen), want)
	}
	iv := interval.Milliseconds()
	n := int((end - start) / iv)
	for k, tss := range seen {
		if len(tss) != n || tss[0] < start || tss[0] >= start+iv || tss[len(tss)-1] >= end {
			t.Errorf("%s: %d samples from %d to %d, want %d in [%d, %d)", k, len(tss), tss[0], tss[len(tss)-1], n, start, end)
			continue
		}
		for i := 1; i < len(tss); i++ {
			if tss[i]-tss[i-1] != iv {
				t.Errorf("%s: samples %d and %d are %d ms apart, want %d", k, i-1, i, tss[i]-tss[i-1], iv)
				break
			}
		}
		if !slices.IsSorted(tss) {
			t.Errorf("%s: out of order", k)
		}
	}
}
