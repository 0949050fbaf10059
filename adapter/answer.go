package adapter

import (
	"encoding/binary"
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query"
)

// appendSeries appends cs to the answer as a QueryResult's timeseries
// field (1), with the bytes the generated code of prompb.TimeSeries
// marshals, decoding the chunks straight into them instead of into a
// prompb.TimeSeries first:
//
//	0x0a uvarint(len) TimeSeries
//	TimeSeries: per label      0x0a uvarint(len) [0x0a uvarint(len) name] [0x12 uvarint(len) value]
//	            per sample     0x12 len [0x09 value as 8 bytes little-endian] [0x10 uvarint(timestamp)]
//	            per histogram  0x22 uvarint(len) Histogram (see appendHistogram)
//
// The samples come first, then the histograms, each in time order. A
// field holding its zero value is left out, as the generated code does (a
// value of 0 or -0, a timestamp of 0, an empty name or value). In a series
// with native histograms, float staleness markers become histogram
// staleness markers, of the kind of the histogram before them: Prometheus
// itself may store the marker that ends a histogram series as a float
// (its appender converts it only when it can tell the series' type), and
// its SAMPLES client loses a float that follows histograms when it
// seeks, so the series would not end; as a histogram marker it ends as in
// Prometheus. (Streamed answers need no such care: chunks keep both kinds
// in order.)
//
// Room is made (and charged) before each part is appended; it is reused
// and returned.
func (a *answerBuf) appendSeries(cs *query.ChunkSeries, it chunkenc.Iterator) (chunkenc.Iterator, error) {
	labelBytes := 6
	cs.Labels.Range(func(l labels.Label) { labelBytes += 3*(1+5) + len(l.Name) + len(l.Value) })
	if err := a.grow(labelBytes); err != nil {
		return it, err
	}
	a.data = append(a.data, 0x0a, 0, 0, 0, 0, 0)
	start := len(a.data)
	a.data = wire.AppendLabels(a.data, cs.Labels)
	hasHist := false
	for _, c := range cs.Chunks {
		hasHist = hasHist || c.Enc != chunkenc.EncXOR
	}
	if len(cs.Floats) > 0 {
		room := wire.SamplesBound(cs.Floats)
		if err := a.grow(room); err != nil {
			return it, err
		}
		a.data = wire.AppendSamples(a.data, cs.Floats, room)
	}
	var err error
	for _, c := range cs.Chunks {
		if c.Enc != chunkenc.EncXOR {
			continue
		}
		if err := a.grow(wire.MaxSampleBytes * int(binary.BigEndian.Uint16(c.Data))); err != nil {
			return it, err
		}
		if it, err = c.Iterator(it); err != nil {
			return it, fmt.Errorf("series %s: %w", cs.Labels, err)
		}
		dst := a.data // kept in a register
		for vt := it.Next(); vt == chunkenc.ValFloat; vt = it.Next() {
			t, v := it.At()
			if hasHist && value.IsStaleNaN(v) {
				continue
			}
			dst = wire.AppendSample(dst, t, v)
		}
		a.data = dst
		if err := it.Err(); err != nil {
			return it, fmt.Errorf("series %s: chunk [%d, %d]: %w", cs.Labels, c.MinT, c.MaxT, err)
		}
	}
	if hasHist {
		if it, err = a.appendHistograms(cs, it); err != nil {
			return it, err
		}
	}
	a.data = wire.PutLength(a.data, start-5, 5)
	return it, nil
}

// appendHistograms appends the histograms of cs (and its float staleness
// markers, as histograms) in time order.
func (a *answerBuf) appendHistograms(cs *query.ChunkSeries, it chunkenc.Iterator) (chunkenc.Iterator, error) {
	var (
		hh            histogram.Histogram
		fh            histogram.FloatHistogram
		lastFloatHist bool
		err           error
	)
	for _, c := range cs.Chunks {
		if it, err = c.Iterator(it); err != nil {
			return it, fmt.Errorf("series %s: %w", cs.Labels, err)
		}
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				if !value.IsStaleNaN(v) {
					continue
				}
				if err := a.grow(wire.MaxHistogramBytes(0, 0, 0)); err != nil {
					return it, err
				}
				if lastFloatHist {
					a.data = wire.AppendFloatHistogram(a.data, t, &histogram.FloatHistogram{Sum: v})
				} else {
					a.data = wire.AppendHistogram(a.data, t, &histogram.Histogram{Sum: v})
				}
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(&hh) // a stale marker comes as a histogram of its own
				if err := a.grow(wire.MaxHistogramBytes(len(h.PositiveSpans)+len(h.NegativeSpans), len(h.PositiveBuckets)+len(h.NegativeBuckets), len(h.CustomValues))); err != nil {
					return it, err
				}
				a.data = wire.AppendHistogram(a.data, t, h)
				lastFloatHist = false
			case chunkenc.ValFloatHistogram:
				t, h := it.AtFloatHistogram(&fh)
				if err := a.grow(wire.MaxHistogramBytes(len(h.PositiveSpans)+len(h.NegativeSpans), len(h.PositiveBuckets)+len(h.NegativeBuckets), len(h.CustomValues))); err != nil {
					return it, err
				}
				a.data = wire.AppendFloatHistogram(a.data, t, h)
				lastFloatHist = true
			}
		}
		if err := it.Err(); err != nil {
			return it, fmt.Errorf("series %s: chunk [%d, %d]: %w", cs.Labels, c.MinT, c.MaxT, err)
		}
	}
	return it, nil
}
