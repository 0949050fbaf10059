package rollup_test

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// TestDeleteSeriesDropsRollups: delete_series removes the rollups of the
// windows that held deleted samples and builds again the windows its range
// cuts, so that downsampled answers stay equal to raw ones after a delete
// (a range inside one series, and a whole series).
func TestDeleteSeriesDropsRollups(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithRollups(t)
	H := int64(h0) * 1000
	const hours = 8
	end := H + hours*rollup.HourMs
	mk := func(inst string) prompb.TimeSeries {
		s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "g"}, {Name: "instance", Value: inst}}}
		for ts := H; ts <= end; ts += 15_000 {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts, Value: float64(ts/15_000%97) + 0.5})
		}
		return s
	}
	srv := startAuto(t, st, tb, time.UnixMilli(end+30*60_000), 50*time.Millisecond, true)
	srv.Write(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{mk("a"), mk("b"), mk("c")}})
	// The scheduler builds the hours written before its span.
	waitResolution(t, srv.URL, "sum_over_time(g[1h])", H+rollup.HourMs, end-rollup.HourMs, time.Minute)
	del := func(match string, start, end int64) {
		t.Helper()
		post(t, srv.URL+"/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {match},
			"start": {strconv.FormatFloat(float64(start)/1000, 'f', 3, 64)}, "end": {strconv.FormatFloat(float64(end)/1000, 'f', 3, 64)}},
			http.StatusNoContent)
	}
	del(`g{instance="a"}`, H+rollup.HourMs+7*60_000+3_000, H+3*rollup.HourMs+2*60_000)
	del(`g{instance="b"}`, 0, end+rollup.HourMs)
	for _, q := range []string{"sum_over_time(g[1h])", "count_over_time(g[30m])", "max_over_time(g[1h])"} {
		// The hours the deletes cut, built again, are read from rollups
		// once the server reads the progress row again (within 50 ms).
		waitResolution(t, srv.URL, q, H+rollup.HourMs, end-rollup.HourMs, time.Minute)
		raw, _ := queryRange(t, srv.URL, q, H+rollup.HourMs, end-rollup.HourMs, rollup.HourMs, "0s")
		down, res := queryRange(t, srv.URL, q, H+rollup.HourMs, end-rollup.HourMs, rollup.HourMs, "")
		if res != "5m" {
			t.Errorf("%s: resolution %q after the delete, want 5m", q, res)
		}
		if len(raw) != 2 || len(down) != len(raw) {
			t.Errorf("%s: %d series downsampled, %d raw, want 2", q, len(down), len(raw))
		}
		for k, rs := range raw {
			for ts, rv := range rs {
				if dv, ok := down[k][ts]; !ok || math.Abs(dv-rv) > 1e-9*math.Max(1, math.Abs(rv)) {
					t.Errorf("%s %s at %d: %v (found %v), raw %v", q, k, ts, dv, ok, rv)
				}
			}
			if len(down[k]) != len(rs) {
				t.Errorf("%s %s: %d points, raw %d: %v", q, k, len(down[k]), len(rs), fmt.Sprint(down[k]))
			}
		}
	}
}
