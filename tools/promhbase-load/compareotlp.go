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

// encodeOTLP encodes one OTLP request of round: series first..first+n as
// gauge points at ts, one metric of each name (seriesLabels' __name__)
// holding its series' points, their other labels as attributes, in one
// resource without attributes (so no target_info, and the series' own
// job and instance stay theirs); protobuf, gzip-compressed as OTLP
// exporters send it. Every system makes the same series of it as of
// remote write.
func encodeOTLP(o options, c compareOptions, ts int64, round, first, n int) []byte {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	byName := map[string]pmetric.NumberDataPointSlice{}
	t := pcommon.Timestamp(ts * 1e6)
	for i := range n {
		id := seriesID(o, c, round, first+i)
		lbls := seriesLabels(id)
		dps, ok := byName[lbls[0].Value]
		if !ok {
			m := ms.AppendEmpty()
			m.SetName(lbls[0].Value)
			dps = m.SetEmptyGauge().DataPoints()
			byName[lbls[0].Value] = dps
		}
		p := dps.AppendEmpty()
		p.SetTimestamp(t)
		p.SetDoubleValue(float64(round*7 + id))
		attrs := p.Attributes()
		attrs.EnsureCapacity(len(lbls) - 1)
		for _, l := range lbls[1:] {
			attrs.PutStr(l.Name, l.Value)
		}
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		panic(err) // a request of gauges always marshals
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil || zw.Close() != nil {
		panic("gzip into memory cannot fail")
	}
	return buf.Bytes()
}
