package interop

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBLookup: a TSD 2.4.1 and promhbase answer the same
// /api/search/lookup requests over the same tables, whose TSMeta rows
// both wrote (the TSD's with realtime TS meta on, promhbase's series
// index), with the same codes and bodies but for the time taken: GET's
// m with a metric, pairs, keys or values alone, wildcards, limits and
// no metric; POST's bodies in meta and data mode (a data row a result,
// repeated per hour); and the refusals (an unknown name, a malformed m,
// a missing m, a bad limit, a method), a body that is not JSON by its
// code alone. 2.4.1 never applies a value without a key given with a
// pair ("{dc=lon,=web02}" finds dc=lon's series): the same here.
func TestOpenTSDBLookup(t *testing.T) {
	bothLayouts(t, testLookup)
}

func testLookup(t *testing.T, layout mapping.Layout) {
	st, tables := newTables(t, "lookup", layout)
	d := startTSD(t, tables, layout, "tsd.core.auto_create_metrics = true", "tsd.http.show_stack_trace = false",
		"tsd.core.meta.enable_tsuid_tracking = true", "tsd.core.meta.enable_realtime_ts = true")
	ph := startPromhbase(t, st, tables, layout, testserver.Options{NoCompaction: true,
		Adapter: adapter.Options{OpenTSDB: adapter.OpenTSDBOptions{AutoCreateMetrics: true}}})
	h0 := time.Now().Add(-4 * time.Hour).Truncate(time.Hour).Unix()

	// promhbase writes lk_cpu's hosts 1-4 and lk_mem, the TSD lk_cpu's
	// host 5 and lk_disk, each series over two hours.
	var series []prompb.TimeSeries
	for i, tags := range [][]string{
		{"host", "web01", "dc", "lon"}, {"host", "web02", "dc", "lon"}, {"host", "web03", "dc", "nyc"},
		{"host", "web04", "dc", "nyc", "rack", "r1"},
	} {
		series = append(series, lookupSeries("lk_cpu", h0, float64(i), tags...))
	}
	series = append(series, lookupSeries("lk_mem", h0, 7, "host", "web01"))
	ph.send(t, series)
	for _, m := range []string{
		`"metric":"lk_cpu","tags":{"host":"web05","dc":"sfo"}`,
		`"metric":"lk_disk","tags":{"host":"web01","dev":"sda"}`,
	} {
		d.putSync(t, fmt.Sprintf(`[{%s,"timestamp":%d,"value":1},{%s,"timestamp":%d,"value":2}]`, m, h0+10, m, h0+3610))
	}
	// The TSD writes its TSMeta rows after it answers the put.
	poll.Until(t, 30*time.Second, 200*time.Millisecond, "the TSD's TSMeta row of lk_disk", func() (bool, string) {
		_, body := askLookup(t, d.url, putRequest{"GET", "m=lk_disk", ""})
		return strings.Contains(body, `"totalResults":1`), body
	})

	port := "http://" + startPort(t, ph.srv)
	same := 0
	for _, q := range lookupCases() {
		wantCode, wantBody := askLookup(t, d.url, q)
		gotCode, gotBody := askLookup(t, port, q)
		if wantCode == 500 { // a body Jackson cannot bind: the message is its exception's text
			wantBody, gotBody = "", ""
		}
		want, got := lookupCanonical(wantBody, layout), lookupCanonical(gotBody, layout)
		if gotCode != wantCode || got != want {
			t.Errorf("%s %s %s:\n got %d %s\nwant %d %s", q.method, q.query, q.body, gotCode, gotBody, wantCode, wantBody)
			continue
		}
		same++
	}
	t.Logf("%d lookups answered alike", same)
}

// lookupSeries is a series of metric with tags (name, value, ...): a
// sample at h0+10 s and one an hour later.
func lookupSeries(metric string, h0 int64, v float64, tags ...string) prompb.TimeSeries {
	s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: metric}},
		Samples: []prompb.Sample{{Timestamp: (h0 + 10) * 1000, Value: v}, {Timestamp: (h0 + 3610) * 1000, Value: v}}}
	for i := 0; i < len(tags); i += 2 {
		s.Labels = append(s.Labels, prompb.Label{Name: tags[i], Value: tags[i+1]})
	}
	return s
}

// lookupCases are the requests both answer.
func lookupCases() []putRequest {
	var cases []putRequest
	for _, m := range []string{
		"lk_cpu", "lk_mem", "lk_cpu{host=web01}", "lk_cpu{host=*}", "lk_cpu{host=}", "lk_cpu{rack=}",
		"lk_cpu{dc=lon,host=web02}", "lk_cpu{host=web01,host=web03}", "lk_cpu{host=,host=web01}",
		"{host=web01}", "{=lon}", "{=lon,=nyc}", "lk_cpu{=lon,host=web01}", "lk_cpu{=nyc,rack=r1}", "lk_cpu{*=sfo}",
		"lk_cpu{dc=lon,=web02}", "*{host=web01}", "lk_disk{dev=sda}", "lk_cpu{}", "lk_cpu{dc=*,host=web04}",
		// refusals
		"nope", "lk_cpu{nokey=x}", "lk_cpu{host=nobody}", "lk_cpu{", "{}", "lk_cpu{host}", "lk_cpu{=}", "lk_cpu{a=b=c}",
	} {
		cases = append(cases, putRequest{"GET", "m=" + url.QueryEscape(m), ""})
	}
	cases = append(cases,
		putRequest{"GET", "m=lk_cpu&limit=2", ""},
		putRequest{"GET", "m=lk_cpu&limit=0", ""},
		putRequest{"GET", "m=lk_cpu&limit=-1", ""},
		putRequest{"GET", "m=lk_cpu&limit=x", ""},
		putRequest{"GET", "m=lk_cpu&use_meta=false", ""},
		putRequest{"GET", "", ""},
		putRequest{"PUT", "m=lk_cpu", ""},
		putRequest{"GET", "m=lk_cpu&method_override=delete", ""},
		putRequest{"GET", "m=lk_cpu&method_override=post", ""},
		putRequest{"POST", "", `{"metric":"lk_cpu","tags":[{"key":"host","value":"web01"}]}`},
		putRequest{"POST", "", `{"metric":"lk_cpu","tags":[{"key":"dc","value":null}],"limit":3}`},
		putRequest{"POST", "", `{"tags":[{"key":"dc","value":"lon"}]}`},
		putRequest{"POST", "", `{"metric":"lk_cpu","useMeta":false}`},
		putRequest{"POST", "", `{"metric":"lk_cpu","useMeta":false,"tags":[{"key":"host","value":"web05"}]}`},
		putRequest{"POST", "", `{"metric":"lk_disk","useMeta":false,"limit":1}`},
		putRequest{"POST", "", `{"metric":null}`},
		putRequest{"POST", "", `{"metric":"nope"}`},
		putRequest{"POST", "", `{"metric":"lk_cpu"`},
	)
	return cases
}

// askLookup sends q to base's /api/search/lookup.
func askLookup(t *testing.T, base string, q putRequest) (int, string) {
	t.Helper()
	return askTSD(t, base+"/api/search/lookup", q)
}

var lookupTime = regexp.MustCompile(`"time":[0-9.E]+`)

// lookupCanonical is an answer with its time taken zeroed and, in data
// mode on a salted layout (each bucket scanned at once, the results in
// the order the scans end), its results sorted.
func lookupCanonical(body string, layout mapping.Layout) string {
	body = lookupTime.ReplaceAllString(body, `"time":0.0`)
	if layout.SaltWidth == 0 {
		return body
	}
	var a struct {
		Results []json.RawMessage `json:"results"`
	}
	i := strings.Index(body, `"results":[`)
	j := strings.LastIndex(body, `],"startIndex"`)
	if i < 0 || j < i || json.Unmarshal([]byte(body), &a) != nil {
		return body
	}
	rs := make([]string, len(a.Results))
	for k, r := range a.Results {
		rs[k] = string(r)
	}
	slices.Sort(rs)
	return body[:i] + `"results":[` + strings.Join(rs, ",") + body[j:]
}
