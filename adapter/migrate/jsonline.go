// Package migrate reads and writes the formats that migration tools
// speak: VictoriaMetrics's JSON lines (its /api/v1/import and
// /api/v1/export, which vmctl writes and reads) and Prometheus's text
// exposition with timestamps (/api/v1/import/prometheus). Parsers turn a
// whole request body into remote-write series, checking every line before
// any is written, and name the line of the first error.
//
// A JSON-lines body may also be parsed while it arrives (JSONLinesStream).
// A Batch holds its series keys (in the remote-write encoding of package
// wire) and samples in shared arrays, and goes to ingest.Writer.WriteSeries
// as it is. Samples written back as JSON lines keep every float's bits.
// chunks.go decodes the TSDB XOR chunks of remote read's
// ChunkedReadResponse into a Batch.
package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// ErrMalformed is wrapped by every parse error (a *LineError).
var ErrMalformed = errors.New("malformed import")

// LineError is a parse error of one line (1-based).
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// MinTimestamp and MaxTimestamp bound the sample times an import takes
// (Unix ms): an OpenTSDB row key holds the hour as u32 Unix seconds.
const (
	MinTimestamp = int64(0)
	MaxTimestamp = int64(math.MaxUint32)*1000 + 999
)

// The JSON lines format, a series a line:
//
//	{"metric":{"__name__":"up","job":"node"},"values":[1,0.5],"timestamps":[1700000000000,1700000015000]}
//
// timestamps in Unix ms; a value is a JSON number, a special float (NaN,
// Inf, +Inf, -Inf, Infinity, -Infinity) as a string or bare (as vmctl
// writes it, outside JSON), or null (a staleness marker: VictoriaMetrics
// skips it). scan.go reads it.

// ParseJSONLines parses body, JSON lines (blank lines skipped), into
// series, appending to dst. It fails on the first bad line, naming it.
// Batch.ParseJSONLines is the same without a value per series.
func ParseJSONLines(dst []prompb.TimeSeries, body []byte) ([]prompb.TimeSeries, error) {
	var b Batch
	if err := b.ParseJSONLines(body); err != nil {
		return dst, err
	}
	for i := range b.Len() {
		ts, err := b.TimeSeries(i)
		if err != nil {
			return dst, err
		}
		dst = append(dst, ts)
	}
	return dst, nil
}

// ParseJSONLines parses body, JSON lines (blank lines skipped), appending
// its series to b. It fails on the first bad line, naming it; the lines
// before it stay in b.
func (b *Batch) ParseJSONLines(body []byte) error {
	_, err := b.parseJSONLines(body, 1)
	return err
}

// JSONLinesStream parses a body of JSON lines into a Batch while it
// arrives, as ParseJSONLines parses it whole, without holding the whole
// body: Feed parses the complete lines at the start of what it is given
// and says how many bytes they took, End parses the rest. Errors name
// the line, counted from the body's start, as ParseJSONLines does.
type JSONLinesStream struct {
	B *Batch
	// line is the number of the next line; scanned is how many bytes at
	// the start of what Feed is given next are known to hold no newline.
	line, scanned int
}

// Feed parses the complete lines at the start of buf: what is left of
// the body (what earlier Feeds did not take, then what arrived since).
// It returns the bytes it took, those lines'; the next Feed or End is
// given what follows them.
func (s *JSONLinesStream) Feed(buf []byte) (int, error) {
	from := min(s.scanned, len(buf))
	end := bytes.LastIndexByte(buf[from:], '\n')
	if end < 0 {
		s.scanned = len(buf)
		return 0, nil
	}
	took := from + end + 1
	if err := s.parse(buf[:took]); err != nil {
		return 0, err
	}
	s.scanned = len(buf) - took // the tail after the last newline
	return took, nil
}

// End parses rest, the body's end that no Feed took.
func (s *JSONLinesStream) End(rest []byte) error { return s.parse(rest) }

func (s *JSONLinesStream) parse(lines []byte) error {
	if s.line == 0 {
		s.line = 1
	}
	next, err := s.B.parseJSONLines(lines, s.line)
	s.line = next
	return err
}

// parseJSONLines is ParseJSONLines of lines numbered from first; it
// returns the number of the line after body's (a body ending in a
// newline ends its last line).
func (b *Batch) parseJSONLines(body []byte, first int) (int, error) {
	n := first
	for ; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := b.scanJSONLine(line); err != nil {
			return n, &LineError{Line: n, Err: err}
		}
	}
	return n, nil
}

// parseTimestamp reads a timestamp in Unix ms (an integer, or a number
// with a zero fraction) within [MinTimestamp, MaxTimestamp].
func parseTimestamp(n json.Number) (int64, error) {
	t, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(n), 64)
		if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f > math.MaxInt64 {
			return 0, fmt.Errorf("%q is not a whole number of milliseconds", string(n))
		}
		t = int64(f)
	}
	if t < MinTimestamp || t > MaxTimestamp {
		return 0, fmt.Errorf("%d ms is out of range [%d, %d] (1970 to 2106)", t, MinTimestamp, MaxTimestamp)
	}
	return t, nil
}

// AppendJSONLine appends the JSON line of a series (labels in their
// order, samples in time order) to dst: values as the shortest numbers
// that read back to the same float64, NaN and infinities as strings, and
// staleness markers as null, so that ParseJSONLines reads back every bit
// but other NaN payloads.
func AppendJSONLine(dst []byte, lbls labels.Labels, ts []int64, vs []float64) []byte {
	dst = append(dst, `{"metric":{`...)
	first := true
	lbls.Range(func(l labels.Label) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, l.Name)
		dst = append(dst, ':')
		dst = appendJSONString(dst, l.Value)
	})
	dst = append(dst, `},"values":[`...)
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch {
		case value.IsStaleNaN(v):
			dst = append(dst, "null"...)
		case math.IsNaN(v):
			dst = append(dst, `"NaN"`...)
		case math.IsInf(v, 1):
			dst = append(dst, `"Infinity"`...)
		case math.IsInf(v, -1):
			dst = append(dst, `"-Infinity"`...)
		default:
			dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		}
	}
	dst = append(dst, `],"timestamps":[`...)
	for i, t := range ts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, t, 10)
	}
	return append(dst, "]}\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil { // only for invalid UTF-8, which Marshal replaces anyway
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, b...)
}
