package main

import (
	"bytes"
	"compress/gzip"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// otlpContentType is the Content-Type of --protocol=otlp's requests.
const otlpContentType = "application/x-protobuf"

// otlpBounds are the explicit bucket bounds of --protocol=otlp's
// histograms.
var otlpBounds = []float64{0.1, 1, 10}

// encodeOTLP encodes one OTLP request of round: series first..first+n as
// data points at ts, one metric of each name (seriesLabels' __name__)
// holding its series' points, their other labels as attributes, in one
// resource without attributes (so no target_info, and the series' own
// job and instance stay theirs); protobuf, gzip-compressed as OTLP
// exporters send it. A third of the metrics (by name) are gauges, a third
// cumulative counters (monotonic sums, growing each round), a third
// cumulative histograms of three bounds (four bucket series, _sum and
// _count each), as the mix of gauges, counters and histograms.
func encodeOTLP(o options, c compareOptions, ts int64, round, first, n int) []byte {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	byName := map[string]pmetric.Metric{}
	t := pcommon.Timestamp(ts * 1e6)
	for i := range n {
		id := seriesID(o, c, round, first+i)
		lbls := seriesLabels(id)
		m, ok := byName[lbls[0].Value]
		if !ok {
			m = newOTLPMetric(ms, lbls[0].Value, id%100%3)
			byName[lbls[0].Value] = m
		}
		attrs := addOTLPPoint(m, t, round, id)
		attrs.EnsureCapacity(len(lbls) - 1)
		for _, l := range lbls[1:] {
			attrs.PutStr(l.Name, l.Value)
		}
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		panic(err) // a request of these points always marshals
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil || zw.Close() != nil {
		panic("gzip into memory cannot fail")
	}
	return buf.Bytes()
}

// newOTLPMetric appends metric name of kind 0 (gauge), 1 (counter) or 2
// (histogram).
func newOTLPMetric(ms pmetric.MetricSlice, name string, kind int) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	switch kind {
	case 0:
		m.SetEmptyGauge()
	case 1:
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	default:
		m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	}
	return m
}

// addOTLPPoint appends series id's point of round at t to m and returns
// its attributes.
func addOTLPPoint(m pmetric.Metric, t pcommon.Timestamp, round, id int) pcommon.Map {
	v := float64(round*7 + id)
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		p := m.Gauge().DataPoints().AppendEmpty()
		p.SetTimestamp(t)
		p.SetDoubleValue(v)
		return p.Attributes()
	case pmetric.MetricTypeSum:
		p := m.Sum().DataPoints().AppendEmpty()
		p.SetTimestamp(t)
		p.SetDoubleValue(v)
		return p.Attributes()
	}
	p := m.Histogram().DataPoints().AppendEmpty()
	p.SetTimestamp(t)
	p.ExplicitBounds().FromRaw(otlpBounds)
	r := uint64(round + 1)
	p.BucketCounts().FromRaw([]uint64{r, 2 * r, 3 * r, r})
	p.SetCount(7 * r)
	p.SetSum(v)
	return p.Attributes()
}
