package engine

// The differential test: random queries of the shapes the engine supports
// (and some it does not), over generated data written through promhbase's
// write path, answered by Prometheus's engine and by this one; the answers
// must be the same.
//
//	go test -count=1 -run TestDifferential ./query/engine
//	PROMHBASE_DIFF_QUERIES=50000 go test -count=1 -timeout 2h -run TestDifferential ./query/engine
//	PROMHBASE_DIFF_SEED=7 (another data set and query sequence)
//	PROMHBASE_DIFF_VERBOSE=1 (log every query)
//	PROMHBASE_DIFF_MAX_FAILURES=N (stop a data variant after N mismatches: 10)

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// The PromQL options promhbase serves with by default (promapi.New
// without --enable-feature).
var (
	diffParser   = parser.NewParser(parser.Options{ExperimentalDurationExpr: true})
	diffLookback = 5 * time.Minute
)

func newPrometheusEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:               50_000_000,
		Timeout:                  time.Minute,
		LookbackDelta:            diffLookback,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		Parser:                   diffParser,
	})
}

// dataVariant is how the written rows are left before the queries.
type dataVariant struct {
	name string
	// compact: rows compacted into OpenTSDB's compacted column; settle:
	// the embedded store's rows settled (flushed from its row buffer into
	// the dense form of compacted rows, the generic one of others);
	// compactHours: only these hours (0-based) compacted.
	compact, settle bool
	compactHours    []int
	// iterators: the engine reads through the Queryable's series
	// iterators, as over other queryables (federation, downsampled
	// selections), not query.FloatSelection.
	iterators bool
}

var diffVariants = []dataVariant{
	{name: "raw"},
	{name: "compacted", compact: true},
	{name: "settled", compact: true, settle: true},
	{name: "mixed", settle: true, compactHours: []int{0, 2}},
	{name: "iterators", compactHours: []int{1, 3}, iterators: true},
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

// TestDifferential: the engine's answers equal Prometheus's, and most queries of
// the supported shapes take the engine's own path.
func TestDifferential(t *testing.T) {
	t.Parallel()
	total := envInt(t, "PROMHBASE_DIFF_QUERIES", 8000)
	seed := uint64(envInt(t, "PROMHBASE_DIFF_SEED", 1))
	verbose := os.Getenv("PROMHBASE_DIFF_VERBOSE") != ""
	data := genData(seed)
	samples := 0
	for _, s := range data {
		samples += len(s.Samples)
	}
	t.Logf("seed %d: %d series, %d samples", seed, len(data), samples)
	for vi, v := range diffVariants {
		if v.settle && testbackend.Name() != "embedded" {
			t.Logf("%s: settled rows are the embedded store's; not on %s", v.name, testbackend.Name())
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			t.Parallel() // data is only read; each variant has its own store, engines and generator
			qy := diffQueryable(t, data, v)
			if v.iterators {
				qy = plainQueryable{qy}
			}
			d := &differ{t: t, ref: newPrometheusEngine(), verbose: verbose,
				own: New(Options{Fallback: newPrometheusEngine(), Parser: diffParser, LookbackDelta: diffLookback, Timeout: time.Minute, MaxSamples: 50_000_000}),
				qy:  qy, kinds: map[string]int{}, maxFailures: envInt(t, "PROMHBASE_DIFF_MAX_FAILURES", 10)}
			g := &queryGen{rng: newRand(seed*1000 + uint64(vi))}
			n := total / len(diffVariants)
			began := time.Now()
			for range n {
				if d.failed >= d.maxFailures {
					break
				}
				d.check(g.next())
			}
			d.report(time.Since(began))
		})
	}
}

// diffQueryable writes data through the write path into a fresh store,
// leaves the rows as v says, and returns the query package's Queryable
// over them.
func diffQueryable(t testing.TB, data []prompb.TimeSeries, v dataVariant) storage.Queryable {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stk := teststack.New(t, teststack.Options{})
	st, tb, layout := stk.Store, stk.Tables, stk.Layout
	// Several requests, each with an hour of every series, as a sender
	// catching up would send them.
	for h := int64(0); h <= diffHours; h++ {
		var req prompb.WriteRequest
		for _, s := range data {
			part := prompb.TimeSeries{Labels: s.Labels}
			for _, p := range s.Samples {
				if (p.Timestamp-diffStart)/3600_000 == h || (h == 0 && p.Timestamp < diffStart) {
					part.Samples = append(part.Samples, p)
				}
			}
			if len(part.Samples) > 0 {
				req.Timeseries = append(req.Timeseries, part)
			}
		}
		if len(req.Timeseries) == 0 {
			continue
		}
		res := stk.Write(req.Timeseries...)
		if len(res.Rejected) > 0 {
			t.Fatalf("write rejected %v", res.Rejected)
		}
	}
	c := compact.New(st, compact.Options{DataTable: tb.Data, UIDTable: tb.UID, Layout: layout, Concurrency: 2,
		Now: func() time.Time { return time.UnixMilli(diffEnd + 4*3600_000) }})
	compactRange := func(from, to int64) {
		stats, err := c.CompactRange(ctx, time.UnixMilli(from), time.UnixMilli(to), nil)
		if err != nil {
			t.Fatalf("compact: %v", err)
		}
		if stats.Errors > 0 {
			t.Fatalf("compact: %s", stats)
		}
	}
	if v.compact {
		compactRange(diffStart-3600_000, diffEnd+3600_000)
	}
	for _, h := range v.compactHours {
		compactRange(diffStart+int64(h)*3600_000, diffStart+int64(h+1)*3600_000-1)
	}
	if v.settle {
		es := st.(*embedded.Store)
		if err := es.Reclaim(ctx); err != nil {
			t.Fatal(err)
		}
		if err := es.CompactAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// What the rows hold now: cells per row, packed cells.
	sc := st.Scan(ctx, store.ScanRequest{Table: tb.Data, Family: "t", Packed: cells.PackedFormat})
	rows, cells, packed := 0, 0, 0
	for sc.Next() {
		rows++
		for _, c := range sc.Row().Cells {
			cells++
			if c.Packed() {
				packed++
			}
		}
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d rows, %d cells, %d packed", v.name, rows, cells, packed)
	if v.settle && v.compact && packed == 0 {
		t.Errorf("no packed cell after settling: the variant does not test the dense form")
	}
	if v.compact && !v.settle && cells > rows {
		t.Errorf("%d cells in %d rows after compaction", cells, rows)
	}
	// A reader with its own UID caches, as another process would be,
	// listing metric names at most every 10 s (the default).
	return stk.NewQuerier(func(o *query.Options) { o.MetricNamesTTL = 0 }).Storage()
}

// plainQueryable is a storage.Queryable and nothing more.
type plainQueryable struct{ storage.Queryable }

// outcome is one engine's answer to a query.
type outcome struct {
	// stage of the error: "create" (NewInstantQuery/NewRangeQuery),
	// "exec", or "" for none.
	stage, err    string
	val           parser.Value
	warns, infos  []string
	path          string
	evalDurations time.Duration
}

func runQuery(eng promql.QueryEngine, qy storage.Queryable, gq genQuery) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		q   promql.Query
		err error
	)
	opts := promql.NewPrometheusQueryOpts(false, gq.lookback)
	if gq.instant {
		q, err = eng.NewInstantQuery(ctx, qy, opts, gq.expr, time.UnixMilli(gq.start))
	} else {
		q, err = eng.NewRangeQuery(ctx, qy, opts, gq.expr, time.UnixMilli(gq.start), time.UnixMilli(gq.end), time.Duration(gq.step)*time.Millisecond)
	}
	if err != nil {
		return outcome{stage: "create", err: err.Error()}
	}
	defer q.Close()
	began := time.Now()
	res := q.Exec(ctx)
	o := outcome{evalDurations: time.Since(began)}
	if _, ok := eng.(*Engine); ok {
		o.path = Path(q)
	}
	if res.Err != nil {
		o.stage, o.err = "exec", res.Err.Error()
	}
	o.val = copyValue(res.Value)
	o.warns, o.infos = res.Warnings.AsStrings(gq.expr, 0, 0)
	sort.Strings(o.warns)
	sort.Strings(o.infos)
	return o
}

// copyValue copies what Close hands back to the engine's pools.
func copyValue(v parser.Value) parser.Value {
	switch v := v.(type) {
	case promql.Matrix:
		out := make(promql.Matrix, len(v))
		for i, s := range v {
			out[i] = promql.Series{Metric: s.Metric, Floats: slices.Clone(s.Floats), Histograms: slices.Clone(s.Histograms), DropName: s.DropName}
		}
		return out
	case promql.Vector:
		return slices.Clone(v)
	}
	return v
}

// differ runs queries on both engines and collects the differences.
type differ struct {
	t        *testing.T
	ref, own promql.QueryEngine
	qy       storage.Queryable
	verbose  bool

	queries, supported, ownPath, ownAll int
	errors, empty, inexact, reordered   int
	annoCounts                          int
	refTime, ownTime                    time.Duration
	failed, maxFailures                 int
	kinds                               map[string]int // mismatch kinds: count
}

// orderDependent says whether the difference comes from the order of the
// series the storage gives, which is not fixed: own is Prometheus's answer
// over the series sorted by labels (ascending or descending), or both
// engines answer the same over each of those orders.
func (d *differ) orderDependent(gq genQuery, own outcome) bool {
	if _, ok := compareOutcomes(gq, runQuery(d.ref, d.qy, gq), own, true, new(int)); ok {
		return true
	}
	for _, desc := range []bool{false, true} {
		ref := runQuery(d.ref, orderedQueryable{Queryable: d.qy, desc: desc}, gq)
		if _, ok := compareOutcomes(gq, ref, own, true, new(int)); ok {
			return true
		}
	}
	for _, desc := range []bool{false, true} {
		qy := orderedQueryable{Queryable: d.qy, desc: desc}
		if _, ok := compareOutcomes(gq, runQuery(d.ref, qy, gq), runQuery(d.own, qy, gq), true, new(int)); !ok {
			return false
		}
	}
	return true
}

// normalizeErr leaves out of an error what depends on the order of the
// series: the labels of a duplicate-series error, and which of the
// matching errors came first.
func normalizeErr(e string) string {
	if strings.HasPrefix(e, "found duplicate series for the match group") || strings.HasPrefix(e, "multiple matches for labels") {
		return "binary operation matching error"
	}
	return e
}

// tieEqual compares the answers of a query whose outermost node is topk,
// bottomk, sort or sort_desc as the multisets of values kept per group
// (topk, bottomk) and step; applies is false for other queries.
func tieEqual(expr string, ref, own parser.Value) (ok, applies bool) {
	e, err := diffParser.ParseExpr(expr)
	if err != nil {
		return false, false
	}
	for {
		p, isParen := e.(*parser.ParenExpr)
		if !isParen {
			break
		}
		e = p.Expr
	}
	var grouping []string
	without := false
	switch n := e.(type) {
	case *parser.AggregateExpr:
		if n.Op != parser.TOPK && n.Op != parser.BOTTOMK {
			return false, false
		}
		grouping, without = n.Grouping, n.Without
	case *parser.Call:
		if n.Func.Name != "sort" && n.Func.Name != "sort_desc" {
			return false, false
		}
	default:
		return false, false
	}
	key := func(l labels.Labels) string {
		if without {
			return labels.NewBuilder(l).Del(grouping...).Del(model.MetricNameLabel).Labels().String()
		}
		return labels.NewBuilder(l).Keep(grouping...).Labels().String()
	}
	// group and time -> values
	collect := func(v parser.Value) map[string][]float64 {
		out := map[string][]float64{}
		switch v := v.(type) {
		case promql.Vector:
			for _, s := range v {
				k := key(s.Metric) + "@" + strconv.FormatInt(s.T, 10)
				out[k] = append(out[k], s.F)
			}
		case promql.Matrix:
			for _, s := range v {
				for _, p := range s.Floats {
					k := key(s.Metric) + "@" + strconv.FormatInt(p.T, 10)
					out[k] = append(out[k], p.F)
				}
			}
		}
		for _, vs := range out {
			sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] || (math.IsNaN(vs[i]) && !math.IsNaN(vs[j])) })
		}
		return out
	}
	if fmt.Sprintf("%T", ref) != fmt.Sprintf("%T", own) {
		return false, true
	}
	rm, om := collect(ref), collect(own)
	if len(rm) != len(om) {
		return false, true
	}
	for k, rv := range rm {
		ov := om[k]
		if len(ov) != len(rv) {
			return false, true
		}
		for i := range rv {
			if !sameFloat(rv[i], ov[i], cmpTolerance) {
				return false, true
			}
		}
	}
	return true, true
}

// diffResult is a difference between the two answers.
type diffResult struct {
	kind   string // errors, type, series, order, timestamps, values, annotations
	detail string
	// badT is a time (ms) where the answers differ, for range queries;
	// -1 when none is known.
	badT int64
}

func (d *differ) check(gq genQuery) {
	d.queries++
	ref := runQuery(d.ref, d.qy, gq)
	own := runQuery(d.own, d.qy, gq)
	d.refTime += ref.evalDurations
	d.ownTime += own.evalDurations
	if gq.supported {
		d.supported++
		if own.path == "promhbase" {
			d.ownPath++
		}
	}
	if own.path == "promhbase" {
		d.ownAll++
	}
	if ref.err != "" {
		d.errors++
	} else if valueLen(ref.val) == 0 {
		d.empty++
	}
	if d.verbose {
		d.t.Logf("%s %s path=%s err=%q n=%d", gq.expr, timesOf(gq), own.path, ref.err, valueLen(ref.val))
	}
	res, ok := compareOutcomes(gq, ref, own, false, &d.inexact)
	if ok {
		if !slices.Equal(ref.infos, own.infos) {
			d.annoCounts++
		}
		return
	}
	if d.orderDependent(gq, own) {
		d.reordered++
		if d.verbose {
			d.t.Logf("accepted: Prometheus's answer over another order of the series (%s): %s %s", res.kind, gq.expr, timesOf(gq))
		}
		return
	}
	d.failed++
	d.kinds[res.kind]++
	small := d.shrink(gq, res)
	msg := fmt.Sprintf("MISMATCH (%s) path=%s\n  query: %s\n  %s\n%s", res.kind, own.path, gq.expr, timesOf(gq), indent(res.detail))
	if small.expr != gq.expr || small.instant != gq.instant {
		sref, sown := runQuery(d.ref, d.qy, small), runQuery(d.own, d.qy, small)
		sres, _ := compareOutcomes(small, sref, sown, false, new(int))
		msg += fmt.Sprintf("  smallest found (%s) path=%s:\n    query: %s\n    %s\n%s", sres.kind, sown.path, small.expr, timesOf(small), indent(indent(sres.detail)))
	}
	d.t.Error(msg)
}

func (d *differ) report(took time.Duration) {
	share := 0.0
	if d.supported > 0 {
		share = float64(d.ownPath) / float64(d.supported)
	}
	d.t.Logf("%d queries in %v (eval: prometheus %v, promhbase %v): %d of the supported shapes, %d (%.1f%%) of them on the own path; %d on the own path in all; %d errors, %d empty; %d answers equal within tolerance but not bit for bit; %d equal to Prometheus's over another order of the series only; %d differing only in the sample count of histogram_quantile's monotonicity info",
		d.queries, took.Round(time.Millisecond), d.refTime.Round(time.Millisecond), d.ownTime.Round(time.Millisecond),
		d.supported, d.ownPath, 100*share, d.ownAll, d.errors, d.empty, d.inexact, d.reordered, d.annoCounts)
	if len(d.kinds) > 0 {
		d.t.Logf("mismatches by kind: %v", d.kinds)
	}
	if d.failed >= d.maxFailures {
		d.t.Errorf("stopped after %d mismatches", d.failed)
	}
	if d.supported >= 20 && share < 0.6 {
		d.t.Errorf("only %d of %d queries of the supported shapes (%.1f%%) took the own path, want at least 60%%", d.ownPath, d.supported, 100*share)
	}
}

func timesOf(gq genQuery) string {
	lb := ""
	if gq.lookback > 0 {
		lb = fmt.Sprintf(", lookback_delta %v", gq.lookback)
	}
	if gq.instant {
		return fmt.Sprintf("instant at %s (%d)%s", time.UnixMilli(gq.start).UTC().Format(time.RFC3339Nano), gq.start, lb)
	}
	return fmt.Sprintf("range %s .. %s step %v (%d .. %d)%s", time.UnixMilli(gq.start).UTC().Format(time.RFC3339Nano),
		time.UnixMilli(gq.end).UTC().Format(time.RFC3339Nano), time.Duration(gq.step)*time.Millisecond, gq.start, gq.end, lb)
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

func valueLen(v parser.Value) int {
	switch v := v.(type) {
	case promql.Matrix:
		return len(v)
	case promql.Vector:
		return len(v)
	case nil:
		return 0
	}
	return 1
}

// exactFuncs and exactAggs give answers that must be equal bit for bit
// (as selectors, comparisons, offsets and subqueries); other functions,
// aggregations and arithmetic within 1e-12.
var exactFuncs = map[string]bool{
	"min_over_time": true, "max_over_time": true, "count_over_time": true, "last_over_time": true, "present_over_time": true,
	"changes": true, "resets": true, "label_replace": true, "label_join": true, "absent": true, "absent_over_time": true,
	"sort": true, "sort_desc": true, "timestamp": true, "vector": true, "scalar": true, "abs": true, "ceil": true, "floor": true,
	"clamp_min": true, "clamp_max": true, "clamp": true, "time": true,
}

var exactAggs = map[parser.ItemType]bool{
	parser.MIN: true, parser.MAX: true, parser.COUNT: true, parser.GROUP: true, parser.TOPK: true, parser.BOTTOMK: true,
	parser.COUNT_VALUES: true,
}

// queryTraits returns whether the query's values must be bit-identical,
// and whether its outermost node orders an instant vector (topk,
// bottomk, sort).
func queryTraits(expr string) (exact, ordered bool) {
	e, err := diffParser.ParseExpr(expr)
	if err != nil {
		return true, false
	}
	exact = true
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.Call:
			if !exactFuncs[n.Func.Name] {
				exact = false
			}
		case *parser.AggregateExpr:
			if !exactAggs[n.Op] {
				exact = false
			}
		case *parser.BinaryExpr:
			if !n.Op.IsComparisonOperator() && !n.Op.IsSetOperator() {
				exact = false
			}
		}
		return nil
	})
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	switch n := e.(type) {
	case *parser.AggregateExpr:
		ordered = n.Op == parser.TOPK || n.Op == parser.BOTTOMK
	case *parser.Call:
		ordered = n.Func.Name == "sort" || n.Func.Name == "sort_desc"
	}
	return exact, ordered
}

// floatCmp is how values must match: bit for bit, equal (-0 == +0), or
// within the tolerance. NaN matches NaN.
type floatCmp int

const (
	cmpTolerance floatCmp = iota
	cmpBits
	cmpEqual
)

func sameFloat(a, b float64, how floatCmp) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	switch how {
	case cmpBits:
		return math.Float64bits(a) == math.Float64bits(b)
	case cmpEqual:
		return a == b
	}
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	diff := math.Abs(a - b)
	return diff <= 1e-12 || diff <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

func fmtFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64) + fmt.Sprintf(" [%016x]", math.Float64bits(f))
}

// compareOutcomes compares the answers; inexact counts answers equal only
// within the tolerance.
//
// loose compares what may depend on the order of the series (which
// neither the storage nor Prometheus's engine fixes: it keeps series in
// maps) as sets: the label sets of duplicate-series errors, the signs of
// zeros, and which series of equal values topk, bottomk and sort keep (the
// values each keeps per group and step must be the same).
func compareOutcomes(gq genQuery, ref, own outcome, loose bool, inexact *int) (diffResult, bool) {
	res := diffResult{badT: -1}
	if ref.stage != own.stage || (ref.err != own.err && (!loose || normalizeErr(ref.err) != normalizeErr(own.err))) {
		res.kind = "errors"
		res.detail = fmt.Sprintf("prometheus: %s error %q\npromhbase:  %s error %q", orNone(ref.stage), ref.err, orNone(own.stage), own.err)
		if ref.err == "" {
			res.detail += "\nprometheus answered: " + summarize(ref.val)
		}
		if own.err == "" {
			res.detail += "\npromhbase answered: " + summarize(own.val)
		}
		return res, false
	}
	if ref.stage == "create" {
		return res, true
	}
	if !slices.Equal(normalizeAnnos(ref.warns), normalizeAnnos(own.warns)) || !slices.Equal(normalizeAnnos(ref.infos), normalizeAnnos(own.infos)) {
		res.kind = "annotations"
		res.detail = fmt.Sprintf("prometheus: warnings %q infos %q\npromhbase:  warnings %q infos %q", ref.warns, ref.infos, own.warns, own.infos)
		return res, false
	}
	if ref.err != "" {
		return res, true
	}
	exactQuery, ordered := queryTraits(gq.expr)
	exact := cmpTolerance
	switch {
	case exactQuery && loose:
		exact = cmpEqual
	case exactQuery:
		exact = cmpBits
	}
	if loose {
		if ok, applies := tieEqual(gq.expr, ref.val, own.val); applies {
			if !ok {
				res.kind, res.detail = "values", "the values kept per group and step differ"
			}
			return res, ok
		}
	}
	if fmt.Sprintf("%T", ref.val) != fmt.Sprintf("%T", own.val) {
		res.kind = "type"
		res.detail = fmt.Sprintf("prometheus: %T %s\npromhbase:  %T %s", ref.val, summarize(ref.val), own.val, summarize(own.val))
		return res, false
	}
	inexactOK := false
	var ok bool
	switch rv := ref.val.(type) {
	case promql.Scalar:
		ov := own.val.(promql.Scalar)
		ok = rv.T == ov.T && sameFloat(rv.V, ov.V, exact)
		if !ok {
			res.kind = "values"
			res.detail = fmt.Sprintf("prometheus: scalar %s @%d\npromhbase:  scalar %s @%d", fmtFloat(rv.V), rv.T, fmtFloat(ov.V), ov.T)
		}
		inexactOK = ok && !sameFloat(rv.V, ov.V, cmpBits)
	case promql.String:
		ok = rv == own.val.(promql.String)
		if !ok {
			res.kind = "values"
			res.detail = fmt.Sprintf("prometheus: %v\npromhbase:  %v", rv, own.val)
		}
	case promql.Vector:
		ok, inexactOK = compareVectors(rv, own.val.(promql.Vector), exact, ordered, &res)
	case promql.Matrix:
		ok, inexactOK = compareMatrices(rv, own.val.(promql.Matrix), exact, &res)
	case nil:
		ok = own.val == nil
	default:
		res.kind = "type"
		res.detail = fmt.Sprintf("unexpected value type %T", ref.val)
	}
	if ok && inexactOK {
		*inexact++
	}
	return res, ok
}

// monotonicityCount is the sample count of histogram_quantile's
// monotonicity info. Prometheus's count is not a count: merging two of
// these annotations (annotations.histogramQuantileForcedMonotonicityErr's
// Merge) adds into the other annotation in place, through errors.As's
// pointer, so the number depends on how often and in which order the
// engine merged annotation sets, and overflows. The comparison leaves it
// out (and counts the answers that differ in it only).
var monotonicityCount = regexp.MustCompile(`, over -?[0-9]+ samples from `)

func normalizeAnnos(as []string) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = monotonicityCount.ReplaceAllString(a, ", over N samples from ")
	}
	sort.Strings(out)
	return out
}

func orNone(s string) string {
	if s == "" {
		return "no"
	}
	return s
}

func summarize(v parser.Value) string {
	s := fmt.Sprintf("%T of %d", v, valueLen(v))
	if m, ok := v.(promql.Matrix); ok && len(m) > 0 {
		s += fmt.Sprintf(", first %s with %d points", m[0].Metric, len(m[0].Floats))
	}
	if m, ok := v.(promql.Vector); ok && len(m) > 0 {
		s += fmt.Sprintf(", first %s %s", m[0].Metric, fmtFloat(m[0].F))
	}
	return s
}

// seriesSets compares the label sets of two answers; it returns the
// differences rendered, or "".
func seriesSets(ref, own []labels.Labels) string {
	in := func(ls []labels.Labels) map[string]bool {
		m := map[string]bool{}
		for _, l := range ls {
			m[l.String()] = true
		}
		return m
	}
	rm, om := in(ref), in(own)
	var onlyRef, onlyOwn []string
	for k := range rm {
		if !om[k] {
			onlyRef = append(onlyRef, k)
		}
	}
	for k := range om {
		if !rm[k] {
			onlyOwn = append(onlyOwn, k)
		}
	}
	if len(onlyRef) == 0 && len(onlyOwn) == 0 && len(ref) == len(own) {
		return ""
	}
	sort.Strings(onlyRef)
	sort.Strings(onlyOwn)
	cut := func(s []string) []string {
		if len(s) > 6 {
			return append(s[:6:6], fmt.Sprintf("... %d more", len(s)-6))
		}
		return s
	}
	return fmt.Sprintf("%d series from prometheus, %d from promhbase\nonly prometheus: %s\nonly promhbase:  %s",
		len(ref), len(own), strings.Join(cut(onlyRef), " "), strings.Join(cut(onlyOwn), " "))
}

// metricsOf is the label sets of an answer's samples or series.
func metricsOf[S any](ss []S, metric func(S) labels.Labels) []labels.Labels {
	out := make([]labels.Labels, len(ss))
	for i, s := range ss {
		out[i] = metric(s)
	}
	return out
}

func sampleMetric(s promql.Sample) labels.Labels { return s.Metric }
func seriesMetric(s promql.Series) labels.Labels { return s.Metric }

func compareVectors(ref, own promql.Vector, exact floatCmp, ordered bool, res *diffResult) (ok, loose bool) {
	if s := seriesSets(metricsOf(ref, sampleMetric), metricsOf(own, sampleMetric)); s != "" {
		res.kind, res.detail = "series", s
		return false, false
	}
	if ordered {
		orderOK := true
		for i := range ref {
			if !labels.Equal(ref[i].Metric, own[i].Metric) {
				orderOK = false
			}
		}
		if !orderOK {
			// Only tied values permuted, or a different order?
			ties := true
			for i := range ref {
				if !sameFloat(ref[i].F, own[i].F, exact) {
					ties = false
				}
			}
			res.kind = "order"
			if ties {
				res.kind = "order-of-ties"
			}
			var b strings.Builder
			for i := range ref {
				fmt.Fprintf(&b, "%d: prometheus %s %s | promhbase %s %s\n", i, ref[i].Metric, fmtFloat(ref[i].F), own[i].Metric, fmtFloat(own[i].F))
			}
			res.detail = b.String()
			return false, false
		}
	}
	sr, so := slices.Clone(ref), slices.Clone(own)
	if !ordered {
		sort.SliceStable(sr, func(i, j int) bool { return labels.Compare(sr[i].Metric, sr[j].Metric) < 0 })
		sort.SliceStable(so, func(i, j int) bool { return labels.Compare(so[i].Metric, so[j].Metric) < 0 })
	}
	var bad []string
	for i := range sr {
		r, o := sr[i], so[i]
		switch {
		case r.T != o.T:
			res.kind = "timestamps"
			bad = append(bad, fmt.Sprintf("%s: prometheus T=%d promhbase T=%d", r.Metric, r.T, o.T))
		case (r.H == nil) != (o.H == nil):
			res.kind = "type"
			bad = append(bad, fmt.Sprintf("%s: histogram %v vs %v", r.Metric, r.H, o.H))
		case !sameFloat(r.F, o.F, exact):
			if res.kind == "" {
				res.kind = "values"
			}
			bad = append(bad, fmt.Sprintf("%s: prometheus %s promhbase %s", r.Metric, fmtFloat(r.F), fmtFloat(o.F)))
		case !sameFloat(r.F, o.F, cmpBits):
			loose = true
		}
	}
	if len(bad) > 0 {
		if len(bad) > 8 {
			bad = append(bad[:8], fmt.Sprintf("... %d more", len(bad)-8))
		}
		res.detail = fmt.Sprintf("%d of %d samples differ (exact=%v):\n%s", len(bad), len(sr), exact == cmpBits, strings.Join(bad, "\n"))
		return false, false
	}
	return true, loose
}

func compareMatrices(ref, own promql.Matrix, exact floatCmp, res *diffResult) (ok, loose bool) {
	if s := seriesSets(metricsOf(ref, seriesMetric), metricsOf(own, seriesMetric)); s != "" {
		res.kind, res.detail = "series", s
		return false, false
	}
	// Prometheus's range query answers are sorted by labels.
	for i := range ref {
		if !labels.Equal(ref[i].Metric, own[i].Metric) {
			res.kind = "order"
			res.detail = fmt.Sprintf("matrix series %d: prometheus %s, promhbase %s", i, ref[i].Metric, own[i].Metric)
			return false, false
		}
	}
	var bad []string
	badSeries := 0
	for i := range ref {
		r, o := ref[i], own[i]
		if len(r.Histograms) != len(o.Histograms) {
			res.kind = "type"
			bad = append(bad, fmt.Sprintf("%s: %d histograms vs %d", r.Metric, len(r.Histograms), len(o.Histograms)))
			continue
		}
		rt, ot := map[int64]float64{}, map[int64]float64{}
		for _, p := range r.Floats {
			rt[p.T] = p.F
		}
		for _, p := range o.Floats {
			ot[p.T] = p.F
		}
		var lines []string
		for _, p := range r.Floats {
			ov, has := ot[p.T]
			switch {
			case !has:
				lines = append(lines, fmt.Sprintf("@%d prometheus %s promhbase none", p.T, fmtFloat(p.F)))
				if res.kind == "" || res.kind == "values" {
					res.kind = "timestamps"
				}
			case !sameFloat(p.F, ov, exact):
				lines = append(lines, fmt.Sprintf("@%d prometheus %s promhbase %s", p.T, fmtFloat(p.F), fmtFloat(ov)))
				if res.kind == "" {
					res.kind = "values"
				}
			case !sameFloat(p.F, ov, cmpBits):
				loose = true
			default:
				continue
			}
			if res.badT < 0 {
				res.badT = p.T
			}
		}
		for _, p := range o.Floats {
			if _, has := rt[p.T]; !has {
				lines = append(lines, fmt.Sprintf("@%d prometheus none promhbase %s", p.T, fmtFloat(p.F)))
				if res.kind == "" || res.kind == "values" {
					res.kind = "timestamps"
				}
				if res.badT < 0 {
					res.badT = p.T
				}
			}
		}
		if len(lines) == 0 && len(r.Floats) == len(o.Floats) {
			for j := range r.Floats {
				if r.Floats[j].T != o.Floats[j].T {
					lines = append(lines, fmt.Sprintf("points out of order at %d", j))
					res.kind = "timestamps"
					break
				}
			}
		}
		if len(lines) > 0 {
			badSeries++
			if len(lines) > 5 {
				lines = append(lines[:5], fmt.Sprintf("... %d more", len(lines)-5))
			}
			if badSeries <= 4 {
				bad = append(bad, fmt.Sprintf("%s (%d vs %d points):\n  %s", r.Metric, len(r.Floats), len(o.Floats), strings.Join(lines, "\n  ")))
			}
		}
	}
	if badSeries > 0 || len(bad) > 0 {
		res.detail = fmt.Sprintf("%d of %d series differ (exact=%v):\n%s", badSeries, len(ref), exact == cmpBits, strings.Join(bad, "\n"))
		return false, false
	}
	return true, loose
}

// shrink looks for a smaller query showing a mismatch of the same kind:
// the instant query at a time where a range query differs, then
// subexpressions, selectors with fewer matchers, without modifiers.
func (d *differ) shrink(gq genQuery, res diffResult) genQuery {
	fails := func(c genQuery) bool {
		own := runQuery(d.own, d.qy, c)
		r, ok := compareOutcomes(c, runQuery(d.ref, d.qy, c), own, false, new(int))
		return !ok && r.kind == res.kind && !d.orderDependent(c, own)
	}
	best := gq
	if !gq.instant && res.badT >= 0 {
		c := genQuery{expr: gq.expr, instant: true, start: res.badT, end: res.badT, supported: gq.supported}
		if fails(c) {
			best = c
		}
	}
	for range 40 {
		improved := false
		for _, cand := range smallerExprs(best.expr) {
			c := best
			c.expr = cand
			if fails(c) {
				best, improved = c, true
				break
			}
		}
		if !improved {
			break
		}
	}
	return best
}

// smallerExprs returns expressions smaller than expr, shortest first:
// its subexpressions, and itself with one matcher, modifier or grouping
// label less.
func smallerExprs(expr string) []string {
	root, err := diffParser.ParseExpr(expr)
	if err != nil {
		return nil
	}
	seen := map[string]bool{expr: true}
	var out []string
	addStr := func(s string) {
		if !seen[s] && len(s) < len(expr) {
			seen[s] = true
			out = append(out, s)
		}
	}
	parser.Inspect(root, func(node parser.Node, _ []parser.Node) error {
		e, ok := node.(parser.Expr)
		if !ok || e == root {
			return nil
		}
		switch e.Type() {
		case parser.ValueTypeVector, parser.ValueTypeScalar:
			addStr(e.String())
		}
		return nil
	})
	// Mutations of the tree, undone after each.
	parser.Inspect(root, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			ms := n.LabelMatchers
			for i, m := range ms {
				if m.Name == model.MetricNameLabel && n.Name != "" {
					continue
				}
				n.LabelMatchers = slices.Delete(slices.Clone(ms), i, i+1)
				if len(n.LabelMatchers) > 0 {
					addStr(root.String())
				}
				n.LabelMatchers = ms
			}
			if n.OriginalOffset != 0 {
				off := n.OriginalOffset
				n.OriginalOffset = 0
				addStr(root.String())
				n.OriginalOffset = off
			}
			if n.Timestamp != nil || n.StartOrEnd != 0 {
				ts, se := n.Timestamp, n.StartOrEnd
				n.Timestamp, n.StartOrEnd = nil, 0
				addStr(root.String())
				n.Timestamp, n.StartOrEnd = ts, se
			}
		case *parser.AggregateExpr:
			gr := n.Grouping
			for i := range gr {
				n.Grouping = slices.Delete(slices.Clone(gr), i, i+1)
				addStr(root.String())
			}
			n.Grouping = gr
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				ml := n.VectorMatching.MatchingLabels
				for i := range ml {
					n.VectorMatching.MatchingLabels = slices.Delete(slices.Clone(ml), i, i+1)
					addStr(root.String())
				}
				n.VectorMatching.MatchingLabels = ml
			}
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) < len(out[j]) })
	return out
}
