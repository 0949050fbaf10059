package wire

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
)

// V2State holds what one remote write 2.0 request's series share: the
// symbol table (each symbol aliasing the request) and reusable buffers.
type V2State struct {
	body    []byte   // the request the symbols point into
	symbols []uint64 // symbol i is body[off:off+len], packed as off<<32 | len: 8 bytes an entry keeps the table in cache
	refs    []uint32
	ents    []uint64 // the symbol-table entries of one series' label references
	packed  []byte   // the series' packed labels_refs, not yet decoded
	// names gives label names ids for keys (nil: none get one); nameIDs
	// memoises them per symbol for the request (0: not looked up yet).
	names   *LabelNames
	nameIDs []uint32
	// ahead is the series parsed before the one handed to the callback
	// is (ParseWriteRequestV2), so that its Key can be that one's
	// NextKey.
	ahead Series
}

// unpack decodes a pending packed labels_refs into refs.
func (st *V2State) unpack() error {
	if st.packed == nil {
		return nil
	}
	var err error
	st.refs, err = appendPackedUint32s(st.refs, st.packed)
	st.packed = nil
	if err != nil {
		return fmt.Errorf("%w: labels_refs: %w", ErrMalformed, err)
	}
	return nil
}

// packedLabels is labels for refs still packed: it decodes them into
// st.refs and builds the key from them.
func (st *V2State) packedLabels(s *Series) (string, error) {
	msg, syms := st.packed, st.symbols
	// The common case in one pass straight into the key: label pairs
	// whose references take one or two bytes each, in range, names with
	// an id below 128 and values under 128 bytes. Anything else starts
	// over on the general path.
	key := append(s.keyBuf[:0], keyFormV2) //nolint:gocritic // key reuses keyBuf's array and is kept as s.keyBuf when done
	i := 0
	for i+1 < len(msg) {
		nr := uint32(msg[i])
		j := i + 1
		if nr >= 0x80 {
			if msg[j] >= 0x80 {
				break
			}
			nr = nr&0x7F | uint32(msg[j])<<7
			j++
		}
		if j >= len(msg) {
			break
		}
		vr := uint32(msg[j])
		j++
		if vr >= 0x80 {
			if j >= len(msg) || msg[j] >= 0x80 {
				break
			}
			vr = vr&0x7F | uint32(msg[j])<<7
			j++
		}
		if uint64(nr) >= uint64(len(syms)) || uint64(vr) >= uint64(len(syms)) {
			break
		}
		id := st.nameIDs[nr]
		if id == 0 {
			id = st.nameID(nr, syms[nr]) | noNameID
		}
		id &^= noNameID
		ve := syms[vr]
		vl := int(uint32(ve))
		if id == 0 || id >= 0x80 || vl >= 0x80 {
			break
		}
		// As build writes a short label; written out here because the
		// compiler does not inline a shared helper, and the call costs
		// about 5 % of the whole write path.
		k := len(key)
		if k+vl+2+32 > cap(key) {
			key = slices.Grow(key, vl+2+32)
		}
		key = key[:k+vl+2]
		key[k], key[k+1] = byte(id), byte(vl)
		st.copySym(key[k+2:k+2+vl:cap(key)], ve)
		i = j
	}
	if i == len(msg) {
		s.names = st.names
		s.keyBuf, s.Key, s.copied = key, key, true
		return "", nil
	}
	s.keyBuf = key
	// The general path: every reference decoded, then checked and built.
	refs, ents := st.refs[:0], st.ents[:0]
	size := 0
	for i := 0; i < len(msg); {
		var r uint32
		if c := msg[i]; c < 0x80 {
			r = uint32(c)
			i++
		} else if i+1 < len(msg) && msg[i+1] < 0x80 {
			r = uint32(c&0x7F) | uint32(msg[i+1])<<7
			i += 2
		} else {
			v, m := readVarintSlow(msg[i:])
			if m <= 0 || v > math.MaxUint32 {
				return "", fmt.Errorf("%w: labels_refs: bad packed uint32", ErrMalformed)
			}
			r = uint32(v)
			i += m
		}
		refs = append(refs, r)
		if uint64(r) < uint64(len(syms)) {
			e := syms[r]
			ents = append(ents, e)
			size += int(uint32(e))
		}
	}
	st.refs = refs
	if len(ents) < len(refs) {
		return st.labels(s), nil // reports the reference out of range
	}
	return st.build(s, ents, size), nil
}

// ParseWriteRequestV2 walks an io.prometheus.write.v2.Request:
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
func ParseWriteRequestV2(buf []byte, st *V2State, s *Series, fn func(*Series) error) error {
	if uint64(len(buf)) > math.MaxUint32 {
		return fmt.Errorf("%w: a request of %d bytes", ErrMalformed, len(buf))
	}
	st.body, st.symbols = buf, st.symbols[:0]
	// skip is where the second pass starts: after the leading run of
	// symbols, which is all of them as Prometheus encodes a request.
	skip, leading := 0, true
	for rest := buf; len(rest) > 0; {
		// Fast path for a symbol under 128 bytes: tag 0x22, one-byte
		// length, the bytes. A request holds thousands of them.
		if len(rest) >= 2 && rest[0] == 0x22 && rest[1] < 0x80 && int(rest[1])+2 <= len(rest) {
			n := int(rest[1])
			off := uint64(len(buf) - len(rest) + 2)
			st.symbols = append(st.symbols, off<<32|uint64(n))
			rest = rest[2+n:]
			if leading {
				skip = len(buf) - len(rest)
			}
			continue
		}
		f, n, err := readField(rest, "Request")
		if err != nil {
			return err
		}
		rest = rest[n:]
		if f.num() != 4 || f.wt() != wireBytes {
			leading = false
			continue
		}
		off := uint64(len(buf) - len(rest) - len(f.b))
		st.symbols = append(st.symbols, off<<32|uint64(len(f.b)))
		if leading {
			skip = len(buf) - len(rest)
		}
	}
	st.nameIDs = slices.Grow(st.nameIDs[:0], len(st.symbols))[:len(st.symbols)]
	clear(st.nameIDs)
	haveSeries := false
	var cur *Series // parsed, not yet handed over
	next := s
	for rest := buf[skip:]; len(rest) > 0; {
		f, n, _ := readField(rest, "Request") // checked by the first pass
		rest = rest[n:]
		if f.num() != 5 || f.wt() != wireBytes {
			continue
		}
		if !haveSeries {
			haveSeries = true
			if len(st.symbols) == 0 || uint32(st.symbols[0]) != 0 {
				return fmt.Errorf("%w: the first symbol must be the empty string", ErrMalformed)
			}
		}
		// Each series is parsed before the one before it is handed over,
		// which then knows the next one's Key (Series.NextKey): the
		// two alternate between s and st.ahead.
		if err := parseTimeSeriesV2(f.b, st, next); err != nil {
			return err
		}
		if cur != nil {
			cur.NextKey = next.Key
			if err := fn(cur); err != nil {
				return err
			}
		}
		cur, next = next, cmp.Or(cur, &st.ahead)
	}
	if cur != nil {
		return fn(cur)
	}
	return nil
}

// symbol returns symbol ref, ok false when out of range.
func (st *V2State) symbol(ref uint32) ([]byte, bool) {
	if uint64(ref) >= uint64(len(st.symbols)) {
		return nil, false
	}
	return st.sym(st.symbols[ref]), true
}

// copySym copies the symbol of entry e into dst, whose length is the
// symbol's and whose capacity has 32 bytes to spare: a symbol of up to 32
// bytes away from the end of the request is copied as two 16-byte blocks
// (the bytes past its end land in dst's spare capacity and are
// overwritten by what follows), which is much cheaper than a call to
// memmove for the short names and values labels mostly are.
func (st *V2State) copySym(dst []byte, e uint64) {
	off, n := int(uint32(e>>32)), len(dst)
	if n <= 32 && off+32 <= len(st.body) && cap(dst) >= 32 {
		// Both blocks always: a branch on n > 16 would mispredict on
		// names and values around 16 bytes.
		src, d := st.body[off:off+32], dst[:32]
		*(*[16]byte)(d) = *(*[16]byte)(src)
		*(*[16]byte)(d[16:]) = *(*[16]byte)(src[16:])
		return
	}
	copy(dst, st.body[off:off+n])
}

// sym is the symbol a table entry points at.
func (st *V2State) sym(e uint64) []byte {
	off, n := uint32(e>>32), uint32(e)
	return st.body[off : off+n : off+n]
}

func parseTimeSeriesV2(buf []byte, st *V2State, s *Series) error {
	s.reset()
	s.keyBuf = s.keyBuf[:0]
	st.refs = st.refs[:0]
	for len(buf) > 0 {
		// Fast path for a sample as Prometheus encodes it.
		if n := s.addShortSample(buf); n > 0 {
			buf = buf[n:]
			continue
		}
		f, n, err := readField(buf, "TimeSeries")
		if err != nil {
			return err
		}
		buf = buf[n:]
		switch {
		case f.is(1, wireBytes) && len(st.refs) == 0 && st.packed == nil:
			// Packed, as encoders send it: decoded with the key.
			st.packed = f.b
		case f.num() == 1:
			if err := st.unpack(); err != nil {
				return err
			}
			if st.refs, err = appendUint32s(st.refs, f); err != nil {
				return fmt.Errorf("%w: labels_refs: %w", ErrMalformed, err)
			}
		case f.wt() != wireBytes:
		case f.num() == 2:
			smp, err := parseSample(f.b)
			if err != nil {
				return err
			}
			s.Samples = append(s.Samples, smp)
		case f.num() == 3:
			s.Hists = append(s.Hists, f.b)
		case f.num() == 4:
			if err := s.parseExemplarV2(f.b, st); err != nil {
				return err
			}
		case f.num() == 5 && len(f.b) > 0: // an empty Metadata, as Prometheus always sends one, is none
			// Metadata sent twice is merged, as protobuf merges a
			// message field that repeats.
			md, err := parseMetadataV2(f.b, st, s.Meta)
			if err != nil {
				return err
			}
			// All fields zero, or explicit zeros (proto3 cannot tell
			// them apart): no metadata. Invalid refs are reported by
			// the name below.
			if md.Family == nil && md.Type == 0 && len(md.Help) == 0 && len(md.Unit) == 0 {
				md.Set = false
			}
			s.Meta = md
		}
	}
	var bad string
	if st.packed != nil && len(st.refs) == 0 {
		var err error
		if bad, err = st.packedLabels(s); err != nil {
			return err
		}
	} else {
		if err := st.unpack(); err != nil {
			return err
		}
		bad = st.labels(s)
	}
	st.packed = nil
	if bad != "" {
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

// labels resolves the series' label references (st.refs) into s.Key, in
// the 2.0 form (see keyFormV2), and returns what is wrong with the
// references, if anything. Repeated and empty label names are found where
// every new key is checked, by mapping.ValidateLabels (a key is cached only
// once valid); labels out of order are accepted, as Prometheus's receiver
// accepts them, and only cost a cache entry of their own.
//
// It works in phases so that the loads of one series overlap instead of
// waiting on each other: every symbol-table entry is gathered first
// (independent loads), then the key is sized once, then the values are
// copied (independent loads again). A name costs a byte or two: its id,
// looked up once per request and symbol.
func (st *V2State) labels(s *Series) string {
	refs, syms := st.refs, st.symbols
	s.names = st.names
	if len(refs)%2 == 1 {
		return fmt.Sprintf("has an odd number (%d) of label references", len(refs))
	}
	ents := st.ents[:0]
	size := 0
	for _, r := range refs {
		if uint64(r) >= uint64(len(syms)) {
			return fmt.Sprintf("label reference %d is out of range (%d symbols)", r, len(syms))
		}
		e := syms[r]
		ents = append(ents, e)
		size += int(uint32(e))
	}
	return st.build(s, ents, size)
}

// build writes s.Key from the symbol-table entries ents of the series'
// label references st.refs, whose symbols add up to size bytes.
func (st *V2State) build(s *Series, ents []uint64, size int) string {
	refs := st.refs
	s.names = st.names
	if len(refs)%2 == 1 {
		return fmt.Sprintf("has an odd number (%d) of label references", len(refs))
	}
	st.ents = ents[:0]
	key := append(s.keyBuf[:0], keyFormV2) //nolint:gocritic // key reuses keyBuf's array and is kept as s.keyBuf when done
	key = slices.Grow(key, size+4*len(ents)+32)
	for i := 0; i+1 < len(ents); i += 2 {
		id := st.nameID(refs[i], ents[i])
		ve := ents[i+1]
		vl := int(uint32(ve))
		if id == 0 || id >= 0x80 || vl >= 0x80 {
			if id == 0 {
				name := st.sym(ents[i])
				key = append(appendUvarint(append(key, 0), uint64(len(name))), name...)
			} else {
				key = appendUvarint(key, uint64(id))
			}
			key = append(appendUvarint(key, uint64(vl)), st.sym(ve)...)
			continue
		}
		k := len(key)
		if k+vl+2+32 > cap(key) {
			key = slices.Grow(key, vl+2+32)
		}
		key = key[:k+vl+2]
		key[k], key[k+1] = byte(id), byte(vl)
		st.copySym(key[k+2:k+2+vl:cap(key)], ve)
	}
	s.keyBuf, s.Key, s.copied = key, key, true
	return ""
}

// nameID is the labelNames id of the name symbol ref (table entry e),
// memoised for the request; 0 when the name has none.
func (st *V2State) nameID(ref uint32, e uint64) uint32 {
	if id := st.nameIDs[ref]; id != 0 {
		return id &^ noNameID
	}
	id := uint32(0)
	if st.names != nil {
		id = st.names.id(st.sym(e))
	}
	st.nameIDs[ref] = id | noNameID
	return id
}

// noNameID marks a memoised name lookup in v2State.nameIDs (ids are below
// 2^16, so the bit is free).
const noNameID = 1 << 31

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// parseExemplarV2 walks an Exemplar { repeated uint32 labels_refs = 1;
// double value = 2; int64 timestamp = 3; }. A reference out of range makes
// the series invalid.
func (s *Series) parseExemplarV2(buf []byte, st *V2State) error {
	e := Exemplar{lo: len(s.exLabels)}
	var arr [16]uint32
	refs := arr[:0]
	err := parseExemplar(buf, &e, func(f field) error {
		var err error
		if refs, err = appendUint32s(refs, f); err != nil {
			return fmt.Errorf("%w: Exemplar labels_refs: %w", ErrMalformed, err)
		}
		return nil
	})
	if err != nil {
		return err
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
// 3; uint32 unit_ref = 4; } into md, the series' metadata so far. A
// reference out of range is reported in Family (which 2.0 metadata does
// not otherwise use) for the caller.
func parseMetadataV2(buf []byte, st *V2State, md Meta) (Meta, error) {
	md.Set = true
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "Metadata")
		if err != nil {
			return md, err
		}
		rest = rest[n:]
		if f.wt() != wireVarint {
			continue
		}
		v := f.uint()
		switch f.num() {
		case 1:
			md.Type = uint64(uint32(v)) // an enum is an int32: the low 32 bits
		case 3, 4:
			sym, ok := st.symbol(uint32(min(v, math.MaxUint32)))
			if !ok || v > math.MaxUint32 {
				md.Family = fmt.Appendf(nil, "has a metadata reference %d out of range (%d symbols)", v, len(st.symbols))
				continue
			}
			if f.num() == 3 {
				md.Help = sym
			} else {
				md.Unit = sym
			}
		}
	}
	return md, nil
}

// SetNames makes st give the label names of the series it parses ids from
// names (nil: none get one); see LabelNames.
func (st *V2State) SetNames(names *LabelNames) { st.names = names }
