package opentsdb

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/promhbase/promhbase/mapping"
)

// numberError is a java.lang.NumberFormatException's message.
type numberError string

func (e numberError) Error() string { return string(e) }

// parseLong parses s as OpenTSDB's Tags.parseLong does, with its
// messages: an optional sign, then decimal digits only, within int64.
func parseLong(s string) (int64, error) {
	n := utf8.RuneCountInString(s) // Java counts chars; names of digits are ASCII
	if len(s) == 0 {
		return 0, numberError("Empty string")
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		if len(s) == 1 {
			return 0, numberError("Just a sign, no value: " + s)
		}
		if n > 20 {
			return 0, numberError("Value too long: " + s)
		}
		i = 1
	} else if n > 19 {
		return 0, numberError("Value too long: " + s)
	}
	var v int64 // negated, as Tags.parseLong keeps it, to reach MinInt64
	for j, r := range s[i:] {
		if r < '0' || r > '9' {
			return 0, numberError("Invalid character '" + string(r) + "' in " + s)
		}
		if j > 0 {
			v *= 10
		}
		v -= int64(r - '0')
	}
	switch {
	case v > 0:
		return 0, numberError("Overflow in " + s)
	case s[0] == '-':
		return v, nil
	case v == math.MinInt64:
		return 0, numberError("Overflow in " + s)
	}
	return -v, nil
}

// parseDouble parses s as java.lang.Double.parseDouble does: surrounding
// characters up to ' ' trimmed; an optional sign; NaN, Infinity, a
// decimal (digits with at most one '.', an optional exponent) or a
// hexadecimal with a binary exponent; an optional f, F, d or D suffix.
// Too large a magnitude is ±Inf, as in Java.
func parseDouble(s string) (float64, error) {
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if t == "" {
		return 0, numberError("empty String")
	}
	bad := numberError(`For input string: "` + t + `"`)
	body, neg := t, false
	if body[0] == '+' || body[0] == '-' {
		neg, body = body[0] == '-', body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	if !javaNumber(body) {
		if multiplePoints(body) {
			return 0, numberError("multiple points")
		}
		return 0, bad
	}
	if c := body[len(body)-1]; c == 'f' || c == 'F' || c == 'd' || c == 'D' {
		t = t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, bad
	}
	return v, nil // ±Inf on ErrRange, as Java
}

// multiplePoints reports whether s (unsigned, not hexadecimal) has two
// '.' in its leading run of digits and points, where Java's parser stops
// with "multiple points".
func multiplePoints(s string) bool {
	if len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return false
	}
	points := 0
	for i := 0; i < len(s) && (isDigit(s[i]) || s[i] == '.'); i++ {
		if s[i] == '.' {
			if points++; points == 2 {
				return true
			}
		}
	}
	return false
}

// javaNumber reports whether s (unsigned) is a decimal or hexadecimal
// floating-point literal as Double.parseDouble takes one.
func javaNumber(s string) bool {
	if c := s[len(s)-1]; c == 'f' || c == 'F' || c == 'd' || c == 'D' {
		s = s[:len(s)-1]
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		mant, exp, ok := strings.Cut(strings.ToLower(s[2:]), "p")
		return ok && digitsWithPoint(mant, isHex) && exponent(exp)
	}
	mant, exp, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp, hasExp = s[:i], s[i+1:], true
	}
	return digitsWithPoint(mant, isDigit) && (!hasExp || exponent(exp))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// digitsWithPoint: at least one digit, at most one '.'.
func digitsWithPoint(s string, digit func(byte) bool) bool {
	digits, points := 0, 0
	for i := range len(s) {
		switch {
		case s[i] == '.':
			points++
		case digit(s[i]):
			digits++
		default:
			return false
		}
	}
	return digits > 0 && points <= 1
}

// exponent: an optional sign, then decimal digits.
func exponent(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// looksLikeInteger is Tags.looksLikeInteger: no '.', 'e' or 'E'.
func looksLikeInteger(v string) bool { return !strings.ContainsAny(v, ".eE") }

// encoded is a value's cell bytes as a TSD picks them.
type encoded struct {
	flags byte
	bits  uint64
	float bool    // stored as a float (addPoint(float) or (double))
	f     float64 // the float's value, for the NaN and infinity check
}

// encodeValue picks the encoding of a put's value text as TSD 2.4.1's
// put does: without '.', 'e' or 'E' an integer (Tags.parseLong) on the
// fewest of 1, 2, 4 and 8 bytes; else a float, on 4 bytes when float32
// holds the double exactly (Tags.fitsInFloat), else on 8. A parse error is
// a numberError.
func encodeValue(v string) (encoded, error) {
	if looksLikeInteger(v) {
		i, err := parseLong(v)
		if err != nil {
			return encoded{}, err
		}
		switch {
		case i == int64(int8(i)):
			return encoded{flags: mapping.FlagsInt8, bits: uint64(uint8(i))}, nil
		case i == int64(int16(i)):
			return encoded{flags: mapping.FlagsInt16, bits: uint64(uint16(i))}, nil
		case i == int64(int32(i)):
			return encoded{flags: mapping.FlagsInt32, bits: uint64(uint32(i))}, nil
		}
		return encoded{flags: mapping.FlagsInt64, bits: uint64(i)}, nil
	}
	d, err := parseDouble(v)
	if err != nil {
		return encoded{}, err
	}
	if f := float32(d); float64(f) == d || math.IsInf(d, 0) {
		return encoded{flags: mapping.FlagsFloat32, bits: uint64(math.Float32bits(f)), float: true, f: d}, nil
	}
	return encoded{flags: mapping.FlagsFloat64, bits: math.Float64bits(d), float: true, f: d}, nil
}

// valueBytes are the value's cell bytes, for the TSD's messages that
// print them.
func (e encoded) valueBytes() []byte {
	n := mapping.ValueLen(e.flags)
	b := make([]byte, n)
	for i := range n {
		b[n-1-i] = byte(e.bits >> (8 * i))
	}
	return b
}

// javaFloatString is Float.toString or Double.toString of a value a
// message prints: only the non-finite ones are printed (NaN, Infinity,
// -Infinity).
func javaFloatString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
