package main

import (
	"strings"
	"testing"
)

// TestCardinalityCheck: an answer built from the generator's own counts
// passes; one count off, a ranking out of order, or a pair left out is
// reported.
func TestCardinalityCheck(t *testing.T) {
	t.Parallel()
	const n, top = 1000, 3
	want := countGenerated(n)
	if want.series != n || want.labels != 10*n || want.metrics["load_metric_7"] != n/100 || want.values["series"] != n {
		t.Fatalf("counts of %d series: %d series, %d labels, %v", n, want.series, want.labels, want.metrics["load_metric_7"])
	}
	good := func() cardAnswer {
		var a cardAnswer
		a.Data.TotalSeries, a.Data.TotalLabelValuePairs = want.series, want.labels
		a.Data.HeadStats = &struct {
			NumSeries     uint64 `json:"numSeries"`
			NumLabelPairs uint64 `json:"numLabelPairs"`
		}{want.series, uint64(len(want.pairs))}
		a.Data.Metrics = []cardStat{{"load_metric_0", 10}, {"load_metric_1", 10}, {"load_metric_10", 10}}
		a.Data.Labels = []cardStat{{"__name__", n}, {"cpu", n}, {"datacenter", n}}
		a.Data.Values = []cardStat{{"series", n}, {"__name__", 100}, {"rack", 40}}
		a.Data.Pairs = []cardStat{{"env=production", n}, {"job=node", n}, {"datacenter=dc-0", 334}}
		a.Data.Memory = []cardStat{{"instance", want.memory["instance"]}, {"__name__", want.memory["__name__"]}, {"datacenter", want.memory["datacenter"]}}
		return a
	}
	if bad := want.check(good(), top, true); len(bad) > 0 {
		t.Fatalf("the generator's own counts: %v", bad)
	}
	for _, tc := range []struct {
		name string
		edit func(*cardAnswer)
		msg  string
	}{
		{"total", func(a *cardAnswer) { a.Data.TotalSeries-- }, "totalSeries"},
		{"metric count", func(a *cardAnswer) { a.Data.Metrics[1].Value++ }, "seriesCountByMetricName"},
		{"pairs order", func(a *cardAnswer) { a.Data.Pairs[0], a.Data.Pairs[2] = a.Data.Pairs[2], a.Data.Pairs[0] }, "seriesCountByLabelValuePair entry"},
		{"pair left out", func(a *cardAnswer) { a.Data.Pairs[1] = cardStat{"datacenter=dc-1", 333} }, "leaves out"},
		{"head stats", func(a *cardAnswer) { a.Data.HeadStats = nil }, "headStats"},
	} {
		a := good()
		tc.edit(&a)
		bad := want.check(a, top, true)
		if !strings.Contains(strings.Join(bad, "\n"), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.name, bad, tc.msg)
		}
	}
}
