package rollup_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// TestDownsampledQueriesEqualRaw: over two days of counters with resets
// (one scraped on exact 15 s boundaries, one with jitter and a gap) and a
// gauge, range queries aligned to the resolution answer the same from
// rollups as from raw samples (within float summation error) for rate,
// increase and the five *_over_time functions, also under sum() and with
// an offset, and say which resolutions they read: the 5m rollups at a 1h
// step, the 1h rollups at a 5h step, and raw samples for the hours the
// rollups do not cover yet.
func TestDownsampledQueriesEqualRaw(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithRollups(t)
	H := int64(h0) * 1000
	const hours = 48
	end := H + hours*rollup.HourMs
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(name, inst string) prompb.TimeSeries {
		return prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "instance", Value: inst}, {Name: "job", Value: "node"}}}
	}
	a, b, g, hs := mk("c_total", "a"), mk("c_total", "b"), mk("g", "a"), mk("hist_seconds", "a")
	va, vb := 0.0, 1e6
	for ts := H; ts <= end; ts += 15_000 {
		va += float64(rng.IntN(100))
		if rng.IntN(500) == 0 {
			va = float64(rng.IntN(10))
		}
		a.Samples = append(a.Samples, prompb.Sample{Timestamp: ts, Value: va})
		jt := ts + int64(rng.IntN(7)) - 3
		if jt%rollup.HourMs > 10*60_000 && jt%rollup.HourMs < 50*60_000 && (jt/rollup.HourMs)%7 == 3 {
			continue // a gap of 40 minutes in some hours
		}
		vb += rng.Float64() * 1000
		if rng.IntN(300) == 0 {
			vb = rng.Float64()
		}
		b.Samples = append(b.Samples, prompb.Sample{Timestamp: jt, Value: vb})
		g.Samples = append(g.Samples, prompb.Sample{Timestamp: ts, Value: math.Round(rng.Float64()*10000) / 100})
		if ts%(5*60_000) == 0 {
			n := uint64((ts - H) / 60_000)
			hs.Histograms = append(hs.Histograms, prompb.FromIntHistogram(ts, &histogram.Histogram{Schema: 0, Count: 3 * n, Sum: float64(n),
				ZeroThreshold: 1e-128, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{int64(n), int64(n)}}))
		}
	}
	// The rollups of hours 1..41 are built (as `promhbase rollup` would);
	// hour 0 and the last ones are read raw.
	cfg := tb.RollupConfig()
	builder, err := rollup.NewBuilder(st, rollup.Options{Config: cfg, DataTable: tb.Data, UIDTable: tb.UID, Layout: mapping.DefaultLayout()})
	if err != nil {
		t.Fatal(err)
	}
	from, next := int64(h0+3600), int64(h0+42*3600)
	now := time.Unix(next+30*60, 0)
	srv := startAuto(t, st, tb, now, 50*time.Millisecond, false)
	srv.Write(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{a, b, g, hs}})
	for h := from; h < next; h += 3600 {
		if _, err := builder.BuildHour(ctxFor(t), h); err != nil {
			t.Fatal(err)
		}
	}
	// The server reads the hours built at its next refresh.
	deadline := time.Now().Add(time.Minute)
	waitResolution(t, srv.URL, "max_over_time(g[1h])", H+2*rollup.HourMs, H+41*rollup.HourMs, time.Until(deadline))

	for _, c := range []struct {
		q          string
		step       int64
		start, end int64
		wantRes    string
		ask        string // max_source_resolution; "": auto
	}{
		{"rate(c_total[1h])", rollup.HourMs, H + 2*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"increase(c_total[2h])", rollup.HourMs, H + 3*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"sum by (job) (rate(c_total[3h]))", rollup.HourMs, H + 4*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"sum_over_time(g[1h])", rollup.HourMs, H + 2*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"count_over_time(c_total[1h])", rollup.HourMs, H + 2*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"min_over_time(g[30m])", rollup.HourMs, H + 2*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"max_over_time(c_total[1h])", rollup.HourMs, H + 2*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"avg_over_time(g[1h] offset 1h)", rollup.HourMs, H + 3*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		// Ranges shorter than the step: the windows between are not read.
		{"sum_over_time(g[15m] offset 5m)", 2 * rollup.HourMs, H + 4*rollup.HourMs, H + 40*rollup.HourMs, "5m", ""},
		{"increase(c_total[10m])", 30 * 60_000, H + 4*rollup.HourMs, H + 40*rollup.HourMs, "5m", "5m"},
		{"rate(c_total[5h])", 5 * rollup.HourMs, H + 10*rollup.HourMs, H + 40*rollup.HourMs, "1h", ""},
		// Over the hours not built: raw samples for that part.
		{"rate(c_total[1h])", rollup.HourMs, H + 30*rollup.HourMs, H + 47*rollup.HourMs, "raw,5m", ""},
		{"sum_over_time(g[1h])", rollup.HourMs, H + 38*rollup.HourMs, H + 46*rollup.HourMs, "raw,5m", ""},
		// Ranges longer than the step overlap: each window counts in
		// several steps.
		{"rate(c_total[1h])", 5 * 60_000, H + 10*rollup.HourMs, H + 14*rollup.HourMs, "5m", "5m"},
		{"avg_over_time(g[2h])", 15 * 60_000, H + 10*rollup.HourMs, H + 20*rollup.HourMs, "5m", "5m"},
		// Not downsampled: a range below the window, a subquery, @.
		{"rate(c_total[1m])", rollup.HourMs, H + 2*rollup.HourMs, H + 40*rollup.HourMs, "raw", ""},
		{"max_over_time(rate(c_total[1h])[3h:1h])", rollup.HourMs, H + 4*rollup.HourMs, H + 40*rollup.HourMs, "raw", ""},
		{fmt.Sprintf("rate(c_total[1h] @ %d)", (H+20*rollup.HourMs)/1000), rollup.HourMs, H + 4*rollup.HourMs, H + 40*rollup.HourMs, "raw", ""},
	} {
		t.Run(c.q+"/"+c.wantRes, func(t *testing.T) {
			raw, rawRes := queryRange(t, srv.URL, c.q, c.start, c.end, c.step, "0s")
			down, res := queryRange(t, srv.URL, c.q, c.start, c.end, c.step, c.ask)
			if rawRes != "raw" || res != c.wantRes {
				t.Errorf("resolutions %q and %q, want raw and %q", rawRes, res, c.wantRes)
			}
			if raw.points() == 0 {
				t.Error("no point compared")
			}
			sameAnswers(t, raw, down)
		})
	}
	// A resolution that does not parse is refused.
	resp, err := http.PostForm(srv.URL+"/api/v1/query_range", url.Values{"query": {"g"}, "start": {"0"}, "end": {"3600"}, "step": {"60"},
		"max_source_resolution": {"fast"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("max_source_resolution=fast: status %d, want 400", resp.StatusCode)
	}
	// The hour before the built span was written after the scheduler
	// started: it builds it in the background, backwards.
	waitResolution(t, srv.URL, "sum_over_time(g[1h])", H+rollup.HourMs, H+5*rollup.HourMs, time.Until(deadline))
	raw, _ := queryRange(t, srv.URL, "sum_over_time(g[1h])", H+rollup.HourMs, H+5*rollup.HourMs, rollup.HourMs, "0s")
	first, _ := queryRange(t, srv.URL, "sum_over_time(g[1h])", H+rollup.HourMs, H+5*rollup.HourMs, rollup.HourMs, "")
	if fmt.Sprint(raw) != fmt.Sprint(first) || len(raw) != 1 {
		t.Errorf("first hours: downsampled %v, raw %v", first, raw)
	}
	// Native histograms are not downsampled: such a query is answered raw,
	// whether the rollups (the built hours) or the raw part of a joined
	// selection (the hours after 41) meet them.
	for _, q := range []string{"histogram_quantile(0.9, rate(hist_seconds[1h]))", "hist_seconds", "sum_over_time(hist_seconds[1h])",
		"max_over_time({__name__=~\"g|hist_seconds\"}[1h])"} {
		for _, span := range [][2]int64{{2, 40}, {30, 47}} {
			from, to := H+span[0]*rollup.HourMs, H+span[1]*rollup.HourMs
			raw, _ := queryRange(t, srv.URL, q, from, to, rollup.HourMs, "0s")
			got, res := queryRange(t, srv.URL, q, from, to, rollup.HourMs, "")
			if res != "raw" || len(raw) == 0 || fmt.Sprint(raw) != fmt.Sprint(got) {
				t.Errorf("%s over hours %v: resolution %q, answer %v, raw %v", q, span, res, got, raw)
			}
		}
	}
	// A plain selector reads raw samples by default (the last sample
	// before each step: rollups do not hold it exactly); asked for 5m, it
	// reads the average of the window that ends at each step (the windows
	// between the steps are not read), an approximation.
	if raw, res := queryRange(t, srv.URL, "g", H+2*rollup.HourMs, H+40*rollup.HourMs, rollup.HourMs, ""); res != "raw" || len(raw) != 1 {
		t.Errorf("plain selector, auto: resolution %q, %d series", res, len(raw))
	}
	down, res := queryRange(t, srv.URL, "g", H+2*rollup.HourMs, H+40*rollup.HourMs, rollup.HourMs, "5m")
	if res != "5m; approximate" || len(down) != 1 {
		t.Errorf("plain selector: resolution %q, %d series", res, len(down))
	}
	avg, _ := queryRange(t, srv.URL, "avg_over_time(g[5m])", H+2*rollup.HourMs, H+40*rollup.HourMs, rollup.HourMs, "0s")
	for k, ds := range down {
		if !strings.Contains(k, "__name__:g") {
			t.Errorf("plain selector: series %s, want its name kept", k)
		}
		var as map[int64]float64
		for _, v := range avg {
			as = v // one series, as g is
		}
		if len(ds) != len(as) || len(ds) == 0 {
			t.Errorf("plain selector: %d points, raw avg_over_time(g[5m]) %d", len(ds), len(as))
		}
		for ts, v := range ds {
			if a, ok := as[ts]; !ok || math.Abs(a-v) > 1e-9*math.Max(math.Abs(a), 1) {
				t.Errorf("plain selector at %d: %v, raw avg_over_time(g[5m]) %v", ts, v, a)
			}
		}
	}
}

// waitResolution polls q over [start, end] at a step of an hour until
// it is answered from the 5m rollups, failing tb after within.
func waitResolution(tb testing.TB, url, q string, start, end int64, within time.Duration) {
	tb.Helper()
	poll.Until(tb, within, 50*time.Millisecond, "answered from the 5m rollups", func() (bool, string) {
		_, res := queryRange(tb, url, q, start, end, rollup.HourMs, "")
		return res == "5m", fmt.Sprintf("%s over [%d, %d] at resolution %q", q, start, end, res)
	})
}
