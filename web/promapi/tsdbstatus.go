package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/index"
)

// Cardinality counts the series of days for /api/v1/status/tsdb (the
// series index's index.Reader).
type Cardinality interface {
	Cardinality(ctx context.Context, q index.CardinalityQuery) (*index.Cardinality, error)
}

// maxTSDBLimit is the largest limit (or topN) /api/v1/status/tsdb takes,
// Prometheus's.
const maxTSDBLimit = 10000

// tsdbStat is an entry of a ranking, as Prometheus's TSDBStat.
type tsdbStat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// headStats is Prometheus's HeadStats, of the days counted.
type headStats struct {
	NumSeries     uint64 `json:"numSeries"`
	NumLabelPairs uint64 `json:"numLabelPairs"`
	ChunkCount    int64  `json:"chunkCount"`
	MinTime       int64  `json:"minTime"`
	MaxTime       int64  `json:"maxTime"`
}

// tsdbStatus is Prometheus's TSDBStatus with VictoriaMetrics's fields
// added (Prometheus's clients ignore them).
type tsdbStatus struct {
	HeadStats                    headStats  `json:"headStats"`
	SeriesCountByMetricName      []tsdbStat `json:"seriesCountByMetricName"`
	LabelValueCountByLabelName   []tsdbStat `json:"labelValueCountByLabelName"`
	MemoryInBytesByLabelName     []tsdbStat `json:"memoryInBytesByLabelName"`
	SeriesCountByLabelValuePair  []tsdbStat `json:"seriesCountByLabelValuePair"`
	TotalSeries                  uint64     `json:"totalSeries"`
	TotalLabelValuePairs         uint64     `json:"totalLabelValuePairs"`
	SeriesCountByLabelName       []tsdbStat `json:"seriesCountByLabelName"`
	SeriesCountByFocusLabelValue []tsdbStat `json:"seriesCountByFocusLabelValue"`
}

// serveTSDBStatus answers /api/v1/status/tsdb from the series index:
// Prometheus's answer (limit) with VictoriaMetrics's parameters (topN,
// date, match[], focusLabel) and fields; start and end choose a range of
// days instead of date. Its errors are Prometheus's: 400 bad_data for a
// parameter, 503 when the store fails or the query timeout passes.
func (a *API) serveTSDBStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "bad_data", "use GET or POST")
		return
	}
	if a.opts.Cardinality == nil {
		writeError(w, http.StatusNotFound, "not_found", "promhbase answers /api/v1/status/tsdb from its series index, "+
			"which is not kept here (--no-storage.index.enabled) or cannot answer for several tenants at once")
		return
	}
	q, err := a.tsdbQuery(r, time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_data", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.Timeout)
	defer cancel()
	c, err := a.opts.Cardinality.Cardinality(ctx, q)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "timeout", fmt.Sprintf("count the series: %v", err))
		return
	case errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "canceled", fmt.Sprintf("count the series: %v", err))
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("count the series: %v", err))
		return
	}
	st := tsdbStatus{
		HeadStats:                    headStats{NumSeries: c.TotalSeries, NumLabelPairs: c.LabelPairs},
		SeriesCountByMetricName:      stats(c.SeriesCountByMetricName),
		LabelValueCountByLabelName:   stats(c.LabelValueCountByLabelName),
		MemoryInBytesByLabelName:     stats(c.MemoryInBytesByLabelName),
		SeriesCountByLabelValuePair:  stats(c.SeriesCountByLabelValuePair),
		TotalSeries:                  c.TotalSeries,
		TotalLabelValuePairs:         c.TotalLabelValuePairs,
		SeriesCountByLabelName:       stats(c.SeriesCountByLabelName),
		SeriesCountByFocusLabelValue: stats(c.SeriesCountByFocusLabelValue),
	}
	if c.From <= c.To {
		const dayMs = mapping.DaySeconds * 1000
		st.HeadStats.MinTime, st.HeadStats.MaxTime = int64(c.From)*dayMs, (int64(c.To)+1)*dayMs-1
	}
	var warnings []string
	if c.Partial {
		warnings = append(warnings, "the series index counts series by day only from the day promhbase began to (an index kept by an earlier version): "+
			"series written only before then are not counted; `promhbase reindex` over those days counts them")
	}
	writeJSON(w, http.StatusOK, struct {
		Status   string     `json:"status"`
		Data     tsdbStatus `json:"data"`
		Warnings []string   `json:"warnings,omitempty"`
	}{"success", st, warnings})
}

// tsdbQuery reads the parameters of /api/v1/status/tsdb; now is the
// time of the request (date's default is now's day, UTC).
func (a *API) tsdbQuery(r *http.Request, now time.Time) (index.CardinalityQuery, error) {
	var q index.CardinalityQuery
	if err := r.ParseForm(); err != nil {
		return q, fmt.Errorf("error parsing form values: %w", err)
	}
	q.TopN = 10
	if s := r.Form.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return q, errors.New("limit must be a positive number")
		}
		if n > maxTSDBLimit {
			return q, fmt.Errorf("limit must not exceed %d", maxTSDBLimit)
		}
		q.TopN = n
	}
	if s := r.Form.Get("topN"); s != "" {
		// As VictoriaMetrics: at least 1, at most its bound.
		n, err := strconv.Atoi(s)
		if err != nil {
			return q, fmt.Errorf("cannot parse `topN` arg %q: %w", s, err)
		}
		q.TopN = min(max(n, 1), maxTSDBLimit)
	}
	q.FocusLabel = r.Form.Get("focusLabel")
	for _, s := range r.Form["match[]"] {
		ms, err := a.parser.ParseMetricSelector(s)
		if err != nil {
			return q, fmt.Errorf("invalid parameter %q: %w", "match[]", err)
		}
		q.Match = append(q.Match, ms)
	}
	for _, ms := range q.Match {
		// As Prometheus's API: a selector every series matches is refused.
		if !slices.ContainsFunc(ms, func(m *labels.Matcher) bool { return !m.Matches("") }) {
			return q, errors.New("match[] must contain at least one non-empty matcher")
		}
	}
	date, start, end := r.Form.Get("date"), r.Form.Get("start"), r.Form.Get("end")
	switch {
	case date == "0" || date == "1970-01-01":
		q.AllDays = true
	case date != "":
		t, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return q, fmt.Errorf("cannot parse `date` arg %q: %w", date, err)
		}
		q.From = mapping.DayOf(t.UnixMilli())
		q.To = q.From
	case start != "" || end != "":
		from, to := now, now
		var err error
		if start != "" {
			if from, err = parseTime(start); err != nil {
				return q, fmt.Errorf("invalid parameter %q: %w", "start", err)
			}
			if from.After(now) {
				to = from
			}
		}
		if end != "" {
			if to, err = parseTime(end); err != nil {
				return q, fmt.Errorf("invalid parameter %q: %w", "end", err)
			}
			if start == "" {
				from = to
			}
		}
		if to.Before(from) {
			return q, errors.New("end timestamp must not be before start time")
		}
		if from.Unix() < 0 || to.Unix() >= 1<<32 {
			return q, fmt.Errorf("start and end must lie between 1970 and 2106")
		}
		q.From, q.To = mapping.DayOf(from.UnixMilli()), mapping.DayOf(to.UnixMilli())
		if q.To-q.From >= index.MaxDays {
			return q, fmt.Errorf("start and end span %d days, more than %d", q.To-q.From+1, index.MaxDays)
		}
	default:
		q.From = mapping.DayOf(now.UnixMilli())
		q.To = q.From
	}
	return q, nil
}

// stats is a ranking as JSON: [] for none.
func stats(s []index.Stat) []tsdbStat {
	out := make([]tsdbStat, len(s))
	for i, e := range s {
		out[i] = tsdbStat{e.Name, e.Value}
	}
	return out
}
