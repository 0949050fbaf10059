package promapi_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// statSeries is a series of the status test and the days it has data on
// (days since base).
type statSeries struct {
	lbls labels.Labels
	days []int
}

// statFixture returns the series of a tenant: n series of three metrics
// of unequal sizes, job of two values, instance of n/5, pod on a third,
// over the days 0..2 of base (a label set drawn again adds its days);
// seed varies them between tenants.
func statFixture(n, seed int) []statSeries {
	var out []statSeries
	at := map[string]int{}
	for i := range n {
		kv := []string{"__name__", fmt.Sprintf("metric_%d", (i*seed)%5%3), "job", []string{"api", "node"}[i%2],
			"instance", fmt.Sprintf("host-%d", i/5)}
		if i%3 == 0 {
			kv = append(kv, "pod", fmt.Sprintf("pod-%d-%d", seed, i))
		}
		days := []int{i % 3}
		if i%4 == 0 && i%3 != 2 {
			days = append(days, i%3+1)
		}
		lbls := labels.FromStrings(kv...)
		if j, ok := at[lbls.String()]; ok { // the same series: its days too
			for _, d := range days {
				if !slices.Contains(out[j].days, d) {
					out[j].days = append(out[j].days, d)
				}
			}
			continue
		}
		at[lbls.String()] = len(out)
		out = append(out, statSeries{lbls, days})
	}
	return out
}

// writeTenant writes ss for tenant org (a sample at each day's noon).
func writeTenant(t *testing.T, u, org string, ss []statSeries) {
	t.Helper()
	var req prompb.WriteRequest
	for i, s := range ss {
		ts := prompb.TimeSeries{}
		s.lbls.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
		for _, d := range s.days {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: base.Add(time.Duration(d)*24*time.Hour + 12*time.Hour).UnixMilli(), Value: float64(i)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	testhttp.Expect(t, testhttp.Request{Method: http.MethodPost, URL: u + "/api/v1/write", Body: promremote.MustBody(t, &req),
		Header: map[string]string{"Content-Type": "application/x-protobuf", tenant.Header: org}}, http.StatusNoContent)
}

// statusAnswer is the JSON of /api/v1/status/tsdb.
type statusAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		HeadStats struct {
			NumSeries     uint64 `json:"numSeries"`
			NumLabelPairs uint64 `json:"numLabelPairs"`
			ChunkCount    int64  `json:"chunkCount"`
			MinTime       int64  `json:"minTime"`
			MaxTime       int64  `json:"maxTime"`
		} `json:"headStats"`
		TotalSeries          uint64      `json:"totalSeries"`
		TotalLabelValuePairs uint64      `json:"totalLabelValuePairs"`
		Metrics              []statEntry `json:"seriesCountByMetricName"`
		Values               []statEntry `json:"labelValueCountByLabelName"`
		Memory               []statEntry `json:"memoryInBytesByLabelName"`
		Pairs                []statEntry `json:"seriesCountByLabelValuePair"`
		Labels               []statEntry `json:"seriesCountByLabelName"`
		Focus                []statEntry `json:"seriesCountByFocusLabelValue"`
	} `json:"data"`
}

type statEntry struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// wantStatus computes the answer's counts from the series: those with
// data on a day of [from, to] that one of sels selects (none: all).
func wantStatus(t *testing.T, ss []statSeries, from, to int, sels []string, focus string) (series, lbls, pairs uint64, rank map[string]map[string]uint64) {
	t.Helper()
	var sets [][]*labels.Matcher
	for _, s := range sels {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, ms)
	}
	rank = map[string]map[string]uint64{}
	for _, k := range []string{"metrics", "values", "memory", "pairs", "labels", "focus"} {
		rank[k] = map[string]uint64{}
	}
	size := func(n int) uint64 { return uint64(n + 1) } // names and values below 255 bytes
	for _, s := range ss {
		if !slices.ContainsFunc(s.days, func(d int) bool { return d >= from && d <= to }) {
			continue
		}
		if len(sets) > 0 && !slices.ContainsFunc(sets, func(ms []*labels.Matcher) bool {
			return !slices.ContainsFunc(ms, func(m *labels.Matcher) bool { return !m.Matches(s.lbls.Get(m.Name)) })
		}) {
			continue
		}
		series++
		s.lbls.Range(func(l labels.Label) {
			lbls++
			p := l.Name + "=" + l.Value
			if rank["pairs"][p] == 0 {
				pairs++
				rank["values"][l.Name]++
			}
			rank["pairs"][p]++
			rank["labels"][l.Name]++
			rank["memory"][l.Name] += size(len(l.Name)) + size(len(l.Value))
			if l.Name == "__name__" {
				rank["metrics"][l.Value]++
			}
			if l.Name == focus {
				rank["focus"][l.Value]++
			}
		})
	}
	return series, lbls, pairs, rank
}

// checkRanking checks a ranking of n entries against all counts: each
// count, the order (value, then name), and nothing left out that counts
// more than the last entry (ties there may be broken otherwise than by
// name); exact: the ranking is all's, sorted, cut at n.
func checkRanking(t *testing.T, what string, got []statEntry, all map[string]uint64, n int, exact bool) {
	t.Helper()
	var want []statEntry
	for k, v := range all {
		want = append(want, statEntry{k, v})
	}
	slices.SortFunc(want, func(a, b statEntry) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), cmp.Compare(a.Name, b.Name))
	})
	want = want[:min(n, len(want))]
	if exact && !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Errorf("%s = %v\nwant %v", what, got, want)
		return
	}
	if got == nil || len(got) != len(want) {
		t.Errorf("%s: %v, want %d entries (JSON [] for none)", what, got, len(want))
		return
	}
	for i, e := range got {
		if all[e.Name] != e.Value || i > 0 && cmp.Or(cmp.Compare(e.Value, got[i-1].Value), cmp.Compare(got[i-1].Name, e.Name)) > 0 {
			t.Errorf("%s: entry %d %v (counted %d) out of place in %v", what, i, e, all[e.Name], got)
		}
	}
	for k, v := range all {
		if len(got) > 0 && v > got[len(got)-1].Value && !slices.ContainsFunc(got, func(e statEntry) bool { return e.Name == k }) {
			t.Errorf("%s: %s=%d left out of %v", what, k, v, got)
		}
	}
}

// TestTSDBStatus: /api/v1/status/tsdb through the tenants' routing, its
// counts computed from the series each tenant wrote, with Prometheus's
// and VictoriaMetrics's parameters.
func TestTSDBStatus(t *testing.T) {
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Tenants: &testserver.TenantOptions{AutoCreate: true}})
	tenants := map[string][]statSeries{"team-a": statFixture(600, 1), "team-b": statFixture(150, 2)}
	for org, ss := range tenants {
		writeTenant(t, srv.URL, org, ss)
	}
	// A series of today, for date's default.
	now := time.Now().UTC()
	todayIdx := int(now.Sub(base) / (24 * time.Hour))
	tenants["team-a"] = append(tenants["team-a"], statSeries{labels.FromStrings("__name__", "now_metric", "job", "api"), []int{todayIdx}})
	day := func(d int) string { return base.AddDate(0, 0, d).Format(time.DateOnly) }
	get := func(t *testing.T, org, params string) (int, statusAnswer) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/status/tsdb?"+params, nil)
		if err != nil {
			t.Fatal(err)
		}
		if org != "" {
			req.Header.Set(tenant.Header, org)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var a statusAnswer
		if resp.StatusCode/100 == 2 || resp.Header.Get("Content-Type") == "application/json" {
			if err := json.Unmarshal(body, &a); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
		} else {
			a.Error = string(body)
		}
		return resp.StatusCode, a
	}
	{
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "now_metric"}, {Name: "job", Value: "api"}},
			Samples: []prompb.Sample{{Timestamp: now.UnixMilli(), Value: 1}}}
		req := prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}}
		data, _ := req.Marshal()
		hr, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, data)))
		hr.Header.Set(tenant.Header, "team-a")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("write of today's series: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	for _, tc := range []struct {
		name, org string
		params    url.Values
		from, to  int // days since base counted
		n         int // the rankings' length
		sels      []string
		focus     string
		series    []statSeries // nil: the series the tenant wrote
	}{
		{name: "a day", org: "team-a", params: url.Values{"date": {day(0)}}, n: 10},
		{name: "another tenant", org: "team-b", params: url.Values{"date": {day(0)}}, n: 10},
		{name: "another day", org: "team-b", params: url.Values{"date": {day(2)}}, from: 2, to: 2, n: 10},
		{name: "limit", org: "team-a", params: url.Values{"date": {day(1)}, "limit": {"2"}}, from: 1, to: 1, n: 2},
		{name: "topN", org: "team-a", params: url.Values{"date": {day(1)}, "topN": {"3"}}, from: 1, to: 1, n: 3},
		{name: "topN 0 is 1", org: "team-a", params: url.Values{"date": {day(1)}, "topN": {"0"}}, from: 1, to: 1, n: 1},
		{name: "range", org: "team-a", params: url.Values{"start": {unix(0)}, "end": {unix(47 * time.Hour)}}, from: 0, to: 1, n: 10},
		{name: "match", org: "team-a", params: url.Values{"date": {day(0)}, "match[]": {`{job="api"}`}}, n: 10, sels: []string{`{job="api"}`}},
		{name: "match two", org: "team-b", params: url.Values{"date": {day(1)}, "match[]": {`metric_1`, `{instance=~"host-1.*", pod!=""}`}},
			from: 1, to: 1, n: 10, sels: []string{`metric_1`, `{instance=~"host-1.*", pod!=""}`}},
		{name: "focus", org: "team-a", params: url.Values{"date": {day(0)}, "focusLabel": {"instance"}, "topN": {"5"}}, n: 5, focus: "instance"},
		{name: "focus and match", org: "team-a", params: url.Values{"date": {day(2)}, "focusLabel": {"job"}, "match[]": {`{__name__=~"metric_[02]"}`}},
			from: 2, to: 2, n: 10, focus: "job", sels: []string{`{__name__=~"metric_[02]"}`}},
		{name: "today by default", org: "team-a", from: todayIdx, to: todayIdx, n: 10},
		{name: "tenant not created", org: "team-c", params: url.Values{"date": {day(0)}}, n: 10, series: []statSeries{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, a := get(t, tc.org, tc.params.Encode())
			if code != http.StatusOK || a.Status != "success" {
				t.Fatalf("%d %+v", code, a)
			}
			ss := tc.series
			if ss == nil {
				ss = tenants[tc.org]
			}
			if tc.params == nil && int(time.Now().UTC().Sub(base)/(24*time.Hour)) != todayIdx {
				t.Skip("the day changed since the series of today was written")
			}
			series, lbls, pairs, rank := wantStatus(t, ss, tc.from, tc.to, tc.sels, tc.focus)
			d := a.Data
			if d.TotalSeries != series || d.HeadStats.NumSeries != series || d.TotalLabelValuePairs != lbls || d.HeadStats.NumLabelPairs != pairs {
				t.Errorf("series %d/%d, labels %d, pairs %d; want %d, %d, %d", d.TotalSeries, d.HeadStats.NumSeries, d.TotalLabelValuePairs, d.HeadStats.NumLabelPairs, series, lbls, pairs)
			}
			checkRanking(t, "seriesCountByMetricName", d.Metrics, rank["metrics"], tc.n, true)
			checkRanking(t, "labelValueCountByLabelName", d.Values, rank["values"], tc.n, true)
			checkRanking(t, "seriesCountByLabelName", d.Labels, rank["labels"], tc.n, true)
			checkRanking(t, "memoryInBytesByLabelName", d.Memory, rank["memory"], tc.n, true)
			checkRanking(t, "seriesCountByLabelValuePair", d.Pairs, rank["pairs"], tc.n, false)
			checkRanking(t, "seriesCountByFocusLabelValue", d.Focus, rank["focus"], tc.n, false)
		})
	}
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			org, params string
			code        int
			msg         string
		}{
			{"team-a", "limit=0", 400, "limit must be a positive number"},
			{"team-a", "limit=10001", 400, "limit must not exceed 10000"},
			{"team-a", "topN=x", 400, "cannot parse `topN`"},
			{"team-a", "date=2024-13-01", 400, "cannot parse `date`"},
			{"team-a", "match[]=" + url.QueryEscape("{job="), 400, "invalid parameter"},
			{"team-a", "match[]=" + url.QueryEscape(`{job=~".*"}`), 400, "at least one non-empty matcher"},
			{"team-a", "start=" + unix(time.Hour) + "&end=" + unix(0), 400, "before start"},
			{"", "", 401, "no org id"},
			{"team-a|team-b", "", 400, "multiple org IDs"},
		} {
			code, a := get(t, tc.org, tc.params)
			if code != tc.code || !strings.Contains(strings.ToLower(a.Error), strings.ToLower(tc.msg)) {
				t.Errorf("%s %q: %d %q, want %d %q", tc.org, tc.params, code, a.Error, tc.code, tc.msg)
			}
			if code == 400 && tc.org == "team-a" && a.ErrorType != "bad_data" {
				t.Errorf("%q: error type %q, want bad_data", tc.params, a.ErrorType)
			}
		}
	})
	t.Run("head stats", func(t *testing.T) {
		_, a := get(t, "team-a", "date="+day(1))
		h := a.Data.HeadStats
		if start := base.AddDate(0, 0, 1).UnixMilli(); h.MinTime != start || h.MaxTime != start+86400_000-1 || h.ChunkCount != 0 {
			t.Errorf("head stats %+v: want the day's bounds and no chunks", h)
		}
	})
}

// TestTSDBStatusOneTenant: a server without tenants answers too.
func TestTSDBStatusOneTenant(t *testing.T) {
	u := fixture(t)
	resp, err := http.Get(u + "/api/v1/status/tsdb?date=" + base.Format(time.DateOnly) + "&focusLabel=job")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a statusAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	// The fixture's four series: http_requests_total (2), temp_celsius,
	// req_duration_seconds.
	if a.Data.TotalSeries != 4 || !slices.Equal(a.Data.Focus, []statEntry{{"api", 3}, {"node", 1}}) ||
		!slices.Equal(a.Data.Metrics, []statEntry{{"http_requests_total", 2}, {"req_duration_seconds", 1}, {"temp_celsius", 1}}) {
		t.Errorf("%+v", a.Data)
	}
}
