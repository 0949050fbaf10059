package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// readStore is what the Reader needs of a store.
type readStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// MaxDays is the longest range, in days, the Reader answers; longer ranges
// are left to the caller's other means (Covers says no).
const MaxDays = 3700

// coverageTTL is how long the Reader trusts the coverage day it read. The
// day only moves back (reindex), and a stale one only makes callers take
// their slower path.
const coverageTTL = 30 * time.Second

// Reader answers label questions from the index. Answers are at day
// granularity: a series counts for a range when it has data on a day the
// range touches. It is safe for concurrent use.
type Reader struct {
	st     readStore
	table  string
	uids   *uid.UIDs
	layout mapping.Layout

	mu        sync.Mutex
	since     uint32
	sinceOK   bool
	sinceRead time.Time

	// lens keeps the lengths of tag values' names for Cardinality, pages
	// its counting pages (*page, zeroed) for the next count.
	lens  valueLens
	pages sync.Pool
}

// NewReader returns a Reader of the index table.
func NewReader(st readStore, table string, uids *uid.UIDs, layout mapping.Layout) *Reader {
	return &Reader{st: st, table: table, uids: uids, layout: layout}
}

// dayRange returns the days of [start, end] (Unix ms); ok is false when
// the range is empty or longer than MaxDays.
func dayRange(start, end int64) (from, to uint32, ok bool) {
	start, end = max(start, 0), min(end, int64(1<<32-1)*1000)
	if end < start {
		return 0, 0, false
	}
	from, to = mapping.DayOf(start), mapping.DayOf(end)
	return from, to, to-from < MaxDays
}

// Covers reports whether the index holds every series that has data in
// [start, end]: the range is not too long and starts on or after the day
// from which every write went through the index.
func (r *Reader) Covers(ctx context.Context, start, end int64) (bool, error) {
	from, _, ok := dayRange(start, end)
	if !ok {
		return false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sinceRead.IsZero() || time.Since(r.sinceRead) > coverageTTL {
		row, err := r.st.Get(ctx, r.table, mapping.IndexCoverageKey, mapping.IndexFamily)
		if err != nil {
			return false, fmt.Errorf("read index coverage: %w", err)
		}
		r.since, r.sinceOK = coverageOf(row, mapping.IndexSinceQual)
		r.sinceRead = time.Now()
	}
	return r.sinceOK && r.since <= from, nil
}

// qualifiers returns the distinct qualifiers of the rows of kind for the
// days of [start, end].
func (r *Reader) qualifiers(ctx context.Context, kind byte, start, end int64) ([][]byte, error) {
	from, to, ok := dayRange(start, end)
	if !ok {
		return nil, nil
	}
	seen := map[string]bool{}
	var out [][]byte
	var key []byte
	for d := from; d <= to; d++ {
		key = mapping.AppendIndexDayKey(key[:0], kind, d)
		row, err := r.st.Get(ctx, r.table, key, mapping.IndexFamily)
		if err != nil {
			return nil, fmt.Errorf("read index row %x: %w", key, err)
		}
		for _, c := range row.Cells {
			if !seen[string(c.Qualifier)] {
				seen[string(c.Qualifier)] = true
				out = append(out, slices.Clone(c.Qualifier))
			}
		}
	}
	return out, nil
}

// names resolves UIDs of kind to names, leaving out UIDs without one
// (a UID whose reverse row is gone names nothing) and the reserved tag.
func (r *Reader) names(ctx context.Context, kind uid.Kind, uids [][]byte) ([]string, error) {
	out := make([]string, 0, len(uids))
	err := r.eachName(ctx, kind, uids, func(_ []byte, n string) {
		if kind == uid.KindTagK && n == mapping.MetricLabel {
			return
		}
		out = append(out, n)
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// nameBatch is how many UIDs eachName reads the names of at once.
const nameBatch = 1024

// eachName calls fn with each of uids (of kind) that has a name, and the
// name, in order; the names the reverse cache lacks are read nameBatch
// UIDs at a time (uid.UIDs.LoadNames), not one round trip each.
func (r *Reader) eachName(ctx context.Context, kind uid.Kind, uids [][]byte, fn func(uid []byte, name string)) error {
	for len(uids) > 0 {
		batch := uids[:min(len(uids), nameBatch)]
		uids = uids[len(batch):]
		if err := r.uids.LoadNames(ctx, kind, batch); err != nil {
			return err
		}
		for _, u := range batch {
			n, err := r.uids.Name(ctx, kind, u)
			if errors.Is(err, uid.ErrNoSuchUID) {
				continue
			}
			if err != nil {
				return err
			}
			fn(u, n)
		}
	}
	return nil
}

// LabelNames returns the label names of the series with data on the days
// of [start, end], __name__ included when there is any series, sorted.
func (r *Reader) LabelNames(ctx context.Context, start, end int64) ([]string, error) {
	tagks, err := r.qualifiers(ctx, mapping.IndexKindTagKs, start, end)
	if err != nil {
		return nil, err
	}
	names, err := r.names(ctx, uid.KindTagK, tagks)
	if err != nil {
		return nil, err
	}
	metrics, err := r.qualifiers(ctx, mapping.IndexKindMetrics, start, end)
	if err != nil {
		return nil, err
	}
	if len(metrics) > 0 {
		names = append(names, model.MetricNameLabel)
		slices.Sort(names)
	}
	return names, nil
}

// LabelValues returns the values of label name among the series with data
// on the days of [start, end], sorted.
func (r *Reader) LabelValues(ctx context.Context, name string, start, end int64) ([]string, error) {
	if name == model.MetricNameLabel {
		metrics, err := r.qualifiers(ctx, mapping.IndexKindMetrics, start, end)
		if err != nil {
			return nil, err
		}
		return r.names(ctx, uid.KindMetric, metrics)
	}
	if name == mapping.MetricLabel || name == "" {
		return nil, nil
	}
	tagvs, err := r.valuesOf(ctx, name, start, end, nil)
	if err != nil {
		return nil, err
	}
	return r.names(ctx, uid.KindTagV, tagvs)
}

// valuesOf returns the distinct tagv UIDs of label name on the days of
// [start, end]; with metrics not nil, it also adds, per tagv UID, the
// metric UIDs of the row to metrics[tagv].
func (r *Reader) valuesOf(ctx context.Context, name string, start, end int64, metrics map[string][][]byte) ([][]byte, error) {
	from, to, ok := dayRange(start, end)
	if !ok {
		return nil, nil
	}
	tagks, err := r.uids.IDs(ctx, uid.KindTagK, name)
	if errors.Is(err, uid.ErrNoSuchName) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out [][]byte
	var prefix []byte
	for d := from; d <= to; d++ {
		for _, k := range tagks {
			prefix = mapping.AppendIndexValueKey(prefix[:0], d, k, nil)
			sc := r.st.Scan(ctx, store.ScanRequest{Table: r.table, Start: prefix, Stop: store.PrefixEnd(prefix), Family: mapping.IndexFamily})
			for sc.Next() {
				row := sc.Row()
				v, ok := mapping.IndexValueOf(row.Key, len(k), r.layout.TagVWidth)
				if !ok {
					continue
				}
				if !seen[string(v)] {
					seen[string(v)] = true
					out = append(out, slices.Clone(v))
				}
				if metrics != nil {
					for _, c := range row.Cells {
						metrics[string(v)] = append(metrics[string(v)], slices.Clone(c.Qualifier))
					}
				}
			}
			err := sc.Err()
			sc.Close()
			if err != nil {
				return nil, fmt.Errorf("scan index values of %q: %w", name, err)
			}
		}
	}
	return out, nil
}

// metricsWith returns the metric UIDs with a series carrying name=value on
// the days of [start, end].
func (r *Reader) metricsWith(ctx context.Context, name, value string, start, end int64) (map[string]bool, error) {
	out := map[string]bool{}
	from, to, ok := dayRange(start, end)
	if !ok {
		return out, nil
	}
	tagks, err := r.uids.IDs(ctx, uid.KindTagK, name)
	if errors.Is(err, uid.ErrNoSuchName) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	tagvs, err := r.uids.IDs(ctx, uid.KindTagV, value)
	if errors.Is(err, uid.ErrNoSuchName) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var key []byte
	for d := from; d <= to; d++ {
		for _, k := range tagks {
			for _, v := range tagvs {
				key = mapping.AppendIndexValueKey(key[:0], d, k, v)
				row, err := r.st.Get(ctx, r.table, key, mapping.IndexFamily)
				if err != nil {
					return nil, fmt.Errorf("read index row %x: %w", key, err)
				}
				for _, c := range row.Cells {
					out[string(c.Qualifier)] = true
				}
			}
		}
	}
	return out, nil
}

// IndexedMetrics returns the names of every metric the index has ever
// seen a series of, sorted.
func (r *Reader) IndexedMetrics(ctx context.Context) ([]string, error) {
	row, err := r.st.Get(ctx, r.table, mapping.IndexEverKey, mapping.IndexFamily)
	if err != nil {
		return nil, fmt.Errorf("read indexed metrics: %w", err)
	}
	uids := make([][]byte, len(row.Cells))
	for i, c := range row.Cells {
		uids[i] = c.Qualifier
	}
	return r.names(ctx, uid.KindMetric, uids)
}

// MetricNames returns the names of the metrics that may have series that
// ms select with data on the days of [start, end]: a superset (the
// matchers on __name__ are left to the caller; every other matcher that
// requires its label narrows the set), sorted.
func (r *Reader) MetricNames(ctx context.Context, start, end int64, ms []*labels.Matcher) ([]string, error) {
	var set map[string]bool // nil: not narrowed yet
	for _, m := range ms {
		if m.Name == model.MetricNameLabel || m.Name == mapping.MetricLabel || m.Matches("") {
			continue // matches series without the label too: no narrowing
		}
		var got map[string]bool
		var err error
		switch vals := m.SetMatches(); {
		case m.Type == labels.MatchEqual:
			got, err = r.metricsWith(ctx, m.Name, m.Value, start, end)
		case len(vals) > 0 && len(vals) <= 64:
			got = map[string]bool{}
			for _, v := range vals {
				one, e := r.metricsWith(ctx, m.Name, v, start, end)
				if e != nil {
					err = e
					break
				}
				for k := range one {
					got[k] = true
				}
			}
		default:
			got, err = r.metricsMatching(ctx, m, start, end)
		}
		if err != nil {
			return nil, err
		}
		if set == nil {
			set = got
		} else {
			for k := range set {
				if !got[k] {
					delete(set, k)
				}
			}
		}
		if len(set) == 0 {
			return nil, nil
		}
	}
	var uids [][]byte
	if set == nil {
		all, err := r.qualifiers(ctx, mapping.IndexKindMetrics, start, end)
		if err != nil {
			return nil, err
		}
		uids = all
	} else {
		for k := range set {
			uids = append(uids, []byte(k))
		}
	}
	return r.names(ctx, uid.KindMetric, uids)
}

// metricsMatching returns the metric UIDs with a series whose label m.Name
// has a value m matches, on the days of [start, end].
func (r *Reader) metricsMatching(ctx context.Context, m *labels.Matcher, start, end int64) (map[string]bool, error) {
	byValue := map[string][][]byte{}
	tagvs, err := r.valuesOf(ctx, m.Name, start, end, byValue)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	err = r.eachName(ctx, uid.KindTagV, tagvs, func(v []byte, name string) {
		if !m.Matches(name) {
			return
		}
		for _, metric := range byValue[string(v)] {
			out[string(metric)] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
