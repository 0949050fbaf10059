package adapter

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage/remote"
)

// TestHistogramSeriesStaleness: a series of native histograms ended by a
// float staleness marker (Prometheus's appender may store it so) ends in
// PromQL through Prometheus's remote-read client, with SAMPLES and with
// streamed answers, as it does in Prometheus.
func TestHistogramSeriesStaleness(t *testing.T) {
	h := newTestHandler(t, openEmbedded(t))
	t0 := int64(1_700_000_000_000)
	hh := &histogram.Histogram{Schema: 0, Count: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}}
	fh := hh.ToFloat(nil)
	stale := math.Float64frombits(value.StaleNaN)
	rec := postCT(h, ctV2, v2Body(t,
		v2Series{lbls: []string{"__name__", "a"}, hists: []writev2.Histogram{writev2.FromIntHistogram(0, t0, hh), writev2.FromIntHistogram(0, t0+1000, hh)}},
		v2Series{lbls: []string{"__name__", "a"}, smps: []writev2.Sample{{Value: stale, Timestamp: t0 + 2000}}},
		v2Series{lbls: []string{"__name__", "b"}, hists: []writev2.Histogram{writev2.FromFloatHistogram(0, t0, fh), writev2.FromFloatHistogram(0, t0+1000, fh)}},
		v2Series{lbls: []string{"__name__", "b"}, smps: []writev2.Sample{{Value: stale, Timestamp: t0 + 2000}}},
	))
	if rec.Code != 204 {
		t.Fatalf("write: %d %s", rec.Code, rec.Body)
	}
	for _, front := range []struct {
		name string
		h    http.Handler
	}{{"samples", samplesOnly(h)}, {"streamed", h}} {
		srv := httptest.NewServer(front.h)
		ru, _ := url.Parse(srv.URL + "/api/v1/read")
		rc, err := remote.NewReadClient("t", &remote.ClientConfig{URL: &config_util.URL{URL: ru}, Timeout: model.Duration(time.Minute), ChunkedReadLimit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		qa := remote.NewSampleAndChunkQueryableClient(rc, labels.EmptyLabels(), nil, true, func() (int64, error) { return 0, nil })
		eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
		for _, tc := range []struct {
			at   int64
			want int
		}{{t0 + 1500, 2}, {t0 + 2500, 0}, {t0 + 60000, 0}} {
			qry, err := eng.NewInstantQuery(context.Background(), qa, nil, `{__name__=~"a|b"}`, time.UnixMilli(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			res := qry.Exec(context.Background())
			v, err := res.Vector()
			if err != nil || len(v) != tc.want {
				t.Errorf("%s at +%d ms: %v %v, want %d series", front.name, tc.at-t0, res.Value, err, tc.want)
			}
		}
		srv.Close()
	}
}

func samplesOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		dec, _ := snappy.Decode(nil, body)
		var req prompb.ReadRequest
		_ = proto.Unmarshal(dec, &req)
		req.AcceptedResponseTypes = []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}
		data, _ := proto.Marshal(&req)
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(snappy.Encode(nil, data)))
		r2.ContentLength = -1
		h.ServeHTTP(w, r2)
	})
}
