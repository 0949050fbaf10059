package main

import (
	"fmt"
	"os"
	"time"
)

// The systems of the disk command, in the order they run.
const (
	sysPromhbase      = "promhbase"
	sysPromhbaseHBase = "promhbase-hbase" // not in the default set: needs a running HBase
	sysVM             = "victoriametrics"
	sysPrometheus     = "prometheus"
)

// diskRun is one system's part of the benchmark.
type diskRun struct {
	system string
	// usage is the directory as measured for the ratios; running is
	// promhbase's while it still runs (settled), nil for the others.
	usage, running *dirUsage
	load, settle   time.Duration
	note           string
	// promhbase: the CPU seconds of its load, and its rollups' progress
	// after the load (nil: not waited for).
	loadCPU float64
	rollup  *rollupProgress
	dataDir string
	// promhbase-hbase: the tables' compression and names; noQuery: an
	// earlier compression of the same tables, not queried.
	codec   string
	tables  hbaseTables
	noQuery bool
}

// name is the system's name in the report.
func (r *diskRun) name() string {
	if r.system == sysPromhbaseHBase {
		return fmt.Sprintf("promhbase (HBase, %s)", r.codec)
	}
	return diskSystemNames[r.system]
}

// runDisk runs the disk lab: it checks the options, generates the data
// set's plan, loads it into each system asked for, prints their footprint,
// times the queries (at the main step, then at each --query.also), and,
// with --refresh, times promhbase's refreshes.
func runDisk(o options, d diskOptions) error {
	want, err := checkDiskOptions(o, &d)
	if err != nil {
		return err
	}
	g, err := diskGenConfig(d)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(d.dir, "bench-disk-")
	if err != nil {
		return err
	}
	if d.keep {
		fmt.Fprintf(os.Stderr, "data directories in %s (kept)\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	title := diskTitle(d, g)
	fmt.Fprintf(os.Stderr, "bench-disk: %s\n", title)

	// Cleanups (dropping HBase tables) run at the end, after the queries.
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	runs, err := loadDiskSystems(o, d, g, work, want, func(f func()) { cleanups = append(cleanups, f) })
	if err != nil {
		return err
	}
	printDisk(os.Stdout, title, g, runs)
	if err := timeDiskQueries(d, g, work, runs); err != nil {
		return err
	}
	return timeDiskRefreshes(o, d, g, work, runs)
}

// diskGenConfig is the plan of the data set d asks for. The refreshes'
// samples come after the data: it ends earlier.
func diskGenConfig(d diskOptions) (genConfig, error) {
	g := genConfig{
		series: d.series, targets: d.targets, span: time.Duration(d.span), interval: d.interval, jitter: d.jitter, seed: d.seed,
	}
	g.end = refreshDataEnd(time.Now(), stepOf(g, d), d.refresh)
	return g, g.validate()
}

// diskTitle is the report's title: the data set's shape and time range.
func diskTitle(d diskOptions, g genConfig) string {
	return fmt.Sprintf("%d series × %s (%d targets, %s scrapes, ±%s jitter, seed %d): %d samples, %s to %s",
		g.series, d.span, g.targets, g.interval, g.jitter, g.seed, g.samples(),
		time.UnixMilli(g.startMs()).UTC().Format(time.RFC3339), time.UnixMilli(g.endMs()).UTC().Format(time.RFC3339))
}

// loadDiskSystems loads the data set into each system in want, in a fixed
// order, under work, and returns their runs (promhbase on HBase gives one
// per compression). cleanup takes what is to be undone after the queries.
func loadDiskSystems(o options, d diskOptions, g genConfig, work string, want map[string]bool, cleanup func(func())) ([]*diskRun, error) {
	var runs []*diskRun
	for _, sys := range []string{sysPromhbase, sysPromhbaseHBase, sysVM, sysPrometheus} {
		if !want[sys] {
			continue
		}
		var r *diskRun
		var err error
		switch sys {
		case sysPromhbase:
			r, err = diskPromhbase(o, d, g, work)
		case sysPromhbaseHBase:
			var rs []*diskRun
			rs, err = diskPromhbaseHBase(o, d, g, work, cleanup)
			if err == nil {
				runs = append(runs, rs[:len(rs)-1]...)
				r = rs[len(rs)-1]
			}
		case sysVM:
			r, err = diskVM(o, d, g, work)
		case sysPrometheus:
			r, err = diskPrometheus(d, g, work)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sys, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// timeDiskQueries times and prints the queries against every run at the
// main step (with the rollups' figures), then at each --query.also step.
func timeDiskQueries(d diskOptions, g genConfig, work string, runs []*diskRun) error {
	qs, err := diskQueries(d, g, work, runs)
	if err != nil {
		return fmt.Errorf("queries: %w", err)
	}
	printQueries(os.Stdout, g, d, qs)
	printRollups(os.Stdout, g, d, runs, qs)
	printJoined(os.Stdout, d, qs.joined)
	for _, a := range d.queryAlso {
		da := d
		da.queryStep, da.queryStartOffset = a.step, a.offset
		qs, err := diskQueries(da, g, work, runs)
		if err != nil {
			return fmt.Errorf("queries at step %s: %w", a.step, err)
		}
		printQueries(os.Stdout, g, da, qs)
	}
	return nil
}

// timeDiskRefreshes times and prints, with --refresh, the refreshes of
// the promhbase run; without, it does nothing.
func timeDiskRefreshes(o options, d diskOptions, g genConfig, work string, runs []*diskRun) error {
	if d.refresh == 0 {
		return nil
	}
	for _, r := range runs {
		if r.system == sysPromhbase {
			rep, err := diskRefresh(o, d, g, work, r)
			if err != nil {
				return fmt.Errorf("refresh: %w", err)
			}
			printRefresh(os.Stdout, d, rep)
		}
	}
	return nil
}
