package promapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testclock"
	"github.com/promhbase/promhbase/test/testkit/testserver"
	"github.com/promhbase/promhbase/web/promapi"
)

// guardQueryable writes guard_up{instance="a".."d"} and guard_other, a
// sample every 15 s for 20 min from base, and returns the read path over
// them.
func guardQueryable(t *testing.T) promapi.Queryable {
	t.Helper()
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{})
	var req prompb.WriteRequest
	for _, l := range [][]prompb.Label{
		{{Name: "__name__", Value: "guard_up"}, {Name: "instance", Value: "a"}},
		{{Name: "__name__", Value: "guard_up"}, {Name: "instance", Value: "b"}},
		{{Name: "__name__", Value: "guard_up"}, {Name: "instance", Value: "c"}},
		{{Name: "__name__", Value: "guard_up"}, {Name: "instance", Value: "d"}},
		{{Name: "__name__", Value: "guard_other"}, {Name: "instance", Value: "a"}},
	} {
		ts := prompb.TimeSeries{Labels: l}
		for i := range 80 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: base.Add(time.Duration(i) * 15 * time.Second).UnixMilli(), Value: 1})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	srv.Write(t, &req)
	return srv.Server.Queryable()
}

// guardAnswer is an answer of the API: its status code and JSON.
type guardAnswer struct {
	code int
	resp struct {
		Status, ErrorType, Error string
		Data                     json.RawMessage
	}
}

// get answers path on api.
func get(t *testing.T, api *promapi.API, path string) guardAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var a guardAnswer
	a.code = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &a.resp); err != nil {
		t.Fatalf("%s: %d %s: %v", path, rec.Code, rec.Body, err)
	}
	return a
}

func rangeQuery(q string, start, end time.Duration, step string) string {
	return "/api/v1/query_range?" + url.Values{"query": {q}, "start": {unix(start)}, "end": {unix(end)}, "step": {step}}.Encode()
}

func instantQuery(q string, at time.Duration) string {
	return "/api/v1/query?" + url.Values{"query": {q}, "time": {unix(at)}}.Encode()
}

// TestGuards: each guard through the HTTP handler, as Mimir answers, on
// both evaluators; the clock is at base+20m, the data's end.
func TestGuards(t *testing.T) {
	qa := guardQueryable(t)
	clock := testclock.New(base.Add(20 * time.Minute))
	const lengthErr = "the total query time range exceeds the limit (query length: 1h0m0s, limit: 1m0s) (err-mimir-max-total-query-length). " +
		"To adjust the related per-tenant limit, configure max_total_query_length in --runtime-config.file or --query.max-total-query-length, " +
		"or contact your service administrator."
	const seriesErr = "the query exceeded the maximum number of series (limit: 3 series) (err-mimir-max-series-per-query). " +
		"To adjust the related per-tenant limit, configure max_fetched_series_per_query in --runtime-config.file or " +
		"--query.max-fetched-series-per-query, or contact your service administrator."
	const blockedErr = "the request has been blocked by the cluster administrator (err-mimir-query-blocked)"
	blocked := func(pattern string, regex bool) []promapi.BlockedQuery {
		b, err := promapi.NewBlockedQuery(pattern, regex)
		if err != nil {
			t.Fatal(err)
		}
		return []promapi.BlockedQuery{b}
	}
	tests := []struct {
		name   string
		guards promapi.Guards
		path   string
		code   int
		// errType and err: the error's; data: the answer's data
		// (compacted JSON) when not empty.
		errType, err, data string
	}{
		{"length over", promapi.Guards{MaxTotalQueryLength: time.Minute}, rangeQuery("guard_up", 0, time.Hour, "60"), 400, "bad_data", lengthErr, ""},
		{"length at the limit", promapi.Guards{MaxTotalQueryLength: time.Minute}, rangeQuery(`guard_up{instance="a"}`, 0, time.Minute, "60"), 200, "", "",
			`{"resultType":"matrix","result":[{"metric":{"__name__":"guard_up","instance":"a"},"values":[[1704067200,"1"],[1704067260,"1"]]}]}`},
		{"length not of instant queries", promapi.Guards{MaxTotalQueryLength: time.Nanosecond}, instantQuery(`count(guard_up)`, 10*time.Minute), 200, "", "",
			`{"resultType":"vector","result":[{"metric":{},"value":[1704067800,"4"]}]}`},
		{"length after the lookback clamp", promapi.Guards{MaxTotalQueryLength: 10 * time.Minute, MaxQueryLookback: 5 * time.Minute},
			rangeQuery(`count(guard_up)`, 0, 20*time.Minute, "600"), 200, "", "",
			`{"resultType":"matrix","result":[{"metric":{},"values":[[1704068400,"4"]]}]}`},
		{"length of series", promapi.Guards{MaxTotalQueryLength: time.Minute}, "/api/v1/series?match[]=guard_up&start=" + unix(0) + "&end=" + unix(time.Hour), 400, "bad_data", lengthErr, ""},
		{"lookback: range before it answers empty", promapi.Guards{MaxQueryLookback: 5 * time.Minute}, rangeQuery("guard_up", 0, 10*time.Minute, "60"), 200, "", "",
			`{"resultType":"matrix","result":[]}`},
		{"lookback: range start clamped by whole steps", promapi.Guards{MaxQueryLookback: 5*time.Minute - time.Second},
			rangeQuery(`count(guard_up)`, 0, 20*time.Minute, "120"), 200, "", "",
			`{"resultType":"matrix","result":[{"metric":{},"values":[[1704068160,"4"],[1704068280,"4"],[1704068400,"4"]]}]}`},
		{"lookback: instant selection clamped", promapi.Guards{MaxQueryLookback: 5 * time.Minute}, instantQuery(`count_over_time(guard_up{instance="a"}[20m])`, 20*time.Minute), 200, "", "",
			`{"resultType":"vector","result":[{"metric":{"instance":"a"},"value":[1704068400,"20"]}]}`},
		{"lookback: instant before it", promapi.Guards{MaxQueryLookback: 5 * time.Minute}, instantQuery(`guard_up`, 10*time.Minute), 200, "", "",
			`{"resultType":"vector","result":[]}`},
		{"lookback: labels before it", promapi.Guards{MaxQueryLookback: 5 * time.Minute}, "/api/v1/labels?start=" + unix(0) + "&end=" + unix(10*time.Minute), 200, "", "", `[]`},
		{"lookback: series clamped", promapi.Guards{MaxQueryLookback: 5 * time.Minute}, "/api/v1/series?match[]=guard_other&end=" + unix(time.Hour), 200, "", "",
			`[{"__name__":"guard_other","instance":"a"}]`},
		{"series over", promapi.Guards{MaxFetchedSeries: 3}, instantQuery("guard_up", 10*time.Minute), 422, "execution", seriesErr, ""},
		{"series over, across selectors", promapi.Guards{MaxFetchedSeries: 3}, rangeQuery(`guard_up{instance=~"a|b|c"} or guard_other`, 0, 10*time.Minute, "60"), 422, "execution", seriesErr, ""},
		{"series counted once", promapi.Guards{MaxFetchedSeries: 3}, instantQuery(`count(guard_up{instance=~"a|b"} or guard_up{instance=~"b|c"})`, 10*time.Minute), 200, "", "",
			`{"resultType":"vector","result":[{"metric":{},"value":[1704067800,"3"]}]}`},
		{"series API over", promapi.Guards{MaxFetchedSeries: 3}, "/api/v1/series?match[]=guard_up&start=" + unix(0) + "&end=" + unix(time.Hour), 422, "execution", seriesErr, ""},
		{"blocked", promapi.Guards{BlockedQueries: blocked(" guard_up ", false)}, instantQuery("guard_up\n", 10*time.Minute), 400, "bad_data", blockedErr, ""},
		{"blocked range", promapi.Guards{BlockedQueries: blocked(`sum\(.*\)`, true)}, rangeQuery("sum(guard_up)", 0, time.Minute, "60"), 400, "bad_data", blockedErr, ""},
		{"regex anchored whole", promapi.Guards{BlockedQueries: blocked(`sum\(.*\)`, true)}, instantQuery("max(sum(guard_up))", 10*time.Minute), 200, "", "",
			`{"resultType":"vector","result":[{"metric":{},"value":[1704067800,"4"]}]}`},
		{"equality only", promapi.Guards{BlockedQueries: blocked(`guard_up`, false)}, instantQuery("count(guard_up)", 10*time.Minute), 200, "", "",
			`{"resultType":"vector","result":[{"metric":{},"value":[1704067800,"4"]}]}`},
	}
	for _, engine := range []string{promapi.EnginePromhbase, promapi.EnginePrometheus} {
		for _, tc := range tests {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				api, err := promapi.New(promapi.Options{Queryable: qa, Guards: tc.guards, Now: clock.Now, Engine: engine})
				if err != nil {
					t.Fatal(err)
				}
				a := get(t, api, tc.path)
				if a.code != tc.code || a.resp.ErrorType != tc.errType {
					t.Fatalf("%d %s %q, want %d %s", a.code, a.resp.ErrorType, a.resp.Error, tc.code, tc.errType)
				}
				if tc.err != "" && a.resp.Error != tc.err && !strings.HasSuffix(a.resp.Error, ": "+tc.err) {
					t.Errorf("error %q\nwant %q", a.resp.Error, tc.err)
				}
				if tc.data != "" {
					var got bytes.Buffer
					if err := json.Compact(&got, a.resp.Data); err != nil {
						t.Fatal(err)
					}
					if got.String() != tc.data {
						t.Errorf("data %s\nwant %s", got.String(), tc.data)
					}
				}
			})
		}
	}
}

// TestSetGuards: guards set at runtime apply to the requests that start
// after, on the API built without them.
func TestSetGuards(t *testing.T) {
	api, err := promapi.New(promapi.Options{Queryable: guardQueryable(t)})
	if err != nil {
		t.Fatal(err)
	}
	q := instantQuery("guard_up", 10*time.Minute)
	b, err := promapi.NewBlockedQuery("guard_.*", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name   string
		guards promapi.Guards
		code   int
	}{
		{"none", promapi.Guards{}, 200},
		{"blocked", promapi.Guards{BlockedQueries: []promapi.BlockedQuery{b}}, 400},
		{"series", promapi.Guards{MaxFetchedSeries: 1}, 422},
		{"none again", promapi.Guards{}, 200},
	} {
		t.Run(step.name, func(t *testing.T) {
			api.SetGuards(step.guards)
			if a := get(t, api, q); a.code != step.code {
				t.Errorf("%d %q, want %d", a.code, a.resp.Error, step.code)
			}
		})
	}
}

// TestNewBlockedQuery: a regex that does not compile is an error naming
// it.
func TestNewBlockedQuery(t *testing.T) {
	if _, err := promapi.NewBlockedQuery("sum(", true); err == nil || !strings.Contains(err.Error(), `"sum("`) {
		t.Errorf("got %v, want an error naming the pattern", err)
	}
	if _, err := promapi.NewBlockedQuery("sum(", false); err != nil {
		t.Errorf("a plain pattern: %v", err)
	}
}
