// Package otlpgen builds OpenTelemetry metrics for tests: resources,
// gauges, sums and histograms from plain values, so that a test states
// its request in a few lines.
package otlpgen

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Point is a number data point.
type Point struct {
	T     time.Time
	V     float64
	Attrs map[string]any
	// NoValue flags the point no-recorded-value (a staleness marker).
	NoValue bool
}

// Resource appends a resource of attrs with one scope to md and returns
// the scope's metrics.
func Resource(md pmetric.Metrics, attrs map[string]any) pmetric.MetricSlice {
	rm := md.ResourceMetrics().AppendEmpty()
	if err := rm.Resource().Attributes().FromRaw(attrs); err != nil {
		panic(err) // a value of a type pcommon does not take: the test's own mistake
	}
	return rm.ScopeMetrics().AppendEmpty().Metrics()
}

// Gauge appends a gauge of points.
func Gauge(ms pmetric.MetricSlice, name, unit string, points ...Point) pmetric.Metric {
	m := newMetric(ms, name, unit)
	addPoints(m.SetEmptyGauge().DataPoints(), points)
	return m
}

// Sum appends a sum of points, monotonic or not, of temporality tempo.
func Sum(ms pmetric.MetricSlice, name, unit string, monotonic bool, tempo pmetric.AggregationTemporality, points ...Point) pmetric.Metric {
	m := newMetric(ms, name, unit)
	s := m.SetEmptySum()
	s.SetIsMonotonic(monotonic)
	s.SetAggregationTemporality(tempo)
	addPoints(s.DataPoints(), points)
	return m
}

// Histogram appends a cumulative explicit-bucket histogram of one point
// at t: bounds, counts (one more than bounds), count and sum as given,
// whether they agree or not.
func Histogram(ms pmetric.MetricSlice, name, unit string, t time.Time, bounds []float64, counts []uint64, count uint64, sum float64) pmetric.Metric {
	m := newMetric(ms, name, unit)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	p := h.DataPoints().AppendEmpty()
	p.SetTimestamp(pcommon.NewTimestampFromTime(t))
	p.ExplicitBounds().FromRaw(bounds)
	p.BucketCounts().FromRaw(counts)
	p.SetCount(count)
	p.SetSum(sum)
	return m
}

func newMetric(ms pmetric.MetricSlice, name, unit string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	return m
}

func addPoints(dps pmetric.NumberDataPointSlice, points []Point) {
	for _, pt := range points {
		p := dps.AppendEmpty()
		p.SetTimestamp(pcommon.NewTimestampFromTime(pt.T))
		p.SetDoubleValue(pt.V)
		if pt.Attrs != nil {
			if err := p.Attributes().FromRaw(pt.Attrs); err != nil {
				panic(err)
			}
		}
		if pt.NoValue {
			p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
	}
}
