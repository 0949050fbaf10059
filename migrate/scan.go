package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// lineScanner reads one JSON line of the import format without
// encoding/json's reflection (a few allocations a series, none a sample):
// an object of "metric" (an object of strings), "values" and
// "timestamps" (arrays); other keys are skipped whole. Values may also be
// the bare NaN and Inf tokens vmctl writes.
type lineScanner struct {
	b []byte
	i int
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
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or ']' in an array")
		}
	}
}

// object calls field for each key of a JSON object, positioned at its
// value.
func (s *lineScanner) object(field func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
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
		return s.object(func(string) error { return s.skip(depth + 1) })
	}
	if len(s.token()) == 0 {
		return s.errorf("want a value")
	}
	return nil
}

var errNoValues = errors.New(`no "values" or "timestamps"`)

// scanJSONLine parses one line into a series.
func scanJSONLine(line []byte) (prompb.TimeSeries, error) {
	s := &lineScanner{b: line}
	var ts prompb.TimeSeries
	var values []float64
	var times []int64
	var haveV, haveT bool
	err := s.object(func(key string) error {
		switch strings.ToLower(key) { // as encoding/json matches them
		case "metric":
			return s.object(func(name string) error {
				v, err := s.str()
				ts.Labels = append(ts.Labels, prompb.Label{Name: name, Value: v})
				return err
			})
		case "values":
			haveV = true
			return s.array(func(i int) error {
				v, err := s.value()
				if err != nil {
					return fmt.Errorf("value %d: %w", i, err)
				}
				values = append(values, v)
				return nil
			})
		case "timestamps":
			haveT = true
			return s.array(func(i int) error {
				tok := s.token()
				t, ok := digits(tok)
				var err error
				if !ok {
					t, err = parseTimestamp(json.Number(tok))
				} else if t > MaxTimestamp {
					t, err = parseTimestamp(json.Number(tok)) // the range error
				}
				if err != nil {
					return fmt.Errorf("timestamp %d: %w", i, err)
				}
				times = append(times, t)
				return nil
			})
		}
		return s.skip(0)
	})
	if err != nil {
		return ts, err
	}
	if s.ws(); s.i != len(s.b) {
		return ts, errors.New("more than one JSON object on the line")
	}
	slices.SortFunc(ts.Labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	name := ""
	for i, l := range ts.Labels {
		if i > 0 && ts.Labels[i-1].Name == l.Name {
			return ts, fmt.Errorf(`"metric" has the label %q twice`, l.Name)
		}
		if l.Name == "__name__" {
			name = l.Value
		}
	}
	switch {
	case name == "":
		return ts, errors.New(`"metric" has no "__name__"`)
	case !haveV && !haveT:
		return ts, errNoValues
	case len(values) != len(times):
		return ts, fmt.Errorf(`"values" has %d elements and "timestamps" %d: they must be as many`, len(values), len(times))
	}
	ts.Samples = make([]prompb.Sample, len(values))
	for i := range values {
		ts.Samples[i] = prompb.Sample{Timestamp: times[i], Value: values[i]}
	}
	return ts, nil
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
