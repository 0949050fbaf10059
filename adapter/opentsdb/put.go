package opentsdb

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/promhbase/promhbase/mapping"
)

// DefaultMaxTags is a TSD's tsd.storage.max_tags: the most tags a point
// may have.
const DefaultMaxTags = 8

// maxMs is the largest millisecond timestamp a TSD takes (13 digits).
const maxMs = 9999999999999

// secondMask selects the bits that make a timestamp one in milliseconds
// (Const.SECOND_MASK).
const secondMask = ^int64(0xFFFFFFFF)

// Point is a data point of a put, checked as a TSD checks it.
type Point struct {
	Metric string
	// Tags are the point's tags in the order sent, each key once.
	Tags []Tag
	// Timestamp is as sent (a telnet '.' removed): seconds, or
	// milliseconds when it has bits above the 32nd.
	Timestamp int64
	// Value is the value's text.
	Value string
	// Sample is the cell the TSD would write.
	Sample mapping.EncodedSample
}

// Error kinds: the Java exception a TSD throws, by the prefix its telnet
// error line gives it.
const (
	kindNumber   = "invalid value"    // NumberFormatException
	kindArgument = "illegal argument" // IllegalArgumentException
	kindUnknown  = "unknown metric"   // NoSuchUniqueName
)

// PointError is why a point is refused, in a TSD's words.
type PointError struct {
	kind string
	msg  string
	// detail is what /api/put's details say, when not msg.
	detail string
}

func (e *PointError) Error() string { return e.kind + ": " + e.msg }

// Line is the telnet answer to the put line: "put: <kind>: <message>\n".
func (e *PointError) Line() string { return "put: " + e.Error() + "\n" }

// Detail is the error /api/put's details give the point.
func (e *PointError) Detail() string {
	if e.detail != "" {
		return e.detail
	}
	return e.msg
}

func argumentError(msg string) *PointError { return &PointError{kind: kindArgument, msg: msg} }

func numberErr(err error) *PointError {
	return &PointError{kind: kindNumber, msg: err.Error(), detail: "Unable to parse value to a number"}
}

// UnknownMetric is the error of a point whose metric has no UID while
// metrics are not created on first use (tsd.core.auto_create_metrics).
func UnknownMetric(metric string) *PointError {
	return &PointError{kind: kindUnknown, msg: "No such name for 'metrics': '" + metric + "'", detail: "Unknown metric"}
}

// Refused is the error of a point the store or promhbase's limits
// refused for good, with their reason: an IllegalArgumentException to the
// TSD's clients.
func Refused(reason string) *PointError { return argumentError(reason) }

// ParseTelnetPut parses the words of a telnet put line (the line split on
// single spaces, words[0] the command) as PutDataPointRpc.importDataPoint
// and TSDB.addPoint check it, in their order: the word count, the metric,
// the timestamp, the value's presence, the tags, the value, the
// timestamp's range, the tags' count and characters. It does not look the
// metric up.
func ParseTelnetPut(words []string, maxTags int) (Point, *PointError) {
	if len(words) < 5 {
		return Point{}, argumentError("not enough arguments (need least 4, got " + strconv.Itoa(len(words)-1) + ")")
	}
	p := Point{Metric: words[1]}
	if p.Metric == "" {
		return Point{}, argumentError("empty metric name")
	}
	ts, err := parseLong(strings.ReplaceAll(words[2], ".", ""))
	if err != nil {
		return Point{}, numberErr(err)
	}
	if ts <= 0 {
		return Point{}, argumentError("invalid timestamp: " + strconv.FormatInt(ts, 10))
	}
	p.Timestamp, p.Value = ts, words[3]
	if p.Value == "" {
		return Point{}, argumentError("empty value")
	}
	for _, w := range words[4:] {
		if w == "" {
			continue
		}
		var perr *PointError
		if p.Tags, perr = addTag(p.Tags, w); perr != nil {
			return Point{}, perr
		}
	}
	perr := p.encode(maxTags, false)
	return p, perr
}

// addTag is Tags.parse: tag "k=v" added to tags; the same pair again is
// no error, the same key with another value is.
func addTag(tags []Tag, tag string) ([]Tag, *PointError) {
	k, v, ok := strings.Cut(tag, "=")
	if !ok || k == "" || v == "" || strings.Contains(v, "=") {
		return tags, argumentError("invalid tag: " + tag)
	}
	for _, t := range tags {
		if t.Key == k {
			if t.Value == v {
				return tags, nil
			}
			return tags, argumentError("duplicate tag: " + tag + ", tags=" + tagsString(tags))
		}
	}
	return append(tags, Tag{Key: k, Value: v}), nil
}

// encode picks the value's encoding and checks what TSDB.addPoint checks
// (the value finite, the timestamp's range, the tags); it sets p.Sample.
// An HTTP put stores every float on 8 bytes: PutDataPointRpc passes
// `fitsInFloat ? Float.parseFloat(v) : Double.parseDouble(v)`, which
// Java's conditional promotes to a double either way, to
// addPoint(double); telnet's if/else calls addPoint(float).
func (p *Point) encode(maxTags int, http bool) *PointError {
	enc, err := encodeValue(p.Value)
	if err != nil {
		return numberErr(err)
	}
	if http && enc.float {
		enc.flags, enc.bits = mapping.FlagsFloat64, math.Float64bits(enc.f)
	}
	if enc.float && (enc.f != enc.f || enc.f > maxFinite || enc.f < -maxFinite) {
		return argumentError("value is NaN or Infinite: " + javaFloatString(enc.f) + " for metric=" + p.Metric +
			" timestamp=" + strconv.FormatInt(p.Timestamp, 10))
	}
	ms := p.Timestamp&secondMask != 0
	if p.Timestamp < 0 || ms && p.Timestamp > maxMs {
		prefix := "bad"
		if p.Timestamp < 0 {
			prefix = "negative "
		}
		return argumentError(prefix + " timestamp=" + strconv.FormatInt(p.Timestamp, 10) + " when trying to add value=" +
			javaBytes(enc.valueBytes()) + "/" + strconv.Itoa(int(enc.flags)) + " to metric=" + p.Metric + ", tags=" + tagsString(p.Tags))
	}
	if perr := checkMetricAndTags(p.Metric, p.Tags, maxTags); perr != nil {
		return perr
	}
	p.Sample = mapping.EncodedSample{T: p.Timestamp, Seconds: !ms, Flags: enc.flags, Bits: enc.bits}
	if !ms {
		p.Sample.T = p.Timestamp * 1000
	}
	return nil
}

const maxFinite = 1.7976931348623157e308

// checkMetricAndTags is IncomingDataPoints.checkMetricAndTags: between
// one and maxTags tags, then the metric's and each tag's characters (the
// tags in the HashMap's order).
func checkMetricAndTags(metric string, tags []Tag, maxTags int) *PointError {
	if len(tags) == 0 {
		return argumentError("Need at least one tag (metric=" + metric + ", tags={})")
	}
	if len(tags) > maxTags {
		return argumentError("Too many tags: " + strconv.Itoa(len(tags)) + " maximum allowed: " + strconv.Itoa(maxTags) +
			", tags: " + tagsString(tags))
	}
	if perr := validateString("metric name", metric); perr != nil {
		return perr
	}
	valid := true
	for _, t := range tags {
		if validName(t.Key) != 0 || validName(t.Value) != 0 {
			valid = false
			break
		}
	}
	if valid {
		return nil // else the first bad tag in the HashMap's order is the one named
	}
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = t.Key
	}
	for _, i := range hashMapOrder(keys) {
		t := tags[i]
		if perr := validateString("tag name with value ["+t.Value+"]", t.Key); perr != nil {
			return perr
		}
		if perr := validateString("tag value with key ["+t.Key+"]", t.Value); perr != nil {
			return perr
		}
	}
	return nil
}

// validateString is Tags.validateString: not empty; only ASCII letters
// and digits, '-', '_', '.', '/' and Unicode letters (no
// tsd.core.tag.allow_specialchars).
func validateString(what, s string) *PointError {
	if s == "" {
		return argumentError("Invalid " + what + ": empty string")
	}
	if r := validName(s); r != 0 {
		return argumentError("Invalid " + what + " (\"" + s + "\"): illegal character: " + string(r))
	}
	return nil
}

// validName returns the first character of s that Tags.validateString
// refuses, or 0 (also for the empty string, which it refuses on its own).
func validName(s string) rune {
	if s == "" {
		return utf8.RuneError
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/' {
			continue
		}
		for _, r := range s[i:] {
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/' ||
				r < 0x10000 && unicode.IsLetter(r) {
				continue
			}
			return r
		}
		return 0
	}
	return 0
}
