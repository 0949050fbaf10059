package promapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// base is the start of the test data: 2024-01-01T00:00:00Z.
var base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture writes, through /api/v1/write (remote write 1.0):
//   - http_requests_total{job="api",instance="a"} and {instance="b"}: a
//     counter every 15 s for 20 min, rising 1 (a) and 2 (b) a step, with
//     metadata and one exemplar on "a";
//   - temp_celsius{job="node",instance="a"}: a gauge every 15 s;
//   - req_duration_seconds{job="api"}: a native histogram every 15 s.
func fixture(t *testing.T) string {
	t.Helper()
	return fixtureWith(t, testserver.Options{})
}

// fixtureWith is fixture on a server with opts.
func fixtureWith(t *testing.T, opts testserver.Options) string {
	t.Helper()
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), opts)
	req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, 4)} // the pointers below stay valid
	series := func(lbls ...string) *prompb.TimeSeries {
		ts := prompb.TimeSeries{}
		for i := 0; i < len(lbls); i += 2 {
			ts.Labels = append(ts.Labels, prompb.Label{Name: lbls[i], Value: lbls[i+1]})
		}
		req.Timeseries = append(req.Timeseries, ts)
		return &req.Timeseries[len(req.Timeseries)-1]
	}
	a := series("__name__", "http_requests_total", "instance", "a", "job", "api")
	b := series("__name__", "http_requests_total", "instance", "b", "job", "api")
	g := series("__name__", "temp_celsius", "instance", "a", "job", "node")
	h := series("__name__", "req_duration_seconds", "job", "api")
	for i := range 80 {
		ts := base.Add(time.Duration(i) * 15 * time.Second).UnixMilli()
		a.Samples = append(a.Samples, prompb.Sample{Timestamp: ts, Value: float64(i)})
		b.Samples = append(b.Samples, prompb.Sample{Timestamp: ts, Value: float64(2 * i)})
		g.Samples = append(g.Samples, prompb.Sample{Timestamp: ts, Value: 20 + float64(i%5)})
		hist := &histogram.Histogram{Schema: 0, Count: uint64(3 * i), Sum: float64(i), ZeroThreshold: 1e-128,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{int64(i), 0, 0}}
		h.Histograms = append(h.Histograms, prompb.FromIntHistogram(ts, hist))
	}
	a.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc123"}}, Value: 7, Timestamp: base.Add(5 * time.Minute).UnixMilli()}}
	req.Metadata = []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "http_requests_total", Help: "Requests served.", Unit: ""}}
	srv.Write(t, &req)
	return srv.URL
}

func unix(d time.Duration) string { return fmt.Sprint(base.Add(d).Unix()) }

func TestAPI(t *testing.T) {
	u := fixture(t)
	tests := []struct {
		name   string
		path   string
		form   url.Values // sent as a POST form when set, else GET
		status int
		want   string // the answer, compacted JSON
	}{
		{"instant rate", "/api/v1/query?query=" + url.QueryEscape(`sum by (job) (rate(http_requests_total[1m]))`) + "&time=" + unix(10*time.Minute), nil, 200,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"api"},"value":[1704067800,"0.19999999999999996"]}]}}`},
		{"instant selector", "/api/v1/query", url.Values{"query": {`temp_celsius`}, "time": {unix(10 * time.Minute)}}, 200,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"temp_celsius","instance":"a","job":"node"},"value":[1704067800,"20"]}]}}`},
		{"range", "/api/v1/query_range", url.Values{"query": {`http_requests_total{instance="b"}`}, "start": {unix(0)}, "end": {unix(time.Minute)}, "step": {"30"}}, 200,
			`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"http_requests_total","instance":"b","job":"api"},"values":[[1704067200,"0"],[1704067230,"4"],[1704067260,"8"]]}]}}`},
		{"histogram", "/api/v1/query?query=" + url.QueryEscape(`histogram_count(req_duration_seconds)`) + "&time=" + unix(time.Minute), nil, 200,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"api"},"value":[1704067260,"12"]}]}}`},
		{"no name", "/api/v1/query?query=" + url.QueryEscape(`count({job="api"})`) + "&time=" + unix(time.Minute), nil, 200,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1704067260,"3"]}]}}`},
		{"duration expression (on by default in Prometheus 3.15)", "/api/v1/query?query=" + url.QueryEscape(`count_over_time(temp_celsius[1m+1m])`) + "&time=" + unix(10*time.Minute), nil, 200,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"a","job":"node"},"value":[1704067800,"8"]}]}}`},
		{"experimental function off by default", "/api/v1/query?query=" + url.QueryEscape(`sort_by_label(temp_celsius, "job")`), nil, 400, ""},
		{"bad query", "/api/v1/query?query=" + url.QueryEscape(`sum(`), nil, 400, ""},
		{"series", "/api/v1/series?match[]=" + url.QueryEscape(`{job="api"}`) + "&start=" + unix(0) + "&end=" + unix(time.Hour), nil, 200,
			`{"status":"success","data":[{"__name__":"http_requests_total","instance":"a","job":"api"},{"__name__":"http_requests_total","instance":"b","job":"api"},{"__name__":"req_duration_seconds","job":"api"}]}`},
		{"series after the last sample, same hour", "/api/v1/series?match[]=temp_celsius&start=" + unix(30*time.Minute) + "&end=" + unix(50*time.Minute), nil, 200,
			`{"status":"success","data":[]}`},
		{"series up to the first sample", "/api/v1/series?match[]=temp_celsius&start=" + unix(-time.Hour) + "&end=" + unix(0), nil, 200,
			`{"status":"success","data":[{"__name__":"temp_celsius","instance":"a","job":"node"}]}`},
		{"labels", "/api/v1/labels?start=" + unix(0) + "&end=" + unix(time.Hour), nil, 200,
			`{"status":"success","data":["__name__","instance","job"]}`},
		{"labels matched", "/api/v1/labels", url.Values{"match[]": {`temp_celsius`}, "start": {unix(0)}, "end": {unix(time.Hour)}}, 200,
			`{"status":"success","data":["__name__","instance","job"]}`},
		{"names", "/api/v1/label/__name__/values?start=" + unix(0) + "&end=" + unix(time.Hour), nil, 200,
			`{"status":"success","data":["http_requests_total","req_duration_seconds","temp_celsius"]}`},
		{"names out of range", "/api/v1/label/__name__/values?start=" + unix(48*time.Hour) + "&end=" + unix(49*time.Hour), nil, 200,
			`{"status":"success","data":[]}`},
		{"values matched", "/api/v1/label/instance/values?match[]=" + url.QueryEscape(`http_requests_total`) + "&start=" + unix(0) + "&end=" + unix(time.Hour), nil, 200,
			`{"status":"success","data":["a","b"]}`},
		{"values limit", "/api/v1/label/instance/values?limit=1&start=" + unix(0) + "&end=" + unix(time.Hour), nil, 200,
			`{"status":"success","data":["a"],"warnings":["results truncated due to limit"]}`},
		{"metadata", "/api/v1/metadata", nil, 200,
			`{"status":"success","data":{"http_requests_total":[{"type":"counter","help":"Requests served.","unit":""}]}}`},
		{"metadata other", "/api/v1/metadata?metric=nope", nil, 200, `{"status":"success","data":{}}`},
		{"exemplars", "/api/v1/query_exemplars?query=" + url.QueryEscape(`http_requests_total`) + "&start=" + unix(0) + "&end=" + unix(time.Hour), nil, 200,
			`{"status":"success","data":[{"seriesLabels":{"__name__":"http_requests_total","instance":"a","job":"api"},"exemplars":[{"labels":{"trace_id":"abc123"},"value":"7","timestamp":1704067500}]}]}`},
		{"format", "/api/v1/format_query?query=" + url.QueryEscape(`sum(rate(x[5m]))by(job)`), nil, 200,
			`{"status":"success","data":"sum by (job) (rate(x[5m]))"}`},
		{"targets not served", "/api/v1/targets", nil, 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			var err error
			if tc.form != nil {
				resp, err = http.PostForm(u+tc.path, tc.form)
			} else {
				resp, err = http.Get(u + tc.path)
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.want == "" {
				var e struct{ Status, ErrorType, Error string }
				if err := json.Unmarshal(body, &e); err != nil || e.Status != "error" || e.ErrorType == "" || e.Error == "" {
					t.Fatalf("want a JSON error, got %s", body)
				}
				return
			}
			var got bytes.Buffer
			if err := json.Compact(&got, body); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if got.String() != tc.want {
				t.Errorf("got  %s\nwant %s", got.String(), tc.want)
			}
		})
	}
}

func TestBuildInfoAndLanding(t *testing.T) {
	u := fixture(t)
	// A browser's request (Grafana's "browser" access) carries Origin.
	req, _ := http.NewRequest(http.MethodGet, u+"/api/v1/labels", nil)
	req.Header.Set("Origin", "http://grafana.example:3000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("with Origin: %d, Access-Control-Allow-Origin %q; want 200, *", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	for _, p := range []struct{ path, contains string }{
		{"/api/v1/status/buildinfo", `"version":"test"`},
		{"/setup", "/api/v1/write"},
		{"/setup", "type: prometheus"},
		{"/", "<title>Query"}, // the web UI's query page (http.Get follows the redirect)
	} {
		resp, err := http.Get(u + p.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), p.contains) {
			t.Errorf("%s: %d, want 200 containing %q: %.300s", p.path, resp.StatusCode, p.contains, body)
		}
	}
}

// TestQueryBudget: a PromQL query whose selects need more memory than
// --query.max-bytes-per-query (or more samples than --query.max-samples
// at the storage) fails with 422 execution error naming the flag, as
// Prometheus answers errors of its storage.
func TestQueryBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testserver.Options
		flag string
	}{
		{"bytes", testserver.Options{MaxBytes: 600}, "--query.max-bytes-per-query"},
		{"samples", testserver.Options{MaxSamples: 100}, "--query.max-samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := fixtureWith(t, tc.opts)
			resp, err := http.PostForm(u+"/api/v1/query_range", url.Values{"query": {`sum(rate(http_requests_total[1m]))`}, "start": {unix(0)}, "end": {unix(20 * time.Minute)}, "step": {"60"}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Status, ErrorType, Error string }
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusUnprocessableEntity || e.ErrorType != "execution" || !strings.Contains(e.Error, tc.flag) {
				t.Errorf("%d %s; want 422, errorType execution, an error naming %s", resp.StatusCode, body, tc.flag)
			}
		})
	}
}
