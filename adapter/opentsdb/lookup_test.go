package opentsdb

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/promhbase/promhbase/query/tsd"
)

// TestParseLookup: GET's m and limit, POST's SearchQuery, and the
// TSD's refusals, each as the TSD words it (test/e2e/interop's
// TestOpenTSDBLookup compares them with a real TSD's).
func TestParseLookup(t *testing.T) {
	for _, tc := range []struct {
		name, method, query, body string
		want                      tsd.LookupQuery
		err                       string // the refusal's JSON
	}{
		{name: "metric", method: "GET", query: "m=cpu", want: tsd.LookupQuery{Metric: "cpu", Limit: 25, UseMeta: true}},
		{name: "pairs", method: "GET", query: "m=" + url.QueryEscape("cpu{host=web01,=lon,dc=,*=x}") + "&limit=3",
			want: tsd.LookupQuery{Metric: "cpu", Limit: 3, UseMeta: true,
				Tags: []tsd.LookupTag{{Key: "host", Value: "web01"}, {Value: "lon"}, {Key: "dc"}, {Key: "*", Value: "x"}}}},
		{name: "no metric", method: "GET", query: "m=" + url.QueryEscape("{host=a}"), want: tsd.LookupQuery{Limit: 25, UseMeta: true,
			Tags: []tsd.LookupTag{{Key: "host", Value: "a"}}}},
		{name: "negative limit: all", method: "GET", query: "m=cpu&limit=-4", want: tsd.LookupQuery{Metric: "cpu", UseMeta: true}},
		{name: "use_meta ignored on GET", method: "GET", query: "m=cpu&use_meta=false", want: tsd.LookupQuery{Metric: "cpu", Limit: 25, UseMeta: true}},
		{name: "post", method: "POST", body: `{"metric":"cpu","tags":[{"key":"h","value":null}],"useMeta":false,"limit":"7","other":[1]}`,
			want: tsd.LookupQuery{Metric: "cpu", Limit: 7, Tags: []tsd.LookupTag{{Key: "h"}}}},
		{name: "post without metric: every metric", method: "POST", body: `{}`, want: tsd.LookupQuery{Metric: "*", Limit: 25, UseMeta: true}},
		{name: "missing m", method: "GET", err: `{"error":{"code":400,"message":"Missing parameter <code>m</code>"}}`},
		{name: "unclosed", method: "GET", query: "m=cpu%7B", err: `{"error":{"code":400,"message":"Unable to parse query","details":"Missing '}' at the end of: cpu{"}}`},
		{name: "empty braces", method: "GET", query: "m=%7B%7D", err: `{"error":{"code":400,"message":"Unable to parse query","details":"Missing metric and tags: {}"}}`},
		{name: "bad pair", method: "GET", query: "m=cpu%7Bhost%7D", err: `{"error":{"code":400,"message":"Unable to parse query","details":"When parsing tag 'host': invalid tag: host"}}`},
		{name: "short pair", method: "GET", query: "m=cpu%7B%3D%7D", err: `{"error":{"code":400,"message":"Unable to parse query","details":"When parsing tag '=': Missing tag pair"}}`},
		{name: "bad limit", method: "GET", query: "m=cpu&limit=x", err: `{"error":{"code":400,"message":"Unable to convert 'limit' to a valid number"}}`},
		{name: "null metric, no tags", method: "POST", body: `{"metric":null}`, err: `{"error":{"code":400,"message":"Missing metric and tags. Please supply at least one value."}}`},
		{name: "method", method: "DELETE", query: "m=cpu", err: `{"error":{"code":400,"message":"Unsupported method: DELETE"}}`},
		{name: "method override", method: "GET", query: "m=cpu&method_override=Put", err: `{"error":{"code":400,"message":"Unsupported method: PUT"}}`},
		{name: "method override to post", method: "GET", query: "m=cpu&method_override=post", want: tsd.LookupQuery{Metric: "cpu", Limit: 25, UseMeta: true}},
		{name: "empty method override", method: "GET", query: "m=cpu&method_override=", err: `{"error":{"code":405,"message":"Missing method override value"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			r, herr := ParseLookup(tc.method, q, []byte(tc.body))
			if tc.err != "" {
				if herr == nil || string(herr.Body()) != tc.err {
					t.Fatalf("got %+v, %v; want the refusal %s", r, herr, tc.err)
				}
				return
			}
			if herr != nil {
				t.Fatalf("refused: %s", herr.Body())
			}
			if !equalLookup(r.Query, tc.want) {
				t.Errorf("got %+v, want %+v", r.Query, tc.want)
			}
		})
	}
}

func equalLookup(a, b tsd.LookupQuery) bool {
	if a.Metric != b.Metric || a.Limit != b.Limit || a.UseMeta != b.UseMeta || len(a.Tags) != len(b.Tags) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i] != b.Tags[i] {
			return false
		}
	}
	return true
}

// TestLookupBody: the answer as the TSD's Jackson writes a SearchQuery
// (its members' order, a null metric left out, a null value written),
// results' members in its ConcurrentHashMap's order and tags in a
// HashMap's.
func TestLookupBody(t *testing.T) {
	get, _ := ParseLookup("GET", url.Values{"m": {"{host=web01,dc=}"}}, nil)
	found := []tsd.LookupSeries{{TSUID: []byte{0, 0, 1, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0xab, 0, 4}, Metric: "cpu",
		Tags: []tsd.Tag{{Key: "host", Value: "web01"}, {Key: "dc", Value: "lon"}}}}
	want := `{"type":"LOOKUP","tags":[{"key":"host","value":"web01"},{"key":"dc","value":null}],"limit":25,"time":3.0,` +
		`"results":[{"tsuid":"000001000001000002000003AB0004","metric":"cpu","tags":{"host":"web01","dc":"lon"}}],"startIndex":0,"totalResults":1}`
	if got := string(LookupBody(get, found, 3)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	post, _ := ParseLookup("POST", nil, []byte(`{"metric":"cpu"}`))
	want = `{"type":"LOOKUP","metric":"cpu","limit":25,"time":0.0,"results":[],"startIndex":0,"totalResults":0}`
	if got := string(LookupBody(post, nil, 0)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// FuzzParseLookup: any query and body get a lookup or a TSD's error,
// never a panic; a lookup names a metric or a tag, with a limit not
// below 0, and its answer is JSON.
func FuzzParseLookup(f *testing.F) {
	f.Add("GET", "m=cpu%7Bhost%3Dweb01%2C%3Dlon%7D&limit=3", "")
	f.Add("POST", "", `{"metric":"cpu","tags":[{"key":"h","value":null}],"useMeta":false}`)
	f.Add("POST", "", `{"tags":null,"limit":"x"}`)
	f.Fuzz(func(t *testing.T, method, query, body string) {
		q, _ := url.ParseQuery(query)
		r, herr := ParseLookup(method, q, []byte(body))
		if herr != nil {
			if herr.Code != 400 && herr.Code != 405 && herr.Code != 500 {
				t.Fatalf("status %d", herr.Code)
			}
			return
		}
		if r.Metric == nil && len(r.Tags) == 0 || r.Query.Limit < 0 || len(r.Query.Tags) != len(r.Tags) {
			t.Fatalf("lookup %+v", r)
		}
		if b := LookupBody(r, nil, 0); !json.Valid(b) {
			t.Fatalf("answer %s", b)
		}
	})
}
