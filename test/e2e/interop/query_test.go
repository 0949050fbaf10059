package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBQuery: a TSD 2.4.1 and promhbase read the same tables
// (points a TSD put: misaligned series of integers and floats in seconds
// and milliseconds, gaps, counters that reset) and answer the same
// generated /api/query requests (every aggregator promhbase evaluates,
// percentiles and their estimates, downsampling with each fill policy,
// rates and counters, old-form tags and filters, group-by,
// explicitTags, ranges that cut hours and buckets, ms and arrays) with
// the same JSON: results, tags and their order, timestamps, each value's
// type (integer or double) and value; and the same refusals. The seed
// it logs, in PROMHBASE_TEST_SEED, generates a failure's data again.
func TestOpenTSDBQuery(t *testing.T) {
	bothLayouts(t, testQuery)
}

func testQuery(t *testing.T, layout mapping.Layout) {
	st, tables := newTables(t, "query", layout)
	d := startTSD(t, tables, layout, "tsd.storage.enable_compaction = false", "tsd.core.auto_create_metrics = true",
		"tsd.http.show_stack_trace = false")
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("PROMHBASE_TEST_SEED"), 10, 64); err == nil {
		seed = v // a failure's seed, to run it again
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	h0 := time.Now().Add(-6 * time.Hour).Truncate(time.Hour).Unix()
	bodies := queryData(rng, h0)
	for _, b := range bodies {
		d.putSync(t, b)
	}
	ph := startPromhbase(t, st, tables, layout, testserver.Options{NoCompaction: true,
		Adapter: adapter.Options{OpenTSDB: adapter.OpenTSDBOptions{AutoCreateMetrics: true}}})
	port := "http://" + startPort(t, ph.srv)
	t.Logf("seed %d: %d put requests from hour %d; the TSD at %s, promhbase at %s", seed, len(bodies), h0, d.url, port)

	same, nonEmpty := 0, 0
	for _, q := range slices.Concat(queryCases(rng, h0, 160), getQueries(h0), badQueries(h0)) {
		wantCode, wantBody := askQuery(t, d.url, q)
		gotCode, gotBody := askQuery(t, port, q)
		if wantCode != 200 {
			wantBody, gotBody = cutDetails(wantBody), cutDetails(gotBody)
		}
		want, got := canonicalJSON(wantBody), canonicalJSON(gotBody)
		if gotCode != wantCode || got != want {
			t.Errorf("%s %s:\n got %d %s\nwant %d %s", q.query, q.body, gotCode, gotBody, wantCode, wantBody)
			continue
		}
		same++
		if wantCode == 200 && (strings.Contains(wantBody, `"dps":{"`) || strings.Contains(wantBody, `"dps":[[`)) {
			nonEmpty++
		}
	}
	if nonEmpty < 40 {
		t.Errorf("only %d answers with points: the generated queries miss the data", nonEmpty)
	}
	t.Logf("%d queries answered alike, %d of them with points", same, nonEmpty)
}

// askQuery sends q to base's /api/query; an answer that does not come
// fails the test naming the query.
func askQuery(t *testing.T, base string, q putRequest) (int, string) {
	t.Helper()
	return askTSD(t, base+"/api/query", q)
}

// askTSD sends q to the endpoint u (a TSD's or promhbase's) and returns
// the answer's code and body.
func askTSD(t *testing.T, u string, q putRequest) (int, string) {
	t.Helper()
	if q.query != "" {
		u += "?" + q.query
	}
	req, err := http.NewRequestWithContext(t.Context(), q.method, u, strings.NewReader(q.body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", q.method, u, q.body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s %s: %v", q.method, u, q.body, err)
	}
	return resp.StatusCode, string(b)
}

// queryData is the puts: tq.gauge, six series (hosts and dcs, one with
// a third tag) whose points fall at their own offsets, a third of them in
// ms, integers and floats mixed, with gaps; tq.ctr, four integer
// counters that reset. Bodies of up to 50 points.
func queryData(rng *rand.Rand, h0 int64) []string {
	type series struct{ metric, tags string }
	all := []series{
		{"tq.gauge", `"host":"web01","dc":"lon"`}, {"tq.gauge", `"host":"web02","dc":"lon"`},
		{"tq.gauge", `"host":"db1","dc":"nyc"`}, {"tq.gauge", `"host":"cache2","dc":"nyc"`},
		{"tq.gauge", `"host":"web03","dc":"nyc","role":"edge"`}, {"tq.gauge", `"host":"db2","dc":"lon"`},
		{"tq.ctr", `"host":"web01","dc":"lon"`}, {"tq.ctr", `"host":"web02","dc":"lon"`},
		{"tq.ctr", `"host":"db1","dc":"nyc"`}, {"tq.ctr", `"host":"cache2","dc":"nyc"`},
	}
	var pts []string
	for i, s := range all {
		step := int64(37 + 11*i)
		counter := int64(rng.IntN(1000))
		for ts := h0 + int64(rng.IntN(90)); ts < h0+3*3600; ts += step + int64(rng.IntN(20)) {
			if rng.IntN(25) == 0 {
				ts += 600 // a gap
			}
			stamp := strconv.FormatInt(ts, 10)
			if rng.IntN(3) == 0 {
				stamp = strconv.FormatInt(ts*1000+int64(rng.IntN(1000)), 10)
			}
			var v string
			switch {
			case s.metric == "tq.ctr":
				counter += int64(rng.IntN(500))
				if rng.IntN(40) == 0 {
					counter = int64(rng.IntN(50)) // a reset
				}
				v = strconv.FormatInt(counter, 10)
			case rng.IntN(3) == 0:
				v = strconv.FormatFloat(float64(rng.IntN(100000))/100, 'f', -1, 64) + "5"
			default:
				v = strconv.Itoa(rng.IntN(2000) - 300)
			}
			pts = append(pts, `{"metric":"`+s.metric+`","timestamp":`+stamp+`,"value":`+v+`,"tags":{`+s.tags+`}}`)
		}
	}
	var bodies []string
	for len(pts) > 0 {
		n := min(50, len(pts))
		bodies = append(bodies, "["+strings.Join(pts[:n], ",")+"]")
		pts = pts[n:]
	}
	return bodies
}

// queryCases generates n queries over the data.
func queryCases(rng *rand.Rand, h0 int64, n int) []putRequest {
	aggs := []string{"sum", "zimsum", "min", "max", "avg", "count", "mimmin", "mimmax", "none", "dev", "first", "last",
		"median", "pfsum", "squareSum", "diff", "mult", "p50", "p999", "p90", "ep75r3", "ep99r7", "ep50r3", "ep90r7"}
	downs := []string{"", "", "", "1m-avg", "5m-p95", "2m-ep50r7", "7m-sum", "30s-max", "1h-count", "5m-min", "2m-dev", "90s-last", "10m-zimsum", "1m-avg-none",
		"1m-avg-zero", "7m-sum-nan", "2m-max-null", "30s-count-zero", "5m-last-NULL"}
	rates := []string{"", "", "", `,"rate":true`, `,"rate":true,"rateOptions":{"counter":true}`,
		`,"rate":true,"rateOptions":{"counter":true,"dropResets":true}`,
		`,"rate":true,"rateOptions":{"counter":true,"counterMax":20000,"resetValue":100}`}
	filters := []string{"", `,"tags":{}`, `,"tags":{"host":"*"}`, `,"tags":{"host":"web01|db1"}`, `,"tags":{"dc":"lon"}`,
		`,"tags":{"host":"WEB*"}`, `,"tags":{"dc":"*","host":"web*"}`,
		`,"filters":[{"type":"wildcard","tagk":"host","filter":"web*","groupBy":true}]`,
		`,"filters":[{"type":"regexp","tagk":"host","filter":"^(web|db)","groupBy":false}]`,
		`,"filters":[{"type":"not_literal_or","tagk":"dc","filter":"nyc","groupBy":true}]`,
		`,"filters":[{"type":"iliteral_or","tagk":"host","filter":"WEB01|Db1","groupBy":false},{"type":"literal_or","tagk":"dc","filter":"lon|nyc","groupBy":true}]`,
		`,"explicitTags":true,"filters":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":false},{"type":"wildcard","tagk":"dc","filter":"*","groupBy":true}]`,
	}
	var out []putRequest
	for range n {
		start := h0 + int64(rng.IntN(3*3600))
		end := start + int64(60+rng.IntN(3*3600))
		startS, endS := strconv.FormatInt(start, 10), strconv.FormatInt(end, 10)
		if rng.IntN(3) == 0 {
			startS = strconv.FormatInt(start*1000+int64(rng.IntN(1000)), 10)
		}
		metric := []string{"tq.gauge", "tq.ctr"}[rng.IntN(2)]
		sub := `{"aggregator":"` + aggs[rng.IntN(len(aggs))] + `","metric":"` + metric + `"`
		if ds := downs[rng.IntN(len(downs))]; ds != "" {
			sub += `,"downsample":"` + ds + `"`
		}
		sub += rates[rng.IntN(len(rates))] + filters[rng.IntN(len(filters))] + "}"
		body := `{"start":` + startS + `,"end":"` + endS + `","queries":[` + sub
		if rng.IntN(5) == 0 {
			body += `,{"aggregator":"sum","metric":"tq.gauge","downsample":"15m-max"}`
		}
		body += "]"
		if rng.IntN(4) == 0 {
			body += `,"msResolution":true`
		}
		query := ""
		if rng.IntN(4) == 0 {
			query = "arrays"
		}
		out = append(out, putRequest{"POST", query, body + "}"})
	}
	return out
}

// getQueries are GET's m= form: tags and filters, downsampling, rate
// specs, explicit_tags, ms and arrays; and its refusals.
func getQueries(h0 int64) []putRequest {
	rng := "start=" + strconv.FormatInt(h0+1234, 10) + "&end=" + strconv.FormatInt(h0+9000, 10)
	var out []putRequest
	for _, m := range []string{"sum:tq.gauge", "avg:1m-avg:tq.gauge{host=*}", "sum:rate{counter}:tq.ctr{dc=lon}",
		"max:5m-max:rate:tq.ctr{host=web01|db1}{dc=literal_or(lon)}", "count:explicit_tags:tq.gauge{host=*,dc=*}",
		"zimsum:rate{dropcounter}:tq.ctr{host=web*}", "min:2m-min:tq.gauge{}{host=regexp(^db)}", "dev:tq.gauge{dc=*}"} {
		out = append(out, putRequest{"GET", rng + "&m=" + url.QueryEscape(m), ""}, putRequest{"GET", rng + "&ms&arrays&m=" + url.QueryEscape(m), ""})
	}
	out = append(out, putRequest{"GET", rng + "&m=sum:tq.gauge&m=sum:tq.gauge&m=max:tq.ctr", ""},
		putRequest{"GET", "m=sum:tq.gauge", ""}, putRequest{"GET", rng, ""}, putRequest{"GET", rng + "&m=tq.gauge", ""},
		putRequest{"GET", rng + "&m=a:b:c:d:e:f", ""}, putRequest{"GET", rng + "&m=sum:rate%7Bcounter,x%7D:tq.ctr", ""},
		putRequest{"GET", rng + "&m=nope:tq.gauge", ""})
	return out
}

// badQueries are refused ones.
func badQueries(h0 int64) []putRequest {
	s := strconv.FormatInt(h0, 10)
	e := strconv.FormatInt(h0+3600, 10)
	q := func(sub string) putRequest {
		return putRequest{"POST", "", `{"start":` + s + `,"end":` + e + `,"queries":[` + sub + `]}`}
	}
	return []putRequest{
		{"POST", "", `{"end":` + e + `,"queries":[{"aggregator":"sum","metric":"tq.gauge"}]}`},
		{"POST", "", `{"start":` + e + `,"end":` + s + `,"queries":[{"aggregator":"sum","metric":"tq.gauge"}]}`},
		{"POST", "", `{"start":` + s + `,"end":` + e + `}`},
		{"POST", "", `{"start":` + s + `,"end":` + e + `,"queries":[]}`},
		{"POST", "", `{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"tq.gauge","downsample":"1x-sum"}]}`},
		{"POST", "", `{"start":"12345678901.5","queries":[{"aggregator":"sum","metric":"tq.gauge"}]}`},
		{"POST", "", `{"start":"yesterday","queries":[{"aggregator":"sum","metric":"tq.gauge"}]}`},
		q(`{"metric":"tq.gauge"}`), q(`{"aggregator":"nope","metric":"tq.gauge"}`), q(`{"aggregator":"sum"}`),
		q(`{"aggregator":"sum","metric":"tq.nothing"}`), q(`{"aggregator":"sum","metric":"tq.gauge","tags":{"nokey":"*"}}`),
		q(`{"aggregator":"sum","metric":"tq.gauge","tags":{"host":"nohost"}}`),
		q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"1m"}`), q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"1m-nope"}`),
		q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"1m-none"}`), q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"1m-sum-sometimes"}`),
		q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"0m-sum"}`), q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"1m-sum-x-y"}`),
		q(`{"aggregator":"sum","metric":"tq.gauge","downsample":"10s-sum-scalar"}`), q(`{"aggregator":"sum","metric":"tq.gauge","filters":[{"type":"not_key","tagk":"host","filter":"x"}]}`),
		{"POST", "", ""}, {"POST", "", "{nope"},
	}
}

// canonicalJSON renders a JSON document as its tokens in order, each
// number as its type (an integer as written, a double as the float64 it
// reads as: Java 17 prints a few doubles with a digit more than needed)
// so that two answers compare by structure, order, types and values.
func canonicalJSON(body string) string {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var b bytes.Buffer
	for {
		tok, err := dec.Token()
		if err != nil {
			if b.Len() == 0 {
				return body
			}
			return b.String()
		}
		switch v := tok.(type) {
		case json.Number:
			if strings.ContainsAny(string(v), ".eE") {
				f, _ := v.Float64()
				fmt.Fprintf(&b, "F%v ", f)
			} else {
				fmt.Fprintf(&b, "I%s ", v)
			}
		default:
			fmt.Fprintf(&b, "%v ", v)
		}
	}
}
