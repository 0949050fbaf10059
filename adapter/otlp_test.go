package adapter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/test/testkit/benchdata"
	"github.com/promhbase/promhbase/test/testkit/otlpgen"
)

// otlpT0 is the request's points' time.
var otlpT0 = time.UnixMilli(1_700_000_000_000)

// otlpRequest is a request of one resource (service a/b, instance i1)
// with a gauge, a cumulative counter of unit seconds, and, when delta, a
// delta sum.
func otlpRequest(delta bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	ms := otlpgen.Resource(md, map[string]any{"service.namespace": "a", "service.name": "b", "service.instance.id": "i1", "host.name": "h1"})
	q1 := map[string]any{"queue": "q1"}
	otlpgen.Gauge(ms, "queue.depth", "", otlpgen.Point{T: otlpT0, V: 3, Attrs: q1}, otlpgen.Point{T: otlpT0.Add(15 * time.Second), V: 4, Attrs: q1})
	otlpgen.Sum(ms, "busy.time", "s", true, pmetric.AggregationTemporalityCumulative, otlpgen.Point{T: otlpT0, V: 7.5})
	if delta {
		p := otlpgen.Point{T: otlpT0, V: 1}
		otlpgen.Sum(ms, "requests", "", true, pmetric.AggregationTemporalityDelta, p, p, p)
	}
	return md
}

// otlpBody encodes md as format ct ("json" or protobuf) with encoding enc.
func otlpBody(t *testing.T, md pmetric.Metrics, json bool, enc string) []byte {
	t.Helper()
	req := pmetricotlp.NewExportRequestFromMetrics(md)
	var b []byte
	var err error
	if json {
		b, err = req.MarshalJSON()
	} else {
		b, err = req.MarshalProto()
	}
	if err != nil {
		t.Fatal(err)
	}
	return compress(t, b, enc)
}

func compress(t testing.TB, b []byte, enc string) []byte {
	t.Helper()
	switch enc {
	case "gzip":
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b); err != nil || zw.Close() != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	case "zstd":
		zw, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer zw.Close()
		return zw.EncodeAll(b, nil)
	}
	return b
}

func postOTLP(h http.Handler, path, ct, enc string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// readMetric returns the series of metric name as "labels: t=v ..." lines.
func readMetric(t *testing.T, h http.Handler, name string) string {
	t.Helper()
	resp := readSamples(t, h, &prompb.ReadRequest{Queries: []*prompb.Query{{
		StartTimestampMs: otlpT0.UnixMilli() - 3_600_000, EndTimestampMs: otlpT0.UnixMilli() + 3_600_000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name}},
	}}})
	var out []string
	for _, ts := range resp.Results[0].Timeseries {
		line := labelsString(ts.Labels) + ":"
		for _, s := range ts.Samples {
			line += " " + time.UnixMilli(s.Timestamp).Sub(otlpT0).String() + "=" + strconv.FormatFloat(s.Value, 'g', -1, 64)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestOTLPWrite: a request on each of the three paths, in each body
// format and encoding, is stored with Prometheus's names (job and
// instance from service.*, dots escaped, unit and _total suffixes) and
// answered 200 with an export response in the request's format; a delta
// sum is refused in part (partial_success counts its points).
func TestOTLPWrite(t *testing.T) {
	for _, tc := range []struct {
		name, path, enc string
		json, delta     bool
		rejected        int64
	}{
		{"protobuf", "/api/v1/otlp/v1/metrics", "", false, false, 0},
		{"protobuf gzip, Mimir's path", "/otlp/v1/metrics", "gzip", false, false, 0},
		{"JSON zstd, VictoriaMetrics's path", "/opentelemetry/v1/metrics", "zstd", true, false, 0},
		{"a delta sum refused", "/api/v1/otlp/v1/metrics", "gzip", false, true, 3},
		{"JSON, a delta sum refused", "/api/v1/otlp/v1/metrics", "", true, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler(t, openEmbedded(t))
			ct := "application/x-protobuf"
			if tc.json {
				ct = "application/json"
			}
			// Sent twice, as a client resends after a lost answer: its
			// series and target_info, back in time the second time, are
			// taken again and stored once.
			var rec *httptest.ResponseRecorder
			for range 2 {
				rec = postOTLP(h, tc.path, ct, tc.enc, otlpBody(t, otlpRequest(tc.delta), tc.json, tc.enc))
				if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ct {
					t.Fatalf("status %d, content type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
				}
			}
			resp := pmetricotlp.NewExportResponse()
			var err error
			if tc.json {
				err = resp.UnmarshalJSON(rec.Body.Bytes())
			} else {
				err = resp.UnmarshalProto(rec.Body.Bytes())
			}
			if err != nil {
				t.Fatalf("response: %v", err)
			}
			ps := resp.PartialSuccess()
			if ps.RejectedDataPoints() != tc.rejected || (tc.rejected > 0) != strings.Contains(ps.ErrorMessage(), `"requests": delta temporality`) {
				t.Errorf("partial success: %d rejected, %q; want %d", ps.RejectedDataPoints(), ps.ErrorMessage(), tc.rejected)
			}
			for name, want := range map[string]string{
				"queue_depth":             `{__name__="queue_depth", instance="i1", job="a/b", queue="q1"}: 0s=3 15s=4`,
				"busy_time_seconds_total": `{__name__="busy_time_seconds_total", instance="i1", job="a/b"}: 0s=7.5`,
				"target_info":             `{__name__="target_info", host_name="h1", instance="i1", job="a/b"}: 0s=1 15s=1`,
			} {
				if got := readMetric(t, h, name); got != want {
					t.Errorf("%s:\n got %s\nwant %s", name, got, want)
				}
			}
		})
	}
}

// TestOTLPSeriesPerRequest: --limits.max-series-per-request bounds a
// remote-write sender's batches; an OTLP request translates into a
// TimeSeries a sample (a histogram point of ten buckets is thirteen), so
// it is not held to it: 10 such points pass a limit of 100, where the
// same 130 series in one remote write are refused.
func TestOTLPSeriesPerRequest(t *testing.T) {
	cfg := limits.DefaultConfig()
	cfg.MaxSeriesPerRequest = 100
	lim, err := limits.New(cfg, mapping.DefaultLayout(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := openEmbedded(t)
	h := newTestHandlerPut(t, st, st, lim)
	md := pmetric.NewMetrics()
	ms := otlpgen.Resource(md, map[string]any{"service.name": "s"})
	bounds := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	counts := []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	for i := range 10 {
		otlpgen.Histogram(ms, fmt.Sprintf("h%d", i), "", otlpT0, bounds, counts, 1, 1)
	}
	if rec := postOTLP(h, "/otlp/v1/metrics", "application/x-protobuf", "", otlpBody(t, md, false, "")); rec.Code != http.StatusOK {
		t.Fatalf("OTLP: status %d %s, want 200", rec.Code, rec.Body)
	}
	if got := readMetric(t, h, "h9_bucket"); !strings.Contains(got, `le="+Inf"`) {
		t.Errorf("h9_bucket: %s", got)
	}
	series := make([]prompb.TimeSeries, 130)
	for i := range series {
		series[i] = prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: fmt.Sprintf("m%d", i)}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: otlpT0.UnixMilli()}}}
	}
	if rec := post(h, "/api/v1/write", writeBody(t, series...)); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("remote write of 130 series: status %d, want 413", rec.Code)
	}
}

// TestOTLPRefused: bodies that can never be stored answer 4xx with a
// Status message, in bounded memory; store trouble answers 503 with
// Retry-After, never another 5xx.
func TestOTLPRefused(t *testing.T) {
	bomb := compress(t, make([]byte, 8<<20), "gzip") // 8 MiB of zeros in about 8 KiB
	zbomb := compress(t, make([]byte, 8<<20), "zstd")
	good := otlpBody(t, otlpRequest(false), false, "")
	badHist := pmetric.NewMetrics()
	otlpgen.Histogram(otlpgen.Resource(badHist, nil), "h", "", otlpT0, []float64{1, 2}, []uint64{1, 2, 3}, 7, 1)
	allDelta := pmetric.NewMetrics()
	otlpgen.Sum(otlpgen.Resource(allDelta, nil), "d", "", true, pmetric.AggregationTemporalityDelta, otlpgen.Point{T: otlpT0, V: 1})
	for _, tc := range []struct {
		name, method, ct, enc string
		body                  []byte
		code                  int
		says                  string
	}{
		{"histogram counts do not add up", http.MethodPost, "application/x-protobuf", "", otlpBody(t, badHist, false, ""), http.StatusBadRequest, "add up to 6, its count is 7"},
		{"gzip bomb", http.MethodPost, "application/x-protobuf", "gzip", bomb, http.StatusRequestEntityTooLarge, "decompresses past"},
		{"zstd bomb", http.MethodPost, "application/x-protobuf", "zstd", zbomb, http.StatusRequestEntityTooLarge, "decompresses past"},
		{"truncated protobuf", http.MethodPost, "application/x-protobuf", "", good[:len(good)/2], http.StatusBadRequest, "malformed OTLP request"},
		{"bad JSON", http.MethodPost, "application/json", "", []byte(`{"resourceMetrics":[{`), http.StatusBadRequest, "malformed OTLP request"},
		{"not gzip", http.MethodPost, "application/x-protobuf", "gzip", good, http.StatusBadRequest, "gzip body"},
		{"content type", http.MethodPost, "text/plain", "", good, http.StatusUnsupportedMediaType, "content type"},
		{"content encoding", http.MethodPost, "application/x-protobuf", "br", good, http.StatusUnsupportedMediaType, "content encoding"},
		{"method", http.MethodGet, "application/x-protobuf", "", nil, http.StatusMethodNotAllowed, "GET"},
		{"every point delta", http.MethodPost, "application/x-protobuf", "", otlpBody(t, allDelta, false, ""), http.StatusBadRequest, "delta temporality"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler(t, openEmbedded(t))
			req := httptest.NewRequest(tc.method, "/api/v1/otlp/v1/metrics", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.ct)
			if tc.enc != "" {
				req.Header.Set("Content-Encoding", tc.enc)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.says) {
				t.Errorf("status %d %q, want %d saying %q", rec.Code, rec.Body, tc.code, tc.says)
			}
		})
	}
	t.Run("a million attributes", func(t *testing.T) {
		md := otlpRequest(false)
		attrs := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes()
		raw := make(map[string]any, 1<<20)
		for i := range 1 << 20 {
			raw["a"+strconv.Itoa(i)] = "v"
		}
		if err := attrs.FromRaw(raw); err != nil {
			t.Fatal(err)
		}
		st := openEmbedded(t)
		m := newTestMapper(t, st)
		h := newHandler(t, ingest.New(m, st, ingest.Options{Table: "tsdb", ExemplarTable: "tsdb-exemplar"}),
			query.New(st, m, query.Options{}), Options{MaxRequestBytes: 32 << 20}, prometheus.NewRegistry())
		rec := postOTLP(h, "/otlp/v1/metrics", "application/x-protobuf", "gzip", otlpBody(t, md, false, "gzip"))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `metric "queue.depth": a data point of 1048576 attributes, more than 128`) {
			t.Fatalf("status %d %q, want 200 with the point of a million attributes refused by name", rec.Code, rec.Body)
		}
		if got := readMetric(t, h, "busy_time_seconds_total"); !strings.HasSuffix(got, "0s=7.5") {
			t.Errorf("the rest of the request: busy_time_seconds_total %s", got)
		}
	})
	t.Run("a histogram whose series pass the translation's bound", func(t *testing.T) {
		// 30 000 bounds and 40 attributes of 100 bytes: 0.5 MB that
		// translates into 30 000 series of 4 kB each, past 4 × the
		// handler's 1 MiB: refused whole, along either path.
		md := pmetric.NewMetrics()
		bounds := make([]float64, 30_000)
		for i := range bounds {
			bounds[i] = float64(i)
		}
		h := otlpgen.Histogram(otlpgen.Resource(md, nil), "h", "", otlpT0, bounds, make([]uint64, len(bounds)+1), 0, 0)
		for i := range 40 {
			h.Histogram().DataPoints().At(0).Attributes().PutStr(fmt.Sprintf("a%d", i), strings.Repeat("v", 100))
		}
		for _, general := range []bool{false, true} {
			st := openEmbedded(t)
			m := newTestMapper(t, st)
			hd := newHandler(t, ingest.New(m, st, ingest.Options{Table: "tsdb", ExemplarTable: "tsdb-exemplar"}),
				query.New(st, m, query.Options{}), Options{MaxRequestBytes: 1 << 20}, prometheus.NewRegistry())
			// JSON takes the general path, protobuf the fast one.
			ct := "application/x-protobuf"
			if general {
				ct = "application/json"
			}
			rec := postOTLP(hd, "/otlp/v1/metrics", ct, "gzip", otlpBody(t, md, general, "gzip"))
			if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "send fewer points a request") {
				t.Errorf("general path %v: status %d %q, want 413", general, rec.Code, rec.Body)
			}
		}
	})
	t.Run("store unavailable", func(t *testing.T) {
		fs := &failingStore{Store: openEmbedded(t), fail: true}
		h := newTestHandler(t, fs)
		rec := postOTLP(h, "/otlp/v1/metrics", "application/x-protobuf", "", good)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q: %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		fs.mu.Lock()
		fs.fail = false
		fs.mu.Unlock()
		if rec := postOTLP(h, "/otlp/v1/metrics", "application/x-protobuf", "", good); rec.Code != http.StatusOK {
			t.Fatalf("retry: status %d: %s", rec.Code, rec.Body)
		}
	})
}

// BenchmarkOTLPWrite: the series of BenchmarkWritePath as one OTLP
// request of gauges (2000 points of 10 attributes, one resource without
// attributes, gzip protobuf as exporters send it), from the HTTP body to
// the store's Puts, the store excluded, caches warm.
func BenchmarkOTLPWrite(b *testing.B) {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	byName := map[string]pmetric.NumberDataPointSlice{}
	for _, s := range benchdata.Series() {
		var name string
		attrs := map[string]any{}
		for _, l := range s.Labels {
			if l.Name == "__name__" {
				name = l.Value
			} else {
				attrs[l.Name] = l.Value
			}
		}
		dps, ok := byName[name]
		if !ok {
			dps = otlpgen.Gauge(ms, name, "").Gauge().DataPoints()
			byName[name] = dps
		}
		p := dps.AppendEmpty()
		p.SetTimestamp(pcommon.Timestamp(s.Samples[0].Timestamp * 1e6))
		p.SetDoubleValue(s.Samples[0].Value)
		if err := p.Attributes().FromRaw(attrs); err != nil {
			b.Fatal(err)
		}
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	benchPost(b, "/api/v1/otlp/v1/metrics", http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"application/x-protobuf"}},
		compress(b, body, "gzip"), 2000, "sample")
}
