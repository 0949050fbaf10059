package opentsdb

import (
	"math"
	"strconv"
	"strings"

	"github.com/promhbase/promhbase/query/tsd"
)

// QueryAnswer writes the results of a query as a TSD's
// HttpJsonSerializer.formatQueryAsyncV1 does: an array of
// {"metric","tags","aggregateTags","dps"}; tags in the order of the
// HashMaps they pass through (one sized for them, then a default one);
// dps keyed by seconds (ms with MsResolution; a sub-second point shares
// its second's key, as in a TSD) or as [[t,v],...] with Arrays; an
// integer value as a JSON integer, a double as Java prints it, NaN as
// the string "NaN".
func QueryAnswer(req QueryRequest, rs []tsd.Result) []byte {
	b := []byte{'['}
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, `{"metric":`...), r.Metric)
		b = appendTags(append(b, `,"tags":`...), r.Tags)
		b = append(b, `,"aggregateTags":[`...)
		for j, t := range r.AggregateTags {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t)
		}
		b = appendDps(append(b, `],"dps":`...), req, r)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendTags writes tags (in their keys' UID order) as the TSD's
// serializer does: put into a HashMap sized for them, then putAll into an
// empty default HashMap, which sizes its table for them first (the power
// of two at or above n/0.75+1), written in that map's order.
func appendTags(b []byte, tags []tsd.Tag) []byte {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = t.Key
	}
	first := hashMapOrderCap(keys, len(keys))
	ordered := make([]tsd.Tag, len(tags))
	for n, i := range first {
		ordered[n] = tags[i]
	}
	for i, t := range ordered {
		keys[i] = t.Key
	}
	b = append(b, '{')
	for n, i := range hashMapOrderCap(keys, int(float32(len(keys))/0.75+1)) {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, keys[i])
		b = appendJSONString(append(b, ':'), ordered[i].Value)
	}
	return append(b, '}')
}

// appendDps writes the points of r.
func appendDps(b []byte, req QueryRequest, r tsd.Result) []byte {
	pts := r.Points
	open, close := byte('{'), byte('}')
	if req.Arrays {
		open, close = '[', ']'
	}
	b = append(b, open)
	for i, p := range pts {
		if i > 0 {
			b = append(b, ',')
		}
		t := p.T
		if !req.MsResolution {
			t /= 1000
		}
		if req.Arrays {
			b = strconv.AppendInt(append(b, '['), t, 10)
			b = appendValue(append(b, ','), p, r.NullFill)
			b = append(b, ']')
			continue
		}
		b = strconv.AppendInt(append(b, '"'), t, 10)
		b = appendValue(append(b, '"', ':'), p, r.NullFill)
	}
	return append(b, close)
}

// appendValue writes a point's value as Jackson writes a long or a
// double (NaN as null when the fill policy is null).
func appendValue(b []byte, p tsd.Point, nullNaN bool) []byte {
	switch {
	case !p.Float:
		return strconv.AppendInt(b, p.I, 10)
	case math.IsNaN(p.F) && nullNaN:
		return append(b, "null"...)
	case math.IsNaN(p.F):
		return append(b, `"NaN"`...)
	}
	return append(b, javaDouble(p.F)...)
}

// javaDouble formats v as Java's Double.toString: a decimal with at
// least one digit after the point for 1e-3 <= |v| < 1e7, else
// computerized scientific notation ("1.0E-5"), with the shortest digits
// that read back as v. (Java 17's older algorithm prints one digit more
// for a few values, e.g. 9.2233720368547763E17: the same double.)
func javaDouble(v float64) string {
	switch {
	case v == 0 && math.Signbit(v):
		return "-0.0"
	case v == 0:
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, 64), "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
