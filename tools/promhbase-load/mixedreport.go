package main

// The mixed command's results and their tables.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// mixedResult is one run of one system.
type mixedResult struct {
	system    string
	run, cpus int
	// history: samples of the history acknowledged, in historyTook; the
	// server then went quiet (settled) after settleTook, or not.
	history                 int64
	historyTook, settleTook time.Duration
	settled                 bool
	writes                  *writeStats
	dash                    *dashStats
	elapsed                 time.Duration // from the load's start to its last acknowledgement
	cpu, genCPU             float64       // CPU seconds over the load: the server's, the load generator's
	// peakRSS is the server's VmHWM at the load's end: its peak over the
	// load when peakReset (reset at its start), else over its life.
	peakRSS   int64
	peakReset bool
	counted   int64 // samples the server counted afterwards
}

// acknowledged is every sample the server acknowledged: the history's
// and the load's.
func (r mixedResult) acknowledged() int64 { return r.history + r.writes.samples }

// countsExact says whether the server counted exactly the samples it
// acknowledged, none left unsent or failed.
func (r mixedResult) countsExact() bool {
	return r.counted == r.acknowledged() && r.writes.errors == 0 && r.writes.unsent == 0
}

// rate is the load's acknowledged samples/s.
func (r mixedResult) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.writes.samples) / r.elapsed.Seconds()
}

// quantile is the p-quantile of ds (sorted in place); 0 when empty.
func quantile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

// queryQuantile is the p-quantile of the latencies of the panels over
// rng (cpu: cpuPanel's only); -1 when none were answered.
func (r mixedResult) queryQuantile(rng time.Duration, p float64, cpu bool) time.Duration {
	rs := r.dash.byRange[rng]
	ds := rs.lat
	if cpu {
		ds = rs.cpuLat
	}
	if len(ds) == 0 {
		return -1
	}
	return quantile(ds, p)
}

// perRange joins f of every range with " / ".
func perRange(m mixedOptions, f func(rng time.Duration) string) string {
	var parts []string
	for _, rng := range m.ranges {
		parts = append(parts, f(rng))
	}
	return strings.Join(parts, " / ")
}

// fmtLatency writes a latency, "-" for none.
func fmtLatency(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return roundDur(d).String()
}

// rangeNames are the ranges as the tables' headers name them.
func rangeNames(m mixedOptions) string { return perRange(m, rangeName) }

// rangeName writes a range short: 1h, 6h, 90m, 45s.
func rangeName(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// printMixed prints one Markdown table row per run, and under it what
// went wrong (errors, uneven counts, a server that did not settle).
func printMixed(w io.Writer, o options, m mixedOptions, rs []mixedResult) {
	ranges := rangeNames(m)
	fmt.Fprintf(w, "\n| run | system | samples/s acked | write ack p50 / p99 / max | most behind | query p99 %s | `%s` p50 %s | queries (errors, empty) | server CPU s | generator CPU s | peak RSS | counted / acknowledged |\n",
		ranges, cpuPanel, ranges)
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var notes []string
	for _, r := range rs {
		sys := r.system
		if r.cpus > 0 {
			sys = fmt.Sprintf("%s, %d cores", sys, r.cpus)
		}
		ws := r.writes
		queries, qerrs, empty := 0, 0, 0
		for _, rs := range r.dash.byRange {
			queries, qerrs, empty = queries+rs.queries, qerrs+rs.errors, empty+rs.empty
		}
		peak := fmt.Sprintf("%.0f MB", float64(r.peakRSS)/1e6)
		if !r.peakReset {
			peak += " (whole life)"
		}
		ok := "exact"
		if !r.countsExact() {
			ok = "NOT EXACT"
		}
		fmt.Fprintf(w, "| %d | %s | %.0f | %s / %s / %s | %s | %s | %s | %d (%d, %d) | %.1f | %.1f | %s | %d / %d %s |\n",
			r.run, sys, r.rate(), fmtLatency(quantile(ws.lat, 0.5)), fmtLatency(quantile(ws.lat, 0.99)), fmtLatency(quantile(ws.lat, 1)),
			roundDur(ws.behind),
			perRange(m, func(rng time.Duration) string { return fmtLatency(r.queryQuantile(rng, 0.99, false)) }),
			perRange(m, func(rng time.Duration) string { return fmtLatency(r.queryQuantile(rng, 0.5, true)) }),
			queries, qerrs, empty, r.cpu, r.genCPU, peak, r.counted, r.acknowledged(), ok)
		notes = append(notes, runNotes(r)...)
	}
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(rs) > 0 {
		fmt.Fprintf(w, "- %d series, a sample every %s by %d senders (requests of up to %d samples); %d dashboards every %s (%s), six panels each; %s\n",
			o.series, m.interval, m.senders, o.batch, m.dashboards, m.refresh, ranges, o.duration)
	}
}

// runNotes are the run's history and settling, and what went wrong.
func runNotes(r mixedResult) []string {
	tag := fmt.Sprintf("run %d, %s", r.run, r.system)
	settled := "settled"
	if !r.settled {
		settled = "did NOT settle"
	}
	notes := []string{fmt.Sprintf("%s: %d samples of history in %s, %s after %s; the load: %d requests", tag, r.history,
		r.historyTook.Round(time.Millisecond), settled, r.settleTook.Round(time.Second), r.writes.requests)}
	if ws := r.writes; ws.errors > 0 || ws.unsent > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d write requests failed (the first: %v), %d samples unsent", tag, ws.errors, ws.firstErr, ws.unsent))
	}
	for _, rs := range r.dash.byRange {
		if rs.firstErr != nil {
			notes = append(notes, fmt.Sprintf("%s: %d queries failed, the first: %v", tag, rs.errors, rs.firstErr))
		}
	}
	return notes
}

// mixedFigure is one figure of the summary, read from a run.
type mixedFigure struct {
	name  string
	value func(r mixedResult) float64
	// format prints a value; "" for latencies (seconds printed as
	// durations).
	format string
}

// mixedFigures are the summary's figures.
func mixedFigures(m mixedOptions) []mixedFigure {
	figs := []mixedFigure{
		{"write ack p50", func(r mixedResult) float64 { return quantile(r.writes.lat, 0.5).Seconds() }, ""},
		{"write ack p99", func(r mixedResult) float64 { return quantile(r.writes.lat, 0.99).Seconds() }, ""},
	}
	for _, rng := range m.ranges {
		figs = append(figs, mixedFigure{"query p99 " + rangeName(rng),
			func(r mixedResult) float64 { return r.queryQuantile(rng, 0.99, false).Seconds() }, ""})
	}
	for _, rng := range m.ranges {
		figs = append(figs, mixedFigure{"cpu panel p50 " + rangeName(rng),
			func(r mixedResult) float64 { return r.queryQuantile(rng, 0.5, true).Seconds() }, ""})
	}
	return append(figs,
		mixedFigure{"samples/s acked", mixedResult.rate, "%.0f"},
		mixedFigure{"server CPU s", func(r mixedResult) float64 { return r.cpu }, "%.1f"},
		mixedFigure{"peak RSS MB", func(r mixedResult) float64 { return float64(r.peakRSS) / 1e6 }, "%.0f"})
}

// printMixedSummary prints, per system, each figure's median over the
// runs and its spread (min – max), and how many runs counted exactly.
func printMixedSummary(w io.Writer, m mixedOptions, rs []mixedResult) {
	figs := mixedFigures(m)
	fmt.Fprintf(w, "\n## Summary: median (min – max) of the runs\n\n| system | runs | counts exact |")
	for _, f := range figs {
		fmt.Fprintf(w, " %s |", f.name)
	}
	fmt.Fprintf(w, "\n|%s\n", strings.Repeat(" --- |", len(figs)+3))
	for _, sys := range m.systems {
		var runs []mixedResult
		exact := 0
		for _, r := range rs {
			if r.system == sys {
				runs = append(runs, r)
				if r.countsExact() {
					exact++
				}
			}
		}
		if len(runs) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %d of %d |", sys, len(runs), exact, len(runs))
		for _, f := range figs {
			vs := make([]float64, len(runs))
			for i, r := range runs {
				vs[i] = f.value(r)
			}
			fmt.Fprintf(w, " %s |", spread(vs, f.format))
		}
		fmt.Fprintln(w)
	}
}

// spread writes the median of vs and, for several, their min – max, in
// format; latencies (format "") as durations, negative ones (none
// answered) as "-".
func spread(vs []float64, format string) string {
	slices.Sort(vs)
	f := func(v float64) string {
		switch {
		case format != "":
			return fmt.Sprintf(format, v)
		case v < 0:
			return "-"
		}
		return roundDur(time.Duration(v * float64(time.Second))).String()
	}
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	if len(vs) == 1 {
		return f(med)
	}
	return fmt.Sprintf("%s (%s – %s)", f(med), f(vs[0]), f(vs[len(vs)-1]))
}
