package promapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/query"
)

// Guards are query guardrails, as Grafana Mimir's limits of these names
// answer (the zero value: none). They are read once per request: a
// change (API.SetGuards) applies to the requests that start after it.
type Guards struct {
	// MaxTotalQueryLength (max_total_query_length) bounds end - start of
	// a range query, after the lookback clamp, and of a series, labels or
	// label values request that names its end: 400 past it.
	MaxTotalQueryLength time.Duration
	// MaxQueryLookback (max_query_lookback) clamps what a request reads
	// to now minus it: a range query's start moves up (by whole steps, so
	// that the steps answered are steps asked for), one ending before
	// answers an empty matrix without running; a series or labels
	// request's start likewise (an empty list); and every selection of a
	// query, an instant one's included, reads no sample before it
	// (query.WithReadLimits).
	MaxQueryLookback time.Duration
	// MaxFetchedSeries (max_fetched_series_per_query) bounds the distinct
	// series one query or series request fetches, all its selectors
	// together: 422 past it (query.SeriesLimitError).
	MaxFetchedSeries int
	// BlockedQueries (blocked_queries) refuse instant and range queries:
	// 400.
	BlockedQueries []BlockedQuery
}

// BlockedQuery is one entry of Guards.BlockedQueries: a query whose
// expression, trimmed of spaces, equals Pattern (trimmed), or that
// Regex matches whole, is blocked.
type BlockedQuery struct {
	Pattern string
	// Regex is Pattern compiled and anchored (NewBlockedQuery); nil: the
	// query must equal Pattern.
	Regex *regexp.Regexp
}

// NewBlockedQuery returns the entry of pattern, a regular expression
// matched against the whole query when regex is set.
func NewBlockedQuery(pattern string, regex bool) (BlockedQuery, error) {
	b := BlockedQuery{Pattern: pattern}
	if regex {
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		if err != nil {
			return b, fmt.Errorf("blocked query %q: %w", pattern, err)
		}
		b.Regex = re
	}
	return b, nil
}

// blocks reports whether b blocks the query q.
func (b BlockedQuery) blocks(q string) bool {
	q = strings.TrimSpace(q)
	return q == strings.TrimSpace(b.Pattern) || b.Regex != nil && b.Regex.MatchString(q)
}

// SetGuards puts g in force for the requests that start from now on.
func (a *API) SetGuards(g Guards) { a.guards.Store(&g) }

// Guards returns the guards in force.
func (a *API) Guards() Guards { return *a.guards.Load() }

// The errors of the guards, as Mimir words them.
const (
	errQueryBlocked = "the request has been blocked by the cluster administrator (err-mimir-query-blocked)"
	emptyMatrix     = `{"status":"success","data":{"resultType":"matrix","result":[]}}`
	emptyList       = `{"status":"success","data":[]}`
)

// guardQuery applies the guards in force to an instant or range query
// (its form parsed), in Mimir's order: the lookback clamp, the total
// length, the blocked queries. It returns the request to serve, its
// start moved and its context bounded; false when it answered the
// request itself (an error, or an empty answer). A request whose times
// do not parse is left to Prometheus's handler to refuse.
func (a *API) guardQuery(w http.ResponseWriter, r *http.Request, instant bool) (*http.Request, bool) {
	g := a.guards.Load()
	minT := a.minTime(g)
	if !instant {
		start, err1 := parseTime(r.Form.Get("start"))
		end, err2 := parseTime(r.Form.Get("end"))
		step, err3 := parseDuration(r.Form.Get("step"))
		if err1 == nil && err2 == nil && err3 == nil && step > 0 && !end.Before(start) {
			from, to := start.UnixMilli(), end.UnixMilli()
			if minT != query.NoMinTime && from < minT {
				stepMs := max(step.Milliseconds(), 1)
				from += (minT - from + stepMs - 1) / stepMs * stepMs // whole steps: the steps asked for
				if from > to {
					writeBody(w, emptyMatrix)
					return r, false
				}
				r.Form.Set("start", formatMillis(from))
			}
			if l := time.Duration(to-from) * time.Millisecond; g.MaxTotalQueryLength > 0 && l > g.MaxTotalQueryLength {
				a.refused.WithLabelValues(guardLength).Inc()
				writeError(w, http.StatusBadRequest, "bad_data", query.TotalLengthMessage(l, g.MaxTotalQueryLength))
				return r, false
			}
		}
	}
	q := r.Form.Get("query")
	for _, b := range g.BlockedQueries {
		if b.blocks(q) {
			a.refused.WithLabelValues(guardBlocked).Inc()
			writeError(w, http.StatusBadRequest, "bad_data", errQueryBlocked)
			return r, false
		}
	}
	return r.WithContext(query.WithReadLimits(r.Context(), minT, g.MaxFetchedSeries)), true
}

// guardSeries applies the guards in force to a series, labels or label
// values request: the lookback clamp of its start (an empty list when it
// ends before), the total length when it names its end, the series
// limit. Its return is guardQuery's.
func (a *API) guardSeries(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	g := a.guards.Load()
	if err := r.ParseForm(); err != nil {
		return r, true // Prometheus's handler answers it
	}
	minT := a.minTime(g)
	from, fromOK := formMillis(r, "start")
	to, toOK := formMillis(r, "end")
	if minT != query.NoMinTime {
		if toOK && to < minT {
			writeBody(w, emptyList)
			return r, false
		}
		if _, given := r.Form["start"]; !given || fromOK && from < minT {
			from, fromOK = minT, true
			r.Form.Set("start", formatMillis(minT))
		}
	}
	if l := time.Duration(to-from) * time.Millisecond; fromOK && toOK && to >= from && g.MaxTotalQueryLength > 0 && l > g.MaxTotalQueryLength {
		a.refused.WithLabelValues(guardLength).Inc()
		writeError(w, http.StatusBadRequest, "bad_data", query.TotalLengthMessage(l, g.MaxTotalQueryLength))
		return r, false
	}
	return r.WithContext(query.WithReadLimits(r.Context(), minT, g.MaxFetchedSeries)), true
}

// The guardrails of promhbase_query_refused_total.
const (
	guardLength  = "max_total_query_length"
	guardBlocked = "blocked_queries"
	guardSeries  = "max_fetched_series_per_query"
)

// newRefused returns promhbase_query_refused_total, registered on reg.
func newRefused(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhbase_query_refused_total",
		Help: "Requests of the query API refused by a query guardrail, by guardrail: max_total_query_length and blocked_queries (400), max_fetched_series_per_query (422).",
	}, []string{"guardrail"})
	for _, g := range []string{guardLength, guardBlocked, guardSeries} {
		c.WithLabelValues(g)
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register promhbase_query_refused_total: %w", err)
	}
	return c, nil
}

// countSeriesLimit counts a request of r that failed on the series limit.
func (a *API) countSeriesLimit(r *http.Request) {
	if query.SeriesLimitExceeded(r.Context()) {
		a.refused.WithLabelValues(guardSeries).Inc()
	}
}

// minTime is the first time (Unix ms) g lets a request read, now;
// query.NoMinTime without a lookback.
func (a *API) minTime(g *Guards) int64 {
	if g.MaxQueryLookback <= 0 {
		return query.NoMinTime
	}
	return a.opts.Now().Add(-g.MaxQueryLookback).UnixMilli()
}

// formMillis is the time of form value name (Unix ms); false when it is
// absent or does not parse.
func formMillis(r *http.Request, name string) (int64, bool) {
	s := r.Form.Get(name)
	if s == "" {
		return 0, false
	}
	t, err := parseTime(s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// formatMillis formats Unix ms as the API's seconds.
func formatMillis(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) }

// writeBody answers 200 with the JSON body.
func writeBody(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body + "\n"))
}
