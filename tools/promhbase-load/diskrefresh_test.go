package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
)

func TestRefreshPlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		span time.Duration
		n    int
	}{{24 * time.Hour, 20}, {7 * 24 * time.Hour, 20}, {2 * time.Hour, 3}} {
		t.Run(tc.span.String(), func(t *testing.T) {
			step := stepOf(genConfig{span: tc.span}, diskOptions{queryParts: 300})
			g := genConfig{span: tc.span, end: refreshDataEnd(now, step, tc.n)}
			if !g.end.Equal(g.end.Truncate(time.Hour)) {
				t.Errorf("data ends at %s, not on the hour", g.end)
			}
			p := newRefreshPlan(g, step, tc.n)
			s := step.Milliseconds()
			for k := 0; k <= tc.n; k++ {
				start, end := p.window(k)
				// Aligned to the step (one phase: one cache key), as long as
				// the span, the first ending in the data, each a step later.
				if start%s != 0 || end%s != 0 || end-start != tc.span.Milliseconds()/s*s {
					t.Fatalf("refresh %d: [%d, %d] at step %d", k, start, end, s)
				}
				if k == 0 && (end > g.endMs() || end <= g.endMs()-s) {
					t.Fatalf("the first range ends at %d, the data at %d", end, g.endMs())
				}
				if prev, _ := p.window(k - 1); k > 0 && start-prev != s {
					t.Fatalf("refresh %d moved %d ms", k, start-prev)
				}
			}
			// Every refresh's samples are in the past, 15 minutes at least.
			if _, last := p.window(tc.n); last > now.Add(-15*time.Minute).UnixMilli() {
				t.Errorf("the last range ends at %s, after now − 15m", time.UnixMilli(last).UTC())
			}
		})
	}
}

// TestRefreshFeed: the extended data has the loaded data's samples, and
// the feed hands out the ones after it, each once, in order, in batches.
func TestRefreshFeed(t *testing.T) {
	t.Parallel()
	g := testGenConfig()
	plan := newRefreshPlan(g, 7*time.Minute, 4)
	ext := extendedGen(g, plan)
	if _, last := plan.window(plan.n); ext.endMs() <= last || ext.startMs() != g.startMs() {
		t.Fatalf("extended data [%d, %d), the last range ends at %d", ext.startMs(), ext.endMs(), last)
	}
	loaded, _ := collectRequests(t, g, 2, 1000)
	all, _ := collectRequests(t, ext, 2, 1000)
	for k, v := range loaded {
		if w, ok := all[k]; !ok || math.Float64bits(w) != math.Float64bits(v) {
			t.Fatalf("%v: loaded %v, extended %v (%v)", k, v, w, ok)
		}
	}
	const batch = 97
	feed := newRefreshFeed(ext, g.endMs(), batch)
	fed := map[sampleKey]float64{}
	prev := g.endMs() - 1
	for k := 1; k <= plan.n; k++ {
		_, until := plan.window(k)
		reqs, n := feed.requests(until)
		got := 0
		for i, req := range reqs {
			var wr prompb.WriteRequest
			if err := proto.Unmarshal(req, &wr); err != nil {
				t.Fatal(err)
			}
			if len(wr.Timeseries) > batch || len(wr.Timeseries) < batch && i < len(reqs)-1 {
				t.Fatalf("request %d of %d holds %d samples, batch %d", i, len(reqs), len(wr.Timeseries), batch)
			}
			for _, ts := range wr.Timeseries {
				s := ts.Samples[0]
				if s.Timestamp <= prev || s.Timestamp > until {
					t.Fatalf("refresh %d: sample at %d, want (%d, %d]", k, s.Timestamp, prev, until)
				}
				fed[sampleKey{labelsString(ts.Labels), s.Timestamp}] = s.Value
				got++
			}
		}
		if got != n || n == 0 {
			t.Fatalf("refresh %d: %d samples said, %d sent", k, n, got)
		}
		prev = until
	}
	if reqs, n := feed.requests(prev); len(reqs) != 0 || n != 0 {
		t.Fatalf("%d more samples up to the same time", n)
	}
	want := 0
	for k, v := range all {
		if k.ts < g.endMs() || k.ts > prev {
			continue
		}
		want++
		if w, ok := fed[k]; !ok || math.Float64bits(w) != math.Float64bits(v) {
			t.Fatalf("%v: generated %v, fed %v (%v)", k, v, w, ok)
		}
	}
	if want != len(fed) {
		t.Fatalf("fed %d samples, want %d", len(fed), want)
	}
}

// fakeDashboardServer takes remote writes and answers query_range with
// the range and how far the data it was sent reaches; broken answers
// cached requests of refresh brokenAt differently.
type fakeDashboardServer struct {
	mu       sync.Mutex
	latest   int64 // newest sample written
	interval int64
	brokenAt int64 // a range end (ms) whose cached answer differs; 0: none
	queries  map[string]int
	early    []string // queries asked before their range's samples came
}

func (f *fakeDashboardServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/v1/write":
		b, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, b)
		var wr prompb.WriteRequest
		if err == nil {
			err = proto.Unmarshal(raw, &wr)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, ts := range wr.Timeseries {
			f.latest = max(f.latest, ts.Samples[0].Timestamp)
		}
	case "/api/v1/query_range":
		_ = r.ParseForm()
		q, start, end := r.Form.Get("query"), r.Form.Get("start"), r.Form.Get("end")
		endS, _ := strconv.ParseFloat(end, 64)
		endMs := int64(math.Round(endS * 1000))
		if f.latest < endMs-2*f.interval {
			f.early = append(f.early, q+"@"+end)
		}
		f.queries[r.Form.Get("nocache")]++
		v := 1
		if f.brokenAt != 0 && endMs == f.brokenAt && r.Form.Get("nocache") == "" {
			v = 2
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"q":%q},"values":[[%s,"%d"],[%s,"%d"]]}]}}`, q, start, v, end, v)
	default:
		http.NotFound(w, r)
	}
}

// TestReplayDashboard replays against a fake server: every range's
// samples are written before it is asked, each query is asked with and
// without the cache at every refresh, equal answers are counted as such
// and an unequal one is found.
func TestReplayDashboard(t *testing.T) {
	t.Parallel()
	g := testGenConfig()
	plan := newRefreshPlan(g, 5*time.Minute, 3)
	queries := []string{`rate(a[5m])`, `b`}
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			fake := &fakeDashboardServer{latest: g.endMs() - 1, interval: g.intervalMs(), queries: map[string]int{}}
			if broken {
				_, fake.brokenAt = plan.window(2)
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			feed := newRefreshFeed(extendedGen(g, plan), g.endMs(), 500)
			ts, written, err := replayDashboard(srv.URL, queries, plan, func(until int64) (int, error) {
				return feed.write(srv.URL+"/api/v1/write", until)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(fake.early) > 0 {
				t.Errorf("asked before the samples came: %q", fake.early)
			}
			if len(written) != plan.n || written[0] == 0 {
				t.Errorf("samples written before the refreshes: %v", written)
			}
			perKind := len(queries) * (plan.n + 1)
			if fake.queries[""] != perKind || fake.queries["1"] != perKind {
				t.Errorf("queries by nocache: %v, want %d each", fake.queries, perKind)
			}
			for _, tm := range ts {
				if tm.err != nil {
					t.Fatal(tm.err)
				}
				if len(tm.cached) != plan.n || len(tm.uncached) != plan.n || tm.compared != plan.n+1 || tm.series != 1 || tm.points != 2 {
					t.Errorf("%s: %d and %d timings, %d compared, %d series, %d points", tm.query, len(tm.cached), len(tm.uncached), tm.compared, tm.series, tm.points)
				}
				wantEqual := plan.n + 1
				if broken {
					wantEqual--
					if !strings.HasPrefix(tm.firstDiff, "refresh 2: byte ") {
						t.Errorf("%s: first difference %q", tm.query, tm.firstDiff)
					}
				}
				if tm.equal != wantEqual {
					t.Errorf("%s: %d of %d equal, want %d", tm.query, tm.equal, tm.compared, wantEqual)
				}
			}
			var out strings.Builder
			printRefresh(&out, diskOptions{span: model.Duration(g.span), refreshOffset: 5 * time.Minute}, &refreshReport{system: "fake", plan: plan, offset: time.Hour, written: written, timings: ts,
				cache: map[string]float64{"hits": 1, "partial_hits": 6}})
			for _, want := range []string{"| `rate(a[5m])` |", "partial_hits 6", "--query.results-cache.offset=3600s"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), "answers differ") != broken {
				t.Errorf("report:\n%s", out.String())
			}
		})
	}
}

// TestRefreshFlags: --refresh parses and moves the data's end.
func TestRefreshFlags(t *testing.T) {
	t.Parallel()
	app := kingpin.New("test", "")
	_, d := registerDisk(app)
	if _, err := app.Parse([]string{"disk", "--promhbase=bin/promhbase", "--refresh=20", "--refresh.offset=2m"}); err != nil {
		t.Fatal(err)
	}
	if d.refresh != 20 || d.refreshOffset != 2*time.Minute {
		t.Fatalf("refresh %d, offset %s", d.refresh, d.refreshOffset)
	}
	if err := runDisk(options{batch: 1, concurrency: 1}, diskOptions{systems: []string{sysVM}, vm: "vm", refresh: 3, repeats: 1, queryParts: 1}); err == nil || !strings.Contains(err.Error(), "--refresh=3") {
		t.Errorf("--refresh without promhbase: %v", err)
	}
	now := time.Now()
	if a, b := refreshDataEnd(now, time.Hour, 0), now.Add(-15*time.Minute).Truncate(time.Hour); !a.Equal(b) {
		t.Errorf("without refreshes the data ends at %s, want %s", a, b)
	}
}
