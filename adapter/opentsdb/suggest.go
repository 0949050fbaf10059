package opentsdb

import (
	"bytes"
	"net/http"
	"net/url"
	"unicode"
)

// SuggestPath is the path of /api/suggest.
const SuggestPath = "/api/suggest"

// Suggest is one /api/suggest question: the names of a UID kind
// ("metrics", "tagk" or "tagv") whose forward rows in the UID table lie
// in [Start, Stop), in row order, at most Max of them (0: all).
type Suggest struct {
	Kind        string
	Start, Stop []byte
	Max         int
}

// maxSuggestions is UniqueId's MAX_SUGGESTIONS, taken when max is
// absent, unparsable as positive, or not given.
const maxSuggestions = 25

// HTTPError is a request a TSD refuses: its status and the JSON error's
// message and details.
type HTTPError struct {
	Code             int
	Message, Details string
}

func (e *HTTPError) Error() string {
	if e.Details == "" {
		return e.Message
	}
	return e.Message + ": " + e.Details
}

// Body is the error as a TSD's JSON answer.
func (e *HTTPError) Body() []byte { return ErrorBody(e.Code, e.Message, e.Details) }

// badRequest is a 400 with message and details.
func badRequest(message, details string) *HTTPError {
	return &HTTPError{Code: http.StatusBadRequest, Message: message, Details: details}
}

// ParseSuggest reads /api/suggest as SuggestRpc does: GET's query string
// (type required, the last of each parameter taken) or POST's body, a
// JSON object of strings; then max as Java's Integer.parseInt reads it
// (25 unless positive) and the range of rows UniqueId.suggest scans: the
// prefix q in ISO-8859-1 (a character beyond it is '?') to the prefix
// with its last byte one more, or '!' to '~' for an empty q. Other
// methods get 405.
func ParseSuggest(method string, query url.Values, body []byte) (Suggest, *HTTPError) {
	var kind, q, max string
	switch method {
	case http.MethodGet:
		kind = lastParam(query, "type")
		if kind == "" {
			return Suggest{}, badRequest("Missing parameter <code>type</code>", "")
		}
		q, max = lastParam(query, "q"), lastParam(query, "max")
	case http.MethodPost:
		m, err := parseStringMap(body)
		if err != nil {
			return Suggest{}, err
		}
		kind, q, max = m["type"], m["q"], m["max"]
		if kind == "" {
			return Suggest{}, badRequest("Missing 'type' parameter", "")
		}
	default:
		return Suggest{}, &HTTPError{Code: http.StatusMethodNotAllowed, Message: "Method not allowed",
			Details: "The HTTP method [" + method + "] is not permitted for this endpoint"}
	}
	s := Suggest{Kind: kind, Max: maxSuggestions}
	if max != "" {
		n, ok := javaParseInt(max)
		if !ok {
			return Suggest{}, badRequest("Unable to parse 'max' as a number", "")
		}
		if n > 0 {
			s.Max = n
		}
	}
	switch kind {
	case "metrics", "tagk", "tagv":
	default:
		return Suggest{}, badRequest("Invalid 'type' parameter:"+kind, "")
	}
	if s.Max > 32767 {
		// SuggestCB compares (short) size with max: a short never
		// reaches it, and the scan runs to the end.
		s.Max = 0
	}
	s.Start, s.Stop = suggestRange(q)
	return s, nil
}

// lastParam is AbstractHttpQuery.getQueryStringParam: the last value.
func lastParam(q url.Values, name string) string {
	vs := q[name]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// parseStringMap reads a JSON object into a map of strings as Jackson
// binds a HashMap<String, String> (a number or a boolean as its text,
// null as absent, the last of repeated names): parseSuggestV1.
func parseStringMap(body []byte) (map[string]string, *HTTPError) {
	if len(body) == 0 {
		return nil, badRequest("Missing message content", "Supply valid JSON formatted data in the body of your request")
	}
	p := &jsonParser{b: body}
	if c := p.ws(); c != '{' {
		if c == 0 {
			return nil, badRequest("Unable to parse the given JSON", errJSONEnd.Error())
		}
		return nil, badRequest("Unable to parse the given JSON", p.errorf("cannot deserialize a HashMap from '%c'", c).Error())
	}
	m := map[string]string{}
	err := p.members(func(name string) error {
		v, err := p.scalar(name)
		switch {
		case err != nil:
			return err
		case v == nil:
			delete(m, name)
		default:
			m[name] = *v
		}
		return nil
	})
	if err != nil {
		return nil, badRequest("Unable to parse the given JSON", err.Error())
	}
	return m, nil
}

// javaParseInt is Integer.parseInt(s): an optional sign, then decimal
// digits (any Unicode decimal digit, as Character.digit takes), within
// 32 bits.
func javaParseInt(s string) (int, bool) {
	rs := []rune(s)
	neg := false
	if len(rs) > 0 && (rs[0] == '-' || rs[0] == '+') {
		neg = rs[0] == '-'
		rs = rs[1:]
	}
	if len(rs) == 0 {
		return 0, false
	}
	var n int64
	for _, r := range rs {
		d, ok := decimalDigit(r)
		if !ok {
			return 0, false
		}
		n = n*10 + int64(d)
		if n > 1<<31 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 || n < -(1<<31) {
		return 0, false
	}
	return int(n), true
}

// decimalDigit is Character.digit(r, 10) for the decimal digits of
// Unicode (category Nd): runs of blocks of ten, each from its zero.
func decimalDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if !unicode.IsDigit(r) {
		return 0, false
	}
	first := r
	for unicode.IsDigit(first - 1) {
		first--
	}
	return int(r-first) % 10, true
}

// suggestRange is the rows UniqueId.getSuggestScanner scans for prefix q.
func suggestRange(q string) (start, stop []byte) {
	if q == "" {
		return []byte{'!'}, []byte{'~'}
	}
	start = latin1Bytes(q)
	stop = bytes.Clone(start)
	stop[len(stop)-1]++ // a Java byte: 0xFF wraps to 0x00, a range of no rows
	return start, stop
}

// latin1Bytes is String.getBytes(ISO-8859-1): a byte a character, '?'
// for one beyond U+00FF (a surrogate pair is one character).
func latin1Bytes(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xFF {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

// SuggestBody is the answer: the names, each decoded as ISO-8859-1 (as
// UniqueId reads a row key), as a JSON array.
func SuggestBody(names [][]byte) []byte {
	b := []byte{'['}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, latin1(n))
	}
	return append(b, ']')
}
