package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestAdminDeleteSeries: the admin API's delete_series through the
// in-process server, on the backend PROMHBASE_TEST_BACKEND chooses:
// exactly the samples of the selected series in [start, end] (both
// inclusive, on odd milliseconds) go, as query_range and remote read see
// them; the sample just before start and just after end, the other
// series of the metric and the same labels under another metric stay.
// Deleting a series' samples of a whole day drops it from that day's
// label values and name-less selectors (the series index); written again
// through the same server, it is found again. clean_tombstones answers
// 204.
func TestAdminDeleteSeries(t *testing.T) {
	t.Parallel()
	for _, lc := range layouts {
		t.Run(lc.name, func(t *testing.T) { testAdminDeleteSeries(t, lc.layout()) })
	}
}

func testAdminDeleteSeries(t *testing.T, layout mapping.Layout) {
	h := newHarnessWith(t, layout, testserver.Options{Adapter: adapter.Options{MaxRequestBytes: 8 << 20}, ColdReads: true, EnableAdmin: true})
	api := promAPI{name: "promhbase", base: h.url, client: http.DefaultClient}
	ctx := context.Background()

	// Three hours from t0, a sample every 15 s, and one on each side of
	// and on each bound of the range deleted.
	start, end := t0+30*60_000+7, t0+2*hour()+10*60_000+3
	times := every(t0, t0+3*hour()-1, 15_000)
	times = append(times, start-1, start, end, end+1)
	slices.Sort(times)
	var series []prompb.TimeSeries
	for _, ls := range [][]prompb.Label{
		lbl("__name__", "del_me", "job", "d", "i", "0"),
		lbl("__name__", "del_me", "job", "d", "i", "1"),
		lbl("__name__", "del_other", "job", "d", "i", "0"),
	} {
		series = append(series, floatSeries(ls, times))
	}
	h.send(series)
	h.check("before", t0-hour(), t0+4*hour(), eq("job", "d"))

	if code, body := postAdmin(t, h.url+"/api/v1/admin/tsdb/delete_series", url.Values{
		"match[]": {`del_me{i="0"}`}, "start": {apiTime(start)}, "end": {apiTime(end)},
	}); code != http.StatusNoContent {
		t.Fatalf("delete_series: %d %s, want 204", code, body)
	}
	h.forget(`{__name__="del_me", i="0", job="d"}`, start, end)
	for _, ts := range []int64{start - 1, end + 1} {
		if _, ok := h.model[`{__name__="del_me", i="0", job="d"}`].samples[ts]; !ok {
			t.Fatalf("the model lost the neighbour at %d", ts)
		}
	}
	// Remote read: raw samples, with and without the metric name.
	h.check("after/by name", t0-hour(), t0+4*hour(), eq("__name__", "del_me"))
	h.check("after/name-less", t0-hour(), t0+4*hour(), eq("job", "d"))
	h.check("after/one series", t0-hour(), t0+4*hour(), eq("i", "0"), eq("__name__", "del_me"))
	// query_range: the sample each step sees (its value is its time), as
	// the model has it (Prometheus's lookback of 5 minutes).
	h.checkRange(ctx, api, `{job="d"}`, t0, t0+3*hour(), 15*time.Second)
	// Around each bound, every millisecond: start-1 is seen at start, and
	// end+1 is seen from end+1 on.
	h.checkRange(ctx, api, `del_me`, start-2, start+1, time.Millisecond)
	h.checkRange(ctx, api, `del_me`, end-1, end+2, time.Millisecond)

	// A whole day of one series: its label value and its name-less
	// selection go from that day; written again, they are back.
	d0 := t0 / (mapping.DaySeconds * 1000) * mapping.DaySeconds * 1000
	dayEnd := d0 + mapping.DaySeconds*1000 - 1
	shardTimes := every(d0+hour(), d0+3*hour(), 60_000)
	s0, s1 := lbl("__name__", "reimport", "shard", "s0"), lbl("__name__", "reimport", "shard", "s1")
	h.send([]prompb.TimeSeries{floatSeries(s0, shardTimes), floatSeries(s1, shardTimes)})
	shards := func() []string {
		t.Helper()
		got, err := api.stringList(ctx, "/api/v1/label/shard/values", url.Values{"start": {apiTime(d0)}, "end": {apiTime(dayEnd)}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := shards(), []string{"s0", "s1"}; !slices.Equal(got, want) {
		t.Fatalf("shard values before the delete: %v, want %v", got, want)
	}
	if code, body := postAdmin(t, h.url+"/api/v1/admin/tsdb/delete_series", url.Values{
		"match[]": {`{shard="s0"}`}, "start": {apiTime(d0)}, "end": {apiTime(dayEnd)},
	}); code != http.StatusNoContent {
		t.Fatalf("delete_series of a day: %d %s, want 204", code, body)
	}
	h.forget(`{__name__="reimport", shard="s0"}`, d0, dayEnd)
	if got, want := shards(), []string{"s1"}; !slices.Equal(got, want) {
		t.Errorf("shard values after deleting s0's day: %v, want %v", got, want)
	}
	h.check("day deleted/name-less", d0, dayEnd, eq("shard", "s0"))
	h.checkRange(ctx, api, `{shard=~"s.*"}`, d0+hour(), d0+3*hour(), time.Minute)

	h.send([]prompb.TimeSeries{floatSeries(s0, shardTimes)})
	if got, want := shards(), []string{"s0", "s1"}; !slices.Equal(got, want) {
		t.Errorf("shard values after writing s0's day again: %v, want %v", got, want)
	}
	h.check("written again/name-less", d0, dayEnd, eq("shard", "s0"))
	h.checkRange(ctx, api, `{shard=~"s.*"}`, d0+hour(), d0+3*hour(), time.Minute)

	if code, body := postAdmin(t, h.url+"/api/v1/admin/tsdb/clean_tombstones", nil); code != http.StatusNoContent {
		t.Errorf("clean_tombstones: %d %s, want 204", code, body)
	}
	// And what was deleted stays deleted after it.
	h.check("after clean_tombstones", t0-hour(), t0+4*hour(), eq("job", "d"))
}

// every returns the times from start (ms) every step up to end, inclusive.
func every(start, end, step int64) []int64 {
	var out []int64
	for t := start; t <= end; t += step {
		out = append(out, t)
	}
	return out
}

// floatSeries is a series with a sample at each of times, its value the
// time in seconds.
func floatSeries(ls []prompb.Label, times []int64) prompb.TimeSeries {
	s := prompb.TimeSeries{Labels: ls}
	for _, ts := range times {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts, Value: float64(ts) / 1000})
	}
	return s
}

// apiTime renders Unix ms as the API's seconds with milliseconds.
func apiTime(ms int64) string { return fmt.Sprintf("%d.%03d", ms/1000, ms%1000) }

// postAdmin POSTs form to an admin endpoint and returns the status and
// body.
func postAdmin(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	sb.Write(buf[:n])
	return resp.StatusCode, sb.String()
}

// forget removes the samples of the series key in [start, end] from the
// model, as a delete does.
func (h *harness) forget(key string, start, end int64) {
	h.t.Helper()
	m := h.model[key]
	if m == nil {
		h.t.Fatalf("no series %s in the model", key)
	}
	for ts := range m.samples {
		if ts >= start && ts <= end {
			delete(m.samples, ts)
		}
	}
}

// lookback is Prometheus's default lookback delta.
const lookback = 5 * 60_000

// checkRange runs expr, a selector of series whose values are their
// times in seconds (floatSeries), as a range query and compares each
// series' points with the model: at each step, the time of the newest
// sample within the lookback.
func (h *harness) checkRange(ctx context.Context, api promAPI, expr string, start, end int64, step time.Duration) {
	h.t.Helper()
	sel, err := parserForTests.ParseMetricSelector(expr)
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := api.query(ctx, promQuery{expr: expr, start: time.UnixMilli(start), end: time.UnixMilli(end), step: step})
	if err != nil {
		h.t.Fatalf("%s: %v", expr, err)
	}
	want := map[string][]string{}
	for _, m := range h.model {
		ok := true
		for _, mt := range sel {
			ok = ok && mt.Matches(m.lbls.Get(mt.Name))
		}
		if !ok {
			continue
		}
		key := m.lbls.String()
		var pts []string
		for at := start; at <= end; at += step.Milliseconds() {
			newest := int64(math.MinInt64)
			for ts := range m.samples {
				if ts <= at && ts > at-lookback && ts > newest {
					newest = ts
				}
			}
			if newest != math.MinInt64 {
				pts = append(pts, fmt.Sprintf("%d@%d", newest, at))
			}
		}
		if len(pts) > 0 {
			want[key] = append(want[key], pts...)
		}
	}
	got := map[string][]string{}
	for key, pts := range res.series {
		for _, p := range pts {
			got[key] = append(got[key], fmt.Sprintf("%d@%d", int64(math.Round(p.v*1000)), p.t))
		}
	}
	for key, w := range want {
		if g := got[key]; !slices.Equal(g, w) {
			h.t.Errorf("%s [%d, %d] step %s: series %s:\n got %v\nwant %v", expr, start, end, step, key, g, w)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			h.t.Errorf("%s [%d, %d]: unexpected series %s", expr, start, end, key)
		}
	}
}

var parserForTests = parser.NewParser(parser.Options{})
