package limits

import (
	"fmt"
	"sync"
	"time"

	"github.com/promhbase/promhbase/mapping"
)

// metricSeries counts the series of each metric exactly, over the same
// two periods of ActiveSeriesWindow as the active-series estimate: a
// series counts from its first sample in the period before the current
// one. Metrics are keyed by their UID (any bytes that name a metric
// stably), series by a 64-bit hash of their key as sent.
type metricSeries struct {
	mu      sync.RWMutex
	metrics map[string]*metricSet
}

// metricSet is one metric's series: those of period (cur) and of the
// period before it (prev); n is the size of their union.
type metricSet struct {
	mu     sync.Mutex
	period int64
	cur    map[uint64]struct{}
	prev   map[uint64]struct{}
	n      int
}

func newMetricSeries() *metricSeries {
	return &metricSeries{metrics: map[string]*metricSet{}}
}

// periodOf is the number of the ActiveSeriesWindow period of now.
func periodOf(now time.Time) int64 { return now.UnixNano() / int64(ActiveSeriesWindow) }

// set returns metric's set, made when create and it has none; nil when
// it has none and !create.
func (m *metricSeries) set(metric []byte, create bool) *metricSet {
	m.mu.RLock()
	s := m.metrics[string(metric)]
	m.mu.RUnlock()
	if s != nil || !create {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.metrics[string(metric)]; s == nil {
		s = &metricSet{cur: map[uint64]struct{}{}, prev: map[uint64]struct{}{}}
		m.metrics[string(metric)] = s
	}
	return s
}

// rotate moves s to period p; s.mu is held.
func (s *metricSet) rotate(p int64) {
	switch {
	case p <= s.period:
		return
	case p == s.period+1:
		s.prev, s.cur = s.cur, make(map[uint64]struct{}, len(s.cur))
	default:
		clear(s.prev)
		s.cur = make(map[uint64]struct{}, len(s.cur))
	}
	s.period, s.n = p, len(s.prev)
}

// add marks series h in the current period; when it is new to both
// periods and they already hold limit series (limit > 0), it is not
// added and add returns false.
func (s *metricSet) add(p int64, h uint64, limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(p)
	if _, ok := s.cur[h]; ok {
		return true
	}
	_, seen := s.prev[h]
	if !seen {
		if limit > 0 && s.n >= limit {
			return false
		}
		s.n++
	}
	s.cur[h] = struct{}{}
	return true
}

// count returns the series of both periods.
func (s *metricSet) count(p int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(p)
	return s.n
}

// PerMetric reports whether the per-metric series limit is on: only then
// do AdmitMetricSeries and MarkMetricSeries count anything.
func (l *Limits) PerMetric() bool { return l.cfg.Load().MaxSeriesPerMetric > 0 }

// AdmitMetricSeries admits series h (a hash of the series' key) of
// metric (its UID) as a new series: counted, or refused with an error
// wrapping ErrSeriesLimit, naming the limit and lbls (the series), when
// the metric already has MaxSeriesPerMetric other series. A series
// already counted is always admitted.
func (l *Limits) AdmitMetricSeries(metric []byte, h uint64, lbls []mapping.Label) error {
	limit := l.cfg.Load().MaxSeriesPerMetric
	if limit <= 0 {
		return nil
	}
	if l.perMetric.set(metric, true).add(periodOf(l.now()), h, limit) {
		return nil
	}
	return fmt.Errorf("%w: per-metric series limit of %d exceeded (max_global_series_per_metric, --limits.max-series-per-metric): metric %q, %s",
		ErrSeriesLimit, limit, metricName(lbls), describe(lbls))
}

// MarkMetricSeries marks series h of metric as written now (a series
// admitted before: it is counted, whatever the limit).
func (l *Limits) MarkMetricSeries(metric []byte, h uint64) {
	if l.cfg.Load().MaxSeriesPerMetric <= 0 {
		return
	}
	l.perMetric.set(metric, true).add(periodOf(l.now()), h, 0)
}

// MetricSeries returns the series counted for metric (0 when the limit
// is off or it has none).
func (l *Limits) MetricSeries(metric []byte) int {
	s := l.perMetric.set(metric, false)
	if s == nil {
		return 0
	}
	return s.count(periodOf(l.now()))
}

// metricName returns the value of lbls' __name__ label.
func metricName(lbls []mapping.Label) string {
	for _, lb := range lbls {
		if string(lb.Name) == mapping.MetricLabel {
			return string(lb.Value)
		}
	}
	return ""
}
