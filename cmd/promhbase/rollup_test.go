package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestRollupCommand backfills two hours from exactly 10:00 through serve
// with rollups off, then builds them with `promhbase rollup
// --start=10:00`: the hour before is built too (its last window, (09:55,
// 10:00], holds the sample at 10:00), the hours printed built start at 09:00,
// and serve then answers count_over_time over that window from the
// rollups alone.
func TestRollupCommand(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := testbackend.ServeFlags(t)
	srv, base := startServe(t, bin, append([]string{"--no-rollup.enabled"}, flags...)...)
	const hour = int64(1292148000) // 2010-12-12T10:00:00Z
	var series []prompb.TimeSeries
	for _, host := range []string{"web01", "web02"} {
		s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "cli_rollup"}, {Name: "host", Value: host}}}
		for ts := hour; ts < hour+2*3600; ts += 60 {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts * 1000, Value: float64(ts % 7)})
		}
		series = append(series, s)
	}
	remoteWrite(t, base, series)
	stopServe(t, srv)

	out, err := run(t, bin, append([]string{"rollup", "--start=2010-12-12T10:00:00Z", "--end=2010-12-12T11:59:59Z"}, flags...)...)
	if err != nil {
		t.Fatalf("rollup: %v\n%s", err, out)
	}
	for _, want := range []string{"built 3 hours (3 recorded built", "hours built: 2010-12-12T09:00:00Z .. 2010-12-12T12:00:00Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollup output lacks %q:\n%s", want, out)
		}
	}

	srv, base = startServe(t, bin, flags...)
	defer stopServe(t, srv)
	// Serve learns the rollups' span at its scheduler's first check,
	// which may end after it reports ready (on a busy HBase, seconds after).
	testproc.WaitMetrics(t, base, time.Minute, "the rollups' span known to serve", func(page testproc.MetricPage) (bool, string) {
		until := page.Sum("promhbase_rollup_built_until_timestamp_seconds")
		return until >= float64(hour+2*3600), fmt.Sprintf("rollups built until %v", until)
	})
	resp, err := http.PostForm(base+"/api/v1/query_range", url.Values{"query": {"count_over_time(cli_rollup[5m])"},
		"start": {"1292147700"}, "end": {"1292148300"}, "step": {"300"}, "max_source_resolution": {"5m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if res := resp.Header.Get("X-Promhbase-Resolution"); res != "5m" {
		t.Errorf("resolution %q, want 5m: the window ending at 10:00 is read from the rollups", res)
	}
	// Steps 09:55 (no sample), 10:00 (one), 10:05 (five).
	if len(r.Data.Result) != 2 {
		t.Fatalf("%d series, want 2: %+v", len(r.Data.Result), r.Data.Result)
	}
	for _, s := range r.Data.Result {
		if got := jsonOf(s.Values); got != `[[1292148000,"1"],[1292148300,"5"]]` {
			t.Errorf("points %s, want 10:00 = 1 and 10:05 = 5", got)
		}
	}
}

// jsonOf is v in JSON.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
