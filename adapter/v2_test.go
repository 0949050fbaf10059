package adapter

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

const ctV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"

// v2Req builds a 2.0 request; each series is (labels, samples, histograms,
// exemplars, metadata).
type v2Series struct {
	lbls  []string
	smps  []writev2.Sample
	hists []writev2.Histogram
	exs   []writev2.Exemplar
	exLbl [][]string
	md    *writev2.Metadata
	help  string
}

func v2Body(t testing.TB, series ...v2Series) []byte {
	t.Helper()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		ts := writev2.TimeSeries{Samples: s.smps, Histograms: s.hists}
		for _, l := range s.lbls {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(l))
		}
		for i, e := range s.exs {
			for _, l := range s.exLbl[i] {
				e.LabelsRefs = append(e.LabelsRefs, st.Symbolize(l))
			}
			ts.Exemplars = append(ts.Exemplars, e)
		}
		if s.md != nil {
			ts.Metadata = *s.md
			ts.Metadata.HelpRef = st.Symbolize(s.help)
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, data)
}

func postCT(h http.Handler, ct string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func written(rec *httptest.ResponseRecorder) string {
	return fmt.Sprintf("%s/%s/%s", rec.Header().Get("X-Prometheus-Remote-Write-Samples-Written"),
		rec.Header().Get("X-Prometheus-Remote-Write-Histograms-Written"), rec.Header().Get("X-Prometheus-Remote-Write-Exemplars-Written"))
}

// testHistograms are the shapes every path must keep exactly.
func testHistograms() map[string]any {
	return map[string]any{
		"int_gaps": &histogram.Histogram{CounterResetHint: histogram.NotCounterReset, Schema: 3, ZeroThreshold: 0.001, Count: 15, ZeroCount: 2, Sum: 18.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}}, PositiveBuckets: []int64{3, -1, 2},
			NegativeSpans: []histogram.Span{{Offset: -2, Length: 2}, {Offset: 5, Length: 1}}, NegativeBuckets: []int64{1, 0, 1}},
		"int_schema_min": &histogram.Histogram{Schema: -4, Count: 3, Sum: 100, PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []int64{3}},
		"int_schema_max_reset": &histogram.Histogram{CounterResetHint: histogram.CounterReset, Schema: 8, Count: 2, Sum: 2.5, ZeroThreshold: 1e-128,
			PositiveSpans: []histogram.Span{{Offset: 100, Length: 2}}, PositiveBuckets: []int64{1, 0}},
		"float": &histogram.FloatHistogram{Schema: 0, Count: 3.5, ZeroCount: 0.5, Sum: -2.25,
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []float64{3}},
		"nhcb": &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 5, Sum: 1.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 1}}, PositiveBuckets: []int64{1, 1, 0},
			CustomValues: []float64{0.1, 0.5, 1, 5}},
		"gauge": &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Schema: 2, Count: 1, Sum: -4,
			NegativeSpans: []histogram.Span{{Offset: 2, Length: 1}}, NegativeBuckets: []float64{1}},
		"stale": &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN)},
	}
}

func toV2Hist(ts int64, h any) writev2.Histogram {
	if ih, ok := h.(*histogram.Histogram); ok {
		return writev2.FromIntHistogram(0, ts, ih)
	}
	return writev2.FromFloatHistogram(0, ts, h.(*histogram.FloatHistogram))
}

// sameHist compares two histograms as Prometheus does (Equals), floats by
// bits: integer ones as integer ones.
func sameHist(a, b any) bool {
	switch x := a.(type) {
	case *histogram.Histogram:
		y, ok := b.(*histogram.Histogram)
		return ok && x.Equals(y) && x.CounterResetHint == y.CounterResetHint && math.Float64bits(x.Sum) == math.Float64bits(y.Sum)
	case *histogram.FloatHistogram:
		y, ok := b.(*histogram.FloatHistogram)
		return ok && x.Equals(y) && x.CounterResetHint == y.CounterResetHint && math.Float64bits(x.Sum) == math.Float64bits(y.Sum)
	}
	return false
}

// TestRemoteWriteV2RoundTrip writes floats, every histogram shape,
// exemplars and metadata with remote write 2.0 and reads them back with
// Prometheus's own remote-read client, SAMPLES and streamed chunks.
func TestRemoteWriteV2RoundTrip(t *testing.T) {
	st := openEmbedded(t)
	h := newTestHandler(t, st)
	t0 := int64(1_700_000_000_000)
	var series []v2Series
	names := []string{"float", "gauge", "int_gaps", "int_schema_max_reset", "int_schema_min", "nhcb", "stale"}
	want := testHistograms()
	for i, name := range names {
		series = append(series, v2Series{
			lbls:  []string{"__name__", "h_" + name, "job", "x"},
			hists: []writev2.Histogram{toV2Hist(t0+int64(i), want[name])},
		})
	}
	series = append(series, v2Series{
		lbls:  []string{"__name__", "f", "z", "last", "a", "first"}, // unsorted, as maps iterate
		smps:  []writev2.Sample{{Value: 1.5, Timestamp: t0}, {Value: math.Float64frombits(value.StaleNaN), Timestamp: t0 + 3_600_000}},
		exs:   []writev2.Exemplar{{Value: 1.5, Timestamp: t0}, {Value: 2, Timestamp: t0 + 1}},
		exLbl: [][]string{{"trace_id", "abc"}, {"trace_id", "abd", "span_id", "x"}},
		md:    &writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE}, help: "A gauge.",
	})
	rec := postCT(h, ctV2, v2Body(t, series...))
	// The two exemplars are 1 ms apart, in one slot: the second takes
	// the next slot, so both are kept.
	if rec.Code != http.StatusNoContent || written(rec) != "2/7/2" {
		t.Fatalf("write: %d %q written %s, want 204 2/7/2", rec.Code, rec.Body, written(rec))
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	ru, _ := url.Parse(srv.URL + "/api/v1/read")
	rc, err := remote.NewReadClient("t", &remote.ClientConfig{URL: &config_util.URL{URL: ru}, Timeout: model.Duration(time.Minute), ChunkedReadLimit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	q, err := remote.ToQuery(0, t0+7_200_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "x")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sortSeries := range []bool{true} {
		ss, err := rc.Read(context.Background(), q, sortSeries)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ss.Next() {
			s := ss.At()
			name := strings.TrimPrefix(s.Labels().Get("__name__"), "h_")
			it := s.Iterator(nil)
			var got any
			switch vt := it.Next(); vt {
			case chunkenc.ValHistogram:
				_, got = it.AtHistogram(nil)
			case chunkenc.ValFloatHistogram:
				_, got = it.AtFloatHistogram(nil)
			default:
				t.Errorf("%s: value type %v", name, vt)
				continue
			}
			w := want[name]
			// Streamed chunks carry the counter-reset hint in the chunk
			// header, as Prometheus's own answers do: only a gauge is told
			// apart on a series' first sample.
			w = withHint(w, got)
			if !sameHist(got, w) {
				t.Errorf("%s streamed: %v, want %v", name, got, w)
			}
			n++
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		if n != len(names) {
			t.Errorf("streamed read: %d histogram series, want %d", n, len(names))
		}
	}

	// SAMPLES: every field exactly; the counter-reset hints are those of
	// the chunks the samples are held in, as in Prometheus's own SAMPLES
	// answers (read from its TSDB's chunks).
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: 0, EndTimestampMs: t0 + 7_200_000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "job", Value: "x"}}}}}
	resp := readSamples(t, h, rr)
	for _, ts := range resp.Results[0].Timeseries {
		var name string
		for _, l := range ts.Labels {
			if l.Name == "__name__" {
				name = strings.TrimPrefix(l.Value, "h_")
			}
		}
		if len(ts.Histograms) != 1 {
			t.Errorf("%s: %d histograms", name, len(ts.Histograms))
			continue
		}
		ph := ts.Histograms[0]
		var got any = ph.ToIntHistogram()
		if ph.IsFloatHistogram() {
			got = ph.ToFloatHistogram()
		}
		if w := withHint(want[name], got); !sameHist(got, w) {
			t.Errorf("%s samples: %v, want %v", name, got, w)
		}
	}

	// The float series, its labels sorted, the staleness marker kept.
	rr.Queries[0].Matchers = []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "f"}}
	resp = readSamples(t, h, rr)
	if len(resp.Results[0].Timeseries) != 1 {
		t.Fatalf("read f: %v", resp.Results)
	}
	fs := resp.Results[0].Timeseries[0]
	if len(fs.Samples) != 2 || math.Float64bits(fs.Samples[1].Value) != value.StaleNaN || labelsOf(fs.Labels) != `__name__=f a=first z=last` {
		t.Errorf("float series %v", fs)
	}

	// Metadata and the exemplar are in their cells.
	md, ok, err := metadata.NewMetas(mustUIDs(t, st), st, 0).Get(context.Background(), "f")
	if err != nil || !ok || md != (metadata.Metadata{Type: "gauge", Help: "A gauge."}) {
		t.Errorf("metadata of f: %+v %v %v", md, ok, err)
	}
}

func mustUIDs(t *testing.T, st store.Store) *uid.UIDs {
	t.Helper()
	u, err := uid.NewUIDs(st, mapping.DefaultLayout(), uid.UIDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func labelsOf(ls []prompb.Label) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.Name+"="+l.Value)
	}
	return strings.Join(parts, " ")
}

// withHint returns want with the counter-reset hint of got, unless either
// is a gauge histogram (which a chunk header keeps).
func withHint(want, got any) any {
	switch w := want.(type) {
	case *histogram.Histogram:
		if g, ok := got.(*histogram.Histogram); ok && w.CounterResetHint != histogram.GaugeType {
			c := *w
			c.CounterResetHint = g.CounterResetHint
			return &c
		}
	case *histogram.FloatHistogram:
		if g, ok := got.(*histogram.FloatHistogram); ok && w.CounterResetHint != histogram.GaugeType {
			c := *w
			c.CounterResetHint = g.CounterResetHint
			return &c
		}
	}
	return want
}

// rawV2 builds a 2.0 request from explicit symbols and series, for
// requests Prometheus's encoder would never produce.
func rawV2(t testing.TB, symbols []string, series ...writev2.TimeSeries) []byte {
	t.Helper()
	data, err := proto.Marshal(&writev2.Request{Symbols: symbols, Timeseries: series})
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, data)
}

// TestRemoteWriteV2Rules checks each receiver rule of the 2.0 spec: the
// status, the Written headers, a message naming the series, and the valid
// series of the same request written.
func TestRemoteWriteV2Rules(t *testing.T) {
	t0 := int64(1_700_000_000_000)
	good := writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: t0}}}
	syms := []string{"", "__name__", "good", "job", "x", "other"}
	badCount := writev2.FromIntHistogram(0, t0, &histogram.Histogram{Count: 5, Sum: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}})
	badSchema := writev2.FromIntHistogram(0, t0, &histogram.Histogram{Schema: 9, Count: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}})
	for _, tc := range []struct {
		name    string
		symbols []string
		bad     writev2.TimeSeries
		code    int
		written string
		msg     string
	}{
		{"ref out of range", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 99}, Samples: good.Samples}, 400, "1/0/0", "out of range"},
		{"odd refs", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 2, 3}, Samples: good.Samples}, 400, "1/0/0", "odd number"},
		{"duplicate label", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5, 3, 4, 3, 2}, Samples: good.Samples}, 400, "1/0/0", `label "job" repeated`},
		{"empty label name", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5, 0, 4}, Samples: good.Samples}, 400, "1/0/0", "empty label name"},
		{"no metric name", syms, writev2.TimeSeries{LabelsRefs: []uint32{3, 4}, Samples: good.Samples}, 400, "1/0/0", "no __name__"},
		{"samples and histograms", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Samples: good.Samples, Histograms: []writev2.Histogram{badCount}}, 400, "1/0/0", "both samples and histograms"},
		{"nothing", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}}, 400, "1/0/0", "no samples, histograms"},
		{"exemplar ref out of range", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Samples: good.Samples, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{3, 77}}}}, 400, "1/0/0", "exemplar label reference"},
		{"metadata ref out of range", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Samples: good.Samples, Metadata: writev2.Metadata{HelpRef: 50}}, 400, "1/0/0", "metadata reference 50"},
		{"histogram count", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Histograms: []writev2.Histogram{badCount}}, 400, "1/0/0", "invalid native histograms"},
		{"histogram schema", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Histograms: []writev2.Histogram{badSchema}}, 400, "1/0/0", "schema 9"},
		{"timestamp", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Samples: []writev2.Sample{{Value: 1, Timestamp: -5}}}, 400, "1/0/0", "timestamps outside"},
		{"first symbol not empty", []string{"x", "__name__", "good"}, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: good.Samples}, 400, "0/0/0", "first symbol"},
		{"no symbols", nil, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: good.Samples}, 400, "0/0/0", "first symbol"},
		// Allowed: labels in any order (sorted, as Prometheus does),
		// exemplars alone, metadata alone, empty label values (absent).
		{"unsorted labels", syms, writev2.TimeSeries{LabelsRefs: []uint32{3, 4, 1, 5}, Samples: good.Samples}, 204, "2/0/0", ""},
		{"exemplar only", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{3, 4}, Value: 1, Timestamp: t0}}}, 204, "1/0/1", ""},
		{"metadata only", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5}, Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: 4}}, 204, "1/0/0", ""},
		{"empty label value", syms, writev2.TimeSeries{LabelsRefs: []uint32{1, 5, 3, 0}, Samples: good.Samples}, 204, "2/0/0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler(t, openEmbedded(t))
			rec := postCT(h, ctV2, rawV2(t, tc.symbols, good, tc.bad))
			if rec.Code != tc.code || written(rec) != tc.written || !strings.Contains(rec.Body.String(), tc.msg) {
				t.Errorf("%d %q written %s; want %d mentioning %q, written %s", rec.Code, rec.Body, written(rec), tc.code, tc.msg, tc.written)
			}
		})
	}
}

func TestWriteContentTypes(t *testing.T) {
	h := newTestHandler(t, openEmbedded(t))
	v1 := writeBody(t, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}}, Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}})
	v2 := v2Body(t, v2Series{lbls: []string{"__name__", "m"}, smps: []writev2.Sample{{Value: 1, Timestamp: 1}}})
	for _, tc := range []struct {
		ct      string
		body    []byte
		code    int
		headers bool
	}{
		{"application/x-protobuf", v1, 204, false},
		{"application/x-protobuf;proto=prometheus.WriteRequest", v1, 204, false},
		{"", v1, 204, false},
		{ctV2, v2, 204, true},
		{"application/x-protobuf; proto=io.prometheus.write.v2.Request", v2, 204, true},
		{"application/x-protobuf;proto=io.prometheus.write.v3.Request", v2, 415, false},
		{"application/json", v1, 415, false},
		{"image/png", v1, 415, false},
	} {
		rec := postCT(h, tc.ct, tc.body)
		hasHeaders := rec.Header().Get("X-Prometheus-Remote-Write-Samples-Written") != ""
		if rec.Code != tc.code || hasHeaders != tc.headers {
			t.Errorf("%q: %d %q, written headers %v; want %d, headers %v", tc.ct, rec.Code, rec.Body, hasHeaders, tc.code, tc.headers)
		}
		if tc.code == 415 && !strings.Contains(rec.Body.String(), "io.prometheus.write.v2.Request") {
			t.Errorf("%q: 415 does not name what is accepted: %s", tc.ct, rec.Body)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(v2))
	req.Header.Set("Content-Type", ctV2)
	req.Header.Set("Content-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 415 || written(rec) != "0/0/0" {
		t.Errorf("gzip: %d written %s, want 415 0/0/0", rec.Code, written(rec))
	}
}

// TestWriteV1Histograms: remote write 1.0 carries native histograms,
// exemplars and metadata too.
func TestWriteV1Histograms(t *testing.T) {
	st := openEmbedded(t)
	h := newTestHandler(t, st)
	hist := testHistograms()["nhcb"].(*histogram.Histogram)
	body, err := proto.Marshal(&prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{{
			Labels:     []prompb.Label{{Name: "__name__", Value: "lat"}},
			Histograms: []prompb.Histogram{prompb.FromIntHistogram(5000, hist)},
			Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "t"}}, Value: 0.3, Timestamp: 5000}},
		}},
		Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_HISTOGRAM, MetricFamilyName: "lat", Help: "Latency.", Unit: "seconds"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := post(h, "/api/v1/write", snappy.Encode(nil, body)); rec.Code != 204 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	md, ok, err := metadata.NewMetas(mustUIDs(t, st), st, 0).Get(context.Background(), "lat")
	if err != nil || !ok || md != (metadata.Metadata{Type: "histogram", Help: "Latency.", Unit: "seconds"}) {
		t.Errorf("metadata %+v %v %v", md, ok, err)
	}
	sc := st.Scan(context.Background(), store.ScanRequest{Table: "tsdb-exemplar", Family: "e"})
	n := 0
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			off, v, lbls, err := mapping.DecodeExemplarValue(c.Value, nil)
			if err != nil || off != 5000 || v != 0.3 || len(lbls) != 1 || string(lbls[0].Value) != "t" {
				t.Errorf("exemplar cell %X: %d %v %v %v", c.Value, off, v, lbls, err)
			}
			n++
		}
	}
	sc.Close()
	if n != 1 {
		t.Errorf("%d exemplar cells, want 1", n)
	}
}

func FuzzParseWriteRequestV2(f *testing.F) {
	data, _ := snappy.Decode(nil, v2Body(f, v2Series{lbls: []string{"__name__", "m", "a", "b"}, smps: []writev2.Sample{{Value: 1, Timestamp: 2}},
		exs: []writev2.Exemplar{{Value: 1, Timestamp: 2}}, exLbl: [][]string{{"trace_id", "x"}}}))
	f.Add(data)
	hdata, _ := snappy.Decode(nil, v2Body(f, v2Series{lbls: []string{"__name__", "h"}, hists: []writev2.Histogram{toV2Hist(1, testHistograms()["int_gaps"])}}))
	f.Add(hdata)
	f.Fuzz(func(t *testing.T, b []byte) {
		var st wire.V2State
		var s wire.Series
		err := wire.ParseWriteRequestV2(b, &st, &s, func(s *wire.Series) error {
			var wh wire.Histogram
			for _, m := range s.Hists {
				if err := wire.ParseHistogram(m, &wh); err == nil {
					_ = wh.Validate()
				}
			}
			if s.Invalid == "" {
				if _, err := s.Labels(); err != nil {
					t.Fatalf("valid series with a Key that does not parse: %v", err)
				}
			}
			return nil
		})
		var ref writev2.Request
		if err == nil && proto.Unmarshal(b, &ref) != nil {
			// The gogo decoder is stricter about some wire types than
			// ours (we skip what we do not use); nothing to compare.
			return
		}
	})
}

func FuzzParseHistogram(f *testing.F) {
	for _, h := range testHistograms() {
		p := toV2Hist(7, h)
		b, _ := proto.Marshal(&p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var w wire.Histogram
		err := wire.ParseHistogram(b, &w)
		var ref writev2.Histogram
		if err != nil || proto.Unmarshal(b, &ref) != nil {
			return
		}
		// Where gogo accepts the message, both decode the same histogram.
		var want any = ref.ToIntHistogram()
		var got any = &w.H
		if ref.IsFloatHistogram() {
			want, got = ref.ToFloatHistogram(), &w.FH
		}
		if ref.Timestamp != w.T || !sameHistFields(got, want) {
			t.Fatalf("parsed %+v (T %d), gogo %+v (T %d)", got, w.T, want, ref.Timestamp)
		}
	})
}

// sameHistFields compares every field, NaN equal to NaN.
func sameHistFields(a, b any) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b) && sameHistNaN(a, b)
}

func sameHistNaN(a, b any) bool {
	switch x := a.(type) {
	case *histogram.Histogram:
		y := b.(*histogram.Histogram)
		return x.Schema == y.Schema && x.Count == y.Count && x.ZeroCount == y.ZeroCount && x.CounterResetHint == y.CounterResetHint &&
			fmt.Sprint(x.PositiveSpans, x.NegativeSpans, x.PositiveBuckets, x.NegativeBuckets) == fmt.Sprint(y.PositiveSpans, y.NegativeSpans, y.PositiveBuckets, y.NegativeBuckets)
	case *histogram.FloatHistogram:
		y := b.(*histogram.FloatHistogram)
		return x.Schema == y.Schema && x.CounterResetHint == y.CounterResetHint &&
			fmt.Sprint(x.PositiveSpans, x.NegativeSpans, len(x.PositiveBuckets), len(x.NegativeBuckets)) == fmt.Sprint(y.PositiveSpans, y.NegativeSpans, len(y.PositiveBuckets), len(y.NegativeBuckets))
	}
	return false
}

// TestExemplarBound: a series keeps at most the configured number of
// exemplars per hour, the latest of each slot; within one request none of
// its own is replaced.
func TestExemplarBound(t *testing.T) {
	st := openEmbedded(t)
	uids, err := uid.NewUIDs(st, mapping.DefaultLayout(), uid.UIDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := ingest.New(series.NewMapper(uids, mapping.DefaultLayout(), 0), st, ingest.Options{Table: "tsdb",
		ExemplarTable: "tsdb-exemplar", ExemplarSlots: 4}) // 15-minute slots
	t0 := int64(1_699_999_200_000) // an hour boundary
	for i := range 10 {
		ts := t0 + int64(i)*6*60_000 // every 6 minutes
		data, _ := snappy.Decode(nil, v2Body(t, v2Series{lbls: []string{"__name__", "m"}, smps: []writev2.Sample{{Value: 1, Timestamp: ts}},
			exs: []writev2.Exemplar{{Value: float64(i), Timestamp: ts}}, exLbl: [][]string{{"trace_id", fmt.Sprint(i)}}}))
		res, err := w.Write(context.Background(), data, true)
		if err != nil || res.Exemplars != 1 {
			t.Fatalf("request %d: %+v %v", i, res, err)
		}
	}
	// Six requests in one request's worth: all kept, in 4 slots at most.
	var exs []writev2.Exemplar
	var lbls [][]string
	for i := range 6 {
		exs = append(exs, writev2.Exemplar{Value: 100 + float64(i), Timestamp: t0 + 3_600_000 + int64(i)})
		lbls = append(lbls, []string{"trace_id", "x"})
	}
	data, _ := snappy.Decode(nil, v2Body(t, v2Series{lbls: []string{"__name__", "m"}, exs: exs, exLbl: lbls}))
	res, err := w.Write(context.Background(), data, true)
	if err != nil || res.Exemplars != 4 {
		t.Errorf("6 exemplars into 4 slots: %+v %v, want 4 written", res, err)
	}
	sc := st.Scan(context.Background(), store.ScanRequest{Table: "tsdb-exemplar", Family: "e"})
	var cells []string
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			_, v, _, _ := mapping.DecodeExemplarValue(c.Value, nil)
			cells = append(cells, fmt.Sprint(v))
		}
	}
	sc.Close()
	// Hour 1: slots 0..3 hold the latest of 0-2, 3-4, 5-7, 8-9 (6-minute steps
	// in 15-minute slots); hour 2: 100..103.
	if got := strings.Join(cells, " "); got != "2 4 7 9 100 101 102 103" {
		t.Errorf("exemplars kept: %s", got)
	}
}

// BenchmarkReadHistograms: remote read of 100 series × 360 native
// histograms (20 buckets each, one every 10 s for an hour) from the
// embedded store, SAMPLES and streamed answers.
func BenchmarkReadHistograms(b *testing.B) {
	st := openEmbedded(b)
	h := newTestHandler(b, st)
	hist := &histogram.Histogram{Schema: 3, Count: 60, Sum: 12.5,
		PositiveSpans: []histogram.Span{{Offset: 5, Length: 12}, {Offset: 4, Length: 8}}}
	for range 20 {
		hist.PositiveBuckets = append(hist.PositiveBuckets, 0)
	}
	hist.PositiveBuckets[0] = 3 // 3 observations in every bucket
	t0 := int64(1_699_999_200_000)
	const nSeries, nHist = 100, 360
	for i := range nSeries {
		var hs []writev2.Histogram
		for j := range nHist {
			c := *hist
			c.Count, c.Sum = uint64(60+j), 12.5+float64(j)
			c.PositiveBuckets = slices.Clone(hist.PositiveBuckets)
			c.PositiveBuckets[19] = int64(j) // the last bucket grows
			hs = append(hs, writev2.FromIntHistogram(0, t0+int64(j)*10_000, &c))
		}
		if rec := postCT(h, ctV2, v2Body(b, v2Series{lbls: []string{"__name__", "bench_hist", "i", fmt.Sprint(i)}, hists: hs})); rec.Code != 204 {
			b.Fatalf("write: %d %s", rec.Code, rec.Body)
		}
	}
	benchRead(b, h, t0, t0+3_600_000, "bench_hist", nSeries*nHist, "histograms/s")
}
