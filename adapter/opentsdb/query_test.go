package opentsdb

import (
	"fmt"
	"math"
	"net/url"
	"testing"
	"time"

	"github.com/promhbase/promhbase/query/tsd"
)

func TestParseQuery(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ok := `"queries":[{"aggregator":"sum","metric":"m"}]`
	for _, tc := range []struct {
		name, body string
		start, end int64
		err        string // the message a TSD answers
	}{
		{name: "seconds", body: `{"start":1699990000,"end":1699999999,` + ok + `}`, start: 1699990000000, end: 1699999999000},
		{name: "ms, and a string", body: `{"start":"1699990000123",` + ok + `}`, start: 1699990000123, end: 1700000000000},
		{name: "dotted: the dot removed", body: `{"start":"1699990000.5",` + ok + `}`, start: 16999900005, end: 1700000000000},
		{name: "ago", body: `{"start":"1h-ago","end":"30m-ago",` + ok + `}`, start: 1699996400000, end: 1699998200000},
		{name: "ms suffix", body: `{"start":"1699990000000ms","end":"now",` + ok + `}`, start: 1699990000000, end: 1700000000000},
		{name: "absolute", body: `{"start":"2023/11/14","end":"2023/11/14-22:13:20",` + ok + `}`, start: 1699920000000, end: 1700000000000},
		{name: "no start", body: `{` + ok + `}`, err: "Missing start time"},
		{name: "no queries: the TSD's NullPointerException", body: `{"start":1}`, err: "An internal null pointer exception was thrown"},
		{name: "end before start", body: `{"start":2,"end":1,` + ok + `}`, err: "End time [1000] must be greater than the start time [2000]"},
		{name: "no queries", body: `{"start":1,"queries":[]}`, err: "Missing queries"},
		{name: "bad dotted", body: `{"start":"1.5",` + ok + `}`, err: "Invalid time: 1.5. Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits"},
		{name: "no aggregator", body: `{"start":1,"queries":[{"metric":"m"}]}`, err: "Missing the aggregation function"},
		{name: "bad aggregator", body: `{"start":1,"queries":[{"aggregator":"x","metric":"m"}]}`, err: "No such aggregation function: x"},
		{name: "no metric", body: `{"start":1,"queries":[{"aggregator":"sum"}]}`, err: "Missing the metric or tsuids, provide at least one"},
		{name: "downsample without function", body: `{"start":1,"queries":[{"aggregator":"sum","metric":"m","downsample":"1m"}]}`,
			err: "Invalid downsampling specifier '1m': must provide at least interval and function"},
		{name: "downsample unit", body: `{"start":1,"queries":[{"aggregator":"sum","metric":"m","downsample":"1x-sum"}]}`, err: "Invalid duration (suffix): 1x"},
		{name: "downsample none", body: `{"start":1,"queries":[{"aggregator":"sum","metric":"m","downsample":"1m-none"}]}`, err: "cannot use the NONE aggregator for downsampling"},
		{name: "fill", body: `{"start":1,"queries":[{"aggregator":"sum","metric":"m","downsample":"1m-sum-x"}]}`, err: "Unrecognized fill policy: x"},
		{name: "fill null", body: `{"start":1,"queries":[{"aggregator":"sum","metric":"m","downsample":"1m-sum-NULL"}]}`, start: 1000, end: 1700000000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, herr := ParseQuery([]byte(tc.body), now, false, false)
			if !wantRefusal(t, req, herr, tc.err) {
				return
			}
			if req.Query.Start != tc.start || req.Query.End != tc.end {
				t.Errorf("range %d..%d, want %d..%d", req.Query.Start, req.Query.End, tc.start, tc.end)
			}
		})
	}
}

// TestParseQuerySub: a sub-query's members bound as a TSD binds them:
// the old-form tags as group-by filters (a glob case-insensitive), the
// later of tags and filters winning, rate options, the downsampling.
func TestParseQuerySub(t *testing.T) {
	body := `{"start":1,"queries":[{"aggregator":"avg","metric":"m","downsample":"90s-max","rate":true,
		"rateOptions":{"counter":true,"counterMax":"500","dropResets":true},
		"filters":[{"type":"regexp","tagk":"a","filter":".*"}],"tags":{"host":"web*","dc":"lon|nyc","x":"regexp(^a)"}}]}`
	req, herr := ParseQuery([]byte(body), time.Unix(100, 0), true, false)
	if herr != nil {
		t.Fatal(herr.Body())
	}
	sq := req.Query.Subs[0]
	want := []tsd.Filter{{Type: "iwildcard", Tagk: "host", Expr: "web*", GroupBy: true}, {Type: "literal_or", Tagk: "dc", Expr: "lon|nyc", GroupBy: true},
		{Type: "regexp", Tagk: "x", Expr: "^a", GroupBy: true}}
	if len(sq.Filters) != len(want) {
		t.Fatalf("filters %+v, want %+v", sq.Filters, want)
	}
	for i := range want {
		if sq.Filters[i] != want[i] {
			t.Errorf("filter %d: %+v, want %+v", i, sq.Filters[i], want[i])
		}
	}
	if sq.DownsampleMs != 90000 || sq.DownsampleFn != "max" || !sq.Rate || !req.Arrays ||
		sq.RateOptions != (tsd.RateOptions{Counter: true, CounterMax: 500, DropResets: true}) {
		t.Errorf("sub-query %+v", sq)
	}
	req, _ = ParseQuery([]byte(`{"start":1,"queries":[{"aggregator":"sum","metric":"m"}]}`), time.Unix(100, 0), false, false)
	if req.Query.Subs[0].RateOptions.CounterMax != math.MaxInt64 {
		t.Errorf("counterMax defaults to Long.MAX_VALUE: %+v", req.Query.Subs[0].RateOptions)
	}
}

func TestQueryAnswer(t *testing.T) {
	rs := []tsd.Result{{Metric: "m", Tags: []tsd.Tag{{Key: "host", Value: "a"}, {Key: "dc", Value: "lon"}}, AggregateTags: []string{"x"},
		Points: []tsd.Point{{T: 1000, I: 5}, {T: 2500, F: 0.5, Float: true}, {T: 3000, F: math.NaN(), Float: true}}}}
	got := string(QueryAnswer(QueryRequest{}, rs))
	want := `[{"metric":"m","tags":{"host":"a","dc":"lon"},"aggregateTags":["x"],"dps":{"1":5,"2":0.5,"3":"NaN"}}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = string(QueryAnswer(QueryRequest{Arrays: true, MsResolution: true}, rs[:1]))
	want = `[{"metric":"m","tags":{"host":"a","dc":"lon"},"aggregateTags":["x"],"dps":[[1000,5],[2500,0.5],[3000,"NaN"]]}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// FuzzParseQuery: any body gets a query or a TSD's 400, never a panic.
func FuzzParseQuery(f *testing.F) {
	f.Add(`{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","downsample":"1m-avg","tags":{"a":"*"}}]}`)
	f.Add(`{"start":1,"queries":[{"aggregator":"sum","metric":"m","filters":[{"type":"wildcard","tagk":"a","filter":"x*"}],"rateOptions":{"counterMax":5}}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, herr := ParseQuery([]byte(body), time.Unix(1e9, 0), false, false)
		if herr != nil {
			if herr.Code != 400 || herr.Message == "" {
				t.Fatalf("error %+v", herr)
			}
			return
		}
		if req.Query.End <= req.Query.Start || len(req.Query.Subs) == 0 {
			t.Fatalf("query %+v", req.Query)
		}
	})
}

func TestParseQueryGET(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		query string
		want  tsd.SubQuery
		err   string
	}{
		{query: "start=1h-ago&m=sum:1m-avg:rate{counter,500,10}:sys.cpu{host=web*,dc=lon}{env=literal_or(a|b)}",
			want: tsd.SubQuery{Aggregator: "sum", Metric: "sys.cpu", DownsampleMs: 60000, DownsampleFn: "avg", DownsampleFill: "none", Rate: true,
				RateOptions: tsd.RateOptions{Counter: true, CounterMax: 500, ResetValue: 10},
				Filters: []tsd.Filter{{Type: "literal_or", Tagk: "env", Expr: "a|b"}, {Type: "iwildcard", Tagk: "host", Expr: "web*", GroupBy: true},
					{Type: "literal_or", Tagk: "dc", Expr: "lon", GroupBy: true}}}},
		{query: "start=1h-ago&m=avg:rate{dropcounter}:explicit_tags:m{}",
			want: tsd.SubQuery{Aggregator: "avg", Metric: "m", Rate: true, ExplicitTags: true,
				RateOptions: tsd.RateOptions{Counter: true, CounterMax: math.MaxInt64, DropResets: true}}},
		{query: "m=sum:m", err: "Missing parameter <code>start</code>"},
		{query: "start=1h-ago", err: "Missing sub queries"},
		{query: "start=1h-ago&m=m", err: "Invalid parameter m=m (not enough :-separated parts)"},
		{query: "start=1h-ago&m=a:b:c:d:e:f", err: "Invalid parameter m=a:b:c:d:e:f (too many :-separated parts)"},
		{query: "start=1h-ago&m=sum:rate{counter,x}:m", err: "Max value of counter was not a number, received 'x'"},
		{query: "start=1h-ago&m=sum:m{host}", err: "When parsing tag 'host': invalid tag: host"},
		{query: "start=1h-ago&m=sum:m{host=a", err: "Missing '}' at the end of: m{host=a"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			params, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			req, herr := ParseQueryGET(params, now)
			if !wantRefusal(t, req, herr, tc.err) {
				return
			}
			if got := fmt.Sprintf("%+v", req.Query.Subs[0]); got != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("got  %s\nwant %+v", got, tc.want)
			}
		})
	}
}

// wantRefusal checks a parse's refusal against want (a TSD's message;
// "": none) and reports whether the request is there to check further.
func wantRefusal(t *testing.T, req QueryRequest, herr *HTTPError, want string) bool {
	t.Helper()
	switch {
	case want != "" && (herr == nil || herr.Message != want):
		t.Fatalf("got %+v %v, want %q", req, herr, want)
	case want == "" && herr != nil:
		t.Fatalf("error %s", herr.Body())
	}
	return want == ""
}
