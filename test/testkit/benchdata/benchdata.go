// Package benchdata builds the write requests the write-path benchmarks
// and allocation tests share: 2000 series of 10 labels with one sample
// each, as a Kubernetes-like scrape sends them, encoded as Prometheus
// encodes remote write 1.0 and 2.0. Only tests import it.
package benchdata

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Series are 2000 series of 10 labels, one sample each: 50 metric names,
// label values of varying cardinality and a unique instance.
func Series() []prompb.TimeSeries {
	var series []prompb.TimeSeries
	for i := range 2000 {
		lbls := []prompb.Label{{Name: "__name__", Value: fmt.Sprintf("node_metric_%d", i%50)}}
		for j := range 9 {
			lbls = append(lbls, prompb.Label{Name: fmt.Sprintf("label_%d", j), Value: fmt.Sprintf("value_%d_%d", j, i%(j*40+3))})
		}
		lbls[9].Value = fmt.Sprintf("instance-%d", i)
		series = append(series, prompb.TimeSeries{Labels: lbls, Samples: []prompb.Sample{{Timestamp: 1_700_000_000_123, Value: float64(i) * 1.5}}})
	}
	return series
}

// V1Request is series as an uncompressed remote write 1.0 WriteRequest.
func V1Request(series []prompb.TimeSeries) ([]byte, error) {
	return proto.Marshal(&prompb.WriteRequest{Timeseries: series})
}

// V2Request is the first sample of each of series as an uncompressed
// remote write 2.0 Request, its symbol table built as Prometheus builds it.
func V2Request(series []prompb.TimeSeries) ([]byte, error) {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	var refs []uint32
	for _, s := range series {
		var lb labels.ScratchBuilder
		for _, l := range s.Labels {
			lb.Add(l.Name, l.Value)
		}
		lb.Sort()
		refs = st.SymbolizeLabels(lb.Labels(), refs[:0])
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
			LabelsRefs: slices.Clone(refs),
			Samples:    []writev2.Sample{{Value: s.Samples[0].Value, Timestamp: s.Samples[0].Timestamp}},
		})
	}
	req.Symbols = st.Symbols()
	return proto.Marshal(req)
}

// V2 is V2Request(Series()), failing tb on error.
func V2(tb testing.TB) []byte {
	tb.Helper()
	data, err := V2Request(Series())
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
