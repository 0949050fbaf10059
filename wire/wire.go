package wire

import (
	"errors"
	"fmt"
	"math"

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
	for len(buf) > 0 {
		_, _, n := readTag(buf)
		if n <= 0 {
			return nil, fmt.Errorf("%w: label field", ErrMalformed)
		}
		msg, rest, err := readBytes(buf[n:])
		if err != nil {
			return nil, fmt.Errorf("%w: label field", ErrMalformed)
		}
		l, err := parseLabel(msg)
		if err != nil {
			return nil, err
		}
		s.labels = append(s.labels, l)
		buf = rest
	}
	return s.labels, nil
}

// labelsV2 decodes the labels of a 2.0 key (after its form byte).
func (s *Series) labelsV2(buf []byte) ([]mapping.Label, error) {
	bytesField := func() ([]byte, error) {
		n, m := readVarint(buf)
		if m <= 0 || n > uint64(len(buf)-m) {
			return nil, fmt.Errorf("%w: 2.0 series key", ErrMalformed)
		}
		b := buf[m : m+int(n) : m+int(n)]
		buf = buf[m+int(n):]
		return b, nil
	}
	for len(buf) > 0 {
		var l mapping.Label
		id, m := readVarint(buf)
		if m <= 0 {
			return nil, fmt.Errorf("%w: 2.0 series key", ErrMalformed)
		}
		buf = buf[m:]
		var err error
		if id == 0 {
			if l.Name, err = bytesField(); err != nil {
				return nil, err
			}
		} else if s.names == nil {
			return nil, fmt.Errorf("%w: 2.0 series key without its label names", ErrMalformed)
		} else if name, ok := s.names.name(id); ok {
			l.Name = name
		} else {
			return nil, fmt.Errorf("%w: 2.0 series key names label name id %d", ErrMalformed, id)
		}
		if l.Value, err = bytesField(); err != nil {
			return nil, err
		}
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
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag in WriteRequest", ErrMalformed)
		}
		buf = buf[n:]
		if field == 1 && wt == wireBytes {
			msg, rest, err := readBytes(buf)
			if err != nil {
				return fmt.Errorf("%w: timeseries: %w", ErrMalformed, err)
			}
			buf = rest
			if err := parseTimeSeries(msg, s); err != nil {
				return err
			}
			if err := fn(s); err != nil {
				return err
			}
			continue
		}
		if field == 3 && wt == wireBytes && metas != nil {
			msg, rest, err := readBytes(buf)
			if err != nil {
				return fmt.Errorf("%w: metadata: %w", ErrMalformed, err)
			}
			buf = rest
			md, err := parseMetricMetadata(msg)
			if err != nil {
				return err
			}
			*metas = append(*metas, md)
			continue
		}
		rest, err := skipField(buf, wt)
		if err != nil {
			return fmt.Errorf("%w: WriteRequest field %d: %w", ErrMalformed, field, err)
		}
		buf = rest
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
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return md, fmt.Errorf("%w: bad tag in MetricMetadata", ErrMalformed)
		}
		buf = buf[n:]
		switch {
		case field == 1 && wt == wireVarint:
			v, n := readVarint(buf)
			if n <= 0 {
				return md, fmt.Errorf("%w: MetricMetadata type", ErrMalformed)
			}
			// An enum is an int32: a longer varint keeps its low 32 bits.
			md.Type, buf = uint64(uint32(v)), buf[n:]
		case (field == 2 || field == 4 || field == 5) && wt == wireBytes:
			b, rest, err := readBytes(buf)
			if err != nil {
				return md, fmt.Errorf("%w: MetricMetadata field %d: %w", ErrMalformed, field, err)
			}
			buf = rest
			switch field {
			case 2:
				md.Family = b
			case 4:
				md.Help = b
			case 5:
				md.Unit = b
			}
		default:
			rest, err := skipField(buf, wt)
			if err != nil {
				return md, fmt.Errorf("%w: MetricMetadata field %d: %w", ErrMalformed, field, err)
			}
			buf = rest
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
	err := parseExemplar(buf, &e, func(wt int, b []byte) ([]byte, error) {
		if wt != wireBytes {
			return skipField(b, wt)
		}
		msg, rest, err := readBytes(b)
		if err != nil {
			return nil, fmt.Errorf("%w: Exemplar label: %w", ErrMalformed, err)
		}
		l, err := parseLabel(msg)
		if err != nil {
			return nil, err
		}
		s.exLabels = append(s.exLabels, l)
		return rest, nil
	})
	if err != nil {
		return err
	}
	e.hi = len(s.exLabels)
	s.Exemplars = append(s.Exemplars, e)
	return nil
}

// parseExemplar walks an Exemplar of either protocol: its value (field 2)
// and timestamp (field 3) into e; field 1, the labels, goes to labels,
// which returns what follows it.
func parseExemplar(buf []byte, e *Exemplar, labels func(wt int, b []byte) ([]byte, error)) error {
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag in Exemplar", ErrMalformed)
		}
		buf = buf[n:]
		var err error
		switch {
		case field == 1:
			buf, err = labels(wt, buf)
			if err != nil {
				return err
			}
		case field == 2 && wt == wireFixed64:
			if len(buf) < 8 {
				return fmt.Errorf("%w: Exemplar value cut", ErrMalformed)
			}
			e.V, buf = math.Float64frombits(le64(buf)), buf[8:]
		case field == 3 && wt == wireVarint:
			v, n := readVarint(buf)
			if n <= 0 {
				return fmt.Errorf("%w: Exemplar timestamp", ErrMalformed)
			}
			e.T, buf = int64(v), buf[n:]
		default:
			if buf, err = skipField(buf, wt); err != nil {
				return fmt.Errorf("%w: Exemplar field %d: %w", ErrMalformed, field, err)
			}
		}
	}
	return nil
}

// reset empties s for the next series.
func (s *Series) reset() {
	s.Key = nil
	s.Samples = s.Samples[:0]
	s.Hists = s.Hists[:0]
	s.Exemplars = s.Exemplars[:0]
	s.exLabels = s.exLabels[:0]
	s.Meta = Meta{}
	s.Invalid = ""
	s.copied, s.keyStart, s.keyEnd = false, 0, 0
	s.names = nil
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
		// Fast path for a short sample: 0x12 len 0x09 value(8) 0x10 varint.
		if buf[0] == 0x12 && len(buf) > 12 && buf[1] < 0x80 && buf[2] == 0x09 && buf[11] == 0x10 {
			n := 2 + int(buf[1])
			if n <= len(buf) && n > 12 {
				if t, m := readVarint(buf[12:n]); m == n-12 {
					s.Samples = append(s.Samples, mapping.Point{T: int64(t), V: math.Float64frombits(le64(buf[3:11]))})
					buf = buf[n:]
					continue
				}
			}
		}
		field, wt, n := readTag(buf)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag in TimeSeries", ErrMalformed)
		}
		start := buf
		buf = buf[n:]
		if wt != wireBytes {
			rest, err := skipField(buf, wt)
			if err != nil {
				return fmt.Errorf("%w: TimeSeries field %d: %w", ErrMalformed, field, err)
			}
			buf = rest
			continue
		}
		msg, rest, err := readBytes(buf)
		if err != nil {
			return fmt.Errorf("%w: TimeSeries field %d: %w", ErrMalformed, field, err)
		}
		buf = rest
		switch field {
		case 1:
			s.addKeyField(whole, len(whole)-len(start), len(start)-len(rest))
			_ = msg
		case 2:
			smp, err := parseSample(msg)
			if err != nil {
				return err
			}
			s.Samples = append(s.Samples, smp)
		case 3:
			if err := s.parseExemplarV1(msg); err != nil {
				return err
			}
		case 4:
			s.Hists = append(s.Hists, msg)
		}
	}
	return nil
}

func parseLabel(buf []byte) (mapping.Label, error) {
	var l mapping.Label
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return l, fmt.Errorf("%w: bad tag in Label", ErrMalformed)
		}
		buf = buf[n:]
		if wt == wireBytes && (field == 1 || field == 2) {
			b, rest, err := readBytes(buf)
			if err != nil {
				return l, fmt.Errorf("%w: Label field %d: %w", ErrMalformed, field, err)
			}
			buf = rest
			if field == 1 {
				l.Name = b
			} else {
				l.Value = b
			}
			continue
		}
		rest, err := skipField(buf, wt)
		if err != nil {
			return l, fmt.Errorf("%w: Label field %d: %w", ErrMalformed, field, err)
		}
		buf = rest
	}
	return l, nil
}

func parseSample(buf []byte) (mapping.Point, error) {
	var s mapping.Point
	for len(buf) > 0 {
		field, wt, n := readTag(buf)
		if n <= 0 {
			return s, fmt.Errorf("%w: bad tag in Sample", ErrMalformed)
		}
		buf = buf[n:]
		switch {
		case field == 1 && wt == wireFixed64:
			if len(buf) < 8 {
				return s, fmt.Errorf("%w: Sample value: %d bytes left, want 8", ErrMalformed, len(buf))
			}
			s.V = math.Float64frombits(le64(buf))
			buf = buf[8:]
		case field == 2 && wt == wireVarint:
			v, n := readVarint(buf)
			if n <= 0 {
				return s, fmt.Errorf("%w: Sample timestamp varint", ErrMalformed)
			}
			s.T = int64(v)
			buf = buf[n:]
		default:
			rest, err := skipField(buf, wt)
			if err != nil {
				return s, fmt.Errorf("%w: Sample field %d: %w", ErrMalformed, field, err)
			}
			buf = rest
		}
	}
	return s, nil
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// readVarint decodes a varint; n <= 0 when it is truncated or too long.
func readVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return readVarintSlow(b)
}

func readVarintSlow(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		v |= uint64(c&0x7F) << (7 * i)
		if c < 0x80 {
			if i == 9 && c > 1 {
				return 0, -1
			}
			return v, i + 1
		}
	}
	return 0, -1
}

func readTag(b []byte) (field uint64, wt int, n int) {
	v, n := readVarint(b)
	if n <= 0 || v>>3 == 0 {
		return 0, 0, -1
	}
	return v >> 3, int(v & 7), n
}

func readBytes(b []byte) (msg, rest []byte, err error) {
	if len(b) > 0 && b[0] < 0x80 {
		l := int(b[0])
		if l >= len(b) {
			return nil, nil, fmt.Errorf("length %d past the end (%d bytes left)", l, len(b)-1)
		}
		return b[1 : 1+l], b[1+l:], nil
	}
	l, n := readVarint(b)
	if n <= 0 {
		return nil, nil, errors.New("bad length varint")
	}
	b = b[n:]
	if l > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d past the end (%d bytes left)", l, len(b))
	}
	return b[:l], b[l:], nil
}

func skipField(b []byte, wt int) ([]byte, error) {
	switch wt {
	case wireVarint:
		_, n := readVarint(b)
		if n <= 0 {
			return nil, errors.New("bad varint")
		}
		return b[n:], nil
	case wireFixed64:
		if len(b) < 8 {
			return nil, errors.New("truncated fixed64")
		}
		return b[8:], nil
	case wireBytes:
		_, rest, err := readBytes(b)
		return rest, err
	case wireFixed32:
		if len(b) < 4 {
			return nil, errors.New("truncated fixed32")
		}
		return b[4:], nil
	}
	return nil, fmt.Errorf("unsupported wire type %d", wt)
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
