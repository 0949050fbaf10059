package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// indexCovers reports whether the series index can answer for [start, end].
func (q *Querier) indexCovers(ctx context.Context, start, end int64) (bool, error) {
	if q.opts.Index == nil {
		return false, nil
	}
	return q.opts.Index.Covers(ctx, start, end)
}

// metricNames returns the metric names the __name__ matchers allow: the
// metrics named, else those the series index has for the other matchers
// and [start, end], else every metric of the UID table.
func (q *Querier) metricNames(ctx context.Context, start, end int64, matchers []*labels.Matcher) ([]string, error) {
	var nameMatchers []*labels.Matcher
	for _, m := range matchers {
		if m.Name != model.MetricNameLabel {
			continue
		}
		if m.Type == labels.MatchEqual {
			if m.Value == "" {
				return nil, nil // every stored series has a name
			}
			for _, o := range matchers {
				if o.Name == model.MetricNameLabel && !o.Matches(m.Value) {
					return nil, nil
				}
			}
			return []string{m.Value}, nil
		}
		nameMatchers = append(nameMatchers, m)
	}
	// Literal alternatives name their metrics directly.
	for _, m := range nameMatchers {
		if m.Type != labels.MatchRegexp {
			continue
		}
		if set := m.SetMatches(); len(set) > 0 {
			var out []string
			for _, v := range set {
				if v != "" && matchesAll(nameMatchers, v) {
					out = append(out, v)
				}
			}
			// "a|a" lists a twice; each metric must be scanned once.
			slices.Sort(out)
			return slices.Compact(out), nil
		}
	}
	var all []string
	covered, err := q.indexCovers(ctx, start, end)
	if err != nil {
		return nil, err
	}
	if covered {
		all, err = q.indexedMetricNames(ctx, start, end, matchers)
	} else {
		all, err = q.allMetricNames(ctx)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range all {
		if matchesAll(nameMatchers, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func matchesAll(ms []*labels.Matcher, v string) bool {
	for _, m := range ms {
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// indexedMetricNames returns the metrics the series index names for the
// matchers and [start, end], and every metric of the UID table the index
// never saw a series of: a metric another writer (an OpenTSDB TSD)
// created is scanned rather than missed.
func (q *Querier) indexedMetricNames(ctx context.Context, start, end int64, matchers []*labels.Matcher) ([]string, error) {
	narrowed, err := q.opts.Index.MetricNames(ctx, start, end, matchers)
	if err != nil {
		return nil, err
	}
	known, err := q.opts.Index.IndexedMetrics(ctx)
	if err != nil {
		return nil, err
	}
	all, err := q.allMetricNames(ctx)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(narrowed)
	for _, n := range all {
		if _, found := slices.BinarySearch(known, n); !found {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// metricNameSource answers what planning asks of the UID table's names
// (see uid.Listing): each answer may be up to maxAge old.
type metricNameSource interface {
	// MetricNames returns every metric name, sorted, each once.
	MetricNames(ctx context.Context, maxAge time.Duration) ([]string, error)
	// EarlyTagNames reports whether a tag name sorts before __name__.
	EarlyTagNames(ctx context.Context, maxAge time.Duration) (bool, error)
}

// allMetricNames lists the metric names of the UID table, reused for
// MetricNamesTTL (see uid.Listing.MetricNames).
func (q *Querier) allMetricNames(ctx context.Context) ([]string, error) {
	return q.names.MetricNames(ctx, q.opts.MetricNamesTTL)
}

// earlyTagNames reports whether a tag name of the UID table sorts before
// __name__, reused for MetricNamesTTL (see uid.Listing.EarlyTagNames).
func (q *Querier) earlyTagNames(ctx context.Context) (bool, error) {
	return q.names.EarlyTagNames(ctx, q.opts.MetricNamesTTL)
}

// hasRows reports whether metric name has a data row whose hour overlaps
// [start, end] (ms); it reads at most one row per salt bucket.
func (q *Querier) hasRows(ctx context.Context, name string, start, end int64) (bool, error) {
	if start > end || end < 0 || start/1000 > math.MaxUint32 {
		return false, nil
	}
	metrics, err := q.mapper.UIDs().IDs(ctx, uid.KindMetric, name)
	if errors.Is(err, uid.ErrNoSuchName) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, metric := range metrics {
		for _, r := range q.mapper.Layout().MetricRanges(metric, max(start, 0)/1000, end/1000) {
			sc := q.st.Scan(ctx, store.ScanRequest{Table: q.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: "t"})
			found := sc.Next()
			err := sc.Err()
			sc.Close()
			if err != nil {
				return false, fmt.Errorf("scan %s [%x, %x): %w", q.opts.DataTable, r.Start, r.Stop, err)
			}
			if found {
				return true, nil
			}
		}
	}
	return false, nil
}
