package otlp

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"google.golang.org/protobuf/encoding/protowire"
)

// histogram translates a Histogram: data_points 1,
// aggregation_temporality 2.
func (r *fastRun) histogram(m metricData) bool {
	temporality := uint64(0)
	ok := fields(m.data, func(f field) bool {
		if f.num == 2 {
			temporality = f.u
			return f.typ == protowire.VarintType
		}
		return true
	})
	if !ok || temporality != cumulative {
		return false
	}
	return r.dataPoints(m, otlptranslator.MetricTypeHistogram, model.MetricTypeHistogram, r.histogramPoint)
}

// dataPoints translates the data points (field 1) of m, a histogram or a
// summary, with each; false for a metric of none.
func (r *fastRun) dataPoints(m metricData, typ otlptranslator.MetricType, mt model.MetricType, each func([]byte, *metricNames) bool) bool {
	ns, ok := r.namesOf(m, typ, mt)
	if !ok {
		return false
	}
	n := 0
	ok = fields(m.data, func(f field) bool {
		if f.num != 1 {
			return true
		}
		n++
		return f.typ == protowire.BytesType && each(f.b, &ns)
	})
	return ok && n > 0
}

// histogramPoint is a HistogramDataPoint's fields: start_time_unix_nano
// 2, time_unix_nano 3, count 4, sum 5, bucket_counts 6, explicit_bounds
// 7, exemplars 8, attributes 9, flags 10, min 11, max 12.
type histogramPoint struct {
	ts, count, flags uint64
	sum              float64
	hasSum           bool
	counts, bounds   []byte // packed fixed64s
	nCounts, nBounds int
}

// readHistogramPoint reads a point's fields but its attributes into p
// (its exemplars into st.exemplars); false for a field the fast path does
// not take (unpacked buckets, an exemplar it refuses).
func (r *fastRun) readHistogramPoint(p *histogramPoint, msg []byte) bool {
	st := r.st
	st.exemplars, st.exBuf = st.exemplars[:0], st.exBuf[:0]
	for b := msg; len(b) > 0; {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		switch f.num {
		case 2, 3, 4, 5, 11, 12:
			if f.typ != protowire.Fixed64Type {
				return false
			}
			switch f.num {
			case 3:
				p.ts = f.u
			case 4:
				p.count = f.u
			case 5:
				p.sum, p.hasSum = math.Float64frombits(f.u), true
			}
		case 6, 7:
			if f.typ != protowire.BytesType || len(f.b)%8 != 0 || (f.num == 6 && p.counts != nil) || (f.num == 7 && p.bounds != nil) {
				return false // unpacked, or packed in pieces: the general path's
			}
			if f.num == 6 {
				p.counts, p.nCounts = f.b, len(f.b)/8
			} else {
				p.bounds, p.nBounds = f.b, len(f.b)/8
			}
		case 8:
			if f.typ != protowire.BytesType || !r.readExemplar(f.b) {
				return false
			}
		case 10:
			p.flags = f.u
			if f.typ != protowire.VarintType {
				return false
			}
		}
	}
	return true
}

// accepted reports whether the filter keeps p (refuseHistogram).
func (p *histogramPoint) accepted() bool {
	if uint32(p.flags)&1 != 0 || p.nCounts == 0 {
		return true
	}
	if p.nCounts != p.nBounds+1 {
		return false
	}
	var total uint64
	for i := range p.nCounts {
		total += binary.LittleEndian.Uint64(p.counts[8*i:])
	}
	return total == p.count
}

// histogramPoint translates a HistogramDataPoint into its _sum, _count
// and _bucket samples, as the converter orders them.
func (r *fastRun) histogramPoint(msg []byte, ns *metricNames) bool {
	var p histogramPoint
	if !r.readHistogramPoint(&p, msg) || !r.pointTime(p.ts) || !p.accepted() {
		return false
	}
	st := r.st
	var ok bool
	st.extra = st.leLabel
	if st.attrs, ok = r.readAttrs(st.attrs[:0], msg, 9); !ok || !r.labelsOf(st.attrs, true) {
		return false
	}
	r.points++
	stale := uint32(p.flags)&1 != 0
	if r.cfg.ConvertHistogramsToNHCB {
		return r.customBuckets(ns, &p, stale)
	}
	val := func(v float64) float64 { return staleOr(stale, v) }
	if p.hasSum {
		r.emit(ns, ns.sum, p.ts, val(p.sum), nil, nil)
	}
	r.emit(ns, ns.count, p.ts, val(float64(p.count)), nil, nil)
	// Each bucket takes the exemplars from the next one on while their
	// values are within its bound (the converter expects them ascending),
	// +Inf the rest.
	var cum uint64
	ex := st.exemplars
	for i := range min(p.nBounds, p.nCounts) {
		cum += binary.LittleEndian.Uint64(p.counts[8*i:])
		bound := math.Float64frombits(binary.LittleEndian.Uint64(p.bounds[8*i:]))
		k := 0
		for k < len(ex) && !(ex[k].value > bound) {
			k++
		}
		n := len(st.values)
		st.values = strconv.AppendFloat(st.values, bound, 'f', -1, 64)
		r.emit(ns, ns.bucket, p.ts, val(float64(cum)), st.values[n:], ex[:k])
		ex = ex[k:]
		if r.over {
			return false
		}
	}
	n := len(st.values)
	st.values = append(st.values, "+Inf"...)
	r.emit(ns, ns.bucket, p.ts, val(float64(p.count)), st.values[n:], ex)
	return !r.over
}

// customBuckets emits point p as one native histogram of custom buckets,
// as the converter does with ConvertHistogramsToNHCB: its bounds the
// custom values, its counts as spans and deltas (bucketLayout), all its
// exemplars; no reset hint (the converter cannot vouch for one). False
// for a point whose count is zero and sum not (the converter warns).
func (r *fastRun) customBuckets(ns *metricNames, p *histogramPoint, stale bool) bool {
	st := r.st
	h := &st.nhcb
	*h = histogram.Histogram{Schema: histogram.CustomBucketsSchema, PositiveSpans: h.PositiveSpans[:0],
		PositiveBuckets: h.PositiveBuckets[:0], CustomValues: h.CustomValues[:0]}
	for i := range p.nBounds {
		h.CustomValues = append(h.CustomValues, math.Float64frombits(binary.LittleEndian.Uint64(p.bounds[8*i:])))
	}
	st.counts = st.counts[:0]
	for i := range p.nCounts {
		st.counts = append(st.counts, binary.LittleEndian.Uint64(p.counts[8*i:]))
	}
	h.PositiveSpans, h.PositiveBuckets = bucketLayout(h.PositiveSpans, h.PositiveBuckets, st.counts)
	switch {
	case stale:
		h.Sum, h.Count = math.Float64frombits(value.StaleNaN), value.StaleNaN
	default:
		if p.hasSum {
			h.Sum = p.sum
		}
		h.Count = p.count
		if h.Count == 0 && h.Sum != 0 {
			return false
		}
	}
	r.emitSample(ns, ns.name, p.ts, 0, h, nil, st.exemplars)
	return !r.over
}

// bucketLayout lays counts out as the converter lays out a native
// histogram's buckets (its convertBucketsLayout, unscaled): from the
// first non-zero count, whose index starts the first span, each count
// after a non-zero one at its index; a run of zeros after a non-zero
// count is written as zero buckets when it is one or two long and as a
// new span's offset when longer, and a zero count that ends the buckets
// is written as they are. spans and deltas are reused.
func bucketLayout(spans []histogram.Span, deltas []int64, counts []uint64) ([]histogram.Span, []int64) {
	first := 0
	for first < len(counts) && counts[first] == 0 {
		first++
	}
	counts = counts[first:]
	if len(counts) == 0 {
		return nil, nil
	}
	spans = append(spans[:0], histogram.Span{Offset: int32(first)})
	deltas = deltas[:0]
	var last int64
	add := func(c int64) {
		spans[len(spans)-1].Length++
		deltas = append(deltas, c-last)
		last = c
	}
	// skip adds the zeros between the count written last, at index at,
	// and the one at index next.
	skip := func(at, next int) {
		if gap := next - at - 1; gap > 2 {
			spans = append(spans, histogram.Span{Offset: int32(gap)})
		} else {
			for range gap {
				add(0)
			}
		}
	}
	// held is the count not yet written, of index at. A zero one is
	// replaced by the next count, at the same index: the zeros are
	// counted in the gap before the next non-zero count.
	held, at := int64(counts[0]), 0
	for i := 1; i < len(counts); i++ {
		if held == 0 {
			held = int64(counts[i])
			continue
		}
		skip(at, i)
		add(held)
		held, at = int64(counts[i]), i
	}
	skip(at, len(counts))
	add(held)
	return spans, deltas
}

// staleOr is v, or a staleness marker for a point flagged
// no-recorded-value.
func staleOr(stale bool, v float64) float64 {
	if stale {
		return math.Float64frombits(value.StaleNaN)
	}
	return v
}

// summary translates a Summary: data_points 1.
func (r *fastRun) summary(m metricData) bool {
	return r.dataPoints(m, otlptranslator.MetricTypeSummary, model.MetricTypeSummary, r.summaryPoint)
}

// quantile is a summary point's ValueAtQuantile: quantile 1, value 2.
type quantile struct{ q, v float64 }

// summaryPoint translates a SummaryDataPoint (start_time_unix_nano 2,
// time_unix_nano 3, count 4, sum 5, quantile_values 6, attributes 7,
// flags 8) into its _sum, _count and quantile samples, as the converter
// orders them.
func (r *fastRun) summaryPoint(msg []byte, ns *metricNames) bool {
	st := r.st
	var ts, count, flags uint64
	var sum float64
	st.quantiles = st.quantiles[:0]
	ok := fields(msg, func(f field) bool {
		switch f.num {
		case 2, 3, 4, 5:
			switch f.num {
			case 3:
				ts = f.u
			case 4:
				count = f.u
			case 5:
				sum = math.Float64frombits(f.u)
			}
			return f.typ == protowire.Fixed64Type
		case 6:
			var q quantile
			st.quantiles = append(st.quantiles, q)
			return f.typ == protowire.BytesType && fields(f.b, func(g field) bool {
				switch g.num {
				case 1:
					q.q = math.Float64frombits(g.u)
				case 2:
					q.v = math.Float64frombits(g.u)
				default:
					return true
				}
				st.quantiles[len(st.quantiles)-1] = q
				return g.typ == protowire.Fixed64Type
			})
		case 8:
			flags = f.u
			return f.typ == protowire.VarintType
		}
		return true
	})
	if !ok || !r.pointTime(ts) {
		return false
	}
	st.extra = st.quantileLabel
	if st.attrs, ok = r.readAttrs(st.attrs[:0], msg, 7); !ok || !r.labelsOf(st.attrs, true) {
		return false
	}
	r.points++
	stale := uint32(flags)&1 != 0
	r.emit(ns, ns.sum, ts, staleOr(stale, sum), nil, nil)
	r.emit(ns, ns.count, ts, staleOr(stale, float64(count)), nil, nil)
	for _, q := range st.quantiles {
		n := len(st.values)
		st.values = strconv.AppendFloat(st.values, q.q, 'f', -1, 64)
		r.emit(ns, ns.name, ts, staleOr(stale, q.v), st.values[n:], nil)
		if r.over {
			return false
		}
	}
	return !r.over
}
