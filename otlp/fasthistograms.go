package otlp

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
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
	ns, ok := r.namesOf(m, otlptranslator.MetricTypeHistogram, model.MetricTypeHistogram)
	if !ok {
		return false
	}
	n := 0
	ok = fields(m.data, func(f field) bool {
		if f.num != 1 {
			return true
		}
		n++
		return f.typ == protowire.BytesType && r.histogramPoint(f.b, &ns)
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
	if st.attrs, ok = r.readAttrs(st.attrs[:0], msg, 9); !ok || !r.labelsOf(st.attrs, true) {
		return false
	}
	r.points++
	stale := uint32(p.flags)&1 != 0
	val := func(v float64) float64 {
		if stale {
			return math.Float64frombits(value.StaleNaN)
		}
		return v
	}
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
