package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/value"

	"github.com/promhbase/promhbase/mapping"
)

// lineScanner reads one JSON line of the import format without
// encoding/json's reflection (a few allocations a series, none a sample):
// an object of "metric" (an object of strings), "values" and
// "timestamps" (arrays); other keys are skipped whole. Values may also be
// the bare NaN and Inf tokens vmctl writes.
type lineScanner struct {
	b []byte
	i int
	// unesc holds the unescaped bytes of the line's strings that had
	// escapes (strBytes).
	unesc []byte
}

func (s *lineScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

func (s *lineScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("not a JSON object of metric, values and timestamps: at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

// expect consumes c after white space.
func (s *lineScanner) expect(c byte) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != c {
		if s.i >= len(s.b) {
			return s.errorf("unexpected end, want %q", c)
		}
		return s.errorf("%q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// peek returns the next byte after white space (0 at the end).
func (s *lineScanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str reads a JSON string.
func (s *lineScanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start, escaped := s.i, false
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if !escaped {
				return string(raw), nil
			}
			var out string
			if err := json.Unmarshal(s.b[start-1:s.i], &out); err != nil {
				return "", s.errorf("string: %v", err)
			}
			return out, nil
		case c == '\\':
			escaped = true
			s.i += 2
			continue
		case c < 0x20:
			return "", s.errorf("control character %#x in a string", c)
		}
		s.i++
	}
	return "", s.errorf("unterminated string")
}

// token reads a bare token: a number, null, true, false, or a special
// float.
func (s *lineScanner) token() []byte {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '+' || c == '-' || c == '.' {
			s.i++
			continue
		}
		break
	}
	return s.b[start:s.i]
}

// array calls elem for each element of a JSON array.
func (s *lineScanner) array(elem func(i int) error) error {
	_, err := s.elements(elem)
	return err
}

// elements calls elem for each element of a JSON array and returns how
// many there were.
func (s *lineScanner) elements(elem func(i int) error) (int, error) {
	if err := s.expect('['); err != nil {
		return 0, err
	}
	if s.peek() == ']' {
		s.i++
		return 0, nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return 0, err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return i + 1, nil
		default:
			return 0, s.errorf("want ',' or ']' in an array")
		}
	}
}

// object calls field for each key of a JSON object, positioned at its
// value.
func (s *lineScanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.strBytes()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or '}' in an object")
		}
	}
}

// skip skips any JSON value.
func (s *lineScanner) skip(depth int) error {
	if depth > 64 {
		return s.errorf("nested too deep")
	}
	switch s.peek() {
	case '"':
		_, err := s.str()
		return err
	case '[':
		return s.array(func(int) error { return s.skip(depth + 1) })
	case '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	}
	if len(s.token()) == 0 {
		return s.errorf("want a value")
	}
	return nil
}

var errNoValues = errors.New(`no "values" or "timestamps"`)

// scanJSONLine parses one line into a series of b; on an error b is as
// before. The line's top-level keys are matched as encoding/json matches
// them (case folded); "values" and "timestamps" fill the same samples,
// whichever comes first.
func (b *Batch) scanJSONLine(line []byte) error {
	s := &lineScanner{b: line, unesc: b.unesc[:0]}
	defer func() { b.unesc = s.unesc }()
	clear(b.lbls)
	b.lbls = b.lbls[:0]
	p0 := len(b.points)
	nv, nt := -1, -1 // values and timestamps read; -1: no such key
	err := b.scanObject(s, p0, &nv, &nt)
	if err == nil {
		if s.ws(); s.i != len(s.b) {
			err = errors.New("more than one JSON object on the line")
		}
	}
	switch {
	case err != nil:
	case nv < 0 && nt < 0:
		err = errNoValues
	case max(nv, 0) != max(nt, 0):
		err = fmt.Errorf(`"values" has %d elements and "timestamps" %d: they must be as many`, max(nv, 0), max(nt, 0))
	}
	if err != nil {
		b.points = b.points[:p0]
		return err
	}
	return b.endLine(p0)
}

// scanObject reads a line's object: labels into b.lbls, samples into
// b.points[p0:].
func (b *Batch) scanObject(s *lineScanner, p0 int, nv, nt *int) error {
	return s.object(func(key []byte) (err error) {
		switch {
		case bytes.EqualFold(key, []byte("metric")):
			return b.scanMetric(s)
		case bytes.EqualFold(key, []byte("values")):
			if *nv >= 0 {
				return errors.New(`"values" twice`)
			}
			*nv, err = b.scanValues(s, p0)
			return err
		case bytes.EqualFold(key, []byte("timestamps")):
			if *nt >= 0 {
				return errors.New(`"timestamps" twice`)
			}
			*nt, err = b.scanTimestamps(s, p0)
			return err
		}
		return s.skip(0)
	})
}

// scanMetric reads the "metric" object's labels into b.lbls.
func (b *Batch) scanMetric(s *lineScanner) error {
	if len(b.lbls) > 0 {
		return errors.New(`"metric" twice`)
	}
	return s.object(func(name []byte) error {
		value, err := s.strBytes()
		if err != nil {
			return err
		}
		b.lbls = append(b.lbls, rawLabel{name: name, value: value})
		return nil
	})
}

// scanValues reads the "values" array into the samples from p0 on and
// returns how many it read.
func (b *Batch) scanValues(s *lineScanner, p0 int) (int, error) {
	return s.elements(func(i int) error {
		v, err := s.value()
		if err != nil {
			return fmt.Errorf("value %d: %w", i, err)
		}
		b.point(p0 + i).V = v
		return nil
	})
}

// scanTimestamps reads the "timestamps" array into the samples from p0 on
// and returns how many it read.
func (b *Batch) scanTimestamps(s *lineScanner, p0 int) (int, error) {
	return s.elements(func(i int) error {
		tok := s.token()
		t, ok := digits(tok)
		var err error
		if !ok || t > MaxTimestamp {
			t, err = parseTimestamp(json.Number(tok)) // other forms, and the range error
		}
		if err != nil {
			return fmt.Errorf("timestamp %d: %w", i, err)
		}
		b.point(p0 + i).T = t
		return nil
	})
}

// point returns sample at of b.points, adding it when it is the next:
// "values" and "timestamps" fill the same samples, whichever comes first.
func (b *Batch) point(at int) *mapping.Point {
	if at == len(b.points) {
		b.points = append(b.points, mapping.Point{})
	}
	return &b.points[at]
}

// strBytes reads a JSON string: the line's bytes when it has no escapes,
// else its unescaped bytes appended to unesc.
func (s *lineScanner) strBytes() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1 : s.i-1], nil
		case c == '\\':
			s.i = start - 1
			str, err := s.str()
			if err != nil {
				return nil, err
			}
			at := len(s.unesc)
			s.unesc = append(s.unesc, str...)
			return s.unesc[at:len(s.unesc):len(s.unesc)], nil
		case c < 0x20:
			return nil, s.errorf("control character %#x in a string", c)
		}
		s.i++
	}
	return nil, s.errorf("unterminated string")
}

// value reads a sample value: a number, a special float bare or as a
// string, or null (a staleness marker).
func (s *lineScanner) value() (float64, error) {
	if s.peek() == '"' {
		str, err := s.str()
		if err != nil {
			return 0, err
		}
		if v, ok := special(str); ok {
			return v, nil
		}
		return 0, fmt.Errorf("%q is not a number (want a JSON number, \"NaN\", \"Inf\", \"-Inf\" or null)", str)
	}
	tok := s.token()
	if v, ok := decimal(tok); ok {
		return v, nil
	}
	if string(tok) == "null" {
		return math.Float64frombits(value.StaleNaN), nil
	}
	if v, ok := special(string(tok)); ok {
		return v, nil
	}
	if len(tok) == 0 || !(tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9') {
		return 0, fmt.Errorf("%q is not a number", tok)
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", tok)
	}
	return v, nil
}

// digits reads a whole number of at most 18 decimal digits (no sign): the
// timestamps' usual form, read without allocating.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// special reads the special floats' names.
func special(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), true
	case "-inf", "-infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// decimal reads the usual form of a sample value, -?[0-9]+(\.[0-9]+)?,
// when its digits make an integer of at most 2^53 and it has at most 22
// fractional digits: that integer and the power of ten are exact
// float64s, so their quotient, rounded once, is the correctly rounded
// value strconv.ParseFloat gives (Clinger's fast path). Other forms
// report false.
func decimal(tok []byte) (float64, bool) {
	i, neg := 0, false
	if len(tok) > 0 && tok[0] == '-' {
		i, neg = 1, true
	}
	var m uint64
	n, frac := 0, -1 // digits; fractional digits, -1 before the point
	for ; i < len(tok); i++ {
		switch c := tok[i]; {
		case c >= '0' && c <= '9':
			if n == 17 {
				return 0, false // more than 2^53 can be, or close
			}
			m = m*10 + uint64(c-'0')
			n++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0 && n > 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if n == 0 || frac == 0 || m > 1<<53 || frac > 22 {
		return 0, false
	}
	f := float64(m)
	if frac > 0 {
		f /= pow10(frac)
	}
	if neg {
		f = -f
	}
	return f, true
}

// pow10 returns 10^n for n in 1..22, the powers of ten a float64 holds
// exactly.
func pow10(n int) float64 {
	f := 1.0
	for ; n >= 8; n -= 8 {
		f *= 1e8
	}
	switch n {
	case 1:
		f *= 1e1
	case 2:
		f *= 1e2
	case 3:
		f *= 1e3
	case 4:
		f *= 1e4
	case 5:
		f *= 1e5
	case 6:
		f *= 1e6
	case 7:
		f *= 1e7
	}
	return f
}
