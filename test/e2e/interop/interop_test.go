// Package interop proves promhbase and a real OpenTSDB 2.4.1 TSD read each
// other's data in the same HBase tables: promhbase writes, OpenTSDB's
// /api/query reads; OpenTSDB's /api/put writes, promhbase's remote read
// reads; rows OpenTSDB compacted read back through promhbase, rows
// promhbase compacted read back through OpenTSDB; OpenTSDB's fsck and uid
// fsck find no error. Once unsalted, once salted (width 1, 20
// buckets) on both sides.
//
// It needs the test HBase (tools/scripts/hbase.sh up) and starts TSDs itself
// through tools/scripts/opentsdb.sh (jars from Maven Central).
package interop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	return testproc.Root(t, ".")
}

// tsd is a running OpenTSDB TSD.
type tsd struct {
	t    *testing.T
	url  string
	root string
	env  []string
}

func (d *tsd) script(args ...string) (string, error) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(d.root, "tools", "scripts", "opentsdb.sh"), args...)
	cmd.Env = append(os.Environ(), d.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// startTSD starts a TSD on tables; conf adds opentsdb.conf lines.
func startTSD(t *testing.T, tables testbackend.Tables, layout mapping.Layout, conf ...string) *tsd {
	t.Helper()
	addr := testproc.FreeAddr(t)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	// Each TSD has its own directory and port: the tests run theirs at once.
	d := &tsd{t: t, url: "http://" + addr, root: repoRoot(t), env: []string{
		"OPENTSDB_RUN=" + t.TempDir(),
		"OPENTSDB_PORT=" + port,
		"OPENTSDB_ZK=" + testbackend.ZKQuorum(),
		"OPENTSDB_DATA_TABLE=" + tables.Data,
		"OPENTSDB_UID_TABLE=" + tables.UID,
		"OPENTSDB_SALT_WIDTH=" + strconv.Itoa(layout.SaltWidth),
		"OPENTSDB_SALT_BUCKETS=" + strconv.Itoa(layout.SaltBuckets),
		"OPENTSDB_CONF_EXTRA=" + strings.Join(append(conf, "tsd.storage.hbase.meta_table = "+cmp.Or(tables.Meta, "tsdb-meta")), "\n"),
	}}
	if out, err := d.script("up"); err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(out, "mvn") {
			t.Skipf("OpenTSDB jars could not be fetched: %v\n%s", err, out)
		}
		t.Fatalf("opentsdb.sh up: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := d.script("down"); err != nil {
			t.Logf("opentsdb.sh down: %v\n%s", err, out)
		}
	})
	return d
}

// promhbase is an in-process promhbase on the HBase store.
type promhbase struct {
	url    string
	mapper *series.Mapper
	write  remote.WriteClient
	read   remote.ReadClient
	srv    *testserver.Server
}

// startPromhbase serves promhbase over st's tables, reading as a second
// process would (testserver.Options.ColdReads), with opts' other options.
func startPromhbase(t *testing.T, st store.Store, tables testbackend.Tables, layout mapping.Layout, opts testserver.Options) *promhbase {
	t.Helper()
	opts.ColdReads = true
	srv := testserver.Start(t, st, tables, layout, opts)
	wc, rc := promremote.Clients(t, "interop", srv.URL, promremote.Options{})
	return &promhbase{url: srv.URL, mapper: srv.Mapper, write: wc, read: rc, srv: srv}
}

type point struct {
	t int64
	v float64
}

func (p *promhbase) send(t *testing.T, series []prompb.TimeSeries) {
	t.Helper()
	if err := promremote.Store(context.Background(), p.write, &prompb.WriteRequest{Timeseries: series}); err != nil {
		t.Fatal(err)
	}
}

// readUntil reads ms through p's remote read every 500 ms until series
// holds n points, for at most 30 s (OpenTSDB buffers puts for up to a
// second, tsd.storage.flush_interval), and returns the last answer: the
// caller's check says what is wrong with it.
func (p *promhbase) readUntil(t *testing.T, start, end int64, series string, n int, ms ...*labels.Matcher) map[string][]point {
	t.Helper()
	var got map[string][]point
	_ = poll.Wait(t.Context(), 30*time.Second, 500*time.Millisecond, series+" read", func() (bool, string, error) {
		got = p.readSeries(t, start, end, ms...)
		return len(got[series]) == n, "", nil
	})
	return got
}

// readSeries reads one series back through promhbase's remote read.
func (p *promhbase) readSeries(t *testing.T, start, end int64, ms ...*labels.Matcher) map[string][]point {
	t.Helper()
	pq, err := remote.ToQuery(start, end, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := p.read.Read(context.Background(), pq, true)
	if err != nil {
		t.Fatalf("remote read: %v", err)
	}
	out := map[string][]point{}
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		var pts []point
		for it.Next() != 0 {
			ts, v := it.At()
			pts = append(pts, point{ts, v})
		}
		out[s.Labels().String()] = pts
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// query asks OpenTSDB's /api/query for one series (aggregator none,
// millisecond resolution) and returns its points sorted by time.
func (d *tsd) query(t *testing.T, start, end int64, metric string, tags map[string]string) []point {
	t.Helper()
	return onePoints(t, metric, d.queryAPI(t, start, end, map[string]any{"aggregator": "none", "metric": metric, "tags": tags}))
}

type tsdResult struct {
	Metric string                     `json:"metric"`
	Tags   map[string]string          `json:"tags"`
	DPS    map[string]json.RawMessage `json:"dps"`
}

// queryAPI asks OpenTSDB's /api/query for the queries over [start, end]
// at millisecond resolution, and returns its results.
func (d *tsd) queryAPI(t *testing.T, start, end int64, queries ...map[string]any) []tsdResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"start": start, "end": end, "msResolution": true, "queries": queries})
	code, raw := d.post(t, "/api/query", string(body))
	if code != http.StatusOK {
		t.Fatalf("/api/query %s: %d %s", body, code, tail(raw, 20))
	}
	var res []tsdResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("/api/query answer %s: %v", raw, err)
	}
	return res
}

// onePoints returns the points of the one result res holds (what names
// the query), sorted by time.
func onePoints(t *testing.T, what string, res []tsdResult) []point {
	t.Helper()
	if len(res) != 1 {
		t.Fatalf("/api/query %s: %d results, want 1: %v", what, len(res), res)
	}
	var pts []point
	for ts, v := range res[0].DPS {
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			t.Fatalf("value %s: %v", v, err)
		}
		pts = append(pts, point{ms, f})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	return pts
}

// put writes through OpenTSDB's /api/put; query is the URL's query
// ("details", and "&sync..." to wait for HBase).
func (d *tsd) put(t *testing.T, query, body string) {
	t.Helper()
	if code, raw := d.post(t, "/api/put?"+query, body); code/100 != 2 {
		t.Fatalf("/api/put: %d %s", code, raw)
	}
}

// post sends a JSON body to the TSD and returns the status and answer.
func (d *tsd) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(d.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func samePoints(t *testing.T, what string, got, want []point) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d points, want %d\n got %v\nwant %v", what, len(got), len(want), got, want)
		return
	}
	for i := range want {
		if got[i].t != want[i].t || math.Float64bits(got[i].v) != math.Float64bits(want[i].v) {
			t.Errorf("%s: point %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestOpenTSDBInterop(t *testing.T) {
	t.Parallel()
	bothLayouts(t, testInterop)
}

// bothLayouts runs fn once unsalted and once salted (width 1, 20 buckets),
// on both sides, the two at once (each on its own tables and TSD).
func bothLayouts(t *testing.T, fn func(*testing.T, mapping.Layout)) {
	t.Helper()
	salted := mapping.DefaultLayout()
	salted.SaltWidth, salted.SaltBuckets = 1, 20
	for _, tc := range []struct {
		name   string
		layout mapping.Layout
	}{{"unsalted", mapping.DefaultLayout()}, {"salted", salted}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fn(t, tc.layout)
		})
	}
}

// newTables creates fresh data and UID tables named after prefix in the
// test HBase, dropped when the test ends.
func newTables(t *testing.T, prefix string, layout mapping.Layout) (*hbase.Store, testbackend.Tables) {
	t.Helper()
	st := testbackend.NewHBaseStore(t)
	sfx := tableSuffix(layout)
	tables := testbackend.Tables{Data: "tsdb_" + prefix + "_" + sfx, UID: "tsdb-uid_" + prefix + "_" + sfx,
		Meta: "tsdb-meta_" + prefix + "_" + sfx, Index: "tsdb-index_" + prefix + "_" + sfx}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, hbase.TablesConfig{DataTable: tables.Data, UIDTable: tables.UID, MetaTable: tables.Meta, IndexTable: tables.Index,
		SaltWidth: layout.SaltWidth, SaltBuckets: layout.SaltBuckets}); err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, tables.Data, tables.UID, tables.Meta, tables.Index); err != nil {
			t.Logf("drop tables: %v", err)
		}
	})
	return st, tables
}

// tableSuffix names a test's tables apart from those of the tests that
// run beside it: the process, the time and the layout (the two layouts of
// a test create theirs at once).
func tableSuffix(layout mapping.Layout) string {
	return fmt.Sprintf("%d_%d_s%d", os.Getpid(), time.Now().UnixNano()%1e9, layout.SaltWidth)
}

func testInterop(t *testing.T, layout mapping.Layout) {
	st, tables := newTables(t, "interop", layout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ph := startPromhbase(t, st, tables, layout, testserver.Options{})
	d := startTSD(t, tables, layout)

	// Hours that ended long ago, so that OpenTSDB compacts what it reads.
	h0 := time.Now().Add(-6 * time.Hour).Truncate(time.Hour).UnixMilli()
	const hour = int64(3600_000)

	// 1. promhbase writes; OpenTSDB reads.
	hosts := []string{"web01", "web02", "web03"}
	want := map[string][]point{}
	var series []prompb.TimeSeries
	for hi, host := range hosts {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "interop_cpu"}, {Name: "dc", Value: "lon"}, {Name: "host", Value: host}}}
		for i := range 40 {
			tms := h0 + int64(i)*7*60_000 + int64(i*37+hi) // ms offsets, 4+ hours
			var v float64
			switch i % 4 {
			case 0:
				v = float64(i * 1000) // integral
			case 1:
				v = float64(i) + 0.25 // fits a float32
			case 2:
				v = float64(i) * 0.1 // needs a double
			default:
				v = -float64(i) * 12345.678
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: tms, Value: v})
			want[host] = append(want[host], point{tms, v})
		}
		series = append(series, ts)
	}
	ph.send(t, series)
	for _, host := range hosts {
		got := d.query(t, h0-hour, h0+6*hour, "interop_cpu", map[string]string{"host": host, "dc": "lon"})
		samePoints(t, "OpenTSDB reading promhbase's "+host, got, want[host])
	}

	// 1b. Native histograms beside floats: a series with floats in its
	// first hour, floats and histograms in its second, histograms only in
	// its third. OpenTSDB's float queries see the floats, exactly.
	histSeries, histFloats, hists := histogramSeries(h0)
	ph.send(t, []prompb.TimeSeries{histSeries})
	samePoints(t, "OpenTSDB reading the floats of a series with histograms",
		d.query(t, h0-hour, h0+6*hour, "interop_hist", map[string]string{"host": "h"}), histFloats)
	ph.checkHistograms(t, "promhbase reading its histograms", h0-hour, h0+6*hour, hists)
	// Its metadata becomes OpenTSDB's UID metadata of the metric.
	ph.sendMetadata(t, prompb.MetricMetadata{Type: prompb.MetricMetadata_HISTOGRAM, MetricFamilyName: "interop_hist", Help: "Latency, in seconds.", Unit: "seconds"})
	d.checkUIDMeta(t, ph, "interop_hist", "Latency, in seconds.", map[string]string{"type": "histogram", "unit": "seconds"})

	// 2. OpenTSDB writes (integers, floats, second and millisecond
	// timestamps); promhbase reads exactly. Second offsets 80..95 are
	// avoided as first points of a row: OpenTSDB's own fsck misreads such
	// compacted columns as append columns (its issue #2186).
	s0 := h0 / 1000
	d.put(t, "details", fmt.Sprintf(`[
	  {"metric":"otsdb_put","timestamp":%d,"value":42,"tags":{"host":"a"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":"0.5","tags":{"host":"a"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":1.1,"tags":{"host":"a"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":-7,"tags":{"host":"a"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":1234567890123,"tags":{"host":"a"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":2.5,"tags":{"host":"a"}},
	  {"metric":"otsdb_put","timestamp":%d,"value":300,"tags":{"host":"a"}}
	]`, s0+10, (s0+20)*1000+250, s0+3600+5, (s0+3600)*1000+999, s0+7200+3599, (s0+7300)*1000+1, s0+7301))
	wantPut := []point{
		{(s0 + 10) * 1000, 42}, {(s0+20)*1000 + 250, 0.5}, {(s0 + 3605) * 1000, 1.1}, {(s0+3600)*1000 + 999, -7},
		{(s0 + 7200 + 3599) * 1000, 1234567890123}, {(s0+7300)*1000 + 1, 2.5}, {(s0 + 7301) * 1000, 300},
	}
	sort.Slice(wantPut, func(i, j int) bool { return wantPut[i].t < wantPut[j].t })
	otsdbSeries := `{__name__="otsdb_put", host="a"}`
	nameEq := labels.MustNewMatcher(labels.MatchEqual, "__name__", "otsdb_put")
	got := ph.readUntil(t, h0-hour, h0+6*hour, otsdbSeries, len(wantPut), nameEq)
	samePoints(t, "promhbase reading OpenTSDB's puts", got[otsdbSeries], wantPut)

	// 3. OpenTSDB compacts the old rows it reads: wait until it has, then
	// promhbase reads the compacted rows.
	d.query(t, h0-hour, h0+6*hour, "otsdb_put", map[string]string{"host": "a"})
	waitCompacted(t, st, tables.Data, layout)
	for _, host := range hosts {
		got := ph.readSeries(t, h0-hour, h0+6*hour, nameEqual("interop_cpu"), labels.MustNewMatcher(labels.MatchEqual, "host", host))
		samePoints(t, "promhbase reading OpenTSDB-compacted "+host, got[fmt.Sprintf(`{__name__="interop_cpu", dc="lon", host=%q}`, host)], want[host])
	}
	got = ph.readSeries(t, h0-hour, h0+6*hour, nameEq)
	samePoints(t, "promhbase reading OpenTSDB-compacted puts", got[otsdbSeries], wantPut)

	// 4. promhbase compacts rows of its own (before any TSD read them);
	// OpenTSDB reads the compacted rows.
	var mem []point
	memSeries := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "interop_mem"}, {Name: "host", Value: "web01"}}}
	for i := range 30 {
		p := point{h0 + int64(i)*11*60_000 + int64(i), float64(i)*0.5 - 3}
		memSeries.Samples = append(memSeries.Samples, prompb.Sample{Timestamp: p.t, Value: p.v})
		mem = append(mem, p)
	}
	ph.send(t, []prompb.TimeSeries{memSeries})
	c := compact.New(st, compact.Options{DataTable: tables.Data, UIDTable: tables.UID, Layout: layout})
	stats, err := c.CompactRange(ctx, time.UnixMilli(h0-hour), time.UnixMilli(h0+6*hour), nil)
	if err != nil {
		t.Fatalf("promhbase compaction: %v", err)
	}
	t.Logf("promhbase compaction: %s", stats)
	waitCompacted(t, st, tables.Data, layout)
	samePoints(t, "OpenTSDB reading promhbase-compacted rows", d.query(t, h0-hour, h0+6*hour, "interop_mem", map[string]string{"host": "web01"}), mem)
	got = ph.readSeries(t, h0-hour, h0+6*hour, nameEqual("interop_mem"))
	samePoints(t, "promhbase reading its compacted rows", got[`{__name__="interop_mem", host="web01"}`], mem)

	// Histogram cells survive OpenTSDB's compaction (the rows were read by
	// the TSD above, and compacted) and promhbase's, byte for byte.
	if n := countHistogramCells(t, st, tables.Data); n != len(hists) {
		t.Errorf("%d histogram cells after both compactions, want %d", n, len(hists))
	}
	ph.checkHistograms(t, "promhbase reading histograms after both compactions", h0-hour, h0+6*hour, hists)
	samePoints(t, "OpenTSDB reading the floats of a series with histograms, compacted",
		d.query(t, h0-hour, h0+6*hour, "interop_hist", map[string]string{"host": "h"}), histFloats)

	// Every row, whoever wrote it, carries the salt both sides compute.
	if layout.SaltWidth > 0 {
		checkSalt(t, st, tables.Data, layout)
	}

	// 4b. The series index: OpenTSDB's /api/search/lookup (meta mode) and
	// /api/uid/tsmeta find the series promhbase wrote; OpenTSDB's own puts
	// are found once `reindex` ran over their hours.
	for _, host := range hosts {
		d.checkLookup(t, "interop_cpu{host="+host+"}", 1)
	}
	d.checkLookup(t, "interop_cpu", len(hosts))
	d.checkLookup(t, "otsdb_put", 0)
	d.checkTSMeta(t, ph, "interop_cpu", map[string]string{"dc": "lon", "host": "web01"})
	w := index.NewWriter(st, index.Options{MetaTable: tables.Meta, IndexTable: tables.Index, Layout: layout}, nil)
	rs, err := index.Reindex(ctx, st, w, index.ReindexOptions{DataTable: tables.Data, UIDTable: tables.UID, Layout: layout},
		time.UnixMilli(h0-hour), time.UnixMilli(h0+6*hour))
	if err != nil {
		t.Fatalf("reindex: %v", err)
	}
	t.Logf("reindex: %d rows, %d series-days", rs.Rows, rs.Entries)
	d.checkLookup(t, "otsdb_put{host=a}", 1)
	hostValues, err := index.NewReader(st, tables.Index, ph.mapper.UIDs(), layout).LabelValues(ctx, "host", h0-hour, h0+6*hour)
	if err != nil || !slices.Contains(hostValues, "a") || !slices.Contains(hostValues, "web01") {
		t.Errorf("index host values after reindex: %q, %v", hostValues, err)
	}

	// 5. OpenTSDB's fsck (over every row) and uid fsck find nothing wrong.
	fsckAll(t, d, st, tables.Data)
	out, err := d.script("uid-fsck")
	if err != nil || !strings.Contains(out, "No errors found") {
		t.Errorf("OpenTSDB uid fsck: %v\n%s", err, tail(out, 40))
	}
	rep, err := uid.UIDFsck(ctx, st, tables.UID, layout)
	if err != nil || len(rep.Errors) > 0 {
		t.Errorf("promhbase uid fsck: %v %v", err, rep.Errors)
	}
}

// checkLookup asks OpenTSDB's /api/search/lookup (meta mode: it scans the
// meta table) for m and checks that it finds want series.
func (d *tsd) checkLookup(t *testing.T, m string, want int) {
	t.Helper()
	var got struct {
		Results []struct {
			TSUID  string            `json:"tsuid"`
			Metric string            `json:"metric"`
			Tags   map[string]string `json:"tags"`
		} `json:"results"`
	}
	code, raw, err := getJSON(d.url+"/api/search/lookup?limit=1000&m="+url.QueryEscape(m), &got)
	if err != nil {
		t.Errorf("OpenTSDB lookup %s: %d %v %s", m, code, err, tail(string(raw), 5))
		return
	}
	if len(got.Results) != want {
		t.Errorf("OpenTSDB lookup %s: %d series, want %d: %s", m, len(got.Results), want, raw)
	}
}

// checkTSMeta reads the TSMeta of a series through OpenTSDB's
// /api/uid/tsmeta: OpenTSDB parses the row promhbase wrote.
func (d *tsd) checkTSMeta(t *testing.T, ph *promhbase, metric string, tags map[string]string) {
	t.Helper()
	lbls := []mapping.Label{{Name: []byte("__name__"), Value: []byte(metric)}}
	for k, v := range tags {
		lbls = append(lbls, mapping.Label{Name: []byte(k), Value: []byte(v)})
	}
	s, err := ph.mapper.Resolve(context.Background(), []byte("tsmeta-check"+metric+fmt.Sprint(tags)), lbls)
	if err != nil {
		t.Fatal(err)
	}
	tsuid := fmt.Sprintf("%X", s.TSUID())
	var got struct {
		TSUID   string `json:"tsuid"`
		Created int64  `json:"created"`
		Metric  struct {
			Name string `json:"name"`
		} `json:"metric"`
	}
	code, raw, err := getJSON(d.url+"/api/uid/tsmeta?tsuid="+tsuid, &got)
	if err != nil || got.TSUID != tsuid || got.Metric.Name != metric || got.Created == 0 {
		t.Errorf("OpenTSDB tsmeta of %s: %d %v %s", tsuid, code, err, raw)
	}
}

// getJSON GETs u and decodes a 200 answer into v.
func getJSON(u string, v any) (int, []byte, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, raw, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, raw, fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.StatusCode, raw, json.Unmarshal(raw, v)
}

func nameEqual(n string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, "__name__", n)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitCompacted waits until every data row of the table whose hour ended
// more than an hour ago holds a single data column, as OpenTSDB's
// read-path compaction leaves it.
func waitCompacted(t *testing.T, st store.Store, table string, layout mapping.Layout) {
	t.Helper()
	cutoff := uint32(time.Now().Add(-2 * time.Hour).Unix())
	poll.Until(t, 90*time.Second, time.Second, "compacted by OpenTSDB", func() (bool, string) {
		rows, multi, compacted := 0, 0, 0
		sc := st.Scan(context.Background(), store.ScanRequest{Table: table, Family: "t"})
		for sc.Next() {
			r := sc.Row()
			_, _, base, _, err := layout.ParseRowKey(r.Key)
			if err != nil || base > cutoff {
				continue
			}
			rows++
			data := 0
			for _, c := range r.Cells {
				if len(c.Qualifier)%2 == 0 {
					data++
					if len(c.Qualifier) > 4 || (len(c.Qualifier) == 4 && c.Qualifier[0]&0xF0 != 0xF0) {
						compacted++
					}
				}
			}
			if data > 1 {
				multi++
			}
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rows > 0 && multi == 0 && compacted > 0 {
			t.Logf("OpenTSDB compacted the old rows: %d rows, %d compacted columns", rows, compacted)
			return true, ""
		}
		return false, fmt.Sprintf("%d old rows, %d with several data cells, %d compacted columns", rows, multi, compacted)
	})
}

// checkSalt checks that every row's salt is the bucket mapping computes
// for its metric and tags, for rows written by promhbase and by OpenTSDB.
func checkSalt(t *testing.T, st store.Store, table string, layout mapping.Layout) {
	t.Helper()
	sc := st.Scan(context.Background(), store.ScanRequest{Table: table, Family: "t"})
	defer sc.Close()
	rows := 0
	buckets := map[int]bool{}
	for sc.Next() {
		salt, metric, _, tags, err := layout.ParseRowKey(sc.Row().Key)
		if err != nil {
			t.Fatalf("row %x: %v", sc.Row().Key, err)
		}
		b := layout.SaltBucket(metric, tags)
		if want := layout.AppendSalt(nil, b); !bytes.Equal(salt, want) {
			t.Errorf("row %x: salt %x, want %x", sc.Row().Key, salt, want)
		}
		buckets[b] = true
		rows++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("salt checked on %d rows in %d buckets", rows, len(buckets))
}
