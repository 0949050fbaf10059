package engine

// The generated data and queries of the differential test (diff_test.go).

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// The data spans diffHours hours from diffStart (an hour boundary,
// 2023-11-14T23:00:00Z), in ms.
const (
	diffStartSec = 1700002800
	diffHours    = 4
	diffStart    = int64(diffStartSec) * 1000
	diffEnd      = diffStart + diffHours*3600_000
)

var staleNaN = math.Float64frombits(value.StaleNaN)

// genTarget is one scrape target: every series of it is scraped at the
// same times, and goes stale together when the target goes down.
type genTarget struct {
	job, instance string
	// scrapes are the scrape times; stale[i] says scrape i is the
	// staleness marker of a target that went down (or whose series
	// vanished).
	scrapes []int64
	stale   []bool
}

// newTarget draws a target's scrape times: a 15 s interval (sometimes
// 10 s or 30 s) with jitter of a few hundred ms or of a few ms, missed
// scrapes, maybe a gap of more than 5 m without a marker, maybe a period
// down (a staleness marker, then back), maybe starting or ending inside
// the data.
func newTarget(rng *rand.Rand, job, instance string) *genTarget {
	tg := &genTarget{job: job, instance: instance}
	interval := int64(15_000)
	switch rng.IntN(8) {
	case 0:
		interval = 10_000
	case 1:
		interval = 30_000
	}
	// Half the targets are scraped on the interval's boundaries, so that
	// samples fall exactly on query steps and window edges.
	phase := rng.Int64N(interval)
	if rng.IntN(2) == 0 {
		phase = 0
	}
	start, end := diffStart, diffEnd
	if rng.IntN(5) == 0 { // appears mid-range
		start = diffStart + rng.Int64N(diffEnd-diffStart)/2
		if rng.IntN(2) == 0 {
			start -= start % 60_000
		}
	}
	endStale := false
	if rng.IntN(5) == 0 { // disappears mid-range
		end = start + (diffEnd-start)/2 + rng.Int64N((diffEnd-start)/2)
		endStale = rng.IntN(2) == 0
	}
	jitter := func() int64 { return rng.Int64N(601) - 300 } // ±300 ms
	switch rng.IntN(3) {
	case 0:
		jitter = func() int64 { return rng.Int64N(7) - 3 } // a few ms
	case 1:
		jitter = func() int64 { return 0 }
	}
	var gapFrom, gapTo, downFrom, downTo int64 = -1, -1, -1, -1
	if rng.IntN(2) == 0 { // a gap of 6..25 m without a marker
		gapFrom = start + rng.Int64N(end-start)
		gapTo = gapFrom + int64(6+rng.IntN(20))*60_000
	}
	if rng.IntN(5) < 2 { // down: a marker, back after 30 s..30 m
		downFrom = start + rng.Int64N(end-start)
		downTo = downFrom + int64(1+rng.IntN(60))*30_000
	}
	markedDown := false
	for nominal := start - start%interval + phase; nominal < end; nominal += interval {
		if nominal < start {
			continue
		}
		ts := nominal + jitter()
		if ts < 0 {
			continue
		}
		if ts >= gapFrom && ts < gapTo {
			continue
		}
		if ts >= downFrom && ts < downTo {
			if !markedDown {
				markedDown = true
				tg.scrapes = append(tg.scrapes, ts)
				tg.stale = append(tg.stale, true)
			}
			continue
		}
		if rng.IntN(50) == 0 { // a missed scrape
			continue
		}
		tg.scrapes = append(tg.scrapes, ts)
		tg.stale = append(tg.stale, false)
	}
	if endStale && len(tg.scrapes) > 0 {
		last := tg.scrapes[len(tg.scrapes)-1]
		tg.scrapes = append(tg.scrapes, last+interval)
		tg.stale = append(tg.stale, true)
	}
	return tg
}

// valueGen returns the value of a series at its next scrape.
type valueGen func() float64

// counterGen: increments (integers or floats), resets to zero or to a
// small value, from a base that may be large.
func counterGen(rng *rand.Rand, float bool, nanP int) valueGen {
	v := 0.0
	switch rng.IntN(4) {
	case 0:
		v = float64(rng.Int64N(1e12))
	case 1:
		v = float64(rng.IntN(1000))
	}
	maxInc := float64(1 + rng.IntN(200))
	return func() float64 {
		if rng.IntN(300) == 0 {
			if rng.IntN(2) == 0 {
				v = 0
			} else {
				v = float64(rng.IntN(5))
			}
			return v
		}
		if rng.IntN(10) != 0 { // sometimes unchanged
			if float {
				v += rng.Float64() * maxInc
			} else {
				v += float64(rng.IntN(int(maxInc) + 1))
			}
		}
		if nanP > 0 && rng.IntN(nanP) == 0 {
			return math.NaN()
		}
		return v
	}
}

// gaugeGen: a random walk around a mean (negative ones too), NaN now
// and then.
func gaugeGen(rng *rand.Rand, mean, sd float64, integer bool, nanP int) valueGen {
	v := mean
	return func() float64 {
		v += rng.NormFloat64() * sd
		if rng.IntN(40) == 0 {
			v = mean
		}
		out := v
		if integer {
			out = math.Round(v)
			if out < 0 {
				out = 0
			}
		}
		if nanP > 0 && rng.IntN(nanP) == 0 {
			return math.NaN()
		}
		return out
	}
}

// bigGen: values of very different magnitudes and signs: large, tiny,
// zero, and rarely an infinity.
func bigGen(rng *rand.Rand) valueGen {
	return func() float64 {
		switch rng.IntN(200) {
		case 0:
			return math.Inf(1)
		case 1:
			return math.Inf(-1)
		case 2, 3:
			return math.NaN()
		case 4, 5, 6:
			return 1.5e308 // sums overflow: avg turns to an incremental mean
		case 7:
			return -1.7e308
		}
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return rng.Float64() * 1e-9
		case 2:
			return -rng.Float64() * 1e15
		case 3:
			return 1e15 + float64(rng.IntN(1000))
		}
		return rng.NormFloat64() * 1e6
	}
}

// genData returns the generated series of a seed: about 60 series over
// diffHours hours.
func genData(seed uint64) []prompb.TimeSeries {
	rng := rand.New(rand.NewPCG(seed, seed*7919+1))
	var out []prompb.TimeSeries
	// add writes one series of target tg: values from gen at its scrapes
	// within [from, to) (the whole target when to is 0), and a staleness
	// marker after to when marker is set.
	add := func(tg *genTarget, name string, extra []string, gen valueGen, from, to int64, marker bool) {
		ls := []prompb.Label{{Name: "__name__", Value: name}, {Name: "instance", Value: tg.instance}, {Name: "job", Value: tg.job}}
		for i := 0; i+1 < len(extra); i += 2 {
			ls = append(ls, prompb.Label{Name: extra[i], Value: extra[i+1]})
		}
		ts := prompb.TimeSeries{Labels: ls}
		if to == 0 {
			to = math.MaxInt64
		}
		for i, t := range tg.scrapes {
			if t < from {
				continue
			}
			if t >= to {
				if marker {
					ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: staleNaN})
				}
				break
			}
			v := gen()
			if tg.stale[i] {
				v = staleNaN
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: v})
		}
		if len(ts.Samples) > 0 {
			out = append(out, ts)
		}
	}
	// A window of a series appearing and disappearing inside the data.
	window := func() (int64, int64, bool) {
		if rng.IntN(2) == 0 {
			return 0, 0, false
		}
		a := diffStart + rng.Int64N(diffEnd-diffStart)
		return a, a + int64(5+rng.IntN(90))*60_000, rng.IntN(3) != 0
	}
	for _, job := range []string{"api", "web"} {
		for _, inst := range []string{"i0", "i1", "i2"} {
			tg := newTarget(rng, job, inst)
			add(tg, "http_requests_total", []string{"code", "200"}, counterGen(rng, false, 0), 0, 0, false)
			from, to, marker := window()
			add(tg, "http_requests_total", []string{"code", "500"}, counterGen(rng, false, 0), from, to, marker)
			add(tg, "up", nil, func() float64 {
				if rng.IntN(30) == 0 {
					return 0
				}
				return 1
			}, 0, 0, false)
			if inst != "i2" {
				add(tg, "bytes_sent", nil, counterGen(rng, true, 400), 0, 0, false)
				// A classic histogram; on web/i1 the buckets are not always
				// monotonic.
				var c [4]float64
				var sum float64
				les := []string{"0.1", "0.5", "1", "+Inf"}
				if job == "web" && inst == "i0" {
					les = []string{"0.1", "0.5", "1.0", "+Inf"} // OpenMetrics' form of 1
				}
				type obs struct{ c [4]float64 }
				var hist []obs
				var sums []float64
				for range tg.scrapes {
					if rng.IntN(400) == 0 {
						c, sum = [4]float64{}, 0
					}
					n := rng.IntN(20)
					for range n {
						x := rng.ExpFloat64() * 0.4
						sum += x
						for b, le := range []float64{0.1, 0.5, 1, math.Inf(1)} {
							if x <= le {
								c[b]++
							}
						}
					}
					o := obs{c}
					if job == "web" && inst == "i1" && rng.IntN(10) == 0 {
						o.c[2] = o.c[1] - 1
					}
					hist = append(hist, o)
					sums = append(sums, sum)
				}
				for b, le := range les {
					i := 0
					add(tg, "latency_seconds_bucket", []string{"le", le}, func() float64 { v := hist[i].c[b]; i++; return v }, 0, 0, false)
				}
				i := 0
				add(tg, "latency_seconds_sum", nil, func() float64 { v := sums[i]; i++; return v }, 0, 0, false)
				i = 0
				add(tg, "latency_seconds_count", nil, func() float64 { v := hist[i].c[3]; i++; return v }, 0, 0, false)
			}
		}
	}
	for _, inst := range []string{"i0", "i1"} {
		tg := newTarget(rng, "node", inst)
		for _, mode := range []string{"idle", "user", "system"} {
			from, to, marker := window()
			if mode == "idle" {
				from, to, marker = 0, 0, false
			}
			add(tg, "node_cpu_seconds_total", []string{"mode", mode}, counterGen(rng, true, 0), from, to, marker)
		}
		add(tg, "temperature_celsius", nil, gaugeGen(rng, -5+rng.Float64()*40, 2, false, 300), 0, 0, false)
		add(tg, "up", nil, func() float64 { return 1 }, 0, 0, false)
	}
	for _, inst := range []string{"i0", "i1", "i2"} {
		tg := newTarget(rng, "api", inst)
		tg.job = "api"
		add(tg, "temperature_celsius", []string{"zone", "z" + inst[1:]}, gaugeGen(rng, rng.Float64()*10-5, 0.5, false, 0), 0, 0, false)
		tw := newTarget(rng, "web", inst)
		add(tw, "queue_depth", nil, gaugeGen(rng, 2, 1.5, true, 0), 0, 0, false)
	}
	for _, inst := range []string{"i0", "i1"} {
		tg := newTarget(rng, "batch", inst)
		add(tg, "big_gauge", nil, bigGen(rng), 0, 0, false)
		add(tg, "up", nil, func() float64 { return 1 }, 0, 0, false)
		// A histogram without its +Inf bucket (i0), and one with a
		// malformed bucket (i1).
		les := []string{"0.1", "0.5", "1"}
		if inst == "i1" {
			les = []string{"0.1", "x", "+Inf"}
		}
		for b, le := range les {
			add(tg, "latency_seconds_bucket", []string{"le", le}, counterGen(rng, false, 0), 0, 0, false)
			_ = b
		}
	}
	// A sparse counter (scraped every 2 m, so that short windows hold one
	// sample), and a series of staleness markers only.
	sparse := newTarget(rng, "batch", "i2")
	sparse.scrapes, sparse.stale = nil, nil
	for t := diffStart + 7_000; t < diffEnd; t += 120_000 {
		sparse.scrapes = append(sparse.scrapes, t)
		sparse.stale = append(sparse.stale, false)
	}
	add(sparse, "jobs_done_total", nil, counterGen(rng, false, 0), 0, 0, false)
	// A metric renamed at 02:00 (a deploy), with the same other labels:
	// functions dropping the name give one label set twice, at different
	// times (or the same, within a window).
	// Label values with spaces, regex metacharacters and non-ASCII
	// letters.
	odd := newTarget(rng, "web", "i0")
	for _, path := range []string{"/a b", "ü-ß", "x.y", "xzy", "a|b", "(p)", `q"t\`} {
		add(odd, "odd_labels", []string{"path", path}, gaugeGen(rng, 10, 3, true, 0), 0, 0, false)
	}
	for _, inst := range []string{"i0", "i1"} {
		tg := newTarget(rng, "api", inst)
		cut := diffStart + 2*3600_000 + int64(rng.IntN(3))*5*60_000
		add(tg, "renamed_old_total", nil, counterGen(rng, false, 0), 0, cut, rng.IntN(2) == 0)
		add(tg, "renamed_new_total", nil, counterGen(rng, false, 0), cut+int64(rng.IntN(3))*3*60_000, 0, false)
	}
	add(sparse, "up", nil, func() float64 { return staleNaN }, diffStart+3600_000, diffStart+3660_000, false)
	return out
}

// --- queries ---

// metricInfo describes a generated metric for the query generator.
type metricInfo struct {
	name    string
	counter bool
	labels  map[string][]string // label name -> values to match
}

var genMetrics = []metricInfo{
	{"http_requests_total", true, map[string][]string{"job": {"api", "web"}, "instance": {"i0", "i1", "i2"}, "code": {"200", "500"}}},
	{"node_cpu_seconds_total", true, map[string][]string{"job": {"node"}, "instance": {"i0", "i1"}, "mode": {"idle", "user", "system"}}},
	{"bytes_sent", true, map[string][]string{"job": {"api", "web"}, "instance": {"i0", "i1"}}},
	{"latency_seconds_sum", true, map[string][]string{"job": {"api", "web"}, "instance": {"i0", "i1"}}},
	{"latency_seconds_count", true, map[string][]string{"job": {"api", "web"}, "instance": {"i0", "i1"}}},
	{"latency_seconds_bucket", true, map[string][]string{"job": {"api", "web", "batch"}, "instance": {"i0", "i1"}, "le": {"0.1", "0.5", "1", "+Inf", "1.0"}}},
	{"jobs_done_total", true, map[string][]string{"job": {"batch"}, "instance": {"i2"}}},
	{"renamed_.+_total", true, map[string][]string{"job": {"api"}, "instance": {"i0", "i1"}}},
	{"odd_labels", false, map[string][]string{"job": {"web"}, "instance": {"i0"}, "path": {"/a b", "ü-ß", "x.y", "xzy", "a|b", "(p)", `q"t\`}}},
	{"temperature_celsius", false, map[string][]string{"job": {"api", "node"}, "instance": {"i0", "i1", "i2"}, "zone": {"z0", "z1", "z2"}}},
	{"queue_depth", false, map[string][]string{"job": {"web"}, "instance": {"i0", "i1", "i2"}}},
	{"big_gauge", false, map[string][]string{"job": {"batch"}, "instance": {"i0", "i1"}}},
	{"up", false, map[string][]string{"job": {"api", "web", "node", "batch"}, "instance": {"i0", "i1", "i2"}}},
	{"up", false, map[string][]string{"job": {"api", "web", "node", "batch"}, "instance": {"i0", "i1", "i2"}}},
	{"http_requests_total", true, map[string][]string{"job": {"api", "web"}, "instance": {"i0", "i1", "i2"}, "code": {"200", "500"}}},
}

// genLabelNames are the label names groupings draw from.
var genLabelNames = []string{"job", "instance", "mode", "code", "le", "zone", "__name__", "nope"}

// queryGen draws random PromQL queries.
type queryGen struct {
	rng *rand.Rand
	// supported: the query drawn is made of the shapes the engine
	// supports only (reset by each top-level draw).
	supported bool
}

func (g *queryGen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

func (g *queryGen) chance(n int) bool { return g.rng.IntN(n) == 0 }

func (g *queryGen) metric(counter int) metricInfo {
	// counter: 1 counters, 0 gauges, -1 any
	for {
		m := genMetrics[g.rng.IntN(len(genMetrics))]
		if counter < 0 || m.counter == (counter == 1) {
			return m
		}
	}
}

// matchers returns a selector of m with random matchers.
func (g *queryGen) selector(m metricInfo) string {
	var ms []string
	names := make([]string, 0, len(m.labels))
	for _, n := range []string{"job", "instance", "code", "mode", "le", "zone", "path"} {
		if _, ok := m.labels[n]; ok {
			names = append(names, n)
		}
	}
	used := map[string]bool{}
	for range g.rng.IntN(3) {
		n := names[g.rng.IntN(len(names))]
		if used[n] && !g.chance(4) {
			continue
		}
		used[n] = true
		vals := m.labels[n]
		v := vals[g.rng.IntN(len(vals))]
		switch g.rng.IntN(10) {
		case 0, 1, 2:
			ms = append(ms, fmt.Sprintf("%s=%q", n, v))
		case 3, 4:
			ms = append(ms, fmt.Sprintf("%s!=%q", n, v))
		case 5:
			v2 := vals[g.rng.IntN(len(vals))]
			ms = append(ms, fmt.Sprintf("%s=~%q", n, regexpQuote(v)+"|"+regexpQuote(v2)))
		case 6:
			ms = append(ms, fmt.Sprintf("%s!~%q", n, regexpQuote(v)))
		case 7:
			switch g.rng.IntN(4) {
			case 0:
				ms = append(ms, fmt.Sprintf("%s=~%q", n, "(?i)"+regexpQuote(strings.ToUpper(v))))
			case 1:
				r := []rune(v)
				ms = append(ms, fmt.Sprintf("%s=~%q", n, "["+regexpQuote(string(r[:1]))+"x]"+regexpQuote(string(r[1:]))+"|zz"))
			default:
				ms = append(ms, fmt.Sprintf("%s=~%q", n, regexpQuote(string([]rune(v)[:1]))+".*"))
			}
		case 8:
			if n == "path" {
				ms = append(ms, fmt.Sprintf("%s%s%q", n, g.pick("=~", "!~"), g.pick("x.y", "(?i)Ü-SS|ü.*", `a\|b`, `\(p\)`, "[/(].*", "x.y|", `q".*`, ".*ß")))
			} else if g.chance(3) {
				ms = append(ms, fmt.Sprintf("%s=%q", n, g.pick("", "zz")))
			} else {
				ms = append(ms, fmt.Sprintf("%s=~%q", n, g.pick(".*", ".+", "i0|.*2|web|api|idle")))
			}
		case 9:
			ms = append(ms, fmt.Sprintf("%s!~%q", n, g.pick("", ".+", "z.*")))
		}
	}
	if g.chance(40) {
		// No metric name: every metric of the labels.
		if len(ms) == 0 {
			ms = append(ms, `job="batch"`)
		}
		return "{" + strings.Join(ms, ", ") + g.pick("", `, __name__!="up"`, `, __name__!~"up|big.*"`) + "}"
	}
	if strings.ContainsAny(m.name, ".+") {
		return fmt.Sprintf("{__name__=~%q%s}", m.name, prefixComma(ms))
	}
	switch g.rng.IntN(20) {
	case 0:
		return fmt.Sprintf("{__name__=%q%s}", m.name, prefixComma(ms))
	case 1:
		// Several metrics: functions dropping the name may then
		// collide.
		other := genMetrics[g.rng.IntN(len(genMetrics))].name
		return fmt.Sprintf("{__name__=~%q%s}", m.name+"|"+other, prefixComma(ms))
	}
	if len(ms) == 0 && g.chance(3) {
		return m.name
	}
	return m.name + "{" + strings.Join(ms, ", ") + "}"
}

func prefixComma(ms []string) string {
	if len(ms) == 0 {
		return ""
	}
	return ", " + strings.Join(ms, ", ")
}

func regexpQuote(s string) string { return regexp.QuoteMeta(s) }

// modifiers returns an offset and @ modifier (or none).
func (g *queryGen) modifiers() string {
	var s string
	if g.chance(6) {
		switch g.rng.IntN(4) {
		case 0:
			s += " @ start()"
		case 1:
			s += " @ end()"
		default:
			t := diffStart - 1800_000 + g.rng.Int64N(diffEnd-diffStart+3600_000)
			if g.chance(2) {
				t -= t % 1000
			}
			s += " @ " + strconv.FormatFloat(float64(t)/1000, 'f', -1, 64)
		}
	}
	if g.chance(5) {
		s += " offset " + g.pick("5m", "1h", "-7m", "30s", "-1h", "90s", "2h", "1m30s", "-15s")
	}
	return s
}

func (g *queryGen) rangeDur() string {
	return g.pick("30s", "1m", "5m", "17m", "1h", "2h", "5m", "1m", "15s", "10m", "45s", "3m")
}

var counterFuncs = []string{"rate", "increase", "irate", "resets", "changes", "increase", "rate"}
var gaugeFuncs = []string{"delta", "idelta", "deriv", "sum_over_time", "avg_over_time", "min_over_time", "max_over_time",
	"count_over_time", "last_over_time", "present_over_time", "stddev_over_time", "stdvar_over_time", "changes"}

// rangeFunc returns f(sel[range]).
func (g *queryGen) rangeFunc() string {
	counter := g.rng.IntN(2)
	m := g.metric(counter)
	var f string
	switch {
	case g.chance(4):
		all := append(append([]string{}, counterFuncs...), gaugeFuncs...)
		f = all[g.rng.IntN(len(all))]
	case counter == 1:
		f = counterFuncs[g.rng.IntN(len(counterFuncs))]
	default:
		f = gaugeFuncs[g.rng.IntN(len(gaugeFuncs))]
	}
	sel := g.selector(m) + "[" + g.rangeDur() + "]" + g.modifiers()
	if g.chance(10) {
		phi := g.pick("0", "0.5", "0.9", "0.99", "1", "-0.1", "1.1", "0.25", "NaN")
		return fmt.Sprintf("quantile_over_time(%s, %s)", phi, sel)
	}
	return f + "(" + sel + ")"
}

// grouping returns a by/without clause (or none).
func (g *queryGen) grouping() string {
	if g.chance(4) {
		return ""
	}
	var ls []string
	for range g.rng.IntN(3) {
		ls = append(ls, genLabelNames[g.rng.IntN(len(genLabelNames))])
	}
	if g.chance(2) {
		return " by (" + strings.Join(ls, ", ") + ")"
	}
	return " without (" + strings.Join(ls, ", ") + ")"
}

// vector returns an instant-vector expression of the supported shapes
// (mostly), depth bounding its nesting.
func (g *queryGen) vector(depth int) string {
	r := g.rng.IntN(20)
	if depth <= 0 {
		r = g.rng.IntN(6)
	}
	switch {
	case r < 2:
		return g.selector(g.metric(-1)) + g.modifiers()
	case r < 6:
		return g.rangeFunc()
	case r < 10:
		op := g.pick("sum", "avg", "min", "max", "count", "group", "sum", "avg")
		gr := g.grouping()
		inner := g.vector(depth - 1)
		if g.chance(2) && gr != "" {
			return op + "(" + inner + ")" + gr
		}
		return op + gr + " (" + inner + ")"
	case r < 12:
		// topk and bottomk only outermost (see topk): which of equal
		// values they keep depends on the order of the series, which
		// is not fixed; the test compares the values they keep.
		return g.rangeFunc()
	case r < 13:
		return g.histogramQuantile()
	case r < 17:
		return g.binary(depth)
	case r < 18:
		return "-" + g.paren(g.vector(depth-1))
	case r < 19:
		return "(" + g.vector(depth-1) + ")"
	default:
		g.supported = false
		return g.unsupported(depth - 1)
	}
}

// topk returns topk or bottomk of a vector, as dashboards draw them
// (outermost).
func (g *queryGen) topk() string {
	op := g.pick("topk", "bottomk")
	k := g.pick("1", "2", "3", "5", "0", "2", "10", "1", "2", "3")
	if g.chance(10) {
		k = g.pick("NaN", "1e20", "2.5", "-1", "(1+1)")
	}
	return op + g.grouping() + " (" + k + ", " + g.vector(2) + ")"
}

func (g *queryGen) paren(s string) string {
	if strings.HasPrefix(s, "(") || !strings.ContainsAny(s, " ") {
		return s
	}
	return "(" + s + ")"
}

func (g *queryGen) histogramQuantile() string {
	phi := g.pick("0.5", "0.9", "0.99", "0", "1", "-0.1", "1.1", "0.25", "0.75", "NaN")
	f := g.pick("rate", "rate", "increase", "irate")
	sel := g.selector(genMetrics[5]) + "[" + g.pick("1m", "5m", "5m", "17m", "1h") + "]" + g.modifiers()
	by := g.pick("le, job", "le, job", "le", "le, instance", "job, le")
	if g.chance(6) {
		return fmt.Sprintf("histogram_quantile(%s, %s(%s))", phi, f, sel)
	}
	if g.chance(6) {
		return fmt.Sprintf("histogram_quantile(%s, sum without (instance) (%s(%s)))", phi, f, sel)
	}
	return fmt.Sprintf("histogram_quantile(%s, sum by (%s) (%s(%s)))", phi, by, f, sel)
}

var arith = []string{"+", "-", "*", "/", "%", "^"}
var comparisons = []string{"==", "!=", ">", "<", ">=", "<="}

func (g *queryGen) binop() string {
	if g.chance(2) {
		op := comparisons[g.rng.IntN(len(comparisons))]
		if g.chance(2) {
			op += " bool"
		}
		return op
	}
	return arith[g.rng.IntN(len(arith))]
}

func (g *queryGen) number() string {
	if g.chance(15) {
		return g.pick("NaN", "Inf", "-Inf", "-0", "1e308")
	}
	return g.pick("0", "1", "2", "0.5", "-1", "100", "1e3", "3", "10", "-0.25")
}

// binary returns a binary operation between a shape and a number, or
// between two shapes matched one-to-one.
func (g *queryGen) binary(depth int) string {
	op := g.binop()
	if g.rng.IntN(5) < 3 {
		v := g.paren(g.vector(depth - 1))
		if g.chance(2) {
			return v + " " + op + " " + g.number()
		}
		return g.number() + " " + op + " " + v
	}
	// Two shapes with the same labels: aggregations by the same labels,
	// or the same metric with different filters.
	switch g.rng.IntN(3) {
	case 0:
		ls := g.pick("job", "instance", "job, instance", "", "mode", "code")
		agg := func() string {
			return g.pick("sum", "avg", "max", "min", "count") + " by (" + ls + ") (" + g.vector(depth-2) + ")"
		}
		mod := g.pick("", "", " on ("+ls+")", " ignoring (nope)")
		return agg() + " " + op + mod + " " + agg()
	case 1:
		m := g.metric(-1)
		f := g.pick("rate", "max_over_time", "last_over_time", "")
		wrap := func() string {
			if f == "" {
				return g.selector(m) + g.modifiers()
			}
			return f + "(" + g.selector(m) + "[" + g.rangeDur() + "]" + g.modifiers() + ")"
		}
		mod := g.pick("", " ignoring (code)", " on (job, instance)", " ignoring (mode, code)", " on (instance)")
		return wrap() + " " + op + mod + " " + wrap()
	default:
		l, r := g.paren(g.vector(depth-1)), g.paren(g.vector(depth-1))
		return l + " " + op + g.pick("", " on (job)", " ignoring (instance)", " on ()") + " " + r
	}
}

// unsupported returns an expression of shapes outside the supported ones
// (the engine falls back for them, at least in part).
func (g *queryGen) unsupported(depth int) string {
	v := func() string { return g.vector(max(depth, 0)) }
	sel := func() string { return g.selector(g.metric(-1)) }
	switch g.rng.IntN(18) {
	case 0:
		return fmt.Sprintf("max_over_time(%s[%s:%s])", g.rangeFunc(), g.pick("30m", "1h", "10m"), g.pick("1m", "", "5m", "37s"))
	case 1:
		return fmt.Sprintf(`label_replace(%s, "dst", "x$1", "instance", "i(.*)")`, v())
	case 2:
		return "absent(" + sel() + ")"
	case 3:
		return "absent_over_time(" + sel() + "[" + g.rangeDur() + "])"
	case 4:
		return g.paren(v()) + " " + g.pick("and", "or", "unless") + " " + g.paren(v())
	case 5:
		return g.pick("sort", "sort_desc") + "(" + v() + ")"
	case 6:
		return g.pick("abs", "ceil", "floor", "sqrt", "ln", "exp") + "(" + v() + ")"
	case 7:
		return fmt.Sprintf("clamp_min(%s, %s)", v(), g.number())
	case 8:
		return "time() - timestamp(" + sel() + ")"
	case 9:
		return "scalar(" + v() + ")"
	case 10:
		return "vector(" + g.number() + ")"
	case 11:
		return `count_values("v", ` + v() + ")"
	case 12:
		return "quantile" + g.grouping() + " (" + g.pick("0.5", "0.9", "2") + ", " + v() + ")"
	case 13:
		return g.pick("stddev", "stdvar") + g.grouping() + " (" + v() + ")"
	case 14:
		return fmt.Sprintf("predict_linear(%s[%s], 600)", g.selector(g.metric(0)), g.rangeDur())
	case 15:
		return fmt.Sprintf("sum by (job, instance) (%s) / on (job) group_left () %s", g.rangeFunc(), g.paren("sum by (job) ("+g.rangeFunc()+")"))
	case 16:
		return fmt.Sprintf("round(%s, 0.5)", v())
	default:
		return fmt.Sprintf("avg_over_time(%s[%s:])", sel(), g.pick("10m", "1h"))
	}
}

// genQuery is one drawn query.
type genQuery struct {
	expr string
	// supported: made of the engine's shapes only.
	supported bool
	// instant, or range with start, end, step (ms).
	instant          bool
	start, end, step int64
	// lookback is the query's lookback delta (the API's lookback_delta);
	// 0: the engine's.
	lookback time.Duration
}

var genSteps = []time.Duration{15 * time.Second, 37 * time.Second, time.Minute, 288 * time.Second, 5 * time.Minute, time.Hour, 15 * time.Second, time.Minute}

// next draws a query.
func (g *queryGen) next() genQuery {
	g.supported = true
	var q genQuery
	switch g.rng.IntN(40) {
	case 0:
		g.supported = false
		q.expr = g.unsupported(2)
	case 1:
		// A range vector (valid as an instant query only).
		q.expr = g.selector(g.metric(-1)) + "[" + g.rangeDur() + "]" + g.modifiers()
	case 2, 3, 4:
		q.expr = g.histogramQuantile()
	case 5:
		g.supported = false
		q.expr = g.number() + " " + g.binop() + " " + g.number()
	case 6, 7, 8, 9:
		q.expr = g.topk()
	default:
		q.expr = g.vector(3)
	}
	q.supported = g.supported
	if g.chance(10) {
		q.lookback = []time.Duration{30 * time.Second, time.Minute, 10 * time.Minute, 90 * time.Second}[g.rng.IntN(4)]
	}
	if g.chance(2) {
		q.instant = true
		q.start = diffStart - 1800_000 + g.rng.Int64N(diffEnd-diffStart+3600_000)
		if g.chance(2) {
			q.start -= q.start % 15_000
		}
		q.end = q.start
		return q
	}
	step := genSteps[g.rng.IntN(len(genSteps))].Milliseconds()
	q.step = step
	q.start = diffStart - 3600_000 + g.rng.Int64N(diffEnd-diffStart+3600_000)
	if g.chance(3) {
		q.start -= q.start % step
	}
	n := g.rng.Int64N(300)
	if g.chance(4) {
		n = g.rng.Int64N(1200)
	}
	q.end = q.start + n*step
	if q.end > diffEnd+3600_000 && !g.chance(5) {
		q.end = diffEnd + 3600_000 - g.rng.Int64N(2*3600_000)
		q.end -= (q.end - q.start) % step
		if q.end < q.start {
			q.end = q.start
		}
	}
	if g.chance(5) {
		q.end += g.rng.Int64N(step) // not on a step
	}
	return q
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// orderedQueryable gives the series of every Select sorted by labels
// (descending when desc is set), read whole: Prometheus's answer to a query
// whose result depends on the order of the series (ties of topk and
// bottomk, the sign of a zero min or max, float sums) over another order of
// the same storage. The query package's order is not fixed (parallel
// scans), so an answer equal to Prometheus's over some order is right.
type orderedQueryable struct {
	storage.Queryable
	desc bool
}

func (o orderedQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := o.Queryable.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return orderedQuerier{Querier: q, desc: o.desc}, nil
}

type orderedQuerier struct {
	storage.Querier
	desc bool
}

func (o orderedQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	set := o.Querier.Select(ctx, sortSeries, hints, ms...)
	var all []storage.Series
	var it chunkenc.Iterator
	for set.Next() {
		s := set.At()
		ps := promql.Series{Metric: s.Labels()}
		it = s.Iterator(it)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			switch typ {
			case chunkenc.ValFloat:
				t, f := it.At()
				ps.Floats = append(ps.Floats, promql.FPoint{T: t, F: f})
			default:
				t, h := it.AtFloatHistogram(nil)
				ps.Histograms = append(ps.Histograms, promql.HPoint{T: t, H: h})
			}
		}
		if err := it.Err(); err != nil {
			return storage.ErrSeriesSet(err)
		}
		all = append(all, promql.NewStorageSeries(ps))
	}
	if err := set.Err(); err != nil {
		return storage.ErrSeriesSet(err)
	}
	sort.SliceStable(all, func(i, j int) bool {
		c := labels.Compare(all[i].Labels(), all[j].Labels())
		if o.desc {
			return c > 0
		}
		return c < 0
	})
	return &sliceSeriesSet{series: all, i: -1, warns: set.Warnings()}
}

type sliceSeriesSet struct {
	series []storage.Series
	i      int
	warns  annotations.Annotations
}

func (s *sliceSeriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *sliceSeriesSet) At() storage.Series                { return s.series[s.i] }
func (s *sliceSeriesSet) Err() error                        { return nil }
func (s *sliceSeriesSet) Warnings() annotations.Annotations { return s.warns }
