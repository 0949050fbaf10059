package adapter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// TestComplianceReceiverCases replays, through the handler, each case of
// the remote write 2.0 receiver compliance suite
// (github.com/prometheus/compliance, remotewrite/receiver, snapshot
// 67b8327 of 2026-08-06), rebuilt here from its descriptions: the same
// data, labels in an unsorted order as the suite's map iteration sends
// them, the old created_timestamp field (TimeSeries field 6) where the
// suite sets it. Each case is checked twice: against the suite's own rule
// (2xx: success expected and every element written, 204 for its "returns
// 204" variants; 4xx: 400 unless a code is named, no more written than
// sent; no 5xx), and against the exact answer we give, so that a change of
// answer is seen here before the suite sees it.
//
// Run the suite itself against a server with
//
//	cd remotewrite/receiver && go test -c -o rwrecv.test .
//	PROMETHEUS_RW2_COMPLIANCE_CONFIG_FILE=adapter.yml ./rwrecv.test -test.v
func TestComplianceReceiverCases(t *testing.T) {
	h := newTestHandler(t, openEmbedded(t))
	now := time.Now()
	for _, tc := range complianceCases() {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req(now)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := [3]int{writtenHeader(t, rec, "Samples"), writtenHeader(t, rec, "Histograms"), writtenHeader(t, rec, "Exemplars")}
			t.Logf("%s: %d written %v %.200q", tc.level, rec.Code, got, rec.Body.String())
			if msg := suiteVerdict(tc, rec.Code, got); msg != "" {
				t.Errorf("the suite would fail this case: %s (answer %d %q)", msg, rec.Code, rec.Body)
			}
			if rec.Code != tc.code || got != tc.written {
				t.Errorf("answer %d written %v (%q), want %d written %v", rec.Code, got, rec.Body, tc.code, tc.written)
			}
		})
	}
}

// writtenHeader reads an X-Prometheus-Remote-Write-*-Written header; a
// missing one counts 0, as the spec says.
func writtenHeader(t *testing.T, rec *httptest.ResponseRecorder, kind string) int {
	t.Helper()
	v := rec.Header().Get("X-Prometheus-Remote-Write-" + kind + "-Written")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s written header %q: %v", kind, v, err)
	}
	return n
}

// suiteVerdict applies the suite's acceptance rule; "" means pass.
func suiteVerdict(tc rwCase, code int, got [3]int) string {
	if tc.exact != 0 && code != tc.exact {
		return fmt.Sprintf("status %d, the suite requires %d", code, tc.exact)
	}
	switch code / 100 {
	case 2:
		switch {
		case !tc.success:
			return fmt.Sprintf("status %d for a case that must fail", code)
		case got != tc.sent:
			return fmt.Sprintf("written %v, sent %v", got, tc.sent)
		case tc.strict && code != http.StatusNoContent:
			return fmt.Sprintf("status %d, want 204", code)
		}
	case 4:
		if tc.exact == 0 && code != http.StatusBadRequest {
			return fmt.Sprintf("status %d, want 400", code)
		}
		for i := range got {
			if got[i] > tc.sent[i] {
				return fmt.Sprintf("written %v, more than sent %v", got, tc.sent)
			}
		}
	default:
		return fmt.Sprintf("status %d", code)
	}
	return ""
}

// rwCase is one leaf case of the suite.
type rwCase struct {
	name    string // the suite's test path
	level   string // the suite's rfcLevel: MUST, SHOULD or MAY
	req     func(now time.Time) *http.Request
	sent    [3]int // samples, histograms, exemplars the suite counts
	success bool   // the suite expects 2xx
	strict  bool   // the suite's "returns 204" variant
	exact   int    // a status the suite requires, 0 for none

	code    int    // our answer
	written [3]int // what we report written
}

// rwSeries is one TimeSeries of a compliance request, labels (name,
// value, ...) in the order sent.
type rwSeries struct {
	labels    []string
	sample    bool
	v         float64
	offset    time.Duration
	hist      *writev2.Histogram
	oldCT     bool // the suite's created_timestamp, TimeSeries field 6
	exemplars []rwExemplar
	meta      *rwMeta
}

type rwExemplar struct {
	labels []string
	v      float64
	offset time.Duration
}

type rwMeta struct {
	typ        writev2.Metadata_MetricType
	help, unit string
}

// v2Request encodes series as the suite sends them.
func v2Request(now time.Time, series ...rwSeries) *http.Request {
	st := writev2.NewSymbolTable()
	refs := func(kv []string) []uint32 {
		var out []uint32
		for _, s := range kv {
			out = append(out, st.Symbolize(s))
		}
		return out
	}
	var msgs [][]byte
	for _, s := range series {
		ts := writev2.TimeSeries{LabelsRefs: refs(s.labels)}
		if s.sample {
			ts.Samples = []writev2.Sample{{Value: s.v, Timestamp: now.Add(s.offset).UnixMilli()}}
		}
		if s.hist != nil {
			h := *s.hist
			h.Timestamp = now.Add(s.offset).UnixMilli()
			ts.Histograms = []writev2.Histogram{h}
		}
		for _, e := range s.exemplars {
			ts.Exemplars = append(ts.Exemplars, writev2.Exemplar{LabelsRefs: refs(e.labels), Value: e.v, Timestamp: now.Add(e.offset).UnixMilli()})
		}
		if s.meta != nil {
			ts.Metadata = writev2.Metadata{Type: s.meta.typ, HelpRef: st.Symbolize(s.meta.help), UnitRef: st.Symbolize(s.meta.unit)}
		}
		msg, err := ts.Marshal()
		if err != nil {
			panic(err)
		}
		if s.oldCT {
			msg = binary.AppendUvarint(append(msg, 0x30), uint64(now.Add(-time.Hour).UnixMilli()))
		}
		msgs = append(msgs, msg)
	}
	body, err := proto.Marshal(&writev2.Request{Symbols: st.Symbols()})
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		body = append(binary.AppendUvarint(append(body, 0x2A), uint64(len(m))), m...)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, body)))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", ctV2)
	req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	return req
}

// corrupted replaces the body's first byte, as the suite's bad-header
// and bad-body cases do.
func corrupted(req *http.Request, b byte) *http.Request {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		panic(err)
	}
	body[0] = b
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	return req
}

// compHist returns a histogram of the shapes the suite sends, timestamps
// set by v2Request.
func compHist(shape string) *writev2.Histogram {
	h := writev2.Histogram{Sum: 1}
	switch shape {
	case "pos+neg+zero":
		h.Count = &writev2.Histogram_CountInt{CountInt: 9}
		h.ZeroCount = &writev2.Histogram_ZeroCountInt{ZeroCountInt: 1}
		h.PositiveSpans = []writev2.BucketSpan{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}}
		h.PositiveDeltas = []int64{1, 1, 1} // 1, 2, 3
		h.NegativeSpans = []writev2.BucketSpan{{Offset: -1, Length: 1}}
		h.NegativeDeltas = []int64{2}
	case "pos+zero":
		h.Count = &writev2.Histogram_CountInt{CountInt: 7}
		h.ZeroCount = &writev2.Histogram_ZeroCountInt{ZeroCountInt: 1}
		h.PositiveSpans = []writev2.BucketSpan{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}}
		h.PositiveDeltas = []int64{1, 1, 1}
	case "pos", "bad count":
		h.Count = &writev2.Histogram_CountInt{CountInt: 6}
		h.PositiveSpans = []writev2.BucketSpan{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}}
		h.PositiveDeltas = []int64{1, 1, 1}
		if shape == "bad count" {
			h.Count = &writev2.Histogram_CountInt{CountInt: 99}
		}
	case "neg":
		h.Count = &writev2.Histogram_CountInt{CountInt: 3}
		h.NegativeSpans = []writev2.BucketSpan{{Offset: 0, Length: 2}}
		h.NegativeDeltas = []int64{1, 1}
	case "pos+neg":
		h.Count = &writev2.Histogram_CountInt{CountInt: 8}
		h.PositiveSpans = []writev2.BucketSpan{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}}
		h.PositiveDeltas = []int64{1, 1, 1}
		h.NegativeSpans = []writev2.BucketSpan{{Offset: 0, Length: 1}}
		h.NegativeDeltas = []int64{2}
	case "zero":
		h.Count = &writev2.Histogram_CountInt{CountInt: 1}
		h.ZeroCount = &writev2.Histogram_ZeroCountInt{ZeroCountInt: 1}
	case "empty":
		h.Sum = 0
		h.Count = &writev2.Histogram_CountInt{CountInt: 0}
	case "custom":
		h.Schema = -53
		h.CustomValues = []float64{0.25, 1, 4, 16}
		h.Count = &writev2.Histogram_CountInt{CountInt: 10}
		h.PositiveSpans = []writev2.BucketSpan{{Offset: 0, Length: 5}}
		h.PositiveDeltas = []int64{1, 1, 1, -1, 0} // 1, 2, 3, 2, 2
	default:
		panic(shape)
	}
	return &h
}

func smp(v float64, labels ...string) rwSeries {
	return rwSeries{labels: labels, sample: true, v: v}
}

func hst(shape string, labels ...string) rwSeries {
	return rwSeries{labels: labels, hist: compHist(shape)}
}

func (s rwSeries) withEx(v float64, labels ...string) rwSeries {
	s.exemplars = append(s.exemplars, rwExemplar{labels: labels, v: v})
	return s
}

func (s rwSeries) withMeta(typ writev2.Metadata_MetricType, help, unit string) rwSeries {
	s.meta = &rwMeta{typ: typ, help: help, unit: unit}
	return s
}

func (s rwSeries) at(off time.Duration) rwSeries {
	s.offset = off
	for i := range s.exemplars {
		s.exemplars[i].offset = off
	}
	return s
}

func (s rwSeries) ct() rwSeries { s.oldCT = true; return s }

// complianceCases lists every leaf case of the suite's receiver tests with
// the answer we give.
func complianceCases() []rwCase {
	var cases []rwCase
	// pass adds a case the suite expects to succeed: its MUST variant and
	// its "returns 204" SHOULD variant, both answered 204 with everything
	// written.
	pass := func(name string, sent [3]int, series ...rwSeries) {
		req := func(now time.Time) *http.Request { return v2Request(now, series...) }
		cases = append(cases,
			rwCase{name: name + " returns 204", level: "SHOULD", req: req, sent: sent, success: true, strict: true, code: 204, written: sent},
			rwCase{name: name, level: "MUST", req: req, sent: sent, success: true, code: 204, written: sent})
	}
	// fail adds a case the suite expects to fail; we answer 400 having
	// written the valid part.
	fail := func(name, level string, sent, written [3]int, series ...rwSeries) {
		cases = append(cases, rwCase{name: name, level: level, sent: sent, code: 400, written: written,
			req: func(now time.Time) *http.Request { return v2Request(now, series...) }})
	}
	s1, h1, sx1 := [3]int{1, 0, 0}, [3]int{0, 1, 0}, [3]int{1, 0, 1}
	none := [3]int{}

	// request_test.go: headers and body.
	for _, ct := range []string{"application/json", "image/png"} {
		cases = append(cases, rwCase{name: "TestBadContentTypes/" + strings.ReplaceAll(ct, "/", "_"), level: "MUST", exact: 415, code: 415,
			req: func(now time.Time) *http.Request {
				r := corrupted(v2Request(now, smp(1, "__name__", "up")), '0')
				r.Header.Set("Content-Type", ct)
				return r
			}})
	}
	for _, ce := range []string{"gzip", "deflate"} {
		cases = append(cases, rwCase{name: "TestBadContentEncodings/" + ce, level: "MUST", exact: 415, code: 415,
			req: func(now time.Time) *http.Request {
				r := corrupted(v2Request(now, smp(1, "__name__", "up")), '0')
				r.Header.Set("Content-Encoding", ce)
				return r
			}})
	}
	cases = append(cases, rwCase{name: "TestCorruptRequestBody", level: "MUST", code: 400,
		req: func(now time.Time) *http.Request { return corrupted(v2Request(now, smp(1, "__name__", "up")), '0') }})

	// metric_test.go: one sample of each special value per label set.
	values := []struct {
		name string
		v    float64
	}{{"1.0", 1}, {"StaleNaN", math.Float64frombits(value.StaleNaN)}, {"NaN", math.Float64frombits(value.NormalNaN)}, {"Inf", math.Inf(1)}, {"-Inf", math.Inf(-1)}}
	for _, v := range values {
		p := "TestSingleMetric/" + v.name + "/"
		pass(p+"simple metric", s1, smp(v.v, "__name__", "up"))
		pass(p+"simple metric with multiple labels", s1, smp(v.v, "job", "testjob", "__name__", "up", "instance", "localhost:9090"))
		pass(p+"simple metric with newlines", s1, smp(v.v, "instance", "localhost:9090", "job", "test\njob\n", "__name__", "up"))
		pass(p+"simple metric with dots", s1, smp(v.v, "job.name", "testjob", "__name__", "resource.cpu.usage", "instance.name", "localhost:9090"))
		pass(p+"simple metric with spaces", s1, smp(v.v, "job name", "testjob", "instance name", "localhost:9090", "__name__", "resource cpu usage"))
		fail(p+"simple metric without name label", "MUST", s1, none, smp(v.v, "job", "testjob", "instance", "localhost:9090"))
		fail(p+"empty metric", "MUST", s1, none, smp(v.v))
	}
	pass("TestCounterWithCreatedTimestamp/", s1, smp(100, "job", "api", "__name__", "http_requests_total").ct())
	for _, v := range values {
		p := "TestMultipleMetrics/" + v.name + "/"
		up := func(inst string) rwSeries {
			return smp(v.v, "instance", inst, "__name__", "up", "job", "testjob")
		}
		noName := func(inst string) rwSeries { return smp(v.v, "job", "testjob", "instance", inst) }
		pass(p+"multiple metrics", [3]int{4, 0, 0}, up("localhost:9090"), up("localhost:9091"), up("localhost:9092"), up("localhost:9093"))
		fail(p+"multiple metrics, without name label", "MUST", none, none, noName("localhost:9090"), noName("localhost:9091"), noName("localhost:9092"), noName("localhost:9093"))
		fail(p+"multiple metrics, 1 without name label", "MUST", [3]int{3, 0, 0}, [3]int{3, 0, 0}, noName("localhost:9090"), up("localhost:9091"), up("localhost:9092"), up("localhost:9093"))
	}

	// metadata_test.go.
	const (
		counter   = writev2.Metadata_METRIC_TYPE_COUNTER
		gauge     = writev2.Metadata_METRIC_TYPE_GAUGE
		histogram = writev2.Metadata_METRIC_TYPE_HISTOGRAM
	)
	for _, m := range []struct {
		name, metric string
		typ          writev2.Metadata_MetricType
		help, unit   string
		labels       []string
	}{
		{"counter_metadata", "http_requests_total", counter, "Total number of HTTP requests", "requests", nil},
		{"gauge_metadata", "cpu_usage_percent", gauge, "Current CPU usage percentage", "percent", nil},
		{"histogram_metadata", "request_duration_seconds", histogram, "Request duration in seconds", "seconds", nil},
		{"metadata_no_help_no_unit", "simple_counter", counter, "", "", nil},
		{"metadata_with_special_chars", "test_metric", gauge, "Test metric with\nnewlines and \"quotes\"", "bytes/sec", []string{"job", "test"}},
		{"unspecified_metadata_type", "unknown_metric", writev2.Metadata_METRIC_TYPE_UNSPECIFIED, "Unknown metric type", "", nil},
		{"info_metadata_type", "build_info", writev2.Metadata_METRIC_TYPE_INFO, "Build information", "", nil},
		{"stateset_metadata_type", "node_state", writev2.Metadata_METRIC_TYPE_STATESET, "Node state information", "", nil},
		{"summary_metadata_type", "request_latency_summary", writev2.Metadata_METRIC_TYPE_SUMMARY, "Request latency summary", "seconds", nil},
		{"gauge_histogram_metadata_type", "temperature_histogram", writev2.Metadata_METRIC_TYPE_GAUGEHISTOGRAM, "Temperature distribution gauge histogram", "celsius", nil},
	} {
		lbls := slices.Concat(m.labels, []string{"__name__", m.metric})
		if m.typ == histogram {
			pass("TestMetadata/"+m.name, h1, hst("pos+neg+zero", lbls...).withMeta(m.typ, m.help, m.unit))
		} else {
			pass("TestMetadata/"+m.name, s1, smp(1, lbls...).withMeta(m.typ, m.help, m.unit))
		}
	}
	pass("TestCounterMetadataWithCreatedTimestamp/", s1, smp(150, "job", "api", "__name__", "http_requests_total").ct().withMeta(counter, "Total HTTP requests", "requests"))
	pass("TestMetadataWithSamples/", s1, smp(42, "job", "test", "__name__", "http_requests_total").withMeta(counter, "Total HTTP requests", "requests"))
	pass("TestMultipleMetadata/", [3]int{3, 0, 0},
		smp(85.5, "__name__", "cpu_usage").withMeta(gauge, "CPU usage percentage", "percent"),
		smp(4096000000, "__name__", "memory_usage").withMeta(gauge, "Memory usage in bytes", "bytes"),
		smp(75.2, "device", "sda1", "__name__", "disk_usage").withMeta(gauge, "Disk usage percentage", "percent"))
	pass("TestMetadataWithComplexLabels/", h1, hst("pos+neg+zero", "method", "GET", "__name__", "http_request_duration_seconds", "status", "200",
		"job", "api-server", "endpoint", "/api/v1/users", "instance", "localhost:8080").withMeta(histogram, "HTTP request duration in seconds", "seconds"))
	fail("TestMetadataValidation/metadata_without_name_label", "SHOULD", s1, none, smp(1, "job", "test"))
	fail("TestMetadataValidation/metadata_with_empty_name", "SHOULD", s1, none, smp(1, "__name__", "").withMeta(gauge, "Test help", "unit"))
	cases = append(cases, rwCase{name: "TestMetadataValidation/metadata_with_valid_name", level: "SHOULD", sent: s1, success: true, code: 204, written: s1,
		req: func(now time.Time) *http.Request {
			return v2Request(now, smp(1, "__name__", "valid_metric_name").withMeta(counter, "Test help", "unit"))
		}})

	// exemplar_test.go.
	for _, e := range []struct {
		name   string
		labels []string
		ex     []string
		v      float64
	}{
		{"basic_exemplar", []string{"job", "api", "__name__", "http_requests_total"}, []string{"trace_id", "abc123def456"}, 1},
		{"exemplar_with_span_id", []string{"method", "GET", "__name__", "request_duration_seconds"}, []string{"span_id", "span123", "trace_id", "xyz789"}, 0.125},
		{"exemplar_without_trace_id", []string{"instance", "host1", "__name__", "cpu_usage"}, []string{"user_id", "user123"}, 0.85},
		{"exemplar_with_multiple_labels", []string{"service", "auth", "__name__", "request_latency"}, []string{"user", "admin", "trace_id", "trace456", "endpoint", "/login"}, 0.05},
		{"exemplar_no_labels", []string{"__name__", "simple_counter"}, nil, 1},
		{"exemplar_with_special_chars", []string{"__name__", "test_metric"}, []string{"trace_id", "trace-with-dashes_and_underscores.123"}, 42},
		{"exemplar_with_unicode", []string{"region", "🌍", "__name__", "unicode_test"}, []string{"trace_id", "unicode_trace_测试"}, 100},
	} {
		pass("TestExemplars/"+e.name, sx1, smp(e.v, e.labels...).withEx(e.v, e.ex...))
	}
	pass("TestExemplarWithCreatedTimestamp/", sx1, smp(250, "job", "api", "__name__", "http_requests_total").ct().withEx(250, "trace_id", "abc123", "span_id", "span456"))
	pass("TestMultipleExemplars/", [3]int{3, 0, 3},
		smp(0.1, "method", "GET", "__name__", "request_duration").withEx(0.1, "trace_id", "trace1", "span_id", "span1"),
		smp(0.25, "method", "POST", "__name__", "request_duration").withEx(0.25, "span_id", "span2", "trace_id", "trace2"),
		smp(1, "__name__", "error_count", "service", "payment").withEx(1, "user", "test_user", "trace_id", "trace3"))
	pass("TestExemplarTimestamps/", [3]int{3, 0, 3},
		smp(0.05, "__name__", "latency_hist").withEx(0.05, "trace_id", "old_trace").at(-time.Hour),
		smp(0.15, "__name__", "latency_hist").withEx(0.15, "trace_id", "recent_trace").at(-time.Minute),
		smp(0.08, "__name__", "latency_hist").withEx(0.08, "trace_id", "current_trace"))
	fail("TestExemplarValidation/exemplar_without_name_label", "SHOULD", sx1, none, smp(1, "job", "test").withEx(1, "trace_id", "test_trace"))
	fail("TestExemplarValidation/exemplar_with_empty_name", "SHOULD", sx1, none, smp(1, "__name__", "").withEx(1, "trace_id", "test_trace"))
	cases = append(cases, rwCase{name: "TestExemplarValidation/exemplar_with_valid_name", level: "SHOULD", sent: sx1, success: true, code: 204, written: sx1,
		req: func(now time.Time) *http.Request {
			return v2Request(now, smp(1, "__name__", "valid_metric").withEx(1, "trace_id", "test_trace"))
		}})
	for _, v := range []struct {
		name string
		v    float64
	}{{"zero_value", 0}, {"negative_value", -123.456}, {"large_value", 1e10}, {"small_value", 1e-10},
		{"nan_value", math.Float64frombits(value.NormalNaN)}, {"inf_value", math.Inf(1)}, {"-inf_value", math.Inf(-1)}} {
		pass("TestExemplarSpecialValues/"+v.name, sx1, smp(v.v, "__name__", "test_metric").withEx(v.v, "trace_id", "special_value_trace"))
	}

	// histograms_test.go.
	pass("TestHistograms/basic_histogram", h1, hst("pos+neg+zero", "__name__", "test_histogram"))
	pass("TestHistograms/custom_buckets_histogram", h1, hst("custom", "__name__", "test_histogram"))
	pass("TestHistograms/positive_only_histogram", h1, hst("pos+zero", "job", "test", "__name__", "test_histogram"))
	pass("TestHistograms/negative_only_histogram", h1, hst("neg", "instance", "localhost", "__name__", "test_histogram"))
	pass("TestHistograms/minimal_histogram", h1, hst("zero", "__name__", "minimal_hist"))
	fail("TestHistograms/bad_count_histogram", "MUST", h1, none, hst("bad count", "__name__", "minimal_hist"))
	pass("TestHistogramWithCreatedTimestamp/", h1, hst("pos+neg+zero", "job", "api", "__name__", "request_duration_seconds").ct())
	pass("TestMultipleHistograms/", [3]int{0, 2, 0}, hst("pos+zero", "job", "test", "__name__", "hist1"), hst("neg", "__name__", "hist2", "job", "test"))
	pass("TestEmptyHistogram/", h1, hst("empty", "__name__", "empty_hist"))
	pass("TestHistogramWithMetadata/", h1, hst("pos+neg+zero", "job", "api", "__name__", "request_duration_seconds").withMeta(histogram, "HTTP request duration in seconds", "seconds"))
	pass("TestHistogramWithExemplar/", [3]int{0, 1, 1}, hst("pos+zero", "method", "GET", "__name__", "http_request_duration_seconds").withEx(1.23, "trace_id", "abc123def456", "span_id", "span789"))
	pass("TestHistogramWithMetadataAndExemplar/", [3]int{0, 1, 1}, hst("pos+neg+zero", "service", "upload", "__name__", "response_size_bytes").
		withMeta(histogram, "HTTP response size in bytes", "bytes").withEx(10485760, "user_id", "user456", "trace_id", "large_upload_trace"))
	pass("TestMultipleHistogramsWithMetadata/", [3]int{0, 2, 0},
		hst("pos+zero", "instance", "server1", "__name__", "cpu_usage_histogram").withMeta(histogram, "CPU usage distribution", "ratio"),
		hst("pos+neg", "__name__", "memory_usage_histogram", "instance", "server1").withMeta(histogram, "Memory usage distribution", "bytes"))

	// combined_test.go.
	pass("TestSamplesWithMetadataAndExemplars/", sx1, smp(1, "method", "POST", "job", "api", "__name__", "http_requests_total").
		withMeta(counter, "Total number of HTTP requests", "requests").withEx(1, "user_id", "user789", "trace_id", "request_trace_123"))
	pass("TestHistogramsWithMetadataAndExemplars/", [3]int{0, 1, 1}, hst("pos+neg+zero", "service", "auth", "__name__", "request_duration_seconds").
		withMeta(histogram, "HTTP request duration distribution", "seconds").withEx(0.456, "trace_id", "slow_request_trace", "endpoint", "/login"))
	pass("TestComplexSamplesRequest/", [3]int{2, 0, 1},
		smp(0.85, "instance", "server1", "__name__", "cpu_usage").withMeta(gauge, "CPU usage ratio", "ratio").withEx(0.85, "trace_id", "high_cpu_trace", "process", "worker"),
		smp(8589934592, "__name__", "memory_usage", "instance", "server1").withMeta(gauge, "Memory usage in bytes", "bytes"))
	pass("TestComplexHistogramsRequest/", [3]int{0, 2, 1},
		hst("pos+zero", "endpoint", "/api/v1/users", "__name__", "response_time_hist").withMeta(histogram, "Response time distribution", "seconds").withEx(0.125, "user", "premium", "trace_id", "fast_response"),
		hst("neg", "method", "POST", "__name__", "request_size_hist").withMeta(histogram, "Request size distribution", "bytes"))
	pass("TestMultipleMetricFamiliesSamples/", [3]int{2, 0, 1},
		smp(1000, "status", "200", "__name__", "http_requests_total").withMeta(counter, "Total HTTP requests", "requests").withEx(1000, "trace_id", "successful_request"),
		smp(23.5, "__name__", "temperature_celsius", "location", "datacenter1").withMeta(gauge, "Temperature in Celsius", "celsius"))
	pass("TestMultipleMetricFamiliesHistograms/", [3]int{0, 1, 1}, hst("pos+zero", "handler", "/metrics", "__name__", "request_duration_seconds").
		withMeta(histogram, "Request duration in seconds", "seconds").withEx(0.003, "scraper", "prometheus", "trace_id", "metrics_scrape"))
	edge := func(name string, sent [3]int, series ...rwSeries) {
		cases = append(cases, rwCase{name: "TestEdgeCaseCombinations/" + name, level: "SHOULD", sent: sent, success: true, code: 204, written: sent,
			req: func(now time.Time) *http.Request { return v2Request(now, series...) }})
	}
	edge("metadata_without_data", none, rwSeries{labels: []string{"__name__", "orphan_metric"}}.withMeta(counter, "Orphaned metric metadata", "count"))
	edge("exemplars_without_data", [3]int{0, 0, 1}, rwSeries{labels: []string{"__name__", "orphan_metric"}}.withEx(42, "trace_id", "orphan_trace"))
	old := smp(1, "__name__", "old_metric").at(-time.Hour)
	old.exemplars = []rwExemplar{{labels: []string{"trace_id", "old_trace"}, v: 1, offset: -30 * time.Minute}}
	edge("mixed_timestamp_data", [3]int{2, 0, 1}, old, smp(2, "__name__", "new_metric"))
	var many, manyH []rwSeries
	for i := range 50 {
		many = append(many, smp(float64(i*100), "series", fmt.Sprintf("series_%d", i), "__name__", fmt.Sprintf("counter_metric_%d", i)).
			withMeta(counter, fmt.Sprintf("Counter metric number %d", i), "count").withEx(float64(i*100), "trace_id", fmt.Sprintf("trace_%d", i)))
		shape := "pos+zero"
		if i%2 == 0 {
			shape = "pos+neg+zero"
		}
		manyH = append(manyH, hst(shape, "bucket", fmt.Sprintf("bucket_%d", i), "__name__", fmt.Sprintf("histogram_metric_%d", i)).
			withMeta(histogram, fmt.Sprintf("Histogram metric number %d", i), "seconds").withEx(float64(i)/10, "trace_id", fmt.Sprintf("trace_%d", i)))
	}
	pass("TestManySamples/", [3]int{50, 0, 50}, many...)
	pass("TestManyHistograms/", [3]int{0, 50, 50}, manyH...)
	pass("TestSpecialCharactersCombined/", sx1, smp(42, "job", "test-job_with.special@chars", "environment", "test🚀", "__name__", "test_metric", "instance", "localhost:9090").
		withMeta(gauge, "Test metric with special characters: äöü, newlines\nand \"quotes\"", "special/units").
		withEx(42, "trace_id", "special_trace_äöü-123", "span_id", "span_with.dots-and_underscores"))
	pass("TestCustomBucketsHistogramWithExemplar/", [3]int{0, 1, 1}, hst("custom", "version", "v2", "__name__", "custom_latency_hist").withEx(0.05, "bucket", "0.1", "trace_id", "custom_bucket_trace"))

	// rw1_compat_test.go: a 1.0 request; 1.0 answers carry no Written
	// headers, which the suite reads as 0 written, what it wants.
	v1 := func(now time.Time) *http.Request {
		body, err := proto.Marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "job", Value: "testjob"}, {Name: "__name__", Value: "up"}, {Name: "instance", Value: "localhost:9090"}},
				Samples: []prompb.Sample{{Value: 1, Timestamp: now.UnixMilli()}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "http_requests_total"}}, Samples: []prompb.Sample{{Value: 100, Timestamp: now.UnixMilli()}}},
		}})
		if err != nil {
			panic(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, body)))
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		return req
	}
	cases = append(cases,
		rwCase{name: "TestRW1BasicCompatibility", level: "MAY", req: v1, success: true, code: 204},
		rwCase{name: "TestRW1ErrorHandling", level: "MAY", code: 400, req: func(now time.Time) *http.Request { return corrupted(v1(now), 0xFF) }})
	return cases
}
