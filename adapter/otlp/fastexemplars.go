package otlp

import (
	"bytes"
	"encoding/hex"
	"math"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/promhbase/promhbase/mapping/wire"
)

// fastExemplar is an exemplar of the fast path, as the converter makes
// it (getPromExemplars): its labels (trace_id and span_id in hex, and
// the filtered attributes under their own names when all of them come to
// at most maxExemplarRunes runes) encoded as Label fields in name order,
// its value and its time in ms (0: none).
type fastExemplar struct {
	value  float64
	ts     int64
	labels []byte
}

// maxExemplarRunes is the converter's bound on an exemplar's labels'
// runes, beyond which its filtered attributes are left out (and
// Prometheus's own exemplar limit).
const maxExemplarRunes = 128

// readExemplar reads an Exemplar: time_unix_nano 2, as_double 3,
// span_id 4, trace_id 5, as_int 6, filtered_attributes 7, into
// st.exemplars. False for one the converter refuses (no value) or pdata
// (an ID of another length), or of two labels of one name.
func (r *fastRun) readExemplar(msg []byte) bool {
	st := r.st
	var pv pointValue
	var trace, span []byte
	st.exAttrs = st.exAttrs[:0]
	ok := fields(msg, func(f field) bool {
		switch f.num {
		case 7:
			a, ok := plainKeyValue(f.b)
			if !ok {
				a, ok = r.keyValue(f.b)
			}
			st.exAttrs = append(st.exAttrs, a)
			return ok && f.typ == protowire.BytesType
		case 2, 3, 6:
			return pv.take(f, 2, 3, 6)
		case 4, 5:
			// pdata checks each occurrence's length: empty, or an ID's.
			if f.num == 4 {
				span = f.b
				return f.typ == protowire.BytesType && (len(span) == 0 || len(span) == 8)
			}
			trace = f.b
			return f.typ == protowire.BytesType && (len(trace) == 0 || len(trace) == 16)
		}
		return true
	})
	if !ok {
		return false
	}
	if pv.values != 1 || pv.ts > math.MaxInt64 {
		return false
	}
	return r.exemplarLabels(trace, span, pv.v, int64(pv.ts)/1_000_000)
}

// exemplarLabels makes and notes an exemplar's labels (see fastExemplar).
func (r *fastRun) exemplarLabels(trace, span []byte, v float64, ms int64) bool {
	st := r.st
	st.exLabels = st.exLabels[:0]
	runes := 0
	for _, id := range []struct {
		name []byte
		id   []byte
	}{{st.traceLabel, trace}, {st.spanLabel, span}} {
		if len(id.id) == 0 || !slices.ContainsFunc(id.id, func(b byte) bool { return b != 0 }) {
			continue
		}
		n := len(st.values)
		st.values = hex.AppendEncode(st.values, id.id)
		st.exLabels = append(st.exLabels, attr{name: id.name, value: st.values[n:]})
		runes += len(id.name) + 2*len(id.id)
	}
	for _, a := range st.exAttrs {
		runes += utf8.RuneCount(a.name) + utf8.RuneCount(a.value)
	}
	if runes <= maxExemplarRunes {
		st.exLabels = append(st.exLabels, st.exAttrs...)
	}
	slices.SortFunc(st.exLabels, func(a, b attr) int { return bytes.Compare(a.name, b.name) })
	for i := 1; i < len(st.exLabels); i++ {
		if bytes.Equal(st.exLabels[i-1].name, st.exLabels[i].name) {
			return false // the converter's order of equal names is its sort's
		}
	}
	start := len(st.exBuf)
	for _, l := range st.exLabels {
		st.exBuf = wire.AppendLabel(st.exBuf, l.name, l.value)
	}
	st.exemplars = append(st.exemplars, fastExemplar{value: v, ts: ms, labels: st.exBuf[start:len(st.exBuf):len(st.exBuf)]})
	return true
}

// appendExemplars appends exemplars to a TimeSeries as appendExemplar
// does.
func appendExemplars(dst []byte, exemplars []fastExemplar) []byte {
	for _, e := range exemplars {
		dst = append(dst, 0x1a)
		at := len(dst)
		dst = append(dst, make([]byte, timeSeriesReserve)...)
		dst = append(dst, e.labels...)
		dst = appendExemplarEnd(dst, at, e.value, e.ts)
	}
	return dst
}
