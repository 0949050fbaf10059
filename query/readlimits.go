package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// ErrTooManySeries means the selections of one request fetched more
// distinct series than its limit (WithReadLimits); the error is a
// *SeriesLimitError.
var ErrTooManySeries = errors.New("query fetched too many series")

// SeriesLimitError is the error of a request whose selections fetched
// more distinct series than Limit, worded as Grafana Mimir's
// max_fetched_series_per_query error. It is ErrTooManySeries.
type SeriesLimitError struct{ Limit int }

func (e *SeriesLimitError) Error() string {
	return fmt.Sprintf("the query exceeded the maximum number of series (limit: %d series) (err-mimir-max-series-per-query). "+
		"To adjust the related per-tenant limit, configure max_fetched_series_per_query in --runtime-config.file or "+
		"--query.max-fetched-series-per-query, or contact your service administrator.", e.Limit)
}

// TotalLengthMessage is the error of a request whose time range, length,
// is longer than limit, worded as Grafana Mimir's max_total_query_length
// error.
func TotalLengthMessage(length, limit time.Duration) string {
	return fmt.Sprintf("the total query time range exceeds the limit (query length: %s, limit: %s) (err-mimir-max-total-query-length). "+
		"To adjust the related per-tenant limit, configure max_total_query_length in --runtime-config.file or "+
		"--query.max-total-query-length, or contact your service administrator.", length, limit)
}

// Is reports whether target is ErrTooManySeries.
func (e *SeriesLimitError) Is(target error) bool { return target == ErrTooManySeries }

// NoMinTime is WithReadLimits' minTime of no bound.
const NoMinTime int64 = math.MinInt64

// readLimitsKey is the context key of a request's readLimits.
type readLimitsKey struct{}

// readLimits are one request's guardrails and its count of the series
// fetched so far. Its methods are safe for concurrent use, and nil-safe:
// a nil *readLimits bounds nothing.
type readLimits struct {
	minT      int64
	maxSeries int

	mu       sync.Mutex
	seen     map[uint64]struct{} // label-set hashes of the series fetched
	exceeded atomic.Bool         // a selection failed on the series limit
}

// SeriesLimitExceeded reports whether a selection under ctx's limits
// (WithReadLimits) failed on the series limit: what to count of a
// request whose error an engine worded.
func SeriesLimitExceeded(ctx context.Context) bool {
	l := readLimitsOf(ctx)
	return l != nil && l.exceeded.Load()
}

// WithReadLimits returns ctx carrying the guardrails of one request (one
// PromQL query, one series request), as Grafana Mimir's querier applies
// max_query_lookback and max_fetched_series_per_query:
//
//   - the selections made under it read no sample before minTime (Unix
//     ms; NoMinTime: no bound): their start is clamped to it, and one
//     that ends before it selects nothing. Downsampled selections
//     (SelectWindows) clamp their raw parts only.
//   - they fetch at most maxSeries distinct label sets together (0: no
//     bound), counted as each series is handed on, whichever selector,
//     querier or engine (a query handed to a fallback engine counts the
//     same series once): past it they fail with a *SeriesLimitError.
//     Label names and values and exemplars are not counted.
//
// A ctx without them (remote read, the ruler) is not bounded.
func WithReadLimits(ctx context.Context, minTime int64, maxSeries int) context.Context {
	if minTime == NoMinTime && maxSeries <= 0 {
		return ctx
	}
	return context.WithValue(ctx, readLimitsKey{}, &readLimits{minT: minTime, maxSeries: max(maxSeries, 0)})
}

// readLimitsOf returns ctx's readLimits; nil when it has none.
func readLimitsOf(ctx context.Context) *readLimits {
	l, _ := ctx.Value(readLimitsKey{}).(*readLimits)
	return l
}

// clamp returns start clamped to the minimum time; ok is false when
// [start, end] lies wholly before it.
func (l *readLimits) clamp(start, end int64) (int64, bool) {
	if l == nil || l.minT == NoMinTime {
		return start, true
	}
	if end < l.minT {
		return start, false
	}
	return max(start, l.minT), true
}

// addSeries counts the series lbls, fetched, once per label set; an
// error past the limit.
func (l *readLimits) addSeries(lbls labels.Labels) error {
	if l == nil || l.maxSeries == 0 {
		return nil
	}
	h := lbls.Hash()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[h]; ok {
		return nil
	}
	if len(l.seen) >= l.maxSeries {
		l.exceeded.Store(true)
		return &SeriesLimitError{Limit: l.maxSeries}
	}
	if l.seen == nil {
		l.seen = map[uint64]struct{}{}
	}
	l.seen[h] = struct{}{}
	return nil
}
