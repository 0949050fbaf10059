package adapter

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
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

	"github.com/promhbase/promhbase/mapping"
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
	// The two exemplars are 1 ms apart: one slot keeps the later one.
	if rec.Code != http.StatusNoContent || written(rec) != "2/7/1" {
		t.Fatalf("write: %d %q written %s, want 204 2/7/1", rec.Code, rec.Body, written(rec))
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

	// SAMPLES: every field exactly, reset hints included.
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: 0, EndTimestampMs: t0 + 7_200_000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "job", Value: "x"}}}}}
	data, _ := proto.Marshal(rr)
	rec = post(h, "/api/v1/read", snappy.Encode(nil, data))
	dec, err := snappy.Decode(nil, rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var resp prompb.ReadResponse
	if err := proto.Unmarshal(dec, &resp); err != nil {
		t.Fatal(err)
	}
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
		if !sameHist(got, want[name]) {
			t.Errorf("%s samples: %v, want %v", name, got, want[name])
		}
	}

	// The float series, its labels sorted, the staleness marker kept.
	rr.Queries[0].Matchers = []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "f"}}
	data, _ = proto.Marshal(rr)
	rec = post(h, "/api/v1/read", snappy.Encode(nil, data))
	dec, _ = snappy.Decode(nil, rec.Body.Bytes())
	resp = prompb.ReadResponse{}
	if err := proto.Unmarshal(dec, &resp); err != nil || len(resp.Results[0].Timeseries) != 1 {
		t.Fatalf("read f: %v %v", resp.Results, err)
	}
	fs := resp.Results[0].Timeseries[0]
	if len(fs.Samples) != 2 || math.Float64bits(fs.Samples[1].Value) != value.StaleNaN || labelsOf(fs.Labels) != `__name__=f a=first z=last` {
		t.Errorf("float series %v", fs)
	}

	// Metadata and the exemplar are in their cells.
	md, ok, err := mapping.NewMetas(mustUIDs(t, st), 0).Get(context.Background(), "f")
	if err != nil || !ok || md != (mapping.Metadata{Type: "gauge", Help: "A gauge."}) {
		t.Errorf("metadata of f: %+v %v %v", md, ok, err)
	}
}

func mustUIDs(t *testing.T, st store.Store) *mapping.UIDs {
	t.Helper()
	u, err := mapping.NewUIDs(st, mapping.DefaultLayout(), mapping.UIDOptions{})
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
