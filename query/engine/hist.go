package engine

import (
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser/posrange"
	"github.com/prometheus/prometheus/util/annotations"
)

// histNode is histogram_quantile(φ, v) over classic histograms: the
// series of v grouped by their labels but le, each an upper bound.
type histNode struct {
	phi            float64
	inner          node
	phiPos, argPos posrange.PositionRange
}

func (n *histNode) eval(ev *evaluator) ([]*stepSeries, error) {
	if math.IsNaN(n.phi) || n.phi < 0 || n.phi > 1 {
		ev.addAnnotation(annotations.NewInvalidQuantileWarning(n.phi, n.phiPos))
	}
	in, err := n.inner.eval(ev)
	if err != nil {
		return nil, err
	}
	type member struct {
		s     *stepSeries
		upper float64
	}
	type hgroup struct {
		out     *stepSeries
		members []member
	}
	var (
		groups []*hgroup
		byKey  = map[string]*hgroup{}
		buf    []byte
	)
	for _, s := range in {
		le := s.labels.Get(labels.BucketLabel)
		upper, err := strconv.ParseFloat(le, 64)
		if err != nil {
			ev.addAnnotation(annotations.NewBadBucketLabelWarning("", le, n.argPos))
			continue
		}
		buf = s.labels.BytesWithoutLabels(buf, labels.BucketLabel)
		g := byKey[string(buf)]
		if g == nil {
			ls := labels.NewBuilder(s.labels).Del(labels.BucketLabel).Labels()
			g = &hgroup{out: newStepSeries(dropMetadata(ls), ev.steps)}
			byKey[string(buf)] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, member{s: s, upper: upper})
	}
	var buckets promql.Buckets
	invariant := stepInvariant(n.inner)
	out := make([]*stepSeries, 0, len(groups))
	for _, g := range groups {
		found := false
		for step := range ev.steps {
			buckets = buckets[:0]
			for _, m := range g.members {
				if m.s.has[step] {
					buckets = append(buckets, promql.Bucket{UpperBound: m.upper, Count: m.s.vals[step]})
				}
			}
			if len(buckets) == 0 {
				continue
			}
			q, forced, _, minBucket, maxBucket, maxDiff := promql.BucketQuantile(n.phi, buckets)
			if forced && (!invariant || step == 0) {
				// A step-invariant input (@) is evaluated once, at the
				// start, by Prometheus's engine.
				ev.addAnnotation(annotations.NewHistogramQuantileForcedMonotonicityInfo("", n.argPos, ev.stepTime(step), minBucket, maxBucket, maxDiff))
			}
			g.out.vals[step], g.out.has[step] = q, true
			found = true
		}
		if found {
			out = append(out, g.out)
		}
	}
	if err := checkUnique(out); err != nil {
		return nil, err
	}
	return out, nil
}

// stepInvariant reports whether every selector under n has an @: the
// same value at every step.
func stepInvariant(n node) bool {
	switch n := n.(type) {
	case *seriesNode:
		return n.sel.at != nil || n.sel.startOrEnd != 0
	case *aggrNode:
		return stepInvariant(n.inner)
	case *transformNode:
		return stepInvariant(n.inner)
	case *histNode:
		return stepInvariant(n.inner)
	case *binNode:
		return stepInvariant(n.lhs) && stepInvariant(n.rhs)
	}
	return false
}
