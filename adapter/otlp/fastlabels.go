package otlp

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/promhbase/promhbase/mapping/wire"
)

// labelsOf makes the labels of a series from attributes in wire order,
// without __name__, into st.series, sorted: each name translated, empty
// values dropped, the resource's promoted attributes where no attribute
// has their names, job and instance from the resource over any attribute
// of theirs, as the converter's createAttributes does. reserved is set
// for a data point's: it leaves out an attribute named __name__ and takes
// the promoted ones (target_info sets its own __name__ over the one it
// has, and promotes nothing). False when two names translate to one (the converter joins
// their values with ";" and warns) or the namer refuses one.
//
// The points of a metric mostly carry the same attribute names in the
// same order: when they are the last call's, its translation and order
// are taken again, with no lookup and no sort.
func (r *fastRun) labelsOf(attrs []attr, reserved bool) bool {
	st := r.st
	if !st.sameNames(attrs, reserved) && !r.orderNames(attrs, reserved) {
		return false
	}
	if !st.lastOK {
		return false
	}
	st.series = st.series[:0]
	for _, i := range st.lastOrder {
		if v := attrs[i].value; len(v) > 0 {
			st.series = append(st.series, attr{name: st.lastFinals[i], value: v})
		}
	}
	if reserved {
		// A data point's: the resource's promoted attributes where it has
		// no label of their names (target_info has none).
		for _, p := range st.promoted {
			i, found := slices.BinarySearchFunc(st.series, p.name, func(a attr, n []byte) int { return bytes.Compare(a.name, n) })
			if !found {
				st.series = slices.Insert(st.series, i, p)
			}
		}
	}
	if len(r.job) > 0 {
		st.series = setLabel(st.series, st.jobLabel, r.job)
	}
	if len(r.instance) > 0 {
		st.series = setLabel(st.series, st.instanceLabel, r.instance)
	}
	if reserved {
		// The scope's labels over any of their names (an empty one
		// deletes).
		for _, l := range st.scopeLabels {
			i, found := slices.BinarySearchFunc(st.series, l.name, func(a attr, n []byte) int { return bytes.Compare(a.name, n) })
			switch {
			case len(l.value) == 0 && found:
				st.series = slices.Delete(st.series, i, i+1)
			case len(l.value) == 0:
			case found:
				st.series[i].value = l.value
			default:
				st.series = slices.Insert(st.series, i, l)
			}
		}
	}
	st.encodeSeries()
	return true
}

// encodeSeries encodes st.series as Label fields into st.enc once for all
// the series of a point, noting where __name__ and st.extra (le, or a
// summary's quantile) go: the spans of st.enc that labels of those names
// take ([nameAt, nameEnd) and [extraAt, extraEnd), empty where there is
// none), for emit to set its own over them.
func (st *fastState) encodeSeries() {
	st.enc = st.enc[:0]
	st.nameAt, st.nameEnd, st.extraAt, st.extraEnd = -1, -1, -1, -1
	for _, l := range st.series {
		c := bytes.Compare(l.name, st.nameLabel)
		if st.nameAt < 0 && c >= 0 {
			st.nameAt = len(st.enc)
			st.nameEnd = st.nameAt
		}
		if st.extraAt < 0 && bytes.Compare(l.name, st.extra) >= 0 {
			st.extraAt = len(st.enc)
			st.extraEnd = st.extraAt
		}
		st.enc = wire.AppendLabel(st.enc, l.name, l.value)
		switch {
		case c == 0:
			st.nameEnd = len(st.enc)
		case bytes.Equal(l.name, st.extra):
			st.extraEnd = len(st.enc)
		}
	}
	if st.nameAt < 0 {
		st.nameAt, st.nameEnd = len(st.enc), len(st.enc)
	}
	if st.extraAt < 0 {
		st.extraAt, st.extraEnd = len(st.enc), len(st.enc)
	}
}

// sameNames reports whether attrs have the names, in order, of the last
// orderNames.
func (st *fastState) sameNames(attrs []attr, reserved bool) bool {
	if !st.known || reserved != st.lastReserved || len(attrs) != len(st.lastNames) {
		return false
	}
	for i, a := range attrs {
		if !bytes.Equal(a.name, st.lastNames[i]) {
			return false
		}
	}
	return true
}

// orderNames translates the names of attrs and orders them, and notes
// them for sameNames; false when the namer refuses one.
func (r *fastRun) orderNames(attrs []attr, reserved bool) bool {
	st := r.st
	st.known, st.lastReserved, st.lastOK = false, reserved, false
	st.lastNames, st.lastFinals, st.lastOrder = st.lastNames[:0], st.lastFinals[:0], st.lastOrder[:0]
	for i, a := range attrs {
		st.lastNames = append(st.lastNames, a.name)
		if reserved && string(a.name) == model.MetricNameLabel {
			st.lastFinals = append(st.lastFinals, nil)
			continue
		}
		final, ok := st.labelName(a.name)
		if !ok {
			return false
		}
		st.lastFinals = append(st.lastFinals, final)
		st.lastOrder = append(st.lastOrder, int32(i))
	}
	slices.SortFunc(st.lastOrder, func(a, b int32) int { return bytes.Compare(st.lastFinals[a], st.lastFinals[b]) })
	st.known, st.lastOK = true, true
	for k := 1; k < len(st.lastOrder); k++ {
		if bytes.Equal(st.lastFinals[st.lastOrder[k-1]], st.lastFinals[st.lastOrder[k]]) {
			st.lastOK = false
		}
	}
	return true
}

// labelName is the label name of attribute name raw: itself where UTF-8
// names are allowed, else otlptranslator.LabelNamer's, cached.
func (st *fastState) labelName(raw []byte) ([]byte, bool) {
	if st.cfgKey.utf8 {
		return raw, true
	}
	if n, ok := st.labels[string(raw)]; ok {
		return n, true
	}
	namer := otlptranslator.LabelNamer{UnderscoreLabelSanitization: st.cfgKey.underscores, //nolint:staticcheck // Prometheus's own setting
		PreserveMultipleUnderscores: st.cfgKey.preserve}
	n, err := namer.Build(string(raw))
	if err != nil {
		return nil, false
	}
	st.labels[string(raw)] = []byte(n)
	return st.labels[string(raw)], true
}

// setLabel sets label name of sorted labels ls to v.
func setLabel(ls []attr, name, v []byte) []attr {
	i, found := slices.BinarySearchFunc(ls, name, func(a attr, n []byte) int { return bytes.Compare(a.name, n) })
	if found {
		ls[i].value = v
		return ls
	}
	return slices.Insert(ls, i, attr{name: name, value: v})
}

// emit appends one TimeSeries of metric ns: st.series with __name__ name
// and, when le is set, le, one sample at ts (ns) and exemplars, and notes the
// metadata of the metric's family (a histogram's, not its series') the
// first time, as the converter's appender does.
func (r *fastRun) emit(ns *metricNames, name []byte, ts uint64, v float64, le []byte, exemplars []fastExemplar) {
	r.emitSample(ns, name, ts, v, nil, le, exemplars)
}

// emitSample is emit of a float sample v, or of a native histogram h
// when h is not nil.
func (r *fastRun) emitSample(ns *metricNames, name []byte, ts uint64, v float64, h *histogram.Histogram, le []byte, exemplars []fastExemplar) {
	r.body = append(r.body, 0x0a)
	at := len(r.body)
	r.body = append(r.body, make([]byte, timeSeriesReserve)...)
	r.body = r.appendLabels(r.body, name, le)
	if h != nil {
		r.body = wire.AppendHistogram(r.body, int64(ts)/1_000_000, h)
	} else {
		r.body = wire.AppendSample(r.body, int64(ts)/1_000_000, v)
	}
	r.body = appendExemplars(r.body, exemplars)
	r.body = wire.PutLength(r.body, at, timeSeriesReserve)
	if max := r.cfg.MaxBodyBytes; max > 0 && len(r.body) > max {
		r.over = true
	}
	r.series++
	if !ns.noted {
		r.noteFamily(ns.family, ns.md)
		ns.noted = true
	}
}

// noteFamily records a family's metadata the first time it is written.
func (r *fastRun) noteFamily(name string, md metadata.Metadata) {
	st := r.st
	if _, ok := st.families[name]; ok {
		return
	}
	if st.families == nil {
		st.families = map[string]struct{}{}
	}
	st.families[name] = struct{}{}
	st.order = append(st.order, family{name: name, md: md})
}

// appendLabels appends st.series (as encodeSeries encoded it) with
// __name__ (and st.extra of value le, when le is set) in their places,
// set over any label of theirs, as Label fields in name order.
// ("__name__" sorts before "le" and "quantile".)
func (r *fastRun) appendLabels(dst []byte, name, le []byte) []byte {
	st := r.st
	dst = append(dst, st.enc[:st.nameAt]...)
	dst = wire.AppendLabel(dst, st.nameLabel, name)
	if le == nil {
		return append(dst, st.enc[st.nameEnd:]...)
	}
	dst = append(dst, st.enc[st.nameEnd:st.extraAt]...)
	dst = wire.AppendLabel(dst, st.extra, le)
	return append(dst, st.enc[st.extraEnd:]...)
}

// targetInfo writes the resource's target_info samples as the converter
// does: every half lookback from its earliest point to its latest, and
// at its latest, each (labels, time) once a request; none for a
// resource of no attribute besides service.*, or without job or
// instance.
func (r *fastRun) targetInfo() bool {
	st := r.st
	if r.earliest == math.MaxUint64 {
		return true
	}
	identifying := func(a attr) bool {
		switch string(a.name) {
		case "service.namespace", "service.name", "service.instance.id":
			return true
		}
		return false
	}
	if !slices.ContainsFunc(st.resAttrs, func(a attr) bool { return !identifying(a) }) {
		return true
	}
	attrs := st.resAttrs
	if !r.cfg.KeepIdentifyingResourceAttributes {
		attrs = st.attrs[:0]
		for _, a := range st.resAttrs {
			if !identifying(a) {
				attrs = append(attrs, a)
			}
		}
		st.attrs = attrs
	}
	// An attribute named __name__ is translated, and target_info's name
	// set over it.
	if !r.labelsOf(attrs, false) {
		return false
	}
	if !slices.ContainsFunc(st.series, func(a attr) bool {
		return bytes.Equal(a.name, st.jobLabel) || bytes.Equal(a.name, st.instanceLabel)
	}) {
		return true
	}
	name := []byte("target_info")
	st.key = r.appendLabels(st.key[:0], name, nil)
	labelsEnd := len(st.key)
	ns := &metricNames{family: "target_info", md: metadata.Metadata{Type: model.MetricTypeGauge, Help: "Target metadata"}}
	lookback := r.cfg.LookbackDelta
	if lookback == 0 {
		lookback = 5 * time.Minute
	}
	interval := uint64(lookback / 2)
	if interval == 0 {
		return false // the converter would never end
	}
	once := func(ts uint64) {
		st.key = binary.LittleEndian.AppendUint64(st.key[:labelsEnd], uint64(int64(ts)/1_000_000))
		if _, dup := st.seen[string(st.key)]; dup {
			return
		}
		if st.seen == nil {
			st.seen = map[string]struct{}{}
		}
		st.seen[string(st.key)] = struct{}{}
		r.emit(ns, name, ts, 1, nil, nil)
	}
	for ts := r.earliest; ts < r.latest && !r.over; ts += interval {
		once(ts)
	}
	once(r.latest)
	return !r.over
}
