package main

// The mixed command: writes and dashboards at once, as in production.
// Each system (promhbase on the embedded store, VictoriaMetrics) is a
// fresh process on a fresh directory, started as compare starts it
// (compareproc.go), its results cache off (promhbase
// --query.results-cache.max-bytes=0, VictoriaMetrics -search.disableCache).
// It gets --history of node_exporter-like series (diskgen.go's
// generator) closed-loop, is left to settle, then for --duration takes
// --senders open-loop writers (mixedwrite.go) while --dashboards refresh
// six panels every --refresh (mixeddash.go); afterwards every sample
// acknowledged must be counted in it. The systems take turns, --runs
// times; mixedreport.go prints the tables.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// mixedOptions are the flags of the mixed command.
type mixedOptions struct {
	promhbase, victoriaMetrics string // binaries
	systems                    []string
	runs                       int
	// cpus pins each server (see pinned); 0: unpinned.
	cpus int
	// The live writes: senders, samples/s in all, and each series'
	// interval (0: --series / --rate).
	senders  int
	rate     int
	interval time.Duration
	// The dashboards: how many, how often they refresh, and their time
	// ranges (dashboard i shows ranges[i % len]).
	dashboards int
	refresh    time.Duration
	ranges     []time.Duration
	// The history written before the load, one sample a series every
	// historyInterval.
	history, historyInterval time.Duration
	// settle bounds the wait for the server to go quiet after the
	// history; idleWait the wait for the machine before each run.
	settle, idleWait time.Duration
	dir              string
	extraFlags       []string
}

// registerMixed adds the mixed command and its flags to app, in the
// groups of the methods below (in the order --help lists them).
func registerMixed(app *kingpin.Application) (*kingpin.CmdClause, *mixedOptions) {
	cmd := app.Command("mixed", "Writes and dashboards at once: --series node_exporter-like series with --history of samples, then for --duration (5m unless given) "+
		"--rate samples/s written open-loop by --senders (each series a sample every --interval, wall-clock timestamps) while --dashboards refresh six panels every --refresh; "+
		"results caches off; each system a fresh process, the systems taking turns --runs times; prints write-ack and query latencies, the server's CPU seconds and peak RSS "+
		"over the load, and checks that every sample acknowledged is counted in the server.")
	var m mixedOptions
	m.serverFlags(cmd)
	m.loadFlags(cmd)
	m.dashboardFlags(cmd)
	m.runFlags(cmd)
	return cmd, &m
}

// serverFlags adds the flags of the servers: their binaries, the
// systems run, how often, on how many cores.
func (m *mixedOptions) serverFlags(cmd *kingpin.CmdClause) {
	cmd.Flag("promhbase", "promhbase binary.").Required().StringVar(&m.promhbase)
	cmd.Flag("victoria-metrics", "VictoriaMetrics single-node binary (tools/scripts/victoriametrics.sh prints the project's); for --systems=victoriametrics.").StringVar(&m.victoriaMetrics)
	cmd.Flag("systems", "Systems to run, in turn: promhbase (embedded store), victoriametrics; repeatable (default: both).").StringsVar(&m.systems)
	cmd.Flag("runs", "Times each system runs, the systems taking turns (p, v, p, v, ...).").Default("3").IntVar(&m.runs)
	cmd.Flag("server.cpus", "Run each server pinned to this many cores (taskset on cores 0..N-1, GOMAXPROCS=N), the load generator on the others when the machine has more; 0: unpinned.").Default("0").IntVar(&m.cpus)
}

// loadFlags adds the flags of the live writes.
func (m *mixedOptions) loadFlags(cmd *kingpin.CmdClause) {
	cmd.Flag("senders", "Open-loop writers, like Prometheus's remote-write shards: each owns a share of the targets and sends one request at a time.").Default("8").IntVar(&m.senders)
	cmd.Flag("rate", "Samples/s written in all; each series gets a sample every --series / --rate (unless --interval is given).").Default("100000").IntVar(&m.rate)
	cmd.Flag("interval", "Each series' sample interval in the load; 0: --series / --rate.").Default("0").DurationVar(&m.interval)
}

// dashboardFlags adds the flags of the dashboards.
func (m *mixedOptions) dashboardFlags(cmd *kingpin.CmdClause) {
	cmd.Flag("dashboards", "Dashboards refreshing at once, each six panels asked together as Grafana asks them.").Default("4").IntVar(&m.dashboards)
	cmd.Flag("refresh", "How often each dashboard refreshes (dashboards staggered over it).").Default("10s").DurationVar(&m.refresh)
	cmd.Flag("dashboard.range", "Time ranges of the dashboards (dashboard i shows the i-th, cycling); repeatable. Default: 1h, 6h.").DurationListVar(&m.ranges)
}

// runFlags adds the flags of a run's preparation: the history written
// before the load and the waits, where the data goes, promhbase's extra
// flags.
func (m *mixedOptions) runFlags(cmd *kingpin.CmdClause) {
	cmd.Flag("history", "History written before the load, closed-loop (--concurrency requests in flight of --batch samples).").Default("2h").DurationVar(&m.history)
	cmd.Flag("history.interval", "The history's sample interval a series (a scrape interval); also the panels' shortest step.").Default("15s").DurationVar(&m.historyInterval)
	cmd.Flag("settle", "After the history, wait until the server uses under a twentieth of a core for 5 s, at most this long.").Default("2m").DurationVar(&m.settle)
	cmd.Flag("idle-wait", "Before each run, wait until the machine's CPUs are less than a tenth busy, at most this long; 0 does not wait.").Default("2m").DurationVar(&m.idleWait)
	cmd.Flag("dir", "Where the systems' data directories go (removed after each run).").Default(os.TempDir()).StringVar(&m.dir)
	cmd.Flag("promhbase.flag", "Extra flag for every promhbase serve it starts; repeatable.").StringsVar(&m.extraFlags)
}

// check validates m against o and fills in its defaults: the systems,
// the ranges and the interval.
func (m *mixedOptions) check(o options) error {
	if len(m.systems) == 0 {
		m.systems = []string{"promhbase", "victoriametrics"}
	}
	for _, sys := range m.systems {
		switch {
		case sys != "promhbase" && sys != "victoriametrics":
			return fmt.Errorf("--systems=%q: want promhbase or victoriametrics", sys)
		case sys == "victoriametrics" && m.victoriaMetrics == "":
			return errors.New("--systems=victoriametrics needs --victoria-metrics (tools/scripts/victoriametrics.sh prints the project's)")
		}
	}
	if len(m.ranges) == 0 {
		m.ranges = []time.Duration{time.Hour, 6 * time.Hour}
	}
	if m.interval == 0 && m.rate > 0 {
		m.interval = (time.Duration(o.series) * time.Second / time.Duration(m.rate)).Round(time.Millisecond)
	}
	targets := mixedTargets(o.series)
	switch {
	case o.series <= 0 || o.batch <= 0 || o.concurrency <= 0:
		return fmt.Errorf("--series=%d, --batch=%d, --concurrency=%d: want positive", o.series, o.batch, o.concurrency)
	case m.interval < 10*time.Millisecond:
		return fmt.Errorf("--interval=%s (--series=%d, --rate=%d): want at least 10ms", m.interval, o.series, m.rate)
	case m.senders <= 0 || m.senders > targets:
		return fmt.Errorf("--senders=%d: want 1 to %d, the targets of --series=%d (100 series a target)", m.senders, targets, o.series)
	case m.dashboards < 0 || m.refresh <= 0 || m.runs <= 0:
		return fmt.Errorf("--dashboards=%d, --refresh=%s, --runs=%d: want dashboards >= 0, refresh and runs positive", m.dashboards, m.refresh, m.runs)
	case o.duration <= 0:
		return fmt.Errorf("--duration=%s: want positive", o.duration)
	}
	g := m.historyConfig(o, time.Now())
	if err := g.validate(); err != nil {
		return fmt.Errorf("--history=%s, --history.interval=%s: %w", m.history, m.historyInterval, err)
	}
	return nil
}

// mixedTargets is how many node_exporter targets series make: 100
// series a target (nodeCatalog's), at least one.
func mixedTargets(series int) int { return max(1, series/len(nodeCatalog)) }

// historyConfig is the history's data: --series series of 100 a target,
// one sample every --history.interval over --history ending at end.
func (m mixedOptions) historyConfig(o options, end time.Time) genConfig {
	return genConfig{series: o.series, targets: mixedTargets(o.series), span: m.history, interval: m.historyInterval,
		seed: 1, end: end.Truncate(time.Second)}
}

// runMixed runs every system --runs times, in turns, printing each
// run's row as it ends (to stderr), then the table of all runs and the
// summary (to stdout).
func runMixed(o options, m mixedOptions) ([]mixedResult, error) {
	if err := m.check(o); err != nil {
		return nil, err
	}
	c := compareOptions{promhbase: m.promhbase, victoriaMetrics: m.victoriaMetrics, idleWait: m.idleWait, dir: m.dir,
		extraFlags: append([]string{"--query.results-cache.max-bytes=0"}, m.extraFlags...)}
	fmt.Fprintf(os.Stderr, "mixed: %d series, %d targets, a sample every %s (%.0f samples/s) by %d senders; %d dashboards every %s; %s of history\n",
		o.series, mixedTargets(o.series), m.interval, float64(o.series)/m.interval.Seconds(), m.senders, m.dashboards, m.refresh, m.history)
	var results []mixedResult
	for run := 1; run <= m.runs; run++ {
		for _, sys := range m.systems {
			r, err := mixedOne(o, m, c, sys, run)
			if err != nil {
				return results, fmt.Errorf("%s, run %d: %w", sys, run, err)
			}
			results = append(results, r)
			printMixed(os.Stderr, o, m, []mixedResult{r})
		}
	}
	printMixed(os.Stdout, o, m, results)
	printMixedSummary(os.Stdout, m, results)
	return results, nil
}

// mixedOne is one run of one system: the server started, the live
// load's state prepared (the generator run through the history), the
// history written, the server settled, the load, and the count.
func mixedOne(o options, m mixedOptions, c compareOptions, sys string, run int) (mixedResult, error) {
	res := mixedResult{system: sys, run: run, cpus: m.cpus}
	err := withCompared(c, sys, "mixed", m.cpus, func(s *compared) (err error) {
		// The history ends now; the load's samples follow it once written
		// and settled (that long a gap between them).
		hist := m.historyConfig(o, time.Now())
		senders := newLiveSenders(hist, m, o.batch)
		fmt.Fprintf(os.Stderr, "%s: writing %d samples of history...\n", sys, hist.samples())
		began := time.Now()
		if res.history, err = loadRemoteWrite(s.base+"/api/v1/write", hist, o.concurrency, o.batch); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		res.historyTook = time.Since(began)
		began = time.Now()
		res.settled = waitProcQuiet(&server{cmd: s.cmd}, 5*time.Second, 1, m.settle)
		res.settleTook = time.Since(began)
		fmt.Fprintf(os.Stderr, "%s: history in %s, settled %v after %s; the load for %s...\n", sys,
			res.historyTook.Round(time.Millisecond), res.settled, res.settleTook.Round(time.Second), o.duration)
		if err := s.mixedLoad(o, m, senders, &res); err != nil {
			return err
		}
		if err := s.flush(); err != nil {
			return err
		}
		res.counted, err = countStored(s.base, hist.startMs(), res.writes.lastTs)
		return err
	})
	return res, err
}

// resetPeakRSS makes pid's VmHWM its current resident set (5 written to
// /proc/PID/clear_refs, Linux 4.0 on), so that procHWM later reads the
// peak since; false where it cannot.
func resetPeakRSS(pid int) bool {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/clear_refs", pid), os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	_, err = f.WriteString("5")
	return errors.Join(err, f.Close()) == nil
}
