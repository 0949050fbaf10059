package otlp

import (
	"fmt"
	"strings"

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
// a temporality other than cumulative (delta unless nativeDelta); and
// exponential histogram points of a scale below -4.
func filter(md pmetric.Metrics, nativeDelta bool, r *refusals) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			sms.At(j).Metrics().RemoveIf(func(m pmetric.Metric) bool {
				return refuse(m, nativeDelta, r)
			})
		}
	}
}

// refuse reports whether metric m is refused whole (recording it in r),
// after taking out its points that are refused alone.
func refuse(m pmetric.Metric, nativeDelta bool, r *refusals) bool {
	var temporality pmetric.AggregationTemporality
	points := 0
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
	if m.Type() == pmetric.MetricTypeExponentialHistogram {
		m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool {
			if p.Scale() >= minExponentialScale {
				return false
			}
			r.add(1, fmt.Sprintf("metric %q: exponential histogram scale %d is below %d", m.Name(), p.Scale(), minExponentialScale))
			return true
		})
	}
	return false
}
