package engine

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestCompile pins which expressions the engine takes and which it hands
// to Prometheus's engine from the parse (docs/query-engine.md).
func TestCompile(t *testing.T) {
	p := parser.NewParser(parser.Options{ExperimentalDurationExpr: true, EnableExtendedRangeSelectors: true, EnableExperimentalFunctions: true})
	for _, tc := range []struct {
		expr    string
		instant bool
		reason  string // "" when the engine takes it
	}{
		{expr: `x`},
		{expr: `x offset -5m`},
		{expr: `x @ 100`},
		{expr: `x @ end()`},
		{expr: `rate(x[5m])`},
		{expr: `rate((x[5m]))`},
		{expr: `quantile_over_time(0.9, x[5m])`},
		{expr: `quantile_over_time(scalar(y), x[5m])`, reason: "parameter"},
		{expr: `sum by (a) (rate(x[5m]))`},
		{expr: `avg without (a) (x)`},
		{expr: `count(max by (b) (x))`},
		{expr: `topk(3, rate(x[5m]))`},
		{expr: `topk(3, rate(x[5m]))`, instant: true, reason: "aggregation"},
		{expr: `topk(3, sum(x))`, reason: "aggregation"},
		{expr: `quantile(0.5, x)`, reason: "aggregation"},
		{expr: `histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))`},
		{expr: `x * 2 > bool 3`},
		{expr: `-x`},
		{expr: `2 ^ x`},
		{expr: `x / on (a) y`},
		{expr: `x / ignoring (a) y`},
		{expr: `x / on (a) group_left y`, reason: "matching"},
		{expr: `x and y`, reason: "binary"},
		{expr: `1 + 1`, reason: "type"},
		{expr: `scalar(x)`, reason: "type"},
		{expr: `label_replace(x, "a", "b", "c", "d")`, reason: "function"},
		{expr: `sum(label_replace(x, "a", "b", "c", "d"))`, reason: "function"},
		{expr: `rate(x[5m:1m])`, reason: "range"},
		{expr: `rate(x[5m] anchored)`, reason: "selector"},
		{expr: `rate(x[5m+1m])`, reason: "range"},
		{expr: `x offset (1m+1m)`, reason: "selector"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := p.ParseExpr(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			n, reason := compile(e, tc.instant)
			if (n == nil) != (tc.reason != "") || reason != tc.reason {
				t.Errorf("compile: node %T, reason %q; want reason %q", n, reason, tc.reason)
			}
		})
	}
}
