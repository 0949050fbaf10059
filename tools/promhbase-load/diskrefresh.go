package main

// The disk command's dashboard replay (--refresh): promhbase's results
// cache timed against nocache=1 on the same refreshes.
//
// A dashboard asks the same query_range again and again with its range
// moved forward, start and end aligned to the step. The replay asks every
// query of the benchmark over the data's span, then --refresh times more,
// each time with the range one step later, after writing the samples of
// that step (the next scrapes of every series, continuing the generator
// past the loaded data). Each refresh of each query is asked twice, with
// the cache and with nocache=1, in alternating order, and the two answers
// must be the same bytes.
//
// Time is compressed: 20 refreshes a step apart would take 96 minutes at
// 24 h's 288 s step and 11 hours at 7 days' 2016 s, so the refreshes follow
// each other at once, over data that ends --refresh steps (and 15 minutes)
// before now. promhbase runs with the results cache on its data clock
// (--query.results-cache.data-clock: its now is the newest sample written
// through it) and --query.results-cache.offset=--refresh.offset (5
// minutes): each refresh's writes move the cache's now one step, as the
// wall clock moves it for a dashboard in real time, so each refresh
// evaluates what a real one does: the steps within the offset of its end.
// The first query, before any write, keeps nothing.
import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang/snappy"
)

// refreshPlan is the ranges of a replay: the first ends at end0 and
// starts points steps before, both multiples of the step (as Grafana
// aligns them); refresh k (1..n) is the first moved k steps later.
type refreshPlan struct {
	start0, end0, stepMs int64
	n                    int
}

// newRefreshPlan plans n refreshes of ranges as long as the data's span,
// the first ending at the last multiple of step at or before the data's
// end.
func newRefreshPlan(g genConfig, step time.Duration, n int) refreshPlan {
	s := step.Milliseconds()
	end0 := g.endMs() / s * s
	return refreshPlan{start0: end0 - g.span.Milliseconds()/s*s, end0: end0, stepMs: s, n: n}
}

// window is the range (Unix ms) of refresh k; 0 is the first query.
func (p refreshPlan) window(k int) (start, end int64) {
	d := int64(k) * p.stepMs
	return p.start0 + d, p.end0 + d
}

// refreshDataEnd is where the loaded data ends when n refreshes of step
// follow it: on the hour, at least 15 minutes and n steps before now, so
// that the samples the refreshes write are in the past too.
func refreshDataEnd(now time.Time, step time.Duration, n int) time.Time {
	return now.Add(-15*time.Minute - time.Duration(n)*step).Truncate(time.Hour)
}

// extendedGen is g continued so far that its samples reach the end of
// the plan's last range: the same samples as g's up to g's end, then more.
func extendedGen(g genConfig, p refreshPlan) genConfig {
	_, last := p.window(p.n)
	more := time.Duration(max(last-g.endMs(), 0))*time.Millisecond + g.interval
	g.span += more
	g.end = g.end.Add(more)
	return g
}

// refreshFeed writes the samples of the extended data after the loaded
// ones, up to a time at each call, as remote write 1.0 requests in time
// order.
type refreshFeed struct {
	gen     *generator
	sc      scrape
	ti      int
	pending bool // sc is a scrape not sent yet
	done    bool
	batch   int
}

// newRefreshFeed returns the feed of ext's samples from from (Unix ms)
// on; those before are generated and dropped (they were loaded).
func newRefreshFeed(ext genConfig, from int64, batch int) *refreshFeed {
	f := &refreshFeed{gen: newGenerator(ext), batch: batch}
	for f.gen.next(&f.sc, &f.ti) {
		if f.sc.ts >= from {
			f.pending = true
			return f
		}
	}
	f.done = true
	return f
}

// requests returns the remote write 1.0 requests (snappy not applied) of
// every scrape at or before until not returned yet, up to batch samples
// each, and how many samples they hold.
func (f *refreshFeed) requests(until int64) ([][]byte, int) {
	var reqs [][]byte
	var cur []byte
	inCur, n := 0, 0
	for !f.done && (f.pending || f.advance()) {
		if f.sc.ts > until {
			break
		}
		f.pending = false
		for i := range f.sc.target.series {
			s := &f.sc.target.series[i]
			cur = appendTimeSeries(cur, s.pbLabels, f.sc.ts, s.value)
			inCur++
			n++
			if inCur == f.batch {
				reqs, cur, inCur = append(reqs, cur), nil, 0
			}
		}
	}
	if inCur > 0 {
		reqs = append(reqs, cur)
	}
	return reqs, n
}

// advance generates the next scrape into f.sc.
func (f *refreshFeed) advance() bool {
	if !f.gen.next(&f.sc, &f.ti) {
		f.done = true
		return false
	}
	f.pending = true
	return true
}

// write sends the samples up to until to url, one request after another.
func (f *refreshFeed) write(url string, until int64) (int, error) {
	reqs, n := f.requests(until)
	for _, r := range reqs {
		if err := post(context.Background(), url, "application/x-protobuf", snappy.Encode(nil, r)); err != nil {
			return 0, fmt.Errorf("writing the samples up to %d: %w", until, err)
		}
	}
	return n, nil
}

// refreshTiming is one query's replay.
type refreshTiming struct {
	query            string
	cached, uncached []time.Duration // of refreshes 1..n
	series, points   int             // of the last answer
	compared, equal  int             // answers compared (the first query's too) and found the same
	firstDiff        string          // where the first unequal pair differed
	err              error
}

// refreshReport is what the replay found.
type refreshReport struct {
	system  string
	plan    refreshPlan
	offset  time.Duration
	written []int // samples written before each refresh
	timings []*refreshTiming
	// cache: the deltas of promhbase_query_results_cache_*_total over the
	// replay, by the name's last part (hits, misses...); nil when promhbase
	// exports none.
	cache map[string]float64
}

// replayDashboard asks every query of plan's ranges at base: the first
// range, then each refresh after write(its end) has sent the samples up
// to it; each with the cache and with nocache=1, in turns, their answers
// compared byte for byte. A query that fails is left out of the refreshes
// after; a failed write ends the replay.
func replayDashboard(base string, queries []string, plan refreshPlan, write func(until int64) (int, error)) ([]*refreshTiming, []int, error) {
	ts := make([]*refreshTiming, len(queries))
	for i, q := range queries {
		ts[i] = &refreshTiming{query: q}
	}
	var written []int
	step := time.Duration(plan.stepMs) * time.Millisecond
	for k := 0; k <= plan.n; k++ {
		start, end := plan.window(k)
		n, err := write(end)
		if err != nil {
			return ts, written, err
		}
		if k > 0 {
			written = append(written, n)
		}
		for qi, t := range ts {
			if t.err != nil {
				continue
			}
			var bodies [2][]byte
			var took [2]time.Duration
			// 0: with the cache, 1: nocache=1; each first in turn (the
			// first query fills the cache first).
			for j := range 2 {
				which := (j + k + qi) % 2
				if k == 0 {
					which = j
				}
				extra := url.Values{}
				if which == 1 {
					extra.Set("nocache", "1")
				}
				bodies[which], took[which], err = rangeBody(base, t.query, start, end, step, extra)
				if err != nil {
					t.err = fmt.Errorf("refresh %d: %w", k, err)
					break
				}
			}
			if t.err != nil {
				continue
			}
			t.compared++
			if diff := bodyDiff(bodies[0], bodies[1]); diff == "" {
				t.equal++
			} else if t.firstDiff == "" {
				t.firstDiff = fmt.Sprintf("refresh %d: %s", k, diff)
			}
			t.series, t.points = countAnswer(bodies[0])
			if k > 0 {
				t.cached = append(t.cached, took[0])
				t.uncached = append(t.uncached, took[1])
			}
		}
	}
	return ts, written, nil
}

// cacheMetrics returns promhbase's results cache counters by the name's
// last part ("hits", "misses", ...).
func cacheMetrics(base string) (map[string]float64, error) {
	m, err := scrapeMetrics(base + "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, "promhbase_query_results_cache_"); ok {
			if name, ok = strings.CutSuffix(name, "_total"); ok {
				out[name] = v
			}
		}
	}
	return out, nil
}

// diskRefresh replays the dashboard on r's data (promhbase, embedded),
// restarted with the results cache's offset of the plan.
func diskRefresh(o options, d diskOptions, g genConfig, work string, r *diskRun) (*refreshReport, error) {
	step := stepOf(g, d)
	plan := newRefreshPlan(g, step, d.refresh)
	qs := d.queries
	if len(qs) == 0 {
		qs = defaultDiskQueries
	}
	queries := make([]string, len(qs))
	for i, q := range qs {
		queries[i] = strings.ReplaceAll(q, "$step", promDuration(step))
	}
	rep := &refreshReport{system: r.name(), plan: plan, offset: d.refreshOffset}
	srv, err := startPromhbase(d, r.dataDir, r.dataDir+"-refresh.log", nil,
		fmt.Sprintf("--query.results-cache.offset=%s", promDuration(rep.offset)), "--query.results-cache.data-clock")
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.stop() }()
	feed := newRefreshFeed(extendedGen(g, plan), g.endMs(), o.batch)
	before, err := cacheMetrics(srv.base)
	if err != nil {
		return nil, srv.withLog(err)
	}
	fmt.Fprintf(os.Stderr, "refresh: %d queries, %d refreshes of %s a step of %s, results cache offset %s...\n",
		len(queries), d.refresh, d.span, promDuration(step), rep.offset)
	rep.timings, rep.written, err = replayDashboard(srv.base, queries, plan, func(until int64) (int, error) {
		return feed.write(srv.base+"/api/v1/write", until)
	})
	if err != nil {
		return nil, srv.withLog(err)
	}
	after, err := cacheMetrics(srv.base)
	if err != nil {
		return nil, srv.withLog(err)
	}
	if len(after) > 0 {
		rep.cache = map[string]float64{}
		for k, v := range after {
			rep.cache[k] = v - before[k]
		}
	}
	return rep, srv.stop()
}

// printRefresh prints the replay's table: per query the median refresh
// with the cache and with nocache=1, their ratio, and the answers compared.
func printRefresh(w io.Writer, d diskOptions, rep *refreshReport) {
	p := rep.plan
	fmt.Fprintf(w, "\n## Dashboard refreshes: query_range over %s, step %s, on %s: %d refreshes each a step later, the samples of that step written before each; with the results cache and with nocache=1, in turns\n\n",
		d.span, promDuration(time.Duration(p.stepMs)*time.Millisecond), rep.system, p.n)
	fmt.Fprintf(w, "| query | cached: median | min – max | nocache=1: median | min – max | nocache=1 ÷ cached | answers equal | series | points |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var ratios []float64
	for _, t := range rep.timings {
		q := strings.ReplaceAll(t.query, "|", `\|`)
		if t.err != nil {
			fmt.Fprintf(w, "| `%s` | error: %s | | | | | | | |\n", q, strings.ReplaceAll(t.err.Error(), "|", `\|`))
			continue
		}
		c, u := slices.Clone(t.cached), slices.Clone(t.uncached)
		if len(c) == 0 {
			continue
		}
		mc, mu := median(c), median(u)
		ratio := float64(mu) / float64(max(mc, 1))
		ratios = append(ratios, ratio)
		fmt.Fprintf(w, "| `%s` | %s | %s – %s | %s | %s – %s | %.1f | %d of %d | %d | %d |\n", q,
			roundDur(mc), roundDur(c[0]), roundDur(c[len(c)-1]), roundDur(mu), roundDur(u[0]), roundDur(u[len(u)-1]),
			ratio, t.equal, t.compared, t.series, t.points)
	}
	fmt.Fprintln(w)
	if len(ratios) > 0 {
		slices.Sort(ratios)
		fmt.Fprintf(w, "- nocache=1 ÷ cached, the queries' medians: lowest %.1f, median %.1f, highest %.1f\n", ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
	}
	for _, t := range rep.timings {
		if t.firstDiff != "" {
			fmt.Fprintf(w, "- `%s`: answers differ: %s\n", strings.ReplaceAll(t.query, "|", `\|`), t.firstDiff)
		}
	}
	start, end := p.window(0)
	fmt.Fprintf(w, "- the first range %s to %s; promhbase restarted with --query.results-cache.offset=%s --query.results-cache.data-clock: the steps later than the newest sample written minus %s are not kept\n",
		time.UnixMilli(start).UTC().Format(time.RFC3339), time.UnixMilli(end).UTC().Format(time.RFC3339), promDuration(rep.offset), promDuration(rep.offset))
	if len(rep.written) > 0 {
		c := slices.Clone(rep.written)
		slices.Sort(c)
		fmt.Fprintf(w, "- samples written before each refresh: %d to %d\n", c[0], c[len(c)-1])
	}
	if rep.cache == nil {
		fmt.Fprintf(w, "- promhbase exports no promhbase_query_results_cache_* metrics\n")
		return
	}
	names := make([]string, 0, len(rep.cache))
	for k := range rep.cache {
		names = append(names, k)
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, rep.cache[k]))
	}
	fmt.Fprintf(w, "- the results cache over the replay: %s\n", strings.Join(parts, ", "))
}
