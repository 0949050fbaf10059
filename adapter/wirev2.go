package adapter

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
)

// v2State holds what one remote write 2.0 request's series share: the
// symbol table (each symbol aliasing the request) and reusable buffers.
type v2State struct {
	symbols [][]byte
	refs    []uint32
	lbls    []mapping.Label
}

// parseWriteRequestV2 walks an io.prometheus.write.v2.Request:
//
//	Request    { repeated string symbols = 4; repeated TimeSeries timeseries = 5; }
//	TimeSeries { repeated uint32 labels_refs = 1; repeated Sample samples = 2;
//	             repeated Histogram histograms = 3; repeated Exemplar exemplars = 4;
//	             Metadata metadata = 5; }
//	Sample     { double value = 1; int64 timestamp = 2; int64 start_timestamp = 3; }
//	Exemplar   { repeated uint32 labels_refs = 1; double value = 2; int64 timestamp = 3; }
//	Metadata   { MetricType type = 1; uint32 help_ref = 3; uint32 unit_ref = 4; }
//
// and calls fn for each series, which it fills as the 1.0 parser does: its
// Key is the label set encoded as remote write 1.0 encodes it (Label fields
// of the sorted labels), so both protocols share the series cache. The
// symbols are collected first (they may follow the series). A request whose
// first symbol is not "" is malformed; a series that breaks a rule of the
// spec (a reference out of range, an odd number of label references, an
// empty or repeated label name, no metric name, samples and histograms
// together, nothing at all) comes with Invalid set and is still passed to
// fn. Labels in any order are accepted and sorted, as Prometheus's own
// receiver does. Start timestamps are skipped.
func parseWriteRequestV2(buf []byte, st *v2State, s *wireSeries, fn func(*wireSeries) error) error {
	st.symbols = st.symbols[:0]
	for rest := buf; len(rest) > 0; {
		field, wt, n := readTag(rest)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag in Request", errMalformed)
		}
		rest = rest[n:]
		if field == 4 && wt == wireBytes {
			sym, r, err := readBytes(rest)
			if err != nil {
				return fmt.Errorf("%w: symbol %d: %w", errMalformed, len(st.symbols), err)
			}
			st.symbols = append(st.symbols, sym)
			rest = r
			continue
		}
		r, err := skipField(rest, wt)
		if err != nil {
			return fmt.Errorf("%w: Request field %d: %w", errMalformed, field, err)
		}
		rest = r
	}
	haveSeries := false
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		buf = buf[n:]
		if field != 5 || wt != wireBytes {
			buf, _ = skipField(buf, wt) // checked by the first pass
			continue
		}
		msg, rest, err := readBytes(buf)
		if err != nil {
			return fmt.Errorf("%w: timeseries: %w", errMalformed, err)
		}
		buf = rest
		if !haveSeries {
			haveSeries = true
			if len(st.symbols) == 0 || len(st.symbols[0]) != 0 {
				return fmt.Errorf("%w: the first symbol must be the empty string", errBadRequest)
			}
		}
		if err := parseTimeSeriesV2(msg, st, s); err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// symbol returns symbol ref, ok false when out of range.
func (st *v2State) symbol(ref uint32) ([]byte, bool) {
	if uint64(ref) >= uint64(len(st.symbols)) {
		return nil, false
	}
	return st.symbols[ref], true
}

func parseTimeSeriesV2(buf []byte, st *v2State, s *wireSeries) error {
	s.reset()
	s.keyBuf = s.keyBuf[:0]
	st.refs = st.refs[:0]
	for len(buf) > 0 {
		// Fast path for a sample as Prometheus encodes it: 0x12 len 0x09
		// value(8) 0x10 varint.
		if buf[0] == 0x12 && len(buf) > 12 && buf[1] < 0x80 && buf[2] == 0x09 && buf[11] == 0x10 {
			n := 2 + int(buf[1])
			if n <= len(buf) && n > 12 {
				if t, m := readVarint(buf[12:n]); m == n-12 {
					s.Samples = append(s.Samples, Sample{T: int64(t), V: math.Float64frombits(le64(buf[3:11]))})
					buf = buf[n:]
					continue
				}
			}
		}
		field, wt, n := readTag(buf)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag in TimeSeries", errMalformed)
		}
		buf = buf[n:]
		if field == 1 {
			var err error
			if st.refs, buf, err = appendUint32s(st.refs, buf, wt); err != nil {
				return fmt.Errorf("%w: labels_refs: %w", errMalformed, err)
			}
			continue
		}
		if wt != wireBytes {
			rest, err := skipField(buf, wt)
			if err != nil {
				return fmt.Errorf("%w: TimeSeries field %d: %w", errMalformed, field, err)
			}
			buf = rest
			continue
		}
		msg, rest, err := readBytes(buf)
		if err != nil {
			return fmt.Errorf("%w: TimeSeries field %d: %w", errMalformed, field, err)
		}
		buf = rest
		switch field {
		case 2:
			smp, err := parseSample(msg)
			if err != nil {
				return err
			}
			s.Samples = append(s.Samples, smp)
		case 3:
			s.Hists = append(s.Hists, msg)
		case 4:
			if err := s.parseExemplarV2(msg, st); err != nil {
				return err
			}
		case 5:
			md, err := parseMetadataV2(msg, st)
			if err != nil {
				return err
			}
			if md.Family == nil && md.Type == 0 && md.Help == nil && md.Unit == nil {
				md.Set = false // invalid refs are reported by the name below
			}
			s.Meta = md
		}
	}
	if bad := st.labels(s); bad != "" {
		s.Invalid = bad
	}
	switch {
	case s.Invalid != "":
	case len(s.Samples) > 0 && len(s.Hists) > 0:
		s.Invalid = "has both samples and histograms"
	case len(s.Samples) == 0 && len(s.Hists) == 0 && len(s.Exemplars) == 0 && !s.Meta.Set:
		s.Invalid = "has no samples, histograms, exemplars or metadata"
	case s.Meta.Family != nil:
		s.Invalid = string(s.Meta.Family) // a bad metadata reference
	}
	return nil
}

// labels resolves the series' label references into s.Key (1.0's Label
// field encoding of the sorted labels) and returns what is wrong with
// them, if anything.
func (st *v2State) labels(s *wireSeries) string {
	if len(st.refs)%2 == 1 {
		return fmt.Sprintf("has an odd number (%d) of label references", len(st.refs))
	}
	st.lbls = st.lbls[:0]
	for i := 0; i < len(st.refs); i += 2 {
		name, ok1 := st.symbol(st.refs[i])
		value, ok2 := st.symbol(st.refs[i+1])
		if !ok1 || !ok2 {
			return fmt.Sprintf("label reference %d or %d is out of range (%d symbols)", st.refs[i], st.refs[i+1], len(st.symbols))
		}
		if len(name) == 0 {
			return "has an empty label name"
		}
		st.lbls = append(st.lbls, mapping.Label{Name: name, Value: value})
	}
	cmp := func(a, b mapping.Label) int { return bytes.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(st.lbls, cmp) {
		slices.SortFunc(st.lbls, cmp)
	}
	for i := 1; i < len(st.lbls); i++ {
		if bytes.Equal(st.lbls[i-1].Name, st.lbls[i].Name) {
			return fmt.Sprintf("repeats label %q", st.lbls[i].Name)
		}
	}
	for _, l := range st.lbls {
		s.keyBuf = appendLabelField(s.keyBuf, l)
	}
	s.Key, s.copied = s.keyBuf, true
	return ""
}

// appendLabelField appends l as remote write 1.0's TimeSeries.labels field:
// 0x0A, length, then Label { name = 1; value = 2 } (empty ones left out, as
// protobuf encoders do).
func appendLabelField(dst []byte, l mapping.Label) []byte {
	size := 0
	if len(l.Name) > 0 {
		size += 1 + uvarintLen(uint64(len(l.Name))) + len(l.Name)
	}
	if len(l.Value) > 0 {
		size += 1 + uvarintLen(uint64(len(l.Value))) + len(l.Value)
	}
	dst = appendUvarint(append(dst, 0x0A), uint64(size))
	if len(l.Name) > 0 {
		dst = append(appendUvarint(append(dst, 0x0A), uint64(len(l.Name))), l.Name...)
	}
	if len(l.Value) > 0 {
		dst = append(appendUvarint(append(dst, 0x12), uint64(len(l.Value))), l.Value...)
	}
	return dst
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendUint32s reads a repeated uint32 field: packed (wire type 2) or one
// varint.
func appendUint32s(dst []uint32, buf []byte, wt int) ([]uint32, []byte, error) {
	switch wt {
	case wireVarint:
		v, n := readVarint(buf)
		if n <= 0 || v > math.MaxUint32 {
			return dst, nil, fmt.Errorf("bad uint32 varint")
		}
		return append(dst, uint32(v)), buf[n:], nil
	case wireBytes:
		msg, rest, err := readBytes(buf)
		if err != nil {
			return dst, nil, err
		}
		for len(msg) > 0 {
			v, n := readVarint(msg)
			if n <= 0 || v > math.MaxUint32 {
				return dst, nil, fmt.Errorf("bad packed uint32")
			}
			dst = append(dst, uint32(v))
			msg = msg[n:]
		}
		return dst, rest, nil
	}
	return dst, nil, fmt.Errorf("wire type %d for a repeated uint32", wt)
}

// parseExemplarV2 walks an Exemplar { repeated uint32 labels_refs = 1;
// double value = 2; int64 timestamp = 3; }. A reference out of range makes
// the series invalid.
func (s *wireSeries) parseExemplarV2(buf []byte, st *v2State) error {
	e := wireExemplar{lo: len(s.exLabels)}
	var refs []uint32
	var arr [16]uint32
	refs = arr[:0]
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag in Exemplar", errMalformed)
		}
		buf = buf[n:]
		switch {
		case field == 1:
			var err error
			if refs, buf, err = appendUint32s(refs, buf, wt); err != nil {
				return fmt.Errorf("%w: Exemplar labels_refs: %w", errMalformed, err)
			}
		case field == 2 && wt == wireFixed64:
			if len(buf) < 8 {
				return fmt.Errorf("%w: Exemplar value cut", errMalformed)
			}
			e.V, buf = math.Float64frombits(le64(buf)), buf[8:]
		case field == 3 && wt == wireVarint:
			v, n := readVarint(buf)
			if n <= 0 {
				return fmt.Errorf("%w: Exemplar timestamp", errMalformed)
			}
			e.T, buf = int64(v), buf[n:]
		default:
			rest, err := skipField(buf, wt)
			if err != nil {
				return fmt.Errorf("%w: Exemplar field %d: %w", errMalformed, field, err)
			}
			buf = rest
		}
	}
	if len(refs)%2 == 1 {
		s.Invalid = fmt.Sprintf("has an exemplar with an odd number (%d) of label references", len(refs))
		return nil
	}
	for i := 0; i < len(refs); i += 2 {
		name, ok1 := st.symbol(refs[i])
		value, ok2 := st.symbol(refs[i+1])
		if !ok1 || !ok2 {
			s.Invalid = fmt.Sprintf("has an exemplar label reference %d or %d out of range (%d symbols)", refs[i], refs[i+1], len(st.symbols))
			return nil
		}
		s.exLabels = append(s.exLabels, mapping.Label{Name: name, Value: value})
	}
	e.hi = len(s.exLabels)
	s.Exemplars = append(s.Exemplars, e)
	return nil
}

// parseMetadataV2 walks a Metadata { MetricType type = 1; uint32 help_ref =
// 3; uint32 unit_ref = 4; }. A reference out of range is reported in
// Family (which 2.0 metadata does not otherwise use) for the caller.
func parseMetadataV2(buf []byte, st *v2State) (wireMeta, error) {
	md := wireMeta{Set: true}
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return md, fmt.Errorf("%w: bad tag in Metadata", errMalformed)
		}
		buf = buf[n:]
		if wt != wireVarint {
			rest, err := skipField(buf, wt)
			if err != nil {
				return md, fmt.Errorf("%w: Metadata field %d: %w", errMalformed, field, err)
			}
			buf = rest
			continue
		}
		v, n := readVarint(buf)
		if n <= 0 {
			return md, fmt.Errorf("%w: Metadata field %d varint", errMalformed, field)
		}
		buf = buf[n:]
		switch field {
		case 1:
			md.Type = v
		case 3, 4:
			sym, ok := st.symbol(uint32(min(v, math.MaxUint32)))
			if !ok || v > math.MaxUint32 {
				md.Family = fmt.Appendf(nil, "has a metadata reference %d out of range (%d symbols)", v, len(st.symbols))
				continue
			}
			if field == 3 {
				md.Help = sym
			} else {
				md.Unit = sym
			}
		}
	}
	return md, nil
}
