package main

// The disk command and promhbase's rollups: waiting until they cover the
// data, and comparing the answers of the resolutions point by point.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rollupProgress is how far promhbase's rollups reached while waited for.
type rollupProgress struct {
	enabled bool // promhbase exports rollup metrics
	covered bool // they cover the data
	took    time.Duration
	cpu     float64 // promhbase's CPU seconds meanwhile
	// from and until: the span built (Unix s); the counters of the
	// process at the end.
	from, until                     float64
	built, rebuilt, failures, cells float64
	// settle: the wait for the store to settle after hours were built at
	// the restart for the queries, before they were timed.
	settle     time.Duration
	settleNote string
}

// waitRollups waits until promhbase's rollups cover the data (its first
// hour to its end: promhbase_rollup_built_from_timestamp_seconds at or
// before the first, ..._until_... at or after the end), at most timeout,
// polling its /metrics.
func waitRollups(srv *server, g genConfig, timeout time.Duration, label string) (*rollupProgress, error) {
	const poll = time.Second
	began := time.Now()
	pid := srv.cmd.Process.Pid
	cpu0, _ := procCPU(pid)
	wantFrom, wantUntil := float64(g.startMs()/1000), float64(g.endMs()/1000)
	lastLog := began
	fmt.Fprintf(os.Stderr, "%s: waiting for the rollups to cover %s to %s...\n", label,
		time.Unix(int64(wantFrom), 0).UTC().Format(time.RFC3339), time.Unix(int64(wantUntil), 0).UTC().Format(time.RFC3339))
	for {
		m, err := scrapeMetrics(srv.base + "/metrics")
		if err != nil {
			return nil, err
		}
		until, ok := m["promhbase_rollup_built_until_timestamp_seconds"]
		if !ok {
			fmt.Fprintf(os.Stderr, "%s: no rollup metrics (rollups off); not waiting\n", label)
			return &rollupProgress{}, nil
		}
		p := &rollupProgress{enabled: true, from: m["promhbase_rollup_built_from_timestamp_seconds"], until: until,
			built: m["promhbase_rollup_hours_built_total"], rebuilt: m["promhbase_rollup_hours_rebuilt_total"],
			failures: m["promhbase_rollup_failures_total"], cells: m["promhbase_rollup_cells_written_total"]}
		now := time.Now()
		// Before the scheduler's first check both are 0; once every
		// wanted hour is built, from is 0 (rollups reach back to the
		// beginning).
		p.covered = p.from <= wantFrom && p.until >= wantUntil
		if p.covered {
			// The gauges can claim the span a moment early (a scheduler
			// that has not yet lowered the oldest hour written): an auto
			// answer over the data must read the rollups alone.
			p.covered = answersRolled(srv, g)
		}
		if p.covered || now.Sub(began) > timeout {
			cpu1, _ := procCPU(pid)
			p.took, p.cpu = now.Sub(began), cpu1-cpu0
			state := "covered the data"
			if !p.covered {
				state = fmt.Sprintf("did NOT cover the data within %s", timeout)
			}
			fmt.Fprintf(os.Stderr, "%s: rollups %s after %s (%.1f CPU s; span %s, hours built %.0f, rebuilt %.0f, failures %.0f)\n", label, state,
				p.took.Round(100*time.Millisecond), p.cpu, p.span(), p.built, p.rebuilt, p.failures)
			return p, nil
		}
		if now.Sub(lastLog) >= 30*time.Second {
			lastLog = now
			fmt.Fprintf(os.Stderr, "%s: rollups after %s: span %s, hours built %.0f, rebuilt %.0f\n", label, now.Sub(began).Round(time.Second),
				p.span(), p.built, p.rebuilt)
		}
		time.Sleep(poll)
	}
}

// answersRolled reports whether promhbase answers a 1 h step window
// query over the whole data from its 5m rollups alone (the
// X-Promhbase-Resolution of an auto answer).
func answersRolled(srv *server, g genConfig) bool {
	_, hdr, err := fetchMatrix(srv.base, "count_over_time(node_load1[1h])", g.startMs()+time.Hour.Milliseconds(), g.endMs(), time.Hour,
		url.Values{"max_source_resolution": {"auto"}, "nocache": {"1"}})
	return err == nil && hdr == "5m"
}

// span writes the span built.
func (p *rollupProgress) span() string {
	f := func(s float64) string { return time.Unix(int64(s), 0).UTC().Format("2006-01-02T15:04Z") }
	return f(p.from) + " – " + f(p.until)
}

// printRollups reports promhbase's ingest and the building of its rollups.
func printRollups(w io.Writer, g genConfig, d diskOptions, runs []*diskRun, rep *queryReport) {
	for _, r := range runs {
		if r.system != sysPromhbase && r.system != sysPromhbaseHBase {
			continue
		}
		after := r.rollup
		restart := rep.rollups[r.system]
		if (after == nil || !after.enabled) && (restart == nil || !restart.enabled) {
			continue
		}
		samples := float64(g.samples())
		fmt.Fprintf(w, "\n## %s: ingest and rollups\n\n", r.name())
		if r.loadCPU > 0 {
			fmt.Fprintf(w, "- ingest (remote write of %d samples): %s, %.0f samples/s, %.1f CPU s", g.samples(), r.load.Round(time.Millisecond),
				samples/r.load.Seconds(), r.loadCPU)
		} else {
			fmt.Fprintf(w, "- ingest (remote write of %d samples): %s, %.0f samples/s", g.samples(), r.load.Round(time.Millisecond), samples/r.load.Seconds())
		}
		if d.rollupAfterLoad {
			fmt.Fprintf(w, " (rollups off: --no-rollup.enabled)\n")
		} else {
			fmt.Fprintf(w, " (rollups on, built in the background meanwhile)\n")
		}
		line := func(what string, p *rollupProgress) {
			state := "covered the data"
			if !p.covered {
				state = "did NOT cover the data"
			}
			fmt.Fprintf(w, "- %s: %s after %s (%.1f CPU s of promhbase meanwhile); span built %s; hours built %.0f, rebuilt %.0f, failures %.0f, cells written %.0f\n",
				what, state, p.took.Round(100*time.Millisecond), p.cpu, p.span(), p.built, p.rebuilt, p.failures, p.cells)
		}
		if after != nil && after.enabled {
			line("rollups, waited for after the load ended (same process)", after)
			all := r.load + after.took
			fmt.Fprintf(w, "  - from the start of the load until the rollups covered the data: %s (%.2f × the ingest time)\n",
				all.Round(100*time.Millisecond), all.Seconds()/r.load.Seconds())
		}
		if restart != nil && restart.enabled {
			what := "rollups at the restart for the queries"
			if d.rollupAfterLoad {
				what = "rollups built at the first start with rollups on (backwards over the stored data), restart for the queries"
			}
			line(what, restart)
			if restart.settleNote != "" {
				fmt.Fprintf(w, "  - then, before the queries: %s after %s\n", restart.settleNote, restart.settle.Round(time.Second))
			}
			if d.rollupAfterLoad && restart.covered {
				fmt.Fprintf(w, "  - %.0f samples/s, %.2f × the ingest time, %.2f × its CPU seconds\n", samples/max(restart.took.Seconds(), 1e-3),
					restart.took.Seconds()/r.load.Seconds(), restart.cpu/max(r.loadCPU, 1e-3))
			}
		}
	}
}

// ---- answers compared ----

// agreement compares one query's answer on one query system with a
// reference's, point by point.
type agreement struct {
	query, name, ref string
	series           int
	compared         int
	worst, median    float64
	worstAt          string
	over             int // points whose relative difference exceeds 1e-9
	onlyRef, onlyIn  int // points only one of the two has
	laterHeader      string
	err              error
}

// matrix is a query_range answer: series (labels as text) -> ms -> value.
type matrix map[string]map[int64]float64

// fetchMatrix runs a query_range and returns its answer and resolution
// header.
func fetchMatrix(base, query string, start, end int64, step time.Duration, extra url.Values) (matrix, string, error) {
	resp, err := http.PostForm(base+"/api/v1/query_range", rangeForm(query, start, end, step, extra))
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, "", fmt.Errorf("%s: status %d: %s", query, resp.StatusCode, msg)
	}
	var qr struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string    `json:"metric"`
				Values [][2]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		return nil, "", err
	}
	if qr.Status != "success" {
		return nil, "", fmt.Errorf("%s: status %q", query, qr.Status)
	}
	m := matrix{}
	for _, r := range qr.Data.Result {
		names := make([]string, 0, len(r.Metric))
		for k := range r.Metric {
			names = append(names, k)
		}
		slices.Sort(names)
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", k, r.Metric[k])
		}
		b.WriteByte('}')
		pts := map[int64]float64{}
		for _, v := range r.Values {
			var ts float64
			var s string
			if err := json.Unmarshal(v[0], &ts); err != nil {
				return nil, "", fmt.Errorf("%s: timestamp %s: %w", query, v[0], err)
			}
			if err := json.Unmarshal(v[1], &s); err != nil {
				return nil, "", fmt.Errorf("%s: value %s: %w", query, v[1], err)
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, "", fmt.Errorf("%s: value %q: %w", query, s, err)
			}
			pts[int64(math.Round(ts*1000))] = f
		}
		m[b.String()] = pts
	}
	return m, resp.Header.Get("X-Promhbase-Resolution"), nil
}

// relDiff is |a-b| / max(|a|, |b|): 0 for equal values (NaNs included),
// +Inf when only one is NaN.
func relDiff(a, b float64) float64 {
	switch {
	case a == b, math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a) || math.IsNaN(b):
		return math.Inf(1)
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// compareMatrices compares other with ref point by point.
func compareMatrices(ref, other matrix) *agreement {
	a := &agreement{series: len(other)}
	var diffs []float64
	for s, rp := range ref {
		op := other[s]
		for ts, rv := range rp {
			ov, ok := op[ts]
			if !ok {
				a.onlyRef++
				continue
			}
			d := relDiff(rv, ov)
			diffs = append(diffs, d)
			if d > 1e-9 {
				a.over++
			}
			if d > a.worst || a.worstAt == "" {
				if d > a.worst {
					a.worst = d
				}
				a.worstAt = fmt.Sprintf("%s at %s: %g vs %g", s, time.UnixMilli(ts).UTC().Format("2006-01-02T15:04Z"), rv, ov)
			}
		}
	}
	for s, op := range other {
		for ts := range op {
			if _, ok := ref[s][ts]; !ok {
				a.onlyIn++
			}
		}
	}
	a.compared = len(diffs)
	if len(diffs) > 0 {
		slices.Sort(diffs)
		a.median = diffs[len(diffs)/2]
		if len(diffs)%2 == 0 {
			a.median = (diffs[len(diffs)/2-1] + diffs[len(diffs)/2]) / 2
		}
	}
	if a.worst == 0 {
		a.worstAt = ""
	}
	return a
}

// compareAnswers compares, for the timings of one query on every query
// system: each promhbase resolution's answer with the raw one of the
// same system, and Prometheus's with promhbase's raw one. For each
// resolution other than raw it also asks again starting a step later,
// and records the resolution header of that answer. Without a raw
// resolution, each promhbase row asked without max_source_resolution
// (each --promhbase.variant's) is compared with Prometheus's answer.
func compareAnswers(ts []*queryTiming, start, end int64, step time.Duration) []*agreement {
	answers := map[*queryTiming]matrix{}
	errs := map[*queryTiming]error{}
	get := func(t *queryTiming) (matrix, error) {
		if m, ok := answers[t]; ok || errs[t] != nil {
			return m, errs[t]
		}
		m, _, err := fetchMatrix(t.qs.srv.base, t.query, start, end, step, t.qs.extra)
		answers[t], errs[t] = m, err
		return m, err
	}
	var out []*agreement
	compare := func(ref, t *queryTiming) *agreement {
		rm, err := get(ref)
		if err != nil {
			return &agreement{query: t.query, name: t.name, ref: ref.name, err: err}
		}
		om, err := get(t)
		if err != nil {
			return &agreement{query: t.query, name: t.name, ref: ref.name, err: err}
		}
		a := compareMatrices(rm, om)
		a.query, a.name, a.ref = t.query, t.name, ref.name
		return a
	}
	var firstRaw *queryTiming
	for _, raw := range ts {
		if raw.err != nil || raw.qs.res == "" || !isRawResolution(raw.qs.res) {
			continue
		}
		if firstRaw == nil {
			firstRaw = raw
		}
		for _, t := range ts {
			if t.err != nil || t.qs.sys != raw.qs.sys || t.qs.res == "" || isRawResolution(t.qs.res) {
				continue
			}
			a := compare(raw, t)
			if _, hdr, err := fetchMatrix(t.qs.srv.base, t.query, start+step.Milliseconds(), end, step, t.qs.extra); err == nil {
				a.laterHeader = hdr
			}
			out = append(out, a)
		}
	}
	if firstRaw != nil {
		for _, t := range ts {
			if t.err == nil && t.qs.sys == sysPrometheus {
				out = append(out, compare(firstRaw, t))
			}
		}
		return out
	}
	var prom *queryTiming
	for _, t := range ts {
		if t.err == nil && t.qs.sys == sysPrometheus {
			prom = t
			break
		}
	}
	if prom == nil {
		return out
	}
	for _, t := range ts {
		if t.err == nil && (t.qs.sys == sysPromhbase || t.qs.sys == sysPromhbaseHBase) && t.qs.res == "" {
			out = append(out, compare(prom, t))
		}
	}
	return out
}

func printAgreements(w io.Writer, as []*agreement) {
	if len(as) == 0 {
		return
	}
	fmt.Fprintf(w, "\nAnswers compared point by point (relative difference |a-b| / max(|a|,|b|)):\n\n")
	fmt.Fprintf(w, "| query | answer | with | series | points compared | worst relative difference | median | points > 1e-9 | points only in the reference / only in the answer | header starting a step later |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, a := range as {
		q := strings.ReplaceAll(a.query, "|", `\|`)
		if a.err != nil {
			fmt.Fprintf(w, "| `%s` | %s | %s | error: %s | | | | | | |\n", q, a.name, a.ref, strings.ReplaceAll(a.err.Error(), "|", `\|`))
			continue
		}
		worst := fmt.Sprintf("%.3g", a.worst)
		if a.worstAt != "" {
			worst += " (" + strings.ReplaceAll(a.worstAt, "|", `\|`) + ")"
		}
		hdr := a.laterHeader
		if hdr == "" {
			hdr = "–"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %d | %d | %s | %.3g | %d | %d / %d | %s |\n", q, a.name, a.ref, a.series, a.compared, worst, a.median, a.over, a.onlyRef, a.onlyIn, hdr)
	}
}
