package otlp

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/mapping/wire"
)

// appender is the storage.AppenderV2 the converter appends to: each
// sample becomes a TimeSeries of a remote write 1.0 WriteRequest
// (field 1), and each metric family's metadata a MetricMetadata (field
// 3) at the end:
//
//	WriteRequest  0x0a len TimeSeries ... 0x1a len MetricMetadata ...
//	TimeSeries    0x0a len Label ... ‖ 0x12 len Sample | 0x22 len Histogram
//	              ‖ 0x1a len Exemplar ...
//	Exemplar      0x0a len Label ... ‖ 0x11 value (8 bytes LE) ‖ 0x18 uvarint(ts)
//	MetricMetadata 0x08 type ‖ 0x12 len family ‖ 0x22 len help ‖ 0x2a len unit
//
// It is not safe for concurrent use: a Converter's state owns one.
type appender struct {
	body    []byte
	samples int
	// maxBytes bounds body (0: none); over is set, and every Append
	// fails, once it is passed.
	maxBytes int
	over     bool
	families map[string]metadata.Metadata
	order    []string // families in the order first seen
}

// reset readies a for a request, appending to body.
func (a *appender) reset(body []byte) {
	a.body, a.samples, a.over = body, 0, false
	clear(a.families)
	a.order = a.order[:0]
}

// timeSeriesReserve is the bytes kept for a TimeSeries' length: a request
// bounded by its body size never has one that needs more.
const timeSeriesReserve = 5

// Append encodes one sample of ls as a TimeSeries and notes its
// family's metadata. The start timestamp st is not stored (Prometheus
// stores it only behind a feature flag).
func (a *appender) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.over || a.maxBytes > 0 && len(a.body) > a.maxBytes {
		a.over = true
		return 0, ErrTooLarge
	}
	a.body = append(a.body, 0x0a)
	at := len(a.body)
	a.body = append(a.body, make([]byte, timeSeriesReserve)...)
	a.body = wire.AppendLabels(a.body, ls)
	switch {
	case fh != nil:
		a.body = wire.AppendFloatHistogram(a.body, t, fh)
	case h != nil:
		a.body = wire.AppendHistogram(a.body, t, h)
	default:
		a.body = wire.AppendSample(a.body, t, v)
	}
	for _, e := range opts.Exemplars {
		a.body = appendExemplar(a.body, e)
	}
	a.body = wire.PutLength(a.body, at, timeSeriesReserve)
	a.samples++
	if name := opts.MetricFamilyName; name != "" {
		if _, ok := a.families[name]; !ok {
			if a.families == nil {
				a.families = map[string]metadata.Metadata{}
			}
			a.families[name] = opts.Metadata
			a.order = append(a.order, name)
		}
	}
	return 1, nil
}

// appendExemplar appends an Exemplar of a TimeSeries (field 3).
func appendExemplar(dst []byte, e exemplar.Exemplar) []byte {
	dst = append(dst, 0x1a)
	at := len(dst)
	dst = append(dst, make([]byte, timeSeriesReserve)...)
	dst = wire.AppendLabels(dst, e.Labels)
	ts := e.Ts
	if !e.HasTs {
		ts = 0
	}
	return appendExemplarEnd(dst, at, e.Value, ts)
}

// appendExemplarEnd appends an Exemplar's value and timestamp (each left
// out when zero) after its labels, and fills in the length reserved at
// at.
func appendExemplarEnd(dst []byte, at int, v float64, ts int64) []byte {
	if bits := math.Float64bits(v); bits != 0 {
		dst = append(dst, 0x11)
		dst = binary.LittleEndian.AppendUint64(dst, bits)
	}
	if ts != 0 {
		dst = append(dst, 0x18)
		dst = binary.AppendUvarint(dst, uint64(ts))
	}
	return wire.PutLength(dst, at, timeSeriesReserve)
}

// finish appends the families' metadata and returns the request; nil when
// it holds nothing.
func (a *appender) finish() []byte {
	if a.samples == 0 {
		return nil
	}
	for _, name := range a.order {
		a.body = appendMetadata(a.body, name, a.families[name])
	}
	return a.body
}

// metricTypes are remote write 1.0's MetricMetadata.MetricType values.
var metricTypes = map[model.MetricType]uint64{
	model.MetricTypeCounter: 1, model.MetricTypeGauge: 2, model.MetricTypeHistogram: 3,
	model.MetricTypeGaugeHistogram: 4, model.MetricTypeSummary: 5, model.MetricTypeInfo: 6, model.MetricTypeStateset: 7,
}

// appendMetadata appends a MetricMetadata (WriteRequest field 3).
func appendMetadata(dst []byte, family string, md metadata.Metadata) []byte {
	dst = append(dst, 0x1a)
	at := len(dst)
	dst = append(dst, make([]byte, timeSeriesReserve)...)
	if t := metricTypes[md.Type]; t != 0 {
		dst = append(dst, 0x08)
		dst = binary.AppendUvarint(dst, t)
	}
	dst = appendString(dst, 0x12, family)
	dst = appendString(dst, 0x22, md.Help)
	dst = appendString(dst, 0x2a, md.Unit)
	return wire.PutLength(dst, at, timeSeriesReserve)
}

func appendString(dst []byte, tag byte, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Commit and Rollback end the converter's transaction: the request is
// written by the caller, after Convert returns.
func (*appender) Commit() error   { return nil }
func (*appender) Rollback() error { return nil }
