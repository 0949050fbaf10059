package opentsdb

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of the values a put body may skip (an
// unknown field's), so that no body can exhaust the stack.
const maxJSONDepth = 512

// jsonParser reads a put body: RFC 8259 JSON as Jackson takes it (no
// comments, no leading zeros or '+', strings of valid UTF-8 without raw
// control characters). The strings it returns are interned for the body:
// a metric, tag name or value sent many times is one string.
type jsonParser struct {
	b      []byte
	i      int
	intern map[string]string
	depth  int
	tagBuf []Tag // the tags of the points read so far
}

var errJSONEnd = errors.New("unexpected end of input")

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// ws skips white space and returns the next byte (0 at the end).
func (p *jsonParser) ws() byte {
	for p.i < len(p.b) {
		switch c := p.b[p.i]; c {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return c
		}
	}
	return 0
}

// expect consumes c after white space.
func (p *jsonParser) expect(c byte) error {
	if p.ws() != c {
		if p.i >= len(p.b) {
			return errJSONEnd
		}
		return p.errorf("expected '%c', found '%c'", c, p.b[p.i])
	}
	p.i++
	return nil
}

// literal consumes the word w (true, false, null) at p.i.
func (p *jsonParser) literal(w string) error {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return p.errorf("unrecognized token")
	}
	p.i += len(w)
	return nil
}

// str reads a string (p.i at its opening quote).
func (p *jsonParser) str() (string, error) {
	p.i++ // "
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			raw := p.b[start:p.i]
			p.i++
			if !utf8.Valid(raw) {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			return p.keep(raw), nil
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", p.errorf("illegal unquoted character (code %d) in a string", c)
		}
		p.i++
	}
	return "", errJSONEnd
}

// escaped reads the rest of a string that has an escape (p.i at the
// first backslash; the string began at start).
func (p *jsonParser) escaped(start int) (string, error) {
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			return p.keep(buf), nil
		case c < 0x20:
			return "", p.errorf("illegal unquoted character (code %d) in a string", c)
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", errJSONEnd
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					p.i += 2
					if r2, err = p.hex4(); err != nil {
						return "", err
					}
				}
				r = utf16.DecodeRune(r, r2) // U+FFFD when not a pair
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.errorf("unrecognized character escape '%c'", e)
		}
	}
	return "", errJSONEnd
}

// hex4 reads the four hex digits of a \u escape.
func (p *jsonParser) hex4() (rune, error) {
	if len(p.b)-p.i < 4 {
		return 0, errJSONEnd
	}
	v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("bad \\u escape")
	}
	p.i += 4
	return rune(v), nil
}

// keep returns b as a string, the same string for the same bytes within
// the body.
func (p *jsonParser) keep(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if p.intern == nil {
		p.intern = map[string]string{}
	}
	p.intern[s] = s
	return s
}

// number reads a number's text: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) number() (string, error) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && isDigit(p.b[p.i]) {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
		if p.i < len(p.b) && isDigit(p.b[p.i]) {
			return "", p.errorf("leading zeroes not allowed")
		}
	} else if digits() == 0 {
		return "", p.errorf("expected a digit")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", p.errorf("expected a digit after the decimal point")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", p.errorf("expected a digit in the exponent")
		}
	}
	return p.keep(p.b[start:p.i]), nil
}

// scalar reads a String field's value: a string, a number's text, true
// or false; null is (nil). An object or an array is an error.
func (p *jsonParser) scalar(field string) (*string, error) {
	var s string
	var err error
	switch c := p.ws(); {
	case c == '"':
		s, err = p.str()
	case c == '-' || isDigit(c):
		s, err = p.number()
	case c == 't':
		s, err = "true", p.literal("true")
	case c == 'f':
		s, err = "false", p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == 0:
		return nil, errJSONEnd
	default:
		return nil, p.errorf("cannot deserialize a String (field %q) from '%c'", field, c)
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// skip reads any value and drops it.
func (p *jsonParser) skip() error {
	switch c := p.ws(); {
	case c == '"':
		_, err := p.str()
		return err
	case c == '-' || isDigit(c):
		_, err := p.number()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '{', c == '[':
		if p.depth++; p.depth > maxJSONDepth {
			return p.errorf("nesting deeper than %d", maxJSONDepth)
		}
		defer func() { p.depth-- }()
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		p.i++
		if p.ws() == close {
			p.i++
			return nil
		}
		for {
			if c == '{' {
				if p.ws() != '"' {
					return p.errorf("expected a field name")
				}
				if _, err := p.str(); err != nil {
					return err
				}
				if err := p.expect(':'); err != nil {
					return err
				}
			}
			if err := p.skip(); err != nil {
				return err
			}
			switch p.ws() {
			case ',':
				p.i++
			case close:
				p.i++
				return nil
			case 0:
				return errJSONEnd
			default:
				return p.errorf("expected ',' or '%c'", close)
			}
		}
	case c == 0:
		return errJSONEnd
	}
	return p.errorf("unexpected character '%c'", p.b[p.i])
}

// elements reads an array (p.i at '['), calling fn at each element,
// which reads it.
func (p *jsonParser) elements(fn func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if p.ws() == ']' {
		p.i++
		return nil
	}
	for {
		if p.ws() == 0 {
			return errJSONEnd
		}
		if err := fn(); err != nil {
			return err
		}
		switch p.ws() {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		case 0:
			return errJSONEnd
		default:
			return p.errorf("expected ',' or ']'")
		}
	}
}

// members reads an object's members (p.i at '{'), calling fn with each
// name; fn reads the value.
func (p *jsonParser) members(fn func(name string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.ws() == '}' {
		p.i++
		return nil
	}
	for {
		if p.ws() != '"' {
			if p.i >= len(p.b) {
				return errJSONEnd
			}
			return p.errorf("expected a field name")
		}
		name, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := fn(name); err != nil {
			return err
		}
		switch p.ws() {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		case 0:
			return errJSONEnd
		default:
			return p.errorf("expected ',' or '}'")
		}
	}
}

// timestamp reads the long timestamp: an integer, a float truncated
// toward zero, a string of an integer ("" and null are 0).
func (p *jsonParser) timestamp() (int64, error) {
	switch c := p.ws(); {
	case c == 'n':
		return 0, p.literal("null")
	case c == '"':
		s, err := p.str()
		if err != nil || s == "" {
			return 0, err
		}
		i, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil {
			return 0, p.errorf("cannot deserialize value of type `long` from String %q: not a valid Long value", s)
		}
		return i, nil
	case c == '-' || isDigit(c):
		s, err := p.number()
		if err != nil {
			return 0, err
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || f >= 0x1p63 || f < -0x1p63 {
			return 0, p.errorf("numeric value (%s) out of range of long", s)
		}
		return int64(f), nil
	case c == 0:
		return 0, errJSONEnd
	}
	return 0, p.errorf("cannot deserialize value of type `long` from '%c'", p.b[p.i])
}
