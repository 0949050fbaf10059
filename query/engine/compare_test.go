package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// compareEngines runs one query on ref and on own over st and describes
// how their answers differ ("" when they agree): the same error, the
// same annotations, the same series, timestamps and values (floats
// within 1e-12 relative, or 1e-12 absolute near zero; NaN equals NaN).
func compareEngines(t testing.TB, ref, own promql.QueryEngine, st storage.Queryable, expr string, start, end time.Time, step time.Duration) string {
	t.Helper()
	run := func(ng promql.QueryEngine) (*promql.Result, promql.Query, error) {
		var (
			q   promql.Query
			err error
		)
		ctx := context.Background()
		if step == 0 {
			q, err = ng.NewInstantQuery(ctx, st, nil, expr, start)
		} else {
			q, err = ng.NewRangeQuery(ctx, st, nil, expr, start, end, step)
		}
		if err != nil {
			return nil, nil, err
		}
		return q.Exec(ctx), q, nil
	}
	want, wq, werr := run(ref)
	got, gq, gerr := run(own)
	if wq != nil {
		defer wq.Close()
	}
	if gq != nil {
		defer gq.Close()
	}
	if werr != nil || gerr != nil {
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			return fmt.Sprintf("new query: want error %v, got %v", werr, gerr)
		}
		return ""
	}
	if fmt.Sprint(want.Err) != fmt.Sprint(got.Err) {
		return fmt.Sprintf("want error %v, got %v (path %s)", want.Err, got.Err, Path(gq))
	}
	if w, g := annotationStrings(want.Warnings), annotationStrings(got.Warnings); !slices.Equal(w, g) {
		return fmt.Sprintf("want annotations %q, got %q (path %s)", w, g, Path(gq))
	}
	if want.Err != nil {
		return ""
	}
	if d := diffValues(want.Value, got.Value); d != "" {
		return d + " (path " + Path(gq) + ")"
	}
	return ""
}

func annotationStrings(a annotations.Annotations) []string {
	var out []string
	for _, err := range a {
		out = append(out, err.Error())
	}
	slices.Sort(out)
	return out
}

func diffValues(want, got any) string {
	switch w := want.(type) {
	case promql.Matrix:
		g, ok := got.(promql.Matrix)
		if !ok {
			return fmt.Sprintf("want a matrix, got %T", got)
		}
		if len(w) != len(g) {
			return fmt.Sprintf("want %d series, got %d:\nwant %s\ngot  %s", len(w), len(g), seriesNames(w), seriesNames(g))
		}
		for i := range w {
			if d := diffSeries(w[i], g[i]); d != "" {
				return d
			}
		}
	case promql.Vector:
		g, ok := got.(promql.Vector)
		if !ok {
			return fmt.Sprintf("want a vector, got %T", got)
		}
		if len(w) != len(g) {
			return fmt.Sprintf("want %d samples, got %d:\nwant %v\ngot  %v", len(w), len(g), w, g)
		}
		w, g = slices.Clone(w), slices.Clone(g)
		byLabels := func(a, b promql.Sample) int { return labels.Compare(a.Metric, b.Metric) }
		slices.SortStableFunc(w, byLabels)
		slices.SortStableFunc(g, byLabels)
		for i := range w {
			if !labels.Equal(w[i].Metric, g[i].Metric) || w[i].T != g[i].T || (w[i].H == nil) != (g[i].H == nil) ||
				w[i].H != nil && !w[i].H.Equals(g[i].H) || !closeEnough(w[i].F, g[i].F) {
				return fmt.Sprintf("sample %d: want %v, got %v", i, w[i], g[i])
			}
		}
	case promql.Scalar:
		g, ok := got.(promql.Scalar)
		if !ok || w.T != g.T || !closeEnough(w.V, g.V) {
			return fmt.Sprintf("want scalar %v, got %v", want, got)
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("want %v, got %v", want, got)
		}
	}
	return ""
}

func seriesNames(m promql.Matrix) string {
	var b strings.Builder
	for _, s := range m {
		fmt.Fprintf(&b, "%s(%d) ", s.Metric, len(s.Floats)+len(s.Histograms))
	}
	return b.String()
}

func diffSeries(w, g promql.Series) string {
	if !labels.Equal(w.Metric, g.Metric) {
		return fmt.Sprintf("want series %s, got %s", w.Metric, g.Metric)
	}
	if len(w.Floats) != len(g.Floats) || len(w.Histograms) != len(g.Histograms) {
		return fmt.Sprintf("%s: want %d floats %d histograms, got %d, %d:\nwant %v\ngot  %v", w.Metric, len(w.Floats), len(w.Histograms), len(g.Floats), len(g.Histograms), w.Floats, g.Floats)
	}
	for i := range w.Floats {
		if w.Floats[i].T != g.Floats[i].T || !closeEnough(w.Floats[i].F, g.Floats[i].F) {
			return fmt.Sprintf("%s: point %d: want %v, got %v", w.Metric, i, w.Floats[i], g.Floats[i])
		}
	}
	for i := range w.Histograms {
		if w.Histograms[i].T != g.Histograms[i].T || !w.Histograms[i].H.Equals(g.Histograms[i].H) {
			return fmt.Sprintf("%s: histogram %d: want %v, got %v", w.Metric, i, w.Histograms[i], g.Histograms[i])
		}
	}
	return ""
}

// closeEnough: equal, both NaN, or within 1e-12 relative (1e-12 absolute
// near zero).
func closeEnough(a, b float64) bool {
	switch {
	case a == b, math.IsNaN(a) && math.IsNaN(b):
		return true
	case math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b):
		return false
	}
	d := math.Abs(a - b)
	return d <= 1e-12 || d <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}
