package wire

import (
	"errors"
	"fmt"

	"github.com/promhbase/promhbase/mapping"
)

// ErrMalformed marks a request body that is not a valid protobuf message.
var ErrMalformed = errors.New("malformed protobuf")

// Series is one prometheus.TimeSeries as decoded from a WriteRequest
// without copying: label bytes point into the request buffer.
type Series struct {
	// Key is the concatenation of the raw Label fields of the series (tag,
	// length and message of each): equal keys mean equal label sets. It
	// points into the request when the labels are contiguous, as
	// Prometheus encodes them, and into keyBuf otherwise.
	Key     []byte
	Samples []mapping.Point
	// Encoded are samples whose cells the sender chose (OpenTSDB's put:
	// see mapping.EncodedSample), stored as they are after Samples; the
	// remote-write decoders never set it.
	Encoded []mapping.EncodedSample
	// Hists holds the series' Histogram messages, undecoded; they alias
	// the request (see parseHistogram).
	Hists [][]byte
	// Exemplars are the series' exemplars; their labels are in exLabels.
	Exemplars []Exemplar
	// Meta is the series' metadata (remote write 2.0 only).
	Meta Meta
	// Invalid, when not empty, says why the series can never be stored
	// (remote write 2.0's per-series rules); the rest of the request is.
	Invalid string
	// NextKey, when not nil, is the Key of the series the request holds
	// next (remote write 2.0: that series is parsed already), or a prefix
	// of it (1.0: its leading labels, as Prometheus encodes them): a hint
	// for a cache lookup started ahead of time. It is valid until the
	// callback returns.
	NextKey []byte

	exLabels []mapping.Label

	keyBuf []byte
	labels []mapping.Label
	// names decodes the label-name ids of a 2.0 Key (see keyFormV2).
	names *LabelNames
	// While Key aliases the message, it is msg[keyStart:keyEnd]; copied
	// means it lives in keyBuf.
	copied           bool
	keyStart, keyEnd int
}

// addKeyField adds the label field msg[off:off+n] to Key: by extending the
// alias when it follows the previous label field, by copying otherwise.
func (s *Series) addKeyField(msg []byte, off, n int) {
	switch {
	case s.copied:
		s.keyBuf = append(s.keyBuf, msg[off:off+n]...)
		s.Key = s.keyBuf
	case s.Key == nil:
		s.keyStart, s.keyEnd = off, off+n
		s.Key = msg[off : off+n]
	case off == s.keyEnd:
		s.keyEnd = off + n
		s.Key = msg[s.keyStart:s.keyEnd]
	default: // labels interleaved with other fields
		s.keyBuf = append(append(s.keyBuf[:0], s.Key...), msg[off:off+n]...)
		s.Key = s.keyBuf
		s.copied = true
	}
}

// Labels decodes the series' labels from Key. They are only needed when
// the series is not in the mapper's cache, or for error messages.
func (s *Series) Labels() ([]mapping.Label, error) {
	s.labels = s.labels[:0]
	buf := s.Key
	if len(buf) > 0 && buf[0] == keyFormV2 {
		return s.labelsV2(buf[1:])
	}
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "series key")
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
		if f.wt() != wireBytes {
			return nil, fmt.Errorf("%w: series key field %d of wire type %d", ErrMalformed, f.num(), f.wt())
		}
		l, err := parseLabel(f.b)
		if err != nil {
			return nil, err
		}
		s.labels = append(s.labels, l)
	}
	return s.labels, nil
}

// labelsV2 decodes the labels of a 2.0 key (after its form byte).
func (s *Series) labelsV2(buf []byte) ([]mapping.Label, error) {
	errKey := func() error { return fmt.Errorf("%w: 2.0 series key", ErrMalformed) }
	for len(buf) > 0 {
		var l mapping.Label
		id, n := readVarint(buf)
		if n <= 0 {
			return nil, errKey()
		}
		buf = buf[n:]
		if id == 0 {
			if l.Name, n = readLenBytes(buf); n <= 0 {
				return nil, errKey()
			}
			buf = buf[n:]
		} else if s.names == nil {
			return nil, fmt.Errorf("%w: 2.0 series key without its label names", ErrMalformed)
		} else if name, ok := s.names.name(id); ok {
			l.Name = name
		} else {
			return nil, fmt.Errorf("%w: 2.0 series key names label name id %d", ErrMalformed, id)
		}
		if l.Value, n = readLenBytes(buf); n <= 0 {
			return nil, errKey()
		}
		buf = buf[n:]
		s.labels = append(s.labels, l)
	}
	return s.labels, nil
}

// ParseWriteRequest walks a prometheus.WriteRequest (remote write 1.0):
//
//	WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
//	               repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }
//
// and calls fn for each series. The series and its slices are reused
// between calls. Unknown fields are skipped; every length is checked before
// slicing.
func ParseWriteRequest(buf []byte, s *Series, metas *[]Meta, fn func(*Series) error) error {
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "WriteRequest")
		if err != nil {
			return err
		}
		rest = rest[n:]
		switch {
		case f.is(1, wireBytes):
			if err := parseTimeSeries(f.b, s); err != nil {
				return err
			}
			s.NextKey = nextKey(rest)
			if err := fn(s); err != nil {
				return err
			}
		case f.is(3, wireBytes) && metas != nil:
			md, err := parseMetricMetadata(f.b)
			if err != nil {
				return err
			}
			*metas = append(*metas, md)
		}
	}
	return nil
}

// Meta is metric metadata as it arrives: the family name (1.0; 2.0
// uses the series' name), its type as the enum number, help and unit.
type Meta struct {
	Family, Help, Unit []byte
	Type               uint64
	Set                bool // 2.0: the series carried a Metadata message
}

// parseMetricMetadata walks a 1.0 MetricMetadata { MetricType type = 1;
// string metric_family_name = 2; string help = 4; string unit = 5; }.
func parseMetricMetadata(buf []byte) (Meta, error) {
	md := Meta{Set: true}
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "MetricMetadata")
		if err != nil {
			return md, err
		}
		rest = rest[n:]
		switch {
		case f.is(1, wireVarint):
			// An enum is an int32: a longer varint keeps its low 32 bits.
			md.Type = uint64(uint32(f.uint()))
		case f.is(2, wireBytes):
			md.Family = f.b
		case f.is(4, wireBytes):
			md.Help = f.b
		case f.is(5, wireBytes):
			md.Unit = f.b
		}
	}
	return md, nil
}

// Exemplar is one exemplar of a series: value, timestamp and its
// labels, s.exLabels[lo:hi].
type Exemplar struct {
	V      float64
	T      int64
	lo, hi int
}

// ExemplarLabels returns the labels of e, an exemplar of s.
func (s *Series) ExemplarLabels(e Exemplar) []mapping.Label { return s.exLabels[e.lo:e.hi] }

// parseExemplarV1 walks a 1.0 Exemplar { repeated Label labels = 1; double
// value = 2; int64 timestamp = 3; } into s.
func (s *Series) parseExemplarV1(buf []byte) error {
	e := Exemplar{lo: len(s.exLabels)}
	err := parseExemplar(buf, &e, func(f field) error {
		if f.wt() != wireBytes {
			return nil
		}
		l, err := parseLabel(f.b)
		if err != nil {
			return err
		}
		s.exLabels = append(s.exLabels, l)
		return nil
	})
	if err != nil {
		return err
	}
	e.hi = len(s.exLabels)
	s.Exemplars = append(s.Exemplars, e)
	return nil
}

// parseExemplar walks an Exemplar of either protocol: its value (field 2)
// and timestamp (field 3) into e; field 1, the labels, goes to labels.
func parseExemplar(buf []byte, e *Exemplar, labels func(field) error) error {
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "Exemplar")
		if err != nil {
			return err
		}
		rest = rest[n:]
		switch {
		case f.num() == 1:
			if err := labels(f); err != nil {
				return err
			}
		case f.is(2, wireFixed64):
			e.V = f.float64()
		case f.is(3, wireVarint):
			e.T = int64(f.uint())
		}
	}
	return nil
}

// reset empties s for the next series.
func (s *Series) reset() {
	s.Key = nil
	s.Samples = s.Samples[:0]
	s.Encoded = s.Encoded[:0]
	s.Hists = s.Hists[:0]
	s.Exemplars = s.Exemplars[:0]
	s.exLabels = s.exLabels[:0]
	s.Meta = Meta{}
	s.Invalid = ""
	s.NextKey = nil
	s.copied, s.keyStart, s.keyEnd = false, 0, 0
	s.names = nil
}

// nextKey returns the leading label fields of the TimeSeries field at the
// start of rest (a WriteRequest's), each under 128 bytes: the Key that
// parseTimeSeries gives it, or that Key's prefix when the labels go on
// past them. It returns nil when rest does not start with a TimeSeries
// or its first field is not such a label; it does not check the rest.
func nextKey(rest []byte) []byte {
	if len(rest) < 2 || rest[0] != 0x0A {
		return nil
	}
	l, m := uint64(rest[1]), 1
	if rest[1] >= 0x80 {
		if l, m = readVarintSlow(rest[1:]); m <= 0 {
			return nil
		}
	}
	if l > uint64(len(rest)-1-m) {
		return nil
	}
	msg := rest[1+m : 1+m+int(l)]
	end := 0
	for end+1 < len(msg) && msg[end] == 0x0A && msg[end+1] < 0x80 && end+2+int(msg[end+1]) <= len(msg) {
		end += 2 + int(msg[end+1])
	}
	if end == 0 {
		return nil
	}
	return msg[:end:end]
}

func parseTimeSeries(buf []byte, s *Series) error {
	s.reset()
	whole := buf
	for len(buf) > 0 {
		// Fast path for what Prometheus sends: short labels (tag 0x0A,
		// one-byte length) next to each other.
		if buf[0] == 0x0A && len(buf) > 1 && buf[1] < 0x80 {
			n := 2 + int(buf[1])
			if n > len(buf) {
				return fmt.Errorf("%w: label of %d bytes past the end", ErrMalformed, buf[1])
			}
			s.addKeyField(whole, len(whole)-len(buf), n)
			buf = buf[n:]
			continue
		}
		if n := s.addShortSample(buf); n > 0 {
			buf = buf[n:]
			continue
		}
		f, n, err := readField(buf, "TimeSeries")
		if err != nil {
			return err
		}
		off := len(whole) - len(buf)
		buf = buf[n:]
		if f.wt() != wireBytes {
			continue
		}
		switch f.num() {
		case 1:
			s.addKeyField(whole, off, n)
		case 2:
			smp, err := parseSample(f.b)
			if err != nil {
				return err
			}
			s.Samples = append(s.Samples, smp)
		case 3:
			if err := s.parseExemplarV1(f.b); err != nil {
				return err
			}
		case 4:
			s.Hists = append(s.Hists, f.b)
		}
	}
	return nil
}

func parseLabel(buf []byte) (mapping.Label, error) {
	var l mapping.Label
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "Label")
		if err != nil {
			return l, err
		}
		rest = rest[n:]
		switch {
		case f.is(1, wireBytes):
			l.Name = f.b
		case f.is(2, wireBytes):
			l.Value = f.b
		}
	}
	return l, nil
}

func parseSample(buf []byte) (mapping.Point, error) {
	var s mapping.Point
	for rest := buf; len(rest) > 0; {
		f, n, err := readField(rest, "Sample")
		if err != nil {
			return s, err
		}
		rest = rest[n:]
		switch {
		case f.is(1, wireFixed64):
			s.V = f.float64()
		case f.is(2, wireVarint):
			s.T = int64(f.uint())
		}
	}
	return s, nil
}

// Names returns the label-name table that decodes the series' 2.0 Key (nil
// for a 1.0 series).
func (s *Series) Names() *LabelNames { return s.names }

// KeyLabels decodes the labels of key, a Key of a series of the same
// request whose label-name table is names. s serves only as the scratch
// space the labels are decoded into: they are valid until its next use.
func (s *Series) KeyLabels(key []byte, names *LabelNames) ([]mapping.Label, error) {
	s.Key, s.names = key, names
	lbls, err := s.Labels()
	s.Key, s.names = nil, nil
	return lbls, err
}

// ForgetLabels clears the decoded labels s holds, so that it keeps no
// pointers into a request that is done.
func (s *Series) ForgetLabels() { clear(s.labels) }
