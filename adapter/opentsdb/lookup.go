package opentsdb

import (
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/promhbase/promhbase/query/tsd"
)

// LookupPath is the path of /api/search/lookup.
const LookupPath = "/api/search/lookup"

// defaultLookupLimit is SearchQuery's limit when none is given.
const defaultLookupLimit = 25

// LookupRequest is a parsed /api/search/lookup: the query, and what the
// answer repeats of it as the TSD's SearchQuery serializes itself
// (Metric nil and Tags nil are left out; a Tag's nil Value is null).
type LookupRequest struct {
	Query  tsd.LookupQuery
	Metric *string
	Tags   []LookupTag
	Limit  int
}

// LookupTag is a tag pair as sent: a nil Key or Value is JSON's null
// (a "=v" or "k=" of GET's m, or null in POST's body).
type LookupTag struct{ Key, Value *string }

// ParseLookup reads /api/search/lookup as SearchRpc does: a body (any
// method with one) is POST's JSON SearchQuery; without one, the query
// string's m (required; Tags.parseWithMetric) and limit, in meta mode.
// Either needs a metric or a tag ("Missing metric and tags"). A GET's
// method_override names its method (HttpQuery.getAPIMethod); methods
// other than GET and POST get 400 "Unsupported method".
func ParseLookup(method string, query url.Values, body []byte) (LookupRequest, *HTTPError) {
	method, herr := apiMethod(method, query)
	if herr != nil {
		return LookupRequest{}, herr
	}
	if method != http.MethodGet && method != http.MethodPost {
		return LookupRequest{}, badRequest("Unsupported method: "+method, "")
	}
	var r LookupRequest
	if len(body) > 0 {
		r, herr = parseLookupBody(body)
	} else {
		r, herr = parseLookupQuery(query)
	}
	if herr != nil {
		return LookupRequest{}, herr
	}
	if r.Metric == nil && len(r.Tags) == 0 {
		return LookupRequest{}, badRequest("Missing metric and tags. Please supply at least one value.", "")
	}
	if r.Metric != nil {
		r.Query.Metric = *r.Metric
	}
	for _, t := range r.Tags {
		var lt tsd.LookupTag
		if t.Key != nil {
			lt.Key = *t.Key
		}
		if t.Value != nil {
			lt.Value = *t.Value
		}
		r.Query.Tags = append(r.Query.Tags, lt)
	}
	r.Query.Limit = max(r.Limit, 0)
	return r, nil
}

// apiMethod is HttpQuery.getAPIMethod: a GET's method_override (get,
// post, put or delete, in any case) is its method.
func apiMethod(method string, query url.Values) (string, *HTTPError) {
	if method != http.MethodGet {
		return method, nil
	}
	if _, ok := query["method_override"]; !ok {
		return method, nil
	}
	switch o := strings.ToLower(lastParam(query, "method_override")); o {
	case "":
		return "", &HTTPError{Code: http.StatusMethodNotAllowed, Message: "Missing method override value"}
	case "get", "post", "put", "delete":
		return strings.ToUpper(o), nil
	}
	return "", &HTTPError{Code: http.StatusMethodNotAllowed, Message: "Unknown or unsupported method override value"}
}

// parseLookupQuery reads GET's m and limit (SearchRpc.parseQueryString).
func parseLookupQuery(query url.Values) (LookupRequest, *HTTPError) {
	m := lastParam(query, "m")
	if m == "" {
		return LookupRequest{}, badRequest("Missing parameter <code>m</code>", "")
	}
	r := LookupRequest{Tags: []LookupTag{}, Limit: defaultLookupLimit, Query: tsd.LookupQuery{UseMeta: true}}
	metric, tags, err := parseWithMetricPairs(m)
	if err != nil {
		return LookupRequest{}, badRequest("Unable to parse query", err.Error())
	}
	r.Metric, r.Tags = metric, append(r.Tags, tags...)
	if _, ok := query["limit"]; ok {
		n, ok := javaParseInt(lastParam(query, "limit"))
		if !ok {
			return LookupRequest{}, badRequest("Unable to convert 'limit' to a valid number", "")
		}
		r.Limit = n
	}
	return r, nil
}

// parseWithMetricPairs is Tags.parseWithMetric into pairs: metric{k=v,
// =v, k=,...}, the metric nil when the string starts with '{'.
func parseWithMetricPairs(m string) (*string, []LookupTag, error) {
	curly := strings.IndexByte(m, '{')
	switch {
	case curly < 0:
		return &m, nil, nil
	case m[len(m)-1] != '}':
		return nil, nil, messageError("Missing '}' at the end of: " + m)
	case curly == len(m)-2:
		if m[0] == '{' {
			return nil, nil, messageError("Missing metric and tags: " + m)
		}
		metric := m[:len(m)-2]
		return &metric, nil, nil
	}
	var tags []LookupTag
	for _, tag := range strings.Split(m[curly+1:len(m)-1], ",") {
		t, err := parsePair(tag)
		if err != nil {
			return nil, nil, messageError("When parsing tag '" + tag + "': " + err.Error())
		}
		tags = append(tags, t)
	}
	if m[0] == '{' {
		return nil, tags, nil
	}
	metric := m[:curly]
	return &metric, tags, nil
}

// parsePair is Tags.parse of one pair into a Pair: "=v" a pair without
// a key, "k=" one without a value.
func parsePair(tag string) (LookupTag, error) {
	switch {
	case len(tag) < 2:
		return LookupTag{}, messageError("Missing tag pair")
	case tag[0] == '=':
		v := tag[1:]
		return LookupTag{Value: &v}, nil
	case tag[len(tag)-1] == '=':
		k := tag[:len(tag)-1]
		return LookupTag{Key: &k}, nil
	}
	k, v, err := splitTag(tag)
	if err != nil {
		return LookupTag{}, err
	}
	return LookupTag{Key: &k, Value: &v}, nil
}

// parseLookupBody binds a POST body to a SearchQuery as Jackson does:
// metric ("*" when absent), tags (an array of {key, value}), limit (25
// when absent), useMeta (true when absent); other members ignored.
func parseLookupBody(body []byte) (LookupRequest, *HTTPError) {
	star := "*"
	r := LookupRequest{Metric: &star, Limit: defaultLookupLimit, Query: tsd.LookupQuery{UseMeta: true}}
	p := &jsonParser{b: body}
	if c := p.ws(); c != '{' {
		return LookupRequest{}, lookupJSONError(p.errorf("cannot deserialize a SearchQuery from '%c'", c))
	}
	err := p.members(func(name string) error {
		switch name {
		case "metric":
			v, err := p.scalar(name)
			r.Metric = v
			return err
		case "tags":
			return p.lookupTags(&r.Tags)
		case "limit":
			v, err := p.scalar(name)
			if err != nil || v == nil {
				return err
			}
			n, ok := javaParseInt(*v)
			if !ok {
				return p.errorf("cannot deserialize an int from %q", *v)
			}
			r.Limit = n
			return nil
		case "useMeta":
			v, err := p.scalar(name)
			if err != nil || v == nil {
				return err
			}
			r.Query.UseMeta = *v == "true"
			return nil
		}
		return p.skip()
	})
	if err != nil {
		return LookupRequest{}, lookupJSONError(err)
	}
	return r, nil
}

// lookupTags reads tags: null, or an array of {key, value} objects.
func (p *jsonParser) lookupTags(tags *[]LookupTag) error {
	if p.ws() == 'n' {
		*tags = nil
		return p.literal("null")
	}
	*tags = []LookupTag{}
	return p.elements(func() error {
		var t LookupTag
		err := p.members(func(name string) error {
			switch name {
			case "key":
				v, err := p.scalar(name)
				t.Key = v
				return err
			case "value":
				v, err := p.scalar(name)
				t.Value = v
				return err
			}
			return p.skip()
		})
		*tags = append(*tags, t)
		return err
	})
}

// lookupJSONError is a body Jackson cannot bind: the TSD lets the
// exception through (HttpJsonSerializer.parseSearchQueryV1), a 500.
func lookupJSONError(err error) *HTTPError {
	return &HTTPError{Code: http.StatusInternalServerError, Message: "Unable to parse the given JSON", Details: err.Error()}
}

// LookupBody is the answer to r: its SearchQuery as Jackson writes it
// (type, metric, tags, limit, time, results, startIndex, totalResults;
// the metric and the tags left out when null), each result's members in
// the order of the TSD's ConcurrentHashMap (tsuid, metric, tags) and its
// tags in the order of a HashMap sized for them. ms is the time taken.
func LookupBody(r LookupRequest, found []tsd.LookupSeries, ms int64) []byte {
	b := append([]byte(nil), `{"type":"LOOKUP"`...)
	if r.Metric != nil {
		b = appendJSONString(append(b, `,"metric":`...), *r.Metric)
	}
	if r.Tags != nil {
		b = append(b, `,"tags":[`...)
		for i, t := range r.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNullable(append(b, `{"key":`...), t.Key)
			b = append(appendNullable(append(b, `,"value":`...), t.Value), '}')
		}
		b = append(b, ']')
	}
	b = strconv.AppendInt(append(b, `,"limit":`...), int64(r.Limit), 10)
	b = append(strconv.AppendInt(append(b, `,"time":`...), ms, 10), ".0"...)
	b = append(b, `,"results":[`...)
	for i, s := range found {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"tsuid":"`...)
		b = append(b, strings.ToUpper(hex.EncodeToString(s.TSUID))...)
		b = appendJSONString(append(b, `","metric":`...), s.Metric)
		keys := make([]string, len(s.Tags))
		for j, t := range s.Tags {
			keys[j] = t.Key
		}
		b = append(b, `,"tags":{`...)
		for n, j := range hashMapOrderCap(keys, len(keys)) {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(appendJSONString(b, keys[j]), ':'), s.Tags[j].Value)
		}
		b = append(b, "}}"...)
	}
	b = append(b, `],"startIndex":0,"totalResults":`...)
	b = strconv.AppendInt(b, int64(len(found)), 10)
	return append(b, '}')
}

// appendNullable appends s as a JSON string, or null.
func appendNullable(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *s)
}
