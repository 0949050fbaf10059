package opentsdb

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/promhbase/promhbase/query/tsd"
)

// ParseQueryGET reads GET /api/query's query string as QueryRpc.parseQuery
// does: start (required), end, flags by their presence, each m= a
// sub-query (agg:[downsample:][rate[{...}]:][explicit_tags:]metric
// [{group-by tags}][{filters}]), repeated ones dropped; then validates it
// as a POST body is.
func ParseQueryGET(params url.Values, now time.Time) (QueryRequest, *HTTPError) {
	b := &queryBody{start: lastParam(params, "start"), end: lastParam(params, "end")}
	if b.start == "" {
		return QueryRequest{}, badRequest("Missing parameter <code>start</code>", "")
	}
	for _, f := range []string{"show_tsuids", "show_query", "show_stats", "show_summary", "tsuid"} {
		if params.Has(f) {
			b.shows = append(b.shows, f)
		}
	}
	for _, m := range params["m"] {
		s, err := parseM(m)
		if err != nil {
			return QueryRequest{}, badRequest(err.Error(), "")
		}
		if !slices.ContainsFunc(b.subs, func(o subBody) bool { return fmt.Sprint(o) == fmt.Sprint(s) }) {
			b.subs = append(b.subs, s)
		}
	}
	if len(b.subs) == 0 && !params.Has("tsuid") {
		return QueryRequest{}, badRequest("Missing sub queries", "")
	}
	q, err := b.validate(now)
	if err != nil {
		var u *unsupportedError
		if errors.As(err, &u) {
			return QueryRequest{}, &HTTPError{Code: 400, Message: u.Error()}
		}
		return QueryRequest{}, badRequest(err.Error(), err.Error())
	}
	return QueryRequest{Query: q, MsResolution: params.Has("ms"), Arrays: params.Has("arrays")}, nil
}

// parseM reads one m= sub-query (parseMTypeSubQuery).
func parseM(m string) (subBody, error) {
	s := subBody{rateOptions: tsd.RateOptions{CounterMax: math.MaxInt64}}
	if m == "" {
		return s, messageError("The query string was empty")
	}
	parts := strings.Split(m, ":")
	if n := len(parts); n < 2 || n > 5 {
		word := "too many"
		if n < 2 {
			word = "not enough"
		}
		return s, messageError("Invalid parameter m=" + m + " (" + word + " :-separated parts)")
	}
	s.aggregator = parts[0]
	var err error
	if s.metric, s.filters, err = parseMetricFilters(parts[len(parts)-1]); err != nil {
		return s, err
	}
	for _, p := range parts[1 : len(parts)-1] {
		lower := strings.ToLower(p)
		switch {
		case strings.HasPrefix(lower, "rate"):
			s.rate = true
			if strings.Contains(p, "{") {
				if s.rateOptions, err = parseRateSpec(p); err != nil {
					return s, err
				}
			}
		case p != "" && isDigit(p[0]):
			s.downsample = p
		case strings.HasPrefix(lower, "explicit_tags"):
			s.explicitTags = true
		case lower == "pre-agg", strings.HasPrefix(lower, "rollup_"), strings.HasPrefix(lower, "percentiles"),
			strings.HasPrefix(lower, "show-histogram-buckets"):
			return s, &unsupportedError{p}
		}
	}
	return s, nil
}

// parseRateSpec is QueryRpc.parseRateOptions of rate{counter[,max[,reset]]}
// (dropcounter: counter dropping resets).
func parseRateSpec(spec string) (tsd.RateOptions, error) {
	o := tsd.RateOptions{CounterMax: math.MaxInt64}
	if len(spec) == 4 {
		return o, nil
	}
	if len(spec) < 6 {
		return o, messageError("Invalid rate options specification: " + spec)
	}
	parts := strings.Split(spec[5:len(spec)-1], ",")
	if len(parts) > 3 {
		return o, messageError(fmt.Sprintf("Incorrect number of values in rate options specification, must be counter[,counter max value,reset value], recieved: %d parts", len(parts))) //nolint:misspell // the TSD's word
	}
	o.Counter, o.DropResets = strings.HasSuffix(parts[0], "counter"), parts[0] == "dropcounter"
	var err error
	if len(parts) >= 2 && parts[1] != "" {
		if o.CounterMax, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
			return o, messageError("Max value of counter was not a number, received '" + parts[1] + "'")
		}
	}
	if len(parts) >= 3 && parts[2] != "" {
		if o.ResetValue, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
			return o, messageError("Reset value of counter was not a number, received '" + parts[2] + "'")
		}
	}
	return o, nil
}

// parseMetricFilters is Tags.parseWithMetricAndFilters: metric{tags}
// {filters}; the second braces' filters first (not grouped by), then the
// first's tags (grouped by), each "k=v" read as the tags map form.
func parseMetricFilters(m string) (string, []tsd.Filter, error) {
	curly := strings.IndexByte(m, '{')
	switch {
	case m == "":
		return "", nil, messageError("Metric cannot be null or empty")
	case curly < 0:
		return m, nil, nil
	case m[len(m)-1] != '}':
		return "", nil, messageError("Missing '}' at the end of: " + m)
	case curly == len(m)-2:
		return m[:len(m)-2], nil, nil
	}
	var filters []tsd.Filter
	closing := strings.IndexByte(m, '}')
	if closing != len(m)-1 {
		open := strings.LastIndexByte(m, '{')
		for _, f := range strings.Split(m[open+1:len(m)-1], ",") {
			if f == "" {
				break
			}
			k, v, err := splitTag(f)
			if err != nil {
				return "", nil, messageError("When parsing filter '" + f + "': " + err.Error())
			}
			filters = append(filters, mapFilter(k, v, false))
		}
	}
	for _, tag := range strings.Split(m[curly+1:closing], ",") {
		if tag == "" && closing != len(m)-1 {
			break
		}
		k, v, err := splitTag(tag)
		if err != nil {
			return "", nil, messageError("When parsing tag '" + tag + "': " + err.Error())
		}
		f := mapFilter(k, v, true)
		if !slices.Contains(filters, f) {
			filters = append(filters, f)
		}
	}
	return m[:curly], filters, nil
}

// splitTag is Tags.parse of one "k=v".
func splitTag(tag string) (string, string, error) {
	kv := strings.Split(tag, "=")
	if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
		return "", "", messageError("invalid tag: " + tag)
	}
	return kv[0], kv[1], nil
}

// mapFilter is TagVFilter.getFilter of the map form: "type(expr)" that
// filter, a value with '*' a case-insensitive wildcard, else a
// literal_or.
func mapFilter(k, v string, groupBy bool) tsd.Filter {
	f := tsd.Filter{Tagk: k, Expr: v, GroupBy: groupBy}
	switch paren := strings.IndexByte(v, '('); {
	case paren >= 0:
		f.Type, f.Expr = strings.ToLower(v[:paren]), stripParentheses(v)
	case strings.Contains(v, "*"):
		f.Type = "iwildcard"
	default:
		f.Type = "literal_or"
	}
	return f
}
