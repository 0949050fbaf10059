package interop

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBBytes proves that data OpenTSDB wrote survives promhbase byte
// for byte and that OpenTSDB's tools keep working on promhbase's rows:
//
//   - compaction by promhbase of a row the TSD wrote (every value width,
//     second and millisecond qualifiers, floats of both widths) and
//     promhbase also wrote carries every cell's qualifier and value bytes
//     into the compacted column, and the TSD then answers exactly what it
//     wrote (2^53+1 and 2^63-1 as integers, 1.0 as a float);
//   - a series with no label but its name is stored so that `tsdb fsck`
//     checks every row of the table (its row count matches a scan) with 0
//     errors, and OpenTSDB queries it;
//   - a name OpenTSDB wrote in ISO-8859-1 is found by its UTF-8 spelling and
//     reads back as valid UTF-8; a Latin-1 name promhbase writes is found by
//     OpenTSDB under its own spelling.
//
// The TSD and serve's background compactor run with compaction off, so
// that the rows are compacted by the test's promhbase compaction first. Once unsalted, once salted (width 1, 20 buckets).
func TestOpenTSDBBytes(t *testing.T) {
	t.Parallel()
	bothLayouts(t, testBytes)
}

func testBytes(t *testing.T, layout mapping.Layout) {
	st, tables := newTables(t, "bytes", layout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Neither compacts on its own: the test compacts the row, after it
	// read the cells' bytes (under load, serve's compactor did it first).
	ph := startPromhbase(t, st, tables, layout, testserver.Options{NoCompaction: true})
	d := startTSD(t, tables, layout, "tsd.storage.enable_compaction = false")
	b := time.Now().Add(-3*time.Hour).Unix() / 3600 * 3600 // an hour that ended

	t.Run("compaction keeps OpenTSDB's bytes", func(t *testing.T) {
		// Second offsets 80..95 are avoided as the row's first point
		// (OpenTSDB's issue #2186 breaks its fsck on those).
		d.putSync(t, fmt.Sprintf(`[
		  {"metric":"repro_bigint","timestamp":%d,"value":9007199254740993,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":9223372036854775807,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":5,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":-300,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":70000,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":1.0,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":0.1,"tags":{"host":"r"}},
		  {"metric":"repro_bigint","timestamp":%d,"value":2.5,"tags":{"host":"r"}}
		]`, b+10, b+20, b+30, b+40, b+50, b+60, (b+70)*1000+5, (b+100)*1000+250))
		// promhbase writes into the same row.
		ph.send(t, []prompb.TimeSeries{{
			Labels:  []prompb.Label{{Name: "__name__", Value: "repro_bigint"}, {Name: "host", Value: "r"}},
			Samples: []prompb.Sample{{Timestamp: (b+200)*1000 + 7, Value: 0.1}, {Timestamp: (b + 300) * 1000, Value: 42}},
		}})
		// An older writer's cell: an 8-byte double 1.0 on a second
		// qualifier (2.4 would write it as a 4-byte float).
		key := rowKey(t, ph, layout, b, "repro_bigint", "host", "r")
		old := make([]byte, 8)
		binary.BigEndian.PutUint64(old, 0x3FF0000000000000)
		if err := st.Put(ctx, tables.Data, []store.Put{{Row: key, Cells: []store.Cell{{
			Family: []byte("t"), Qualifier: []byte{0x19, 0x0F}, Value: old, // 400 s, float 8 bytes
		}}}}); err != nil {
			t.Fatal(err)
		}
		before := dataCellsOf(t, st, tables.Data, key)
		if len(before) != 11 {
			t.Fatalf("row holds %d data cells before compaction, want 11", len(before))
		}
		wantQ, wantV := concatCells(before)
		// The TSD runs without compaction: reading does not rewrite.
		tsdBefore := d.queryRaw(t, b*1000, (b+3600)*1000, "repro_bigint", map[string]string{"host": "r"})

		c := compact.New(st, compact.Options{DataTable: tables.Data, UIDTable: tables.UID, Layout: layout})
		stats, err := c.CompactRange(ctx, time.Unix(b, 0), time.Unix(b+3599, 0), nil)
		if err != nil || stats.Compacted != 1 {
			t.Fatalf("compact: %s, %v", stats, err)
		}
		after := dataCellsOf(t, st, tables.Data, key)
		if len(after) != 1 {
			t.Fatalf("row holds %d data cells after compaction, want 1", len(after))
		}
		if !bytes.Equal(after[0].Qualifier, wantQ) || !bytes.Equal(after[0].Value, wantV) {
			t.Errorf("compacted column\n %X = %X\nwant (every cell's bytes, in time order, meta 01)\n %X = %X",
				after[0].Qualifier, after[0].Value, wantQ, wantV)
		}
		got := d.queryRaw(t, b*1000, (b+3600)*1000, "repro_bigint", map[string]string{"host": "r"})
		if strings.Join(got, " ") != strings.Join(tsdBefore, " ") {
			t.Errorf("OpenTSDB after promhbase's compaction: %v\nbefore: %v", got, tsdBefore)
		}
		if len(got) != 11 || got[0] != "9007199254740993" || got[1] != "9223372036854775807" {
			t.Errorf("OpenTSDB reads %v, want 11 points starting 9007199254740993 9223372036854775807", got)
		}
		t.Logf("OpenTSDB reads the same before and after: %v", got)
	})

	t.Run("label-less series", func(t *testing.T) {
		var samples []prompb.Sample
		for i := range 5 {
			samples = append(samples, prompb.Sample{Timestamp: (b+int64(i)*600)*1000 + 1, Value: float64(i)})
		}
		ph.send(t, []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "scalar_result"}}, Samples: samples}})
		got := ph.readSeries(t, b*1000, (b+3600)*1000, nameEqual("scalar_result"))
		if len(got[`{__name__="scalar_result"}`]) != 5 || len(got) != 1 {
			t.Errorf("promhbase reads %v", got)
		}
		res := d.queryFull(t, b*1000, (b+3600)*1000, "scalar_result", nil)
		if len(res) != 1 || len(res[0].DPS) != 5 || res[0].Tags["__name__"] != "scalar_result" {
			t.Errorf("OpenTSDB reads %+v, want one series of 5 points tagged __name__=scalar_result", res)
		}
		// A row written the old way (no tag pair) still reads, joined with
		// the new rows; it is removed again before fsck, which cannot read it.
		metric, err := ph.mapper.UIDs().ID(ctx, uid.KindMetric, "scalar_result")
		if err != nil {
			t.Fatal(err)
		}
		oldKey := ph.mapper.AppendRowKey(nil, series.Series{Metric: metric, Bucket: layout.SaltBucket(metric, nil)}, uint32(b))
		q := mapping.AppendMsQualifier(nil, 3599_000, mapping.FlagsInt8)
		if err := st.Put(ctx, tables.Data, []store.Put{{Row: oldKey, Cells: []store.Cell{{Family: []byte("t"), Qualifier: q, Value: []byte{9}}}}}); err != nil {
			t.Fatal(err)
		}
		got = ph.readSeries(t, b*1000, (b+3600)*1000, nameEqual("scalar_result"))
		if s := got[`{__name__="scalar_result"}`]; len(got) != 1 || len(s) != 6 || s[5] != (point{(b + 3599) * 1000, 9}) {
			t.Errorf("promhbase reads with an old-style row: %v", got)
		}
		if err := st.Delete(ctx, tables.Data, oldKey, []store.Column{{Family: []byte("t"), Qualifier: q}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ISO-8859-1 names", func(t *testing.T) {
		d.putSync(t, fmt.Sprintf(`[{"metric":"probe_tsd_café","timestamp":%d,"value":7,"tags":{"city":"zürich"}}]`, b+600))
		for _, m := range []*labels.Matcher{
			nameEqual("probe_tsd_café"),
			labels.MustNewMatcher(labels.MatchRegexp, "__name__", "probe_tsd_caf.+"),
		} {
			got := ph.readSeries(t, b*1000, (b+3600)*1000, m, labels.MustNewMatcher(labels.MatchEqual, "city", "zürich"))
			want := `{__name__="probe_tsd_café", city="zürich"}`
			if len(got) != 1 || len(got[want]) != 1 || got[want][0] != (point{(b + 600) * 1000, 7}) {
				t.Errorf("promhbase reading OpenTSDB's Latin-1 names with %s: %v, want %s", m, got, want)
			}
			for s := range got {
				if !utf8.ValidString(s) {
					t.Errorf("labels %q are not valid UTF-8", s)
				}
			}
		}
		ph.send(t, []prompb.TimeSeries{{
			Labels:  []prompb.Label{{Name: "__name__", Value: "probe_température"}, {Name: "lieu", Value: "genève"}},
			Samples: []prompb.Sample{{Timestamp: (b+700)*1000 + 3, Value: 21.5}},
		}})
		res := d.queryFull(t, b*1000, (b+3600)*1000, "probe_température", map[string]string{"lieu": "genève"})
		if len(res) != 1 || res[0].Metric != "probe_température" || res[0].Tags["lieu"] != "genève" || len(res[0].DPS) != 1 {
			t.Errorf("OpenTSDB reading promhbase's Latin-1 names: %+v", res)
		}
		// The UID table holds the Latin-1 bytes, as a TSD writes them.
		row, err := st.Get(ctx, tables.UID, []byte("probe_temp\xe9rature"), "id")
		if err != nil || len(row.Cells) != 1 {
			t.Errorf("forward row of probe_température in Latin-1: %+v, %v", row.Cells, err)
		}
	})

	fsckAll(t, d, st, tables.Data)
	out, err := d.script("uid-fsck")
	if err != nil || !strings.Contains(out, "No errors found") {
		t.Errorf("OpenTSDB uid fsck: %v\n%s", err, tail(out, 40))
	}
}

// fsckAll runs OpenTSDB's `tsdb fsck --full-scan` with one worker and checks
// that it reports 0 errors and processed every row of the table, as a scan
// of the table counts them (a worker that dies on a row it cannot parse
// stops there and still reports 0 errors).
func fsckAll(t *testing.T, d *tsd, st store.Store, table string) {
	t.Helper()
	rows, dataRows := 0, 0
	sc := st.Scan(context.Background(), store.ScanRequest{Table: table, Family: "t"})
	for sc.Next() {
		rows++
		for _, c := range sc.Row().Cells {
			if len(c.Qualifier)%2 == 0 {
				dataRows++
				break
			}
		}
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.script("fsck", "--full-scan", "--threads=1")
	if err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Total Errors: (\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] != "0" {
		t.Errorf("OpenTSDB fsck reports errors:\n%s", tail(out, 40))
	}
	// fsck counts every row it walks past, but a worker's last row only
	// when it holds data points (not one of native histograms only).
	rm := regexp.MustCompile(`Rows Processed: (\d+)`).FindStringSubmatch(out)
	processed := -1
	if rm != nil {
		processed, _ = strconv.Atoi(rm[1])
	}
	if processed < dataRows || processed > rows {
		t.Errorf("OpenTSDB fsck processed %d rows, the table has %d (%d with data points):\n%s", processed, rows, dataRows, tail(out, 40))
	}
	if m := regexp.MustCompile(`Unknown Objects: (\d+)`).FindStringSubmatch(out); m == nil || m[1] != "0" {
		t.Errorf("OpenTSDB fsck found unknown objects:\n%s", tail(out, 40))
	}
	if strings.Contains(out, "Shouldn't be here") {
		t.Errorf("an fsck worker died:\n%s", tail(out, 60))
	}
	future := regexp.MustCompile(`Possible Future Objects: (\d+)`).FindStringSubmatch(out)
	t.Logf("OpenTSDB fsck: %d rows processed of %d (%d with data points), %s errors, %v", processed, rows, dataRows, m[len(m)-1], future)
}

// putSync writes through OpenTSDB's /api/put and waits until the points
// are in HBase.
func (d *tsd) putSync(t *testing.T, body string) {
	t.Helper()
	d.put(t, "details&sync&sync_timeout=30000", body)
}

// queryFull asks /api/query for a metric (aggregator none, ms resolution).
func (d *tsd) queryFull(t *testing.T, start, end int64, metric string, tags map[string]string) []tsdResult {
	t.Helper()
	if tags == nil {
		tags = map[string]string{} // OpenTSDB fails on "tags":null
	}
	return d.queryAPI(t, start, end, map[string]any{"aggregator": "none", "metric": metric, "tags": tags})
}

// queryRaw returns the values of one series as OpenTSDB prints them, in
// time order.
func (d *tsd) queryRaw(t *testing.T, start, end int64, metric string, tags map[string]string) []string {
	t.Helper()
	res := d.queryFull(t, start, end, metric, tags)
	if len(res) != 1 {
		t.Fatalf("/api/query %s: %d results, want 1", metric, len(res))
	}
	ts := make([]int64, 0, len(res[0].DPS))
	for k := range res[0].DPS {
		v, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, v)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	out := make([]string, len(ts))
	for i, v := range ts {
		out[i] = string(res[0].DPS[strconv.FormatInt(v, 10)])
	}
	return out
}

// rowKey is the key of the row of metric{k=v} for the hour at base.
func rowKey(t *testing.T, ph *promhbase, layout mapping.Layout, base int64, metric, k, v string) []byte {
	t.Helper()
	ctx := context.Background()
	uids := ph.mapper.UIDs()
	m, err := uids.ID(ctx, uid.KindMetric, metric)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := uids.ID(ctx, uid.KindTagK, k)
	if err != nil {
		t.Fatal(err)
	}
	tv, err := uids.ID(ctx, uid.KindTagV, v)
	if err != nil {
		t.Fatal(err)
	}
	tags := append(append([]byte{}, tk...), tv...)
	return ph.mapper.AppendRowKey(nil, series.Series{Metric: m, Tags: tags, Bucket: layout.SaltBucket(m, tags)}, uint32(base))
}

// dataCellsOf returns the even-length (data-point) cells of a row.
func dataCellsOf(t *testing.T, st store.Store, table string, key []byte) []store.Cell {
	t.Helper()
	row, err := st.Get(context.Background(), table, key, "t")
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Cell
	for _, c := range row.Cells {
		if len(c.Qualifier)%2 == 0 {
			out = append(out, c)
		}
	}
	return out
}

// concatCells builds, independently of promhbase's code, the compacted
// column OpenTSDB would build from single-point cells: qualifiers and values
// concatenated in time order, then the meta byte (0x01: seconds and
// milliseconds mixed; 0x00 otherwise).
func concatCells(cells []store.Cell) (qual, val []byte) {
	type cell struct {
		ms   uint32
		q, v []byte
	}
	var cs []cell
	secs, millis := false, false
	for _, c := range cells {
		var ms uint32
		if len(c.Qualifier) == 4 {
			ms = (binary.BigEndian.Uint32(c.Qualifier) & 0x0FFFFFC0) >> 6
			millis = true
		} else {
			ms = uint32(binary.BigEndian.Uint16(c.Qualifier)>>4) * 1000
			secs = true
		}
		cs = append(cs, cell{ms, c.Qualifier, c.Value})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].ms < cs[j].ms })
	for _, c := range cs {
		qual = append(qual, c.q...)
		val = append(val, c.v...)
	}
	meta := byte(0)
	if secs && millis {
		meta = 1
	}
	return qual, append(val, meta)
}

// histogramSeries returns the series interop_hist{host="h"}: floats in the
// hour of h0 (ms), floats and native histograms (integer, float, custom
// buckets) in the next hour, histograms only in the hour after; and its
// floats and histograms.
func histogramSeries(h0 int64) (prompb.TimeSeries, []point, []prompb.Histogram) {
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "interop_hist"}, {Name: "host", Value: "h"}}}
	var floats []point
	var hists []prompb.Histogram
	for i := range 6 {
		p := point{h0 + int64(i)*15*60_000 + 7, float64(i) + 0.5}
		if i >= 3 {
			p.t += 3_600_000 - 45*60_000 // into the second hour
		}
		floats = append(floats, p)
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.t, Value: p.v})
	}
	shapes := []prompb.Histogram{
		prompb.FromIntHistogram(0, &histogram.Histogram{Schema: 3, ZeroThreshold: 0.001, Count: 9, ZeroCount: 1, Sum: 12.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}}, PositiveBuckets: []int64{2, 1, -1},
			NegativeSpans: []histogram.Span{{Offset: -1, Length: 1}}, NegativeBuckets: []int64{1}}),
		prompb.FromFloatHistogram(0, &histogram.FloatHistogram{Schema: -2, Count: 2.5, Sum: -1, CounterResetHint: histogram.GaugeType,
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []float64{2.5}}),
		prompb.FromIntHistogram(0, &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 3, Sum: 0.75,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}, CustomValues: []float64{0.25, 1}}),
	}
	for i := range 6 {
		h := shapes[i%len(shapes)]
		h.Timestamp = h0 + 3_600_000 + int64(i)*10*60_000 + 11 // second and third hours
		if i >= 3 {
			h.Timestamp += 3_600_000 - 30*60_000
		}
		hists = append(hists, h)
	}
	ts.Histograms = hists
	return ts, floats, hists
}

// checkHistograms reads interop_hist through remote read (SAMPLES) and
// compares its histograms with want, every field.
func (p *promhbase) checkHistograms(t *testing.T, what string, start, end int64, want []prompb.Histogram) {
	t.Helper()
	req := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: start, EndTimestampMs: end,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "interop_hist"}}}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}}
	resp, err := http.Post(p.url+"/api/v1/read", "application/x-protobuf", bytes.NewReader(promremote.MustBody(t, req)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var rr prompb.ReadResponse
	if err := promremote.Decode(body, &rr); err != nil || len(rr.Results) != 1 || len(rr.Results[0].Timeseries) != 1 {
		t.Fatalf("%s: %v %v", what, rr.Results, err)
	}
	got := rr.Results[0].Timeseries[0].Histograms
	if len(got) != len(want) {
		t.Fatalf("%s: %d histograms, want %d", what, len(got), len(want))
	}
	for i := range want {
		if g, w := got[i].String(), want[i].String(); g != w {
			t.Errorf("%s: histogram %d\n got %s\nwant %s", what, i, g, w)
		}
	}
}

// countHistogramCells counts the cells with a histogram qualifier.
func countHistogramCells(t *testing.T, st store.Store, table string) int {
	t.Helper()
	sc := st.Scan(context.Background(), store.ScanRequest{Table: table, Family: "t"})
	defer sc.Close()
	n := 0
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			if _, ok := mapping.ParseHistogramQualifier(c.Qualifier); ok {
				n++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// sendMetadata writes a remote write 1.0 request of metadata only.
func (p *promhbase) sendMetadata(t *testing.T, md ...prompb.MetricMetadata) {
	t.Helper()
	if err := promremote.Store(context.Background(), p.write, &prompb.WriteRequest{Metadata: md}); err != nil {
		t.Fatalf("metadata: %v", err)
	}
}

// checkUIDMeta asks OpenTSDB's /api/uid/uidmeta for a metric's metadata.
func (d *tsd) checkUIDMeta(t *testing.T, ph *promhbase, metric, description string, custom map[string]string) {
	t.Helper()
	uid, err := ph.mapper.UIDs().ID(context.Background(), uid.KindMetric, metric)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Custom      map[string]string `json:"custom"`
		Created     int64             `json:"created"`
	}
	code, raw, err := getJSON(fmt.Sprintf("%s/api/uid/uidmeta?uid=%X&type=metric", d.url, uid), &got)
	if err != nil {
		t.Fatalf("/api/uid/uidmeta: %d %v %s", code, err, raw)
	}
	if got.Name != metric || got.Description != description || fmt.Sprint(got.Custom) != fmt.Sprint(custom) || got.Created == 0 {
		t.Errorf("OpenTSDB's uidmeta of %s: %s", metric, raw)
	}
}
