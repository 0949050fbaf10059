package interop

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/opentsdb"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBPut: the same put traffic, telnet and HTTP, sent to a real
// TSD 2.4.1 and to promhbase's OpenTSDB port, each on tables of its own,
// gets the same answers (each telnet error line, each /api/put status
// and body) and leaves the same cells (row by row, UIDs read as their
// names): points in seconds and milliseconds, integers of each width,
// floats that float32 holds and ones it does not, a counter that resets,
// a gap, and malformed lines and bodies of every kind the TSD refuses.
// Compaction is off on both sides, so that the cells are the puts' own.
// Then PromQL over the points put answers as PromQL over the same samples
// remote-written into a third set of tables.
func TestOpenTSDBPut(t *testing.T) {
	bothLayouts(t, testPut)
}

func testPut(t *testing.T, layout mapping.Layout) {
	stT, tablesT := newTables(t, "puttsd", layout)
	stP, tablesP := newTables(t, "putph", layout)
	ph := startPromhbase(t, stP, tablesP, layout, testserver.Options{NoCompaction: true,
		Adapter: adapter.Options{OpenTSDB: adapter.OpenTSDBOptions{AutoCreateMetrics: true}}})
	port := startPort(t, ph.srv)
	d := startTSD(t, tablesT, layout, "tsd.storage.max_tags = 8", "tsd.http.show_stack_trace = false",
		"tsd.storage.enable_compaction = false", "tsd.core.auto_create_metrics = true")
	tsdAddr := strings.TrimPrefix(d.url, "http://")

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	h0 := time.Now().Add(-5 * time.Hour).Truncate(time.Hour).Unix()
	lines, bad, bodies := putTraffic(rng, h0)
	t.Logf("%d telnet lines, %d malformed ones, %d /api/put requests, from hour %d", len(lines), len(bad), len(bodies), h0)

	// Telnet: the good lines on one connection, answered by nothing; then
	// each other line alone, its answers (a TSD writes them as they come)
	// read up to a version's.
	for _, addr := range []string{tsdAddr, port} {
		if got := telnet(t, addr, lines); len(got) != 0 {
			t.Errorf("%s answered good lines with %q", addr, got)
		}
	}
	tc, pc := dialTelnet(t, tsdAddr), dialTelnet(t, port)
	for _, l := range bad {
		want, got := tc.ask(t, l), pc.ask(t, l)
		if !slices.Equal(got, want) {
			t.Errorf("telnet %q:\n got %q\nwant %q", l, got, want)
		}
	}
	// HTTP: each request's status and body.
	for _, b := range bodies {
		wantCode, wantBody := request(t, d.url, b)
		gotCode, gotBody := request(t, "http://"+port, b)
		if strings.Contains(wantBody, "Unable to parse the given JSON") {
			// The details quote Jackson's parser; compare the rest.
			wantBody, gotBody = cutDetails(wantBody), cutDetails(gotBody)
		}
		if gotCode != wantCode || gotBody != wantBody {
			t.Errorf("%s %s %q:\n got %d %s\nwant %d %s", b.method, b.query, b.body, gotCode, gotBody, wantCode, wantBody)
		}
	}
	// The cells: promhbase's are there when its answers came; the TSD's
	// are written asynchronously from telnet.
	want := cellsByName(t, stP, tablesP.Data, tablesP.UID, layout)
	var got map[string][]string
	if err := poll.Wait(t.Context(), time.Minute, 100*time.Millisecond, "the TSD's cells", func() (bool, string, error) {
		got = cellsByName(t, stT, tablesT.Data, tablesT.UID, layout)
		return countCells(got) >= countCells(want), fmt.Sprintf("%d of %d cells", countCells(got), countCells(want)), nil
	}); err != nil {
		t.Error(err)
	}
	if countCells(want) == 0 {
		t.Fatal("promhbase stored no cell")
	}
	for row, cells := range want {
		if !slices.Equal(got[row], cells) {
			t.Errorf("row %s:\npromhbase %v\n      TSD %v", row, cells, got[row])
		}
	}
	for row := range got {
		if _, ok := want[row]; !ok {
			t.Errorf("row %s only in the TSD's table: %v", row, got[row])
		}
	}
	t.Logf("%d rows, %d cells alike", len(want), countCells(want))
	compareNameAnswers(t, d.url, "http://"+port)

	// PromQL over the points put equals PromQL over the same samples
	// remote-written.
	stR, tablesR := newTables(t, "putrw", layout)
	rw := startPromhbase(t, stR, tablesR, layout, testserver.Options{NoCompaction: true})
	rw.send(t, putSeries(t, append(lines, bad...), bodies))
	start, end := h0*1000, (h0+3*3600)*1000
	for _, q := range []string{`{__name__=~"put.*|m"}`, `rate({__name__="put.cpu"}[10m])`, `sum by (host) ({__name__="put_mem.bytes"})`,
		`max_over_time({__name__="put.cpu"}[15m]) - min_over_time({__name__="put.cpu"}[15m])`, `count_over_time({__name__=~".+", dc="lon"}[20m])`,
		`increase({__name__="put.cpu"}[30m])`} {
		gotQ, wantQ := queryRange(t, ph.url, q, start, end), queryRange(t, rw.url, q, start, end)
		if gotQ != wantQ {
			t.Errorf("%s over the puts:\n%s\nremote-written:\n%s", q, gotQ, wantQ)
		}
		if !strings.Contains(wantQ, `"values":[[`) {
			t.Errorf("%s: no sample in %s", q, wantQ)
		}
	}
}

// putSeries returns the points the lines and bodies put (as promhbase
// parses them, a value as its cell holds it) as remote-write series.
func putSeries(t *testing.T, lines []string, reqs []putRequest) []prompb.TimeSeries {
	t.Helper()
	var pts []opentsdb.Point
	for _, l := range lines {
		rs := make([]rune, len(l)) // a telnet line's bytes are Latin-1 characters
		for i := range len(l) {
			rs[i] = rune(l[i])
		}
		if p, perr := opentsdb.ParseTelnetPut(strings.Split(string(rs), " "), opentsdb.DefaultMaxTags); perr == nil {
			pts = append(pts, p)
		}
	}
	for _, r := range reqs {
		items, err := opentsdb.ParsePutBody([]byte(r.body), opentsdb.DefaultMaxTags)
		for _, it := range items {
			if err == nil && it.Err == nil && r.method == http.MethodPost {
				pts = append(pts, it.Point)
			}
		}
	}
	bySeries := map[string]map[int64]float64{}
	labelsOf := map[string][]prompb.Label{}
	for _, p := range pts {
		lbls := []prompb.Label{{Name: "__name__", Value: p.Metric}}
		for _, tg := range p.Tags {
			lbls = append(lbls, prompb.Label{Name: tg.Key, Value: tg.Value})
		}
		slices.SortFunc(lbls, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
		key := fmt.Sprint(lbls)
		_, v := mapping.AppendEncodedCell(nil, mapping.HourBase(p.Sample.T), p.Sample)
		f, err := mapping.DecodeValue(p.Sample.Flags, v)
		if err != nil {
			t.Fatal(err)
		}
		if bySeries[key] == nil {
			bySeries[key], labelsOf[key] = map[int64]float64{}, lbls
		}
		bySeries[key][p.Sample.T] = f
	}
	var out []prompb.TimeSeries
	for key, samples := range bySeries {
		ts := prompb.TimeSeries{Labels: labelsOf[key]}
		for _, t := range slices.Sorted(maps.Keys(samples)) {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: samples[t]})
		}
		out = append(out, ts)
	}
	return out
}

// queryRange returns base's /api/v1/query_range answer to q, step 1m.
func queryRange(t *testing.T, base, q string, start, end int64) string {
	t.Helper()
	u := fmt.Sprintf("%s/api/v1/query_range?query=%s&start=%d&end=%d&step=60", base, url.QueryEscape(q), start/1000, end/1000)
	var v any
	code, body, err := getJSON(u, &v)
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: %d %s %v", q, code, body, err)
	}
	return string(body)
}

// startPort serves promhbase's OpenTSDB port over srv and returns its
// address.
func startPort(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := opentsdb.NewPort(opentsdb.PortConfig{Telnet: srv.Server, HTTP: opentsdb.HTTPHandler(srv.Handler, "", opentsdb.Version{Version: "promhbase-test"}), Version: "promhbase-test"})
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = ln.Close()
		_ = p.Close()
		if err := <-done; err != nil {
			t.Errorf("port: %v", err)
		}
	})
	return ln.Addr().String()
}

// putRequest is an HTTP request of the traffic.
type putRequest struct {
	method, query, body string
}

// putTraffic generates the traffic: series of two metrics, each point a
// telnet line or a member of an /api/put body, and then the malformed
// lines and bodies.
func putTraffic(rng *rand.Rand, h0 int64) (lines, bad []string, reqs []putRequest) {
	type pt struct{ metric, ts, value, tags string }
	var pts []pt
	hosts := []string{"web01", "web02", "db-1", "cache.eu/1"}
	for s, host := range hosts {
		metric := []string{"put.cpu", "put_mem.bytes"}[s%2]
		tags := "host=" + host + " dc=lon"
		var counter int64
		for i := range 60 {
			if i >= 20 && i < 28 && s == 1 {
				continue // a gap
			}
			sec := h0 + int64(i)*97 + int64(s) // over two hours
			var ts string
			switch i % 3 {
			case 0:
				ts = strconv.FormatInt(sec, 10)
			case 1:
				ts = strconv.FormatInt(sec*1000+int64(rng.IntN(1000)), 10)
			default:
				ts = strconv.FormatInt(sec, 10) + "." + fmt.Sprintf("%03d", rng.IntN(1000))
			}
			var v string
			switch rng.IntN(8) {
			case 0:
				counter += int64(rng.IntN(5000))
				if rng.IntN(6) == 0 {
					counter = int64(rng.IntN(10)) // a reset
				}
				v = strconv.FormatInt(counter, 10)
			case 1:
				v = strconv.FormatInt(int64(rng.IntN(256))-128, 10) // 1 byte
			case 2:
				v = strconv.FormatInt(-int64(rng.IntN(1<<30)), 10) // 4 bytes
			case 3:
				v = strconv.FormatInt(rng.Int64(), 10) // 8 bytes
			case 4:
				v = strconv.FormatFloat(float64(rng.IntN(64))/4, 'f', 2, 64) // fits a float32
			case 5:
				v = strconv.FormatFloat(rng.Float64()*1e6, 'g', -1, 64) // a double
			case 6:
				v = []string{"1.0", "1e3", "-2.5E-3", "3.4028235E38", "0.1", "1.5e300", "42.0d", "+7.25"}[rng.IntN(8)]
			default:
				v = strconv.Itoa(40000 + rng.IntN(1000)) // 2... 4 bytes
			}
			pts = append(pts, pt{metric, ts, v, tags})
		}
	}
	// Half by telnet, half by HTTP in arrays of up to 7.
	var batch []string
	flush := func(q string) {
		if len(batch) > 0 {
			reqs = append(reqs, putRequest{"POST", q, "[" + strings.Join(batch, ",") + "]"})
			batch = nil
		}
	}
	for i, p := range pts {
		if i%2 == 0 {
			lines = append(lines, "put "+p.metric+" "+p.ts+" "+p.value+" "+p.tags)
			continue
		}
		ts := strings.ReplaceAll(p.ts, ".", "")
		var tags []string
		for _, kv := range strings.Fields(p.tags) {
			k, v, _ := strings.Cut(kv, "=")
			tags = append(tags, strconv.Quote(k)+":"+strconv.Quote(v))
		}
		value := strconv.Quote(p.value)
		if i%4 == 1 && !strings.ContainsAny(p.value, "dD+") {
			value = p.value // a JSON number: its text is the value
		}
		batch = append(batch, `{"metric":"`+p.metric+`","timestamp":`+ts+`,"value":`+value+`,"tags":{`+strings.Join(tags, ",")+`}}`)
		if len(batch) == 7 {
			flush([]string{"", "summary", "details", "sync", "summary&details&sync_timeout=10000"}[len(reqs)%5])
		}
	}
	flush("")
	ts := strconv.FormatInt(h0+7200, 10)
	bad = append(bad,
		"put", "put m", "put  "+ts+" 1 host=a", "put put.bad notatime 1 host=a", "put put.bad -5 1 host=a",
		"put put.bad 0 1 host=a", "put put.bad "+ts+"  host=a", "put put.bad "+ts+" 1 hosta",
		"put put.bad "+ts+" 1 host=a host=b", "put put.bad "+ts+" 1 host=a host=a", "put put.bad "+ts+" NaN host=a",
		"put put.bad "+ts+" 1.2.3 host=a", "put put.bad "+ts+" 1e999 host=a", "put put.bad "+ts+" -1e999 host=a",
		"put put.bad "+ts+" 12345678901234567890 host=a", "put put.bad "+ts+" 9223372036854775808 host=a",
		"put put.bad "+ts+" 1 a=b c=d e=f g=h i=j k=l m=n o=p q=r", "put put!bad "+ts+" 1 host=a",
		"put put.bad "+ts+" 1 host=a=b", "put put.bad 99999999999999 1 host=a", "put put.bad "+ts+" 1 h@st=a",
		"put put.bad "+ts+" 1 host=@", "put put.bad "+ts+" 1 ", "put put.bad "+ts+" 0x1p3 host=a",
		"put put.bad "+ts+" 1.5f host=a", "put put.bad "+ts+" 1e host=a", "put put.bad "+ts+" .5 host=a",
		"put put.bad "+ts+" 5. host=a", "put put.bad "+ts+" - host=a", "put put.bad +"+ts+" 1 host=a",
		"put put.bad "+ts+" 1 héllo=wörld", "put mé "+ts+" 1 host=a", "PUT put.bad "+ts+" 1 host=a", "foo bar", "dropcaches",
	)
	ok := `{"metric":"put.http","timestamp":` + ts + `,"value":1,"tags":{"host":"a"}}`
	reqs = append(reqs,
		putRequest{"POST", "", ok}, putRequest{"POST", "summary", ok}, putRequest{"POST", "details", "[" + ok + "]"},
		putRequest{"GET", "", ""}, putRequest{"POST", "", ""}, putRequest{"POST", "", "hello"}, putRequest{"POST", "", "[]"},
		putRequest{"POST", "", "{bad json"}, putRequest{"POST", "details", "[" + ok + `,{"metric":"put.http","timestamp":` + ts + `,"value":"x","tags":{"host":"a"}}]`},
		putRequest{"POST", "details", `[{"timestamp":1,"value":1,"tags":{"a":"b"}},{"metric":"m","value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1,"value":1}]`},
		putRequest{"POST", "details", `[{"metric":"m","timestamp":1,"value":1,"tags":{}},{"metric":"m","timestamp":1,"value":true,"tags":{"a":"b"}},{"metric":"m","timestamp":1,"value":"1e999","tags":{"a":"b"}}]`},
		putRequest{"POST", "summary", `[{"metric":"m b","timestamp":1,"value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":"` + ts + `","value":"2.5","tags":{"a":"b","c":"d"}}]`},
		putRequest{"POST", "details", `{"metric":"put.http","timestamp":` + ts + `.9,"value":"7","tags":{"a":"b","c":"d","e":"f","g":"h","i":"j","k":"l","m":"n","o":"p","q":"r"}}`},
		putRequest{"POST", "details", `{"metric":"put.http","timestamp":99999999999999,"value":"7","tags":{"host":"a"}}`},
		putRequest{"POST", "details", `[{"metric":"put.http","timestamp":` + ts + `,"value":"7","tags":{"host":"a","bad key":"v"}},null]`},
		putRequest{"POST", "summary", `[{"metric":"put.http","timestamp":` + ts + `,"value":1,"tags":{"host":"b"},"extra":[1,2]}]`},
		putRequest{"POST", "", `[{"metric":{"a":1},"timestamp":1,"value":1,"tags":{"a":"b"}}]`},
	)
	return lines, bad, reqs
}

// telnet sends lines on one connection, then version, and returns the
// answers up to version's, sorted (version's own left out).
func telnet(t *testing.T, addr string, lines []string) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.WriteString(c, strings.Join(lines, "\n")+"\nversion\n"); err != nil {
		t.Fatal(err)
	}
	var got []string
	br := bufio.NewReader(c)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("telnet %s: %v after %q", addr, err, got)
		}
		if strings.HasPrefix(l, "net.opentsdb.tools ") {
			if _, err := br.ReadString('\n'); err != nil { // "Built on ..."
				t.Fatal(err)
			}
			break
		}
		got = append(got, l)
	}
	slices.Sort(got)
	return got
}

// telnetConn is a telnet connection that asks one line at a time.
type telnetConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialTelnet(t *testing.T, addr string) *telnetConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &telnetConn{c: c, br: bufio.NewReader(c)}
}

// ask sends line and version, and returns the answers before version's.
func (tc *telnetConn) ask(t *testing.T, line string) []string {
	t.Helper()
	_ = tc.c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(tc.c, line+"\nversion\n"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		l, err := tc.br.ReadString('\n')
		if err != nil {
			t.Fatalf("telnet %q: %v after %q", line, err, got)
		}
		if strings.HasPrefix(l, "net.opentsdb.tools ") {
			if _, err := tc.br.ReadString('\n'); err != nil { // "Built on ..."
				t.Fatal(err)
			}
			return got
		}
		got = append(got, l)
	}
}

// request sends an /api/put request and returns its status and body.
func request(t *testing.T, base string, r putRequest) (int, string) {
	t.Helper()
	return requestPath(t, base, "/api/put", r)
}

// requestPath sends r to path and returns its status and body.
func requestPath(t *testing.T, base, path string, r putRequest) (int, string) {
	t.Helper()
	u := base + path
	if r.query != "" {
		u += "?" + r.query
	}
	req, err := http.NewRequestWithContext(t.Context(), r.method, u, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cutDetails drops an error JSON's details member.
func cutDetails(body string) string {
	if i := strings.Index(body, `,"details":`); i >= 0 {
		return body[:i] + "}}"
	}
	return body
}

// cellsByName reads every data row of table as "metric tagk=tagv ...
// @base" (names from uidTable's reverse rows, so UIDs compare by name)
// to its cells, "qualifier=value" in hex, sorted.
func cellsByName(t *testing.T, st store.Store, table, uidTable string, layout mapping.Layout) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	names := map[string]string{} // kind + uid -> name
	sc := st.Scan(ctx, store.ScanRequest{Table: uidTable, Family: "name"})
	for sc.Next() {
		row := sc.Row()
		for _, c := range row.Cells {
			names[string(c.Qualifier)+string(row.Key)] = string(c.Value)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	_ = sc.Close()
	out := map[string][]string{}
	sc = st.Scan(ctx, store.ScanRequest{Table: table, Family: "t"})
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		k := row.Key[layout.SaltWidth:]
		mw, kw, vw := layout.MetricWidth, layout.TagKWidth, layout.TagVWidth
		var tags []string // by name: the UIDs' order is each side's own
		for rest := k[mw+4:]; len(rest) >= kw+vw; rest = rest[kw+vw:] {
			tags = append(tags, names["tagk"+string(rest[:kw])]+"="+names["tagv"+string(rest[kw:kw+vw])])
		}
		slices.Sort(tags)
		base, _ := layout.BaseTimeOf(row.Key)
		name := names["metrics"+string(k[:mw])] + " " + strings.Join(tags, " ") + " @" + strconv.Itoa(int(base))
		for _, c := range row.Cells {
			out[name] = append(out[name], hex.EncodeToString(c.Qualifier)+"="+hex.EncodeToString(c.Value))
		}
		slices.Sort(out[name])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func countCells(m map[string][]string) int {
	n := 0
	for _, c := range m {
		n += len(c)
	}
	return n
}
