package ruler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
)

// BackfillOptions says what Backfill evaluates.
type BackfillOptions struct {
	// From and To bound the evaluation timestamps (both included).
	From, To time.Time
	// Namespace and Group, when set, choose the groups.
	Namespace, Group string
	// EvaluationInterval is the interval of a group that names none (0:
	// DefaultEvaluationInterval), as the live ruler's.
	EvaluationInterval time.Duration
	// StepsPerQuery bounds the steps of one range query (0: 1000), so
	// that one query's answer, written in batches of at most 5000
	// series, stays bounded.
	StepsPerQuery int
	// Progress, when set, is told of each group and rule done.
	Progress func(namespace, group, rule string, samples int)
}

// BackfillStats counts what Backfill wrote.
type BackfillStats struct {
	Groups, Rules, Samples int
}

// Backfill evaluates the recording rules of gs's groups (alerting rules
// are skipped) over a past range, at exactly the timestamps the live
// ruler evaluates each group at (rules.Group.EvalTimestamp: the group's
// interval, offset by the hash of its name and namespace, the "file" the
// live ruler loads it as), minus its query offset, by range queries
// through t's engine, and writes the results through t's write path. The
// rules of a group are evaluated in order over the whole range, each
// after the previous one's results are written, so that a rule reading
// an earlier rule's series reads the backfilled values, as
// `promtool tsdb create-blocks-from rules` does.
func Backfill(ctx context.Context, gs GroupStore, t Tenant, opts BackfillOptions) (BackfillStats, error) {
	var stats BackfillStats
	if opts.EvaluationInterval <= 0 {
		opts.EvaluationInterval = DefaultEvaluationInterval
	}
	if opts.StepsPerQuery <= 0 {
		opts.StepsPerQuery = 1000
	}
	if opts.To.Before(opts.From) {
		return stats, fmt.Errorf("ruler: backfill from %s to %s: the end is before the start", opts.From, opts.To)
	}
	all, err := gs.ListGroups(ctx)
	if err != nil {
		return stats, fmt.Errorf("ruler: list the rule groups: %w", err)
	}
	p := parser.NewParser(parser.Options{ExperimentalDurationExpr: true})
	nss := make([]string, 0, len(all))
	for ns := range all {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	for _, ns := range nss {
		if opts.Namespace != "" && ns != opts.Namespace {
			continue
		}
		for _, rg := range all[ns] {
			if opts.Group != "" && rg.Name != opts.Group {
				continue
			}
			iv := opts.EvaluationInterval
			if rg.Interval != 0 {
				iv = time.Duration(rg.Interval)
			}
			var offset time.Duration
			if rg.QueryOffset != nil {
				offset = time.Duration(*rg.QueryOffset)
			}
			g := rules.NewGroup(rules.GroupOptions{Name: rg.Name, File: ns, Interval: iv, Opts: &rules.ManagerOptions{Metrics: noMetrics()}})
			// Compared in milliseconds, the samples' precision: an aligned
			// timestamp has nanoseconds (the group's offset), and the one
			// in the same millisecond as --end (or --start) is in range.
			first := g.EvalTimestamp(opts.From.UnixNano())
			if first.UnixMilli() < opts.From.UnixMilli() {
				first = first.Add(iv)
			}
			stats.Groups++
			for _, r := range rg.Rules {
				if r.Record == "" {
					continue
				}
				if _, err := p.ParseExpr(r.Expr); err != nil {
					return stats, fmt.Errorf("ruler: group %q of %q, rule %s: %w", rg.Name, ns, r.Record, err)
				}
				lbls := rules.FromMaps(rg.Labels, r.Labels)
				n, err := backfillRule(ctx, t, r.Record, r.Expr, lbls, first, opts.To, iv, offset, opts.StepsPerQuery)
				stats.Samples += n
				if err != nil {
					return stats, fmt.Errorf("ruler: group %q of %q, rule %s: %w", rg.Name, ns, r.Record, err)
				}
				stats.Rules++
				if opts.Progress != nil {
					opts.Progress(ns, rg.Name, r.Record, n)
				}
			}
		}
	}
	return stats, nil
}

// backfillRule evaluates one recording rule at first, first+iv, ... up
// to to (each minus offset), in range queries of at most steps steps.
func backfillRule(ctx context.Context, t Tenant, record, expr string, lbls labels.Labels, first, to time.Time, iv, offset time.Duration, steps int) (int, error) {
	samples := 0
	for start := first; start.UnixMilli() <= to.UnixMilli(); start = start.Add(time.Duration(steps) * iv) {
		end := start.Add(time.Duration(steps-1) * iv)
		if end.UnixMilli() > to.UnixMilli() {
			end = to
		}
		q, err := t.Engine.NewRangeQuery(ctx, t.Queryable, nil, expr, start.Add(-offset), end.Add(-offset), iv)
		if err != nil {
			return samples, err
		}
		res := q.Exec(ctx)
		if res.Err != nil {
			q.Close()
			return samples, res.Err
		}
		var series []prompb.TimeSeries
		switch v := res.Value.(type) {
		case promql.Matrix:
			for _, s := range v {
				series = append(series, recorded(record, lbls, s))
				samples += len(s.Floats) + len(s.Histograms)
			}
		case promql.Scalar:
			series = append(series, prompb.TimeSeries{Labels: prompb.FromLabels(recordLabels(record, lbls, labels.EmptyLabels()), nil),
				Samples: []prompb.Sample{{Timestamp: v.T, Value: v.V}}})
			samples++
		default:
			q.Close()
			return samples, fmt.Errorf("the expression gives a %s, not a vector", res.Value.Type())
		}
		q.Close()
		if err := writeSeries(ctx, t.Write, series); err != nil {
			return samples, err
		}
	}
	return samples, nil
}

// recorded is the series a recording rule writes for one result series.
func recorded(record string, lbls labels.Labels, s promql.Series) prompb.TimeSeries {
	ts := prompb.TimeSeries{Labels: prompb.FromLabels(recordLabels(record, lbls, s.Metric), nil)}
	for _, p := range s.Floats {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.T, Value: p.F})
	}
	for _, p := range s.Histograms {
		ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(p.T, p.H))
	}
	return ts
}

// recordLabels are the labels a recording rule gives a result, as
// rules.RecordingRule.Eval sets them: the result's, the rule's over them,
// the name last.
func recordLabels(record string, lbls, metric labels.Labels) labels.Labels {
	b := labels.NewBuilder(metric)
	lbls.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
	b.Set(model.MetricNameLabel, record)
	return b.Labels()
}
