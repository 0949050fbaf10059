package opentsdb

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/promhbase/promhbase/query/tsd"
)

// QueryPath is the path of /api/query.
const QueryPath = "/api/query"

// QueryRequest is a parsed /api/query: the query and how its answer is
// written.
type QueryRequest struct {
	Query tsd.Query
	// MsResolution writes the timestamps in ms (msResolution, ?ms);
	// Arrays writes dps as [[t,v],...] (?arrays).
	MsResolution, Arrays bool
}

// queryBody is a POST body as TSQuery binds it, before validation.
type queryBody struct {
	start, end, timezone string
	useCalendar          bool
	msResolution         bool
	shows                []string // show* flags set, which are not served
	subs                 []subBody
	hasQueries           bool // a queries array was sent (not absent, not null)
}

// subBody is a sub-query as TSSubQuery binds it.
type subBody struct {
	aggregator, metric, downsample string
	rate, explicitTags, tsuids     bool
	rateOptions                    tsd.RateOptions
	filters                        []tsd.Filter
	filterErr                      error // a tags or filters member a TSD refuses while binding
}

// ParseQuery reads a POST /api/query body and validates it as
// TSQuery.validateAndSetQuery does, with the TSD's messages (times
// relative to now). A refusal is an *HTTPError (400).
func ParseQuery(body []byte, now time.Time, arrays, ms bool) (QueryRequest, *HTTPError) {
	if len(body) == 0 {
		return QueryRequest{}, badRequest("Missing message content", "Supply valid JSON formatted data in the body of your request")
	}
	b, err := parseQueryBody(body)
	if err != nil {
		return QueryRequest{}, badRequest("Unable to parse the given JSON", err.Error())
	}
	for _, s := range b.subs {
		if s.filterErr != nil {
			return QueryRequest{}, badRequest("Unable to parse the given JSON", s.filterErr.Error())
		}
	}
	q, verr := b.validate(now)
	if verr != nil && !b.hasQueries {
		// The TSD's refusal quotes the query (TSQuery.toString), which
		// walks its queries: without any, a NullPointerException.
		return QueryRequest{}, &HTTPError{Code: 500, Message: "An internal null pointer exception was thrown"}
	}
	if verr != nil {
		var u *unsupportedError
		if errors.As(verr, &u) {
			return QueryRequest{}, &HTTPError{Code: 400, Message: u.Error()}
		}
		return QueryRequest{}, badRequest(verr.Error(), verr.Error())
	}
	return QueryRequest{Query: q, MsResolution: ms || b.msResolution, Arrays: arrays}, nil
}

// messageError is an error in a TSD's words (capitalized, as it writes
// them): its message is the answer's.
type messageError string

func (m messageError) Error() string { return string(m) }

// unsupportedError is a query a TSD answers that promhbase does not yet.
type unsupportedError struct{ what string }

func (e *unsupportedError) Error() string { return "promhbase does not evaluate " + e.what + " yet" }

// validate is TSQuery.validateAndSetQuery and each sub-query's.
func (b *queryBody) validate(now time.Time) (tsd.Query, error) {
	var q tsd.Query
	if b.start == "" {
		return q, messageError("Missing start time")
	}
	var err error
	if q.Start, err = parseTime(b.start, now); err != nil {
		return q, err
	}
	q.End = now.UnixMilli()
	if b.end != "" {
		if q.End, err = parseTime(b.end, now); err != nil {
			return q, err
		}
	}
	if q.End <= q.Start {
		return q, messageError("End time [" + itoa(q.End) + "] must be greater than the start time [" + itoa(q.Start) + "]")
	}
	if len(b.subs) == 0 {
		return q, messageError("Missing queries")
	}
	for _, s := range b.subs {
		sq, err := s.validate()
		if err != nil {
			return q, err
		}
		q.Subs = append(q.Subs, sq)
	}
	switch {
	case len(b.shows) > 0:
		return q, &unsupportedError{b.shows[0]}
	case b.timezone != "" || b.useCalendar:
		return q, &unsupportedError{"timezone and useCalendar"}
	}
	return q, nil
}

// aggregatorNameSet is the TSD's aggregators, for validation.
var aggregatorNameSet = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range aggregatorNames {
		m[n] = true
	}
	return m
}()

// validate is TSSubQuery.validateAndSetQuery: the aggregator, the metric,
// the downsampling specification.
func (s subBody) validate() (tsd.SubQuery, error) {
	sq := tsd.SubQuery{Aggregator: s.aggregator, Metric: s.metric, Rate: s.rate, RateOptions: s.rateOptions,
		Filters: s.filters, ExplicitTags: s.explicitTags}
	if s.aggregator == "" {
		return sq, messageError("Missing the aggregation function")
	}
	if !aggregatorNameSet[s.aggregator] {
		return sq, messageError("No such aggregation function: " + s.aggregator)
	}
	if s.metric == "" {
		if s.tsuids {
			return sq, &unsupportedError{"tsuids"}
		}
		return sq, messageError("Missing the metric or tsuids, provide at least one")
	}
	if s.downsample != "" {
		if err := parseDownsample(s.downsample, &sq); err != nil {
			return sq, err
		}
	}
	return sq, nil
}

// parseDownsample reads <interval>-<function>[-<fill>] as
// DownsamplingSpecification does.
func parseDownsample(spec string, sq *tsd.SubQuery) error {
	parts := strings.Split(spec, "-")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	switch {
	case len(parts) < 2:
		return messageError("Invalid downsampling specifier '" + spec + "': must provide at least interval and function")
	case len(parts) > 3:
		return messageError("Invalid downsampling specifier '" + spec + "': must consist of interval, function, and optional fill policy")
	}
	if strings.Contains(parts[0], "all") || strings.HasSuffix(parts[0], "c") {
		return &unsupportedError{"downsampling over all or calendar intervals"}
	}
	ms, err := parseDuration(parts[0])
	if err != nil {
		return err
	}
	if !aggregatorNameSet[parts[1]] {
		return messageError("No such downsampling function: " + parts[1])
	}
	if parts[1] == "none" {
		return messageError("cannot use the NONE aggregator for downsampling")
	}
	fill := "none"
	if len(parts) == 3 {
		fill = strings.ToLower(parts[2])
		switch fill {
		case "none", "zero", "nan", "null", "scalar":
		default:
			return messageError("Unrecognized fill policy: " + parts[2])
		}
	}
	sq.DownsampleMs, sq.DownsampleFn, sq.DownsampleFill = ms, parts[1], fill
	return nil
}

// parseDuration is DateTime.parseDuration: digits, then a unit (ms, s, m,
// h, d, w, n of 30 days, y of 365), in ms.
func parseDuration(d string) (int64, error) {
	if d == "" {
		return 0, messageError("Cannot parse null or empty duration")
	}
	unit := 0
	for isDigit(d[unit]) {
		unit++
		if unit >= len(d) {
			return 0, messageError("Invalid duration, must have an integer and unit: " + d)
		}
	}
	n, err := strconv.ParseInt(d[:unit], 10, 64)
	if err != nil {
		return 0, messageError("Invalid duration (number): " + d)
	}
	if n <= 0 {
		return 0, messageError("Zero or negative duration: " + d)
	}
	var mult int64
	switch strings.ToLower(d)[len(d)-1] {
	case 's':
		if len(d) >= 2 && d[len(d)-2] == 'm' {
			return n, nil
		}
		mult = 1
	case 'm':
		mult = 60
	case 'h':
		mult = 3600
	case 'd':
		mult = 86400
	case 'w':
		mult = 7 * 86400
	case 'n':
		mult = 30 * 86400
	case 'y':
		mult = 365 * 86400
	default:
		return 0, messageError("Invalid duration (suffix): " + d)
	}
	mult *= 1000
	if float64(n)*float64(mult) > math.MaxInt64 {
		return 0, messageError("Duration must be < Long.MAX_VALUE ms: " + d)
	}
	return n * mult, nil
}

var (
	msTime     = regexp.MustCompile(`^[0-9]+ms$`)
	dottedTime = regexp.MustCompile(`^[0-9]{10}\.[0-9]{1,3}$`)
)

// parseTime is DateTime.parseDateTimeString with the TSD's zone UTC:
// "<n>ms", now, "<duration>-ago", an absolute date (yyyy/MM/dd[-| ]HH:mm
// [:ss]), or digits (seconds up to 10 of them, else ms; "<s>.<ms>" with
// its dot removed, as the TSD does).
func parseTime(s string, now time.Time) (int64, error) {
	lower := strings.ToLower(s)
	switch {
	case msTime.MatchString(s):
		return parseLong(strings.TrimSuffix(s, "ms"))
	case lower == "now":
		return now.UnixMilli(), nil
	case strings.HasSuffix(lower, "-ago"):
		d, err := parseDuration(s[:len(s)-4])
		return now.UnixMilli() - d, err
	case strings.ContainsAny(s, "/:"):
		return parseAbsolute(s)
	}
	digits := s
	if strings.Contains(s, ".") {
		if !dottedTime.MatchString(s) {
			return 0, messageError("Invalid time: " + s + ". Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits")
		}
		digits = strings.ReplaceAll(s, ".", "")
	}
	t, err := parseLong(digits)
	if err != nil {
		return 0, messageError("Invalid time: " + s + ". " + err.Error())
	}
	if t < 0 {
		return 0, messageError("Invalid time: " + s + ". Negative timestamps are not supported.")
	}
	if len(s) <= 10 {
		t *= 1000
	}
	return t, nil
}

// parseAbsolute reads the TSD's absolute dates, by their length, in UTC.
func parseAbsolute(s string) (int64, error) {
	var layout string
	switch len(s) {
	case 10:
		layout = "2006/01/02"
	case 16:
		layout = "2006/01/02 15:04"
	case 19:
		layout = "2006/01/02 15:04:05"
	default:
		return 0, messageError("Invalid absolute date: " + s)
	}
	if strings.Contains(s, "-") {
		layout = strings.Replace(layout, " ", "-", 1)
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return 0, messageError("Invalid date: " + s + ". Unparseable date: \"" + s + "\"")
	}
	return t.UnixMilli(), nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
