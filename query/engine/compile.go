package engine

import (
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
)

// rangeFuncs are the functions of a range selector the engine evaluates;
// the value says whether the function keeps the metric name (as
// last_over_time does, like an offset).
var rangeFuncs = map[string]bool{
	"rate": false, "increase": false, "delta": false, "irate": false, "idelta": false,
	"deriv": false, "resets": false, "changes": false,
	"sum_over_time": false, "avg_over_time": false, "min_over_time": false, "max_over_time": false,
	"count_over_time": false, "last_over_time": true, "present_over_time": false,
	"stddev_over_time": false, "stdvar_over_time": false, "quantile_over_time": false,
}

// compile turns a parsed expression into the engine's nodes, or returns
// nil and the reason (a metric label) when some part of it is not the
// engine's to evaluate. Only expressions of instant-vector type are
// taken.
func compile(expr parser.Expr, instant bool) (node, string) {
	if expr.Type() != parser.ValueTypeVector {
		return nil, "type"
	}
	return compileNode(expr, instant)
}

func compileNode(expr parser.Expr, instant bool) (node, string) {
	switch e := expr.(type) {
	case *parser.ParenExpr:
		return compileNode(e.Expr, instant)
	case *parser.VectorSelector:
		sel, ok := selectorOf(e, 0)
		if !ok {
			return nil, "selector"
		}
		return &seriesNode{sel: sel}, ""
	case *parser.Call:
		return compileCall(e, instant)
	case *parser.AggregateExpr:
		return compileAggregate(e, instant)
	case *parser.UnaryExpr:
		inner, reason := compileNode(e.Expr, instant)
		if inner == nil || e.Op == parser.ADD {
			return inner, reason
		}
		return withTransform(inner, transform{neg: true}), ""
	case *parser.BinaryExpr:
		return compileBinary(e, instant)
	}
	return nil, "expression"
}

// selectorOf is the selection of a vector selector, or false for the
// forms the engine leaves to Prometheus's (duration expressions,
// anchored and smoothed selectors).
func selectorOf(vs *parser.VectorSelector, rng int64) (*selector, bool) {
	if vs.Anchored || vs.Smoothed || vs.OriginalOffsetExpr != nil || len(vs.LabelMatchers) == 0 {
		return nil, false
	}
	s := &selector{matchers: vs.LabelMatchers, offset: vs.OriginalOffset.Milliseconds(), rng: rng, startOrEnd: vs.StartOrEnd}
	if vs.Timestamp != nil {
		ts := *vs.Timestamp
		s.at = &ts
	}
	return s, true
}

func compileCall(e *parser.Call, instant bool) (node, string) {
	name := e.Func.Name
	if keep, ok := rangeFuncs[name]; ok {
		arg := e.Args[len(e.Args)-1]
		for {
			p, ok := arg.(*parser.ParenExpr)
			if !ok {
				break
			}
			arg = p.Expr
		}
		ms, ok := arg.(*parser.MatrixSelector)
		if !ok || ms.RangeExpr != nil {
			return nil, "range"
		}
		vs, ok := ms.VectorSelector.(*parser.VectorSelector)
		if !ok {
			return nil, "range"
		}
		sel, ok := selectorOf(vs, ms.Range.Milliseconds())
		if !ok {
			return nil, "selector"
		}
		sel.fn = name
		fn := &rangeFn{name: name, kind: fnKinds()[name], rng: ms.Range.Milliseconds(), argPos: e.Args[0].PositionRange(), matrixPos: arg.PositionRange()}
		if name == "quantile_over_time" {
			phi, ok := numberOf(e.Args[0])
			if !ok {
				return nil, "parameter"
			}
			fn.param = phi
		}
		return &seriesNode{sel: sel, fn: fn, dropName: !keep}, ""
	}
	if name == "histogram_quantile" {
		phi, ok := numberOf(e.Args[0])
		if !ok {
			return nil, "parameter"
		}
		inner, reason := compileNode(e.Args[1], instant)
		if inner == nil {
			return nil, reason
		}
		return &histNode{phi: phi, inner: inner, phiPos: e.Args[0].PositionRange(), argPos: e.Args[1].PositionRange()}, ""
	}
	return nil, "function"
}

func compileAggregate(e *parser.AggregateExpr, instant bool) (node, string) {
	inner, reason := compileNode(e.Expr, instant)
	if inner == nil {
		return nil, reason
	}
	grouping := slices.Clone(e.Grouping)
	slices.Sort(grouping)
	a := &aggrNode{op: e.Op, grouping: grouping, without: e.Without, inner: inner, pos: e.PosRange}
	switch e.Op {
	case parser.SUM, parser.AVG, parser.MIN, parser.MAX, parser.COUNT, parser.GROUP:
		return a, ""
	case parser.TOPK, parser.BOTTOMK:
		// Prometheus's ties follow its input order, which is the
		// storage's (label order) only over a selection; an instant
		// answer keeps its heap's order.
		if _, ok := inner.(*seriesNode); !ok || instant {
			return nil, "aggregation"
		}
		k, ok := numberOf(e.Param)
		if !ok || math.IsNaN(k) || k >= math.MaxInt64 || k <= math.MinInt64 {
			return nil, "parameter"
		}
		a.k = k
		return a, ""
	}
	return nil, "aggregation"
}

func compileBinary(e *parser.BinaryExpr, instant bool) (node, string) {
	switch {
	case e.Op.IsSetOperator():
		return nil, "binary"
	case !e.Op.IsComparisonOperator() && !isArithmetic(e.Op):
		return nil, "binary"
	}
	if n, ok := numberOf(e.RHS); ok {
		inner, reason := compileNode(e.LHS, instant)
		if inner == nil {
			return nil, reason
		}
		return withTransform(inner, transform{op: e.Op, scalar: n, returnBool: e.ReturnBool}), ""
	}
	if n, ok := numberOf(e.LHS); ok {
		inner, reason := compileNode(e.RHS, instant)
		if inner == nil {
			return nil, reason
		}
		return withTransform(inner, transform{op: e.Op, scalar: n, swap: true, returnBool: e.ReturnBool}), ""
	}
	if e.LHS.Type() != parser.ValueTypeVector || e.RHS.Type() != parser.ValueTypeVector {
		return nil, "binary"
	}
	m := e.VectorMatching
	if m == nil || m.Card != parser.CardOneToOne || len(m.Include) > 0 || m.FillValues.LHS != nil || m.FillValues.RHS != nil {
		return nil, "matching"
	}
	lhs, reason := compileNode(e.LHS, instant)
	if lhs == nil {
		return nil, reason
	}
	rhs, reason := compileNode(e.RHS, instant)
	if rhs == nil {
		return nil, reason
	}
	return &binNode{op: e.Op, returnBool: e.ReturnBool, on: m.On, matching: slices.Clone(m.MatchingLabels), lhs: lhs, rhs: rhs}, ""
}

// isArithmetic reports the operators that change a series' schema (drop
// its metric name).
func isArithmetic(op parser.ItemType) bool {
	switch op {
	case parser.ADD, parser.SUB, parser.MUL, parser.DIV, parser.MOD, parser.POW, parser.ATAN2:
		return true
	}
	return false
}

// numberOf is the value of a number literal (in parentheses, negated).
func numberOf(e parser.Expr) (float64, bool) {
	switch e := e.(type) {
	case *parser.NumberLiteral:
		return e.Val, true
	case *parser.ParenExpr:
		return numberOf(e.Expr)
	case *parser.UnaryExpr:
		v, ok := numberOf(e.Expr)
		if e.Op == parser.SUB {
			v = -v
		}
		return v, ok
	}
	return 0, false
}

// withTransform applies t to n's output: within a seriesNode, so that
// aggregations above still fold series one at a time.
func withTransform(n node, t transform) node {
	if s, ok := n.(*seriesNode); ok {
		c := *s
		c.ops = append(slices.Clone(s.ops), t)
		return &c
	}
	return &transformNode{inner: n, t: t}
}

// selector is one selection of series: matchers, offset, @, and the range
// of a range selector (0 for an instant selector).
type selector struct {
	matchers   []*labels.Matcher
	offset     int64  // ms, the query's offset
	at         *int64 // ms, @'s time
	startOrEnd parser.ItemType
	rng        int64  // ms
	fn         string // the function of a range selector, for storage hints
}

// rangeFn is a function of a range selector.
type rangeFn struct {
	name      string
	kind      fnKind
	rng       int64   // ms
	param     float64 // quantile_over_time's φ
	argPos    posrange.PositionRange
	matrixPos posrange.PositionRange
}
