package otlp

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/promhbase/promhbase/test/testkit/otlpgen"
)

var t0 = time.UnixMilli(1_700_000_000_000)

// sample is a request of one resource with a gauge (its second point
// flagged no-recorded-value), a counter with an exemplar, and an
// exponential histogram of scale 10.
func sample() pmetric.Metrics {
	md := pmetric.NewMetrics()
	ms := otlpgen.Resource(md, map[string]any{"service.name": "svc", "service.instance.id": "i", "host.name": "h"})
	g := otlpgen.Gauge(ms, "queue.depth", "", otlpgen.Point{T: t0, V: 5}, otlpgen.Point{T: t0.Add(time.Second), V: 5, NoValue: true})
	g.SetDescription("Items queued.")
	c := otlpgen.Sum(ms, "jobs.done", "", true, pmetric.AggregationTemporalityCumulative, otlpgen.Point{T: t0, V: 12})
	ex := c.Sum().DataPoints().At(0).Exemplars().AppendEmpty()
	ex.SetTimestamp(pcommon.NewTimestampFromTime(t0))
	ex.SetDoubleValue(1)
	ex.SetTraceID(pcommon.TraceID{15: 1})
	e := ms.AppendEmpty()
	e.SetName("lat")
	e.SetUnit("ms")
	eh := e.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := eh.DataPoints().AppendEmpty()
	ep.SetTimestamp(pcommon.NewTimestampFromTime(t0))
	ep.SetScale(10)
	ep.Positive().BucketCounts().FromRaw([]uint64{1, 2, 3, 4})
	ep.SetCount(10)
	ep.SetSum(42)
	return md
}

// TestConvert: the remote write 1.0 body decodes with Prometheus's own
// prompb as the series Prometheus's receiver makes: names translated,
// job and instance, target_info, the no-recorded-value point a stale
// marker, the exemplar's trace_id, the exponential histogram downscaled
// to schema 8, and one MetricMetadata a family.
func TestConvert(t *testing.T) {
	var c Converter
	res, err := c.Convert(t.Context(), sample(), DefaultConfig(), nil)
	if err != nil || res.Rejected != 0 {
		t.Fatalf("convert: %v, %d rejected (%s)", err, res.Rejected, res.Reason)
	}
	var wr prompb.WriteRequest
	if err := proto.Unmarshal(res.Body, &wr); err != nil {
		t.Fatalf("body does not decode: %v", err)
	}
	var names []string
	var stale, exemplar, hist bool
	for _, ts := range wr.Timeseries {
		var b strings.Builder
		for _, l := range ts.Labels {
			b.WriteString(l.Name + "=" + l.Value + " ")
		}
		names = append(names, b.String())
		for _, s := range ts.Samples {
			stale = stale || value.IsStaleNaN(s.Value)
		}
		for _, e := range ts.Exemplars {
			exemplar = exemplar || (len(e.Labels) == 1 && e.Labels[0].Name == "trace_id" && e.Value == 1)
		}
		for _, h := range ts.Histograms {
			hist = hist || (h.Schema == 8 && h.Sum == 42 && h.GetCountInt() == 10)
		}
	}
	joined := strings.Join(names, "\n")
	for _, want := range []string{
		"__name__=queue_depth instance=i job=svc ",
		"__name__=jobs_done_total instance=i job=svc ",
		"__name__=lat_milliseconds instance=i job=svc ",
		"__name__=target_info host_name=h instance=i job=svc ",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no series %q in:\n%s", want, joined)
		}
	}
	if !stale || !exemplar || !hist {
		t.Errorf("stale marker %v, exemplar %v, histogram of schema 8 %v: want all", stale, exemplar, hist)
	}
	if len(wr.Metadata) != 4 { // target_info's too
		t.Errorf("metadata %v, want one per family", wr.Metadata)
	}
	if res.Samples != len(wr.Timeseries) || res.Points != 4 {
		t.Errorf("samples %d points %d, want %d and 4", res.Samples, res.Points, len(wr.Timeseries))
	}
}

// FuzzDecodeConvert: any body, protobuf or JSON, decodes or is refused,
// and what decodes converts without panicking into a body Prometheus's
// prompb decodes.
func FuzzDecodeConvert(f *testing.F) {
	req := pmetricotlp.NewExportRequestFromMetrics(sample())
	b, err := req.MarshalProto()
	if err != nil {
		f.Fatal(err)
	}
	j, err := req.MarshalJSON()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(false, b)
	f.Add(false, []byte{0x0a, 0x02, 0x0a, 0x00})
	f.Add(true, j)
	var c Converter
	f.Fuzz(func(t *testing.T, json bool, body []byte) {
		format := Protobuf
		if json {
			format = JSON
		}
		md, err := Decode(body, format)
		if err != nil {
			return
		}
		res, err := c.Convert(t.Context(), md, DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var wr prompb.WriteRequest
		if err := proto.Unmarshal(res.Body, &wr); err != nil {
			t.Fatalf("body does not decode: %v", err)
		}
		for _, ts := range wr.Timeseries {
			for _, s := range ts.Samples {
				_ = math.IsNaN(s.Value)
			}
		}
	})
}
