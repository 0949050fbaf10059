package otlp

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// minExponentialScale is the smallest exponential histogram scale a
// native histogram can take (schema -4); finer ones are downscaled.
const minExponentialScale = -4

// maxReasons bounds the distinct reasons a partial_success message lists.
const maxReasons = 4

// refusals counts the data points filter takes out of a request and says
// why, a few reasons at most.
type refusals struct {
	points  int64
	reasons []string
	more    int
}

func (r *refusals) add(points int, reason string) {
	r.points += int64(points)
	if len(r.reasons) < maxReasons {
		r.reasons = append(r.reasons, reason)
	} else {
		r.more++
	}
}

// message is the partial_success error message: the reasons, and how many
// more there were.
func (r *refusals) message() string {
	if len(r.reasons) == 0 {
		return ""
	}
	msg := strings.Join(r.reasons, "; ")
	if r.more > 0 {
		msg += fmt.Sprintf("; and %d more", r.more)
	}
	return msg
}

// filter takes out of md, in place, the data points Prometheus's
// converter would refuse, so that the rest can be stored (see the package
// doc), and records them in r: metrics of no type; sums and histograms of
// a temporality other than cumulative (delta unless nativeDelta);
// histogram points whose counts do not add up; exponential histogram
// points of a scale below -4; and resources, scopes and points of more
// than maxAttrs attributes (their series could never be stored, and the
// converter's label building takes time quadratic in them).
func filter(md pmetric.Metrics, nativeDelta bool, maxAttrs int, r *refusals) {
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		if n := rm.Resource().Attributes().Len(); n > maxAttrs {
			r.add(resourcePoints(rm), fmt.Sprintf("a resource of %d attributes, more than %d", n, maxAttrs))
			return true
		}
		refuseTimes(rm, r)
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
			if n := sm.Scope().Attributes().Len(); n > maxAttrs {
				r.add(scopePoints(sm), fmt.Sprintf("scope %q of %d attributes, more than %d", sm.Scope().Name(), n, maxAttrs))
				return true
			}
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				return refuse(m, nativeDelta, r) || refuseAttributes(m, maxAttrs, r)
			})
			return false
		})
		return false
	})
}

// maxResourceSpan bounds how far a resource's points of one request may
// lie apart: the converter writes target_info every half lookback from
// the resource's earliest point to its latest, so a point at 0 beside
// one of today would make millions of samples.
const maxResourceSpan = 24 * time.Hour

// refuseTimes takes out of rm's metrics the points without a timestamp
// and those older than maxResourceSpan before its newest point,
// recording them in r.
func refuseTimes(rm pmetric.ResourceMetrics, r *refusals) {
	var newest pcommon.Timestamp
	forEachTime(rm, func(_ pmetric.Metric, ts pcommon.Timestamp) bool {
		newest = max(newest, ts)
		return false
	})
	oldest := pcommon.Timestamp(0)
	if span := pcommon.Timestamp(maxResourceSpan); newest > span {
		oldest = newest - span
	}
	forEachTime(rm, func(m pmetric.Metric, ts pcommon.Timestamp) bool {
		switch {
		case ts == 0:
			r.add(1, fmt.Sprintf("metric %q: a data point without a timestamp", m.Name()))
			return true
		case ts < oldest:
			r.add(1, fmt.Sprintf("metric %q: a data point at %s, more than %s before the newest of its resource (%s)",
				m.Name(), ts.AsTime().UTC().Format(time.RFC3339), maxResourceSpan, newest.AsTime().UTC().Format(time.RFC3339)))
			return true
		}
		return false
	})
}

// forEachTime calls f with the timestamp of every data point of rm's
// metrics, removing the points for which it returns true.
func forEachTime(rm pmetric.ResourceMetrics, f func(pmetric.Metric, pcommon.Timestamp) bool) {
	for _, sm := range rm.ScopeMetrics().All() {
		for _, m := range sm.Metrics().All() {
			removePoints(m, func(_ pcommon.Map, ts pcommon.Timestamp) bool { return f(m, ts) })
		}
	}
}

// removePoints removes the data points of m for which f, given a point's
// attributes and timestamp, returns true.
func removePoints(m pmetric.Metric, f func(pcommon.Map, pcommon.Timestamp) bool) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		m.Gauge().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool { return f(p.Attributes(), p.Timestamp()) })
	case pmetric.MetricTypeSum:
		m.Sum().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool { return f(p.Attributes(), p.Timestamp()) })
	case pmetric.MetricTypeHistogram:
		m.Histogram().DataPoints().RemoveIf(func(p pmetric.HistogramDataPoint) bool { return f(p.Attributes(), p.Timestamp()) })
	case pmetric.MetricTypeExponentialHistogram:
		m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool { return f(p.Attributes(), p.Timestamp()) })
	case pmetric.MetricTypeSummary:
		m.Summary().DataPoints().RemoveIf(func(p pmetric.SummaryDataPoint) bool { return f(p.Attributes(), p.Timestamp()) })
	}
}

// resourcePoints and scopePoints count the data points of a resource's or
// a scope's metrics.
func resourcePoints(rm pmetric.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics().All() {
		n += scopePoints(sm)
	}
	return n
}

func scopePoints(sm pmetric.ScopeMetrics) int {
	n := 0
	for _, m := range sm.Metrics().All() {
		n += pointCount(m)
	}
	return n
}

// pointCount is the number of data points of m.
func pointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// refuseAttributes takes out of m its points of more than maxAttrs
// attributes (recording them in r), and reports whether none is left of
// a metric that had some.
func refuseAttributes(m pmetric.Metric, maxAttrs int, r *refusals) bool {
	before := pointCount(m)
	over := func(attrs pcommon.Map) bool {
		if n := attrs.Len(); n > maxAttrs {
			r.add(1, fmt.Sprintf("metric %q: a data point of %d attributes, more than %d", m.Name(), n, maxAttrs))
			return true
		}
		return false
	}
	removePoints(m, func(attrs pcommon.Map, _ pcommon.Timestamp) bool { return over(attrs) })
	return before > 0 && pointCount(m) == 0
}

// refuse reports whether metric m is refused whole (recording it in r),
// after taking out its points that are refused alone.
func refuse(m pmetric.Metric, nativeDelta bool, r *refusals) bool {
	var temporality pmetric.AggregationTemporality
	var points int
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSummary:
		return false
	case pmetric.MetricTypeSum:
		temporality, points = m.Sum().AggregationTemporality(), m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		temporality, points = m.Histogram().AggregationTemporality(), m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		temporality, points = m.ExponentialHistogram().AggregationTemporality(), m.ExponentialHistogram().DataPoints().Len()
	default:
		r.add(0, fmt.Sprintf("metric %q has no data type", m.Name()))
		return true
	}
	switch temporality {
	case pmetric.AggregationTemporalityCumulative:
	case pmetric.AggregationTemporalityDelta:
		if !nativeDelta {
			r.add(points, fmt.Sprintf("metric %q: delta temporality is not stored unless --otlp.native-delta-ingestion "+
				"(or the tenant's otel_native_delta_ingestion) is set; send cumulative (the Collector's deltatocumulative processor)", m.Name()))
			return true
		}
	default:
		r.add(points, fmt.Sprintf("metric %q: aggregation temporality %s, want cumulative", m.Name(), temporality))
		return true
	}
	switch m.Type() {
	case pmetric.MetricTypeHistogram:
		m.Histogram().DataPoints().RemoveIf(func(p pmetric.HistogramDataPoint) bool {
			return refuseHistogram(m.Name(), p, r)
		})
	case pmetric.MetricTypeExponentialHistogram:
		m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool {
			return refuseExponential(m.Name(), p, r)
		})
	}
	return false
}

// refuseHistogram reports whether explicit-bucket histogram point p is
// refused (recording it in r): bucket counts that are neither absent nor
// one more than the bounds, or that do not add up to its count, which no
// histogram Prometheus could store would show.
func refuseHistogram(name string, p pmetric.HistogramDataPoint, r *refusals) bool {
	if p.Flags().NoRecordedValue() {
		return false
	}
	counts, bounds := p.BucketCounts(), p.ExplicitBounds()
	if counts.Len() == 0 {
		return false
	}
	if counts.Len() != bounds.Len()+1 {
		r.add(1, fmt.Sprintf("metric %q: histogram of %d bucket counts for %d bounds, want %d", name, counts.Len(), bounds.Len(), bounds.Len()+1))
		return true
	}
	var total uint64
	for _, c := range counts.All() {
		total += c
	}
	if total != p.Count() {
		r.add(1, fmt.Sprintf("metric %q: histogram bucket counts add up to %d, its count is %d", name, total, p.Count()))
		return true
	}
	return false
}

// refuseExponential reports whether exponential histogram point p is
// refused (recording it in r): a scale below -4, or bucket and zero
// counts that do not add up to its count.
func refuseExponential(name string, p pmetric.ExponentialHistogramDataPoint, r *refusals) bool {
	if p.Flags().NoRecordedValue() {
		return false
	}
	if p.Scale() < minExponentialScale {
		r.add(1, fmt.Sprintf("metric %q: exponential histogram scale %d is below %d", name, p.Scale(), minExponentialScale))
		return true
	}
	total := p.ZeroCount()
	for _, c := range p.Positive().BucketCounts().All() {
		total += c
	}
	for _, c := range p.Negative().BucketCounts().All() {
		total += c
	}
	if total != p.Count() {
		r.add(1, fmt.Sprintf("metric %q: exponential histogram buckets and zero count add up to %d, its count is %d", name, total, p.Count()))
		return true
	}
	return false
}
