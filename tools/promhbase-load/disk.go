package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/golang/snappy"
	"github.com/prometheus/common/model"
)

// diskOptions are the flags of the disk command.
type diskOptions struct {
	promhbase, prometheus, promtool, vm string // binaries
	systems                             []string
	dir                                 string
	keep                                bool

	series, targets  int
	span             model.Duration
	interval, jitter time.Duration
	seed             uint64

	settleQuiet, settleTimeout time.Duration
	blockDuration              model.Duration

	queries    []string
	repeats    int
	warmups    int
	queryParts int            // points of a query: step = span / queryParts
	queryStep  model.Duration // when set, the step instead of span / queryParts
	// queryStartOffset moves the queries' start from the data's.
	queryStartOffset model.Duration
	// queryAlso are further steps and start offsets to time the
	// queries at, after the first.
	queryAlso []stepOffset

	// promhbase's rollups: the max_source_resolution values its queries
	// are timed with (each a row of its own; none: the parameter is not
	// sent), the longest wait for the rollups to cover the data, and
	// whether they are built only after the load (at the first start with
	// rollups on) rather than during it.
	resolutions     []string
	rollupTimeout   time.Duration
	rollupAfterLoad bool
	// rollupJoined, when set, also times promhbase with its rollups
	// built only up to this long before the data's end (diskjoined.go).
	rollupJoined model.Duration
	// restartAfterCompaction stops promhbase as soon as its compaction
	// of the loaded hours ended and starts it again before it settles.
	restartAfterCompaction bool
	// snapshots is how many snapshots to time through promhbase's admin
	// API once it settled.
	snapshots int

	promhbaseFlags, vmFlags []string

	// The dashboard replay on promhbase (diskrefresh.go): refreshes after
	// the first query (0: none), and how long before the first range's end
	// the results cache keeps steps.
	refresh       int
	refreshOffset time.Duration

	// promhbase's processes started for the queries, each a row of its
	// own (--promhbase.gomaxprocs, --promhbase.variant); none: one, as
	// the load's.
	gomaxprocs   []int
	variantSpecs []string
	variants     []promhbaseVariant

	// promhbase-hbase
	hbaseQuorum, hbaseConf, hbaseJars, java string
	hbaseCompressions                       []string
	hbaseKeepTables                         bool
}

// The systems of the disk command, in the order they run.
const (
	sysPromhbase      = "promhbase"
	sysPromhbaseHBase = "promhbase-hbase" // not in the default set: needs a running HBase
	sysVM             = "victoriametrics"
	sysPrometheus     = "prometheus"
)

// defaultDiskQueries are the long-range queries timed on every system,
// dashboard shapes; $step is replaced by the step in seconds ("288s" for
// 24 h, "2016s" for 7 days: span / --query.points). The fixed ranges
// (5m, 1h) stay as dashboards write them whatever the step: [1h] at a
// 288 s step is a window several steps long.
var defaultDiskQueries = []string{
	`sum by (mode) (rate(node_cpu_seconds_total[5m]))`,
	`max_over_time(node_load1[$step])`,
	`node_memory_MemFree_bytes`,
	`sum by (mode) (rate(node_cpu_seconds_total[1h]))`,
	`histogram_quantile(0.9, sum by (le) (rate(node_http_request_duration_seconds_bucket[5m])))`,
	`topk(5, max_over_time(node_load1[1h]))`,
	`avg by (instance) (node_hwmon_temp_celsius)`,
	`100 * node_memory_MemFree_bytes / node_memory_MemTotal_bytes`,
	`sum by (instance) (increase(node_network_receive_bytes_total[1h]))`,
	`quantile_over_time(0.95, node_load1[1h])`,
}

func registerDisk(app *kingpin.Application) (*kingpin.CmdClause, *diskOptions) {
	var d diskOptions
	cmd := app.Command("disk", "Disk use and long-range reads of the same node_exporter-like data in promhbase (embedded store), VictoriaMetrics and Prometheus's blocks: "+
		"the data is generated from a seed and streamed; promhbase and VictoriaMetrics get it by remote write 1.0 (--batch samples a request, --concurrency shards) and are left to settle, "+
		"Prometheus's blocks are written by promtool from OpenMetrics text; prints bytes per sample, the ratios, promhbase's directory by file kind, "+
		"and query_range timings (median and spread of --query.repeats, the systems taking turns).")
	cmd.Flag("promhbase", "promhbase binary.").Required().StringVar(&d.promhbase)
	cmd.Flag("prometheus", "Prometheus binary, to serve the blocks for the queries (scripts/prometheus.sh prints the project's).").StringVar(&d.prometheus)
	cmd.Flag("promtool", "promtool binary of the same Prometheus (scripts/promtool.sh prints it).").StringVar(&d.promtool)
	cmd.Flag("victoria-metrics", "VictoriaMetrics single-node binary (scripts/victoriametrics.sh prints it).").StringVar(&d.vm)
	cmd.Flag("systems", "Systems to run: promhbase, victoriametrics, prometheus, promhbase-hbase; repeatable (default: the first three). "+
		"promhbase-hbase is promhbase serve on a running HBase (scripts/hbase.sh up): fresh tables created by promhbase create-tables, flushed and major-compacted after the load, their store files measured, dropped at the end.").StringsVar(&d.systems)
	cmd.Flag("dir", "Where the systems' data directories go (removed at the end unless --keep).").Default(os.TempDir()).StringVar(&d.dir)
	cmd.Flag("keep", "Keep the data directories (their path is printed).").BoolVar(&d.keep)
	cmd.Flag("data.series", "Series in all.").Default("2000").IntVar(&d.series)
	cmd.Flag("data.targets", "Targets (instances) the series belong to; a target's series share their scrape timestamps.").Default("20").IntVar(&d.targets)
	cmd.Flag("data.span", "Time the data covers; it ends at the last full hour at least 15 minutes ago. Units: s, m, h, d, w.").Default("24h").SetValue(&d.span)
	cmd.Flag("data.interval", "Scrape interval.").Default("15s").DurationVar(&d.interval)
	cmd.Flag("data.jitter", "Each scrape's timestamps are off by up to this much (the same for all series of the target).").Default("5ms").DurationVar(&d.jitter)
	cmd.Flag("data.seed", "Seed of the data: the same seed gives the same samples.").Default("1").Uint64Var(&d.seed)
	cmd.Flag("settle.quiet", "promhbase: when its store exports no settle metric, how long its compaction metrics and CPU must stay quiet before its directory is measured.").Default("90s").DurationVar(&d.settleQuiet)
	cmd.Flag("settle.timeout", "Longest wait for a system to settle after its load; then it is measured anyway, with a warning.").Default("15m").DurationVar(&d.settleTimeout)
	cmd.Flag("prometheus.block-duration", "Longest block promtool writes (it takes the largest of 2h × 3^n not above it). 18h is the largest block Prometheus's own compaction makes at its default 15d retention.").Default("18h").SetValue(&d.blockDuration)
	cmd.Flag("query", "A query_range expression to time ($step: the step, e.g. 288s); repeatable (default: dashboard shapes: summed rates over 5m and 1h, a histogram_quantile of classic buckets, topk, avg by instance, a ratio of two gauges, increase, max_over_time and quantile_over_time, a plain selector).").StringsVar(&d.queries)
	cmd.Flag("query.repeats", "Timed runs of each query on each system.").Default("5").IntVar(&d.repeats)
	cmd.Flag("query.warmups", "Untimed runs of each query on each system before the timed ones.").Default("1").IntVar(&d.warmups)
	cmd.Flag("query.points", "Points a query answers per series: step = span / this.").Default("300").IntVar(&d.queryParts)
	cmd.Flag("query.step", "Step of the queries (e.g. 1h), instead of span / --query.points; the queries start and end where the data does (on the hour).").Default("0s").SetValue(&d.queryStep)
	cmd.Flag("query.also", "Time the queries again at this step and start offset, STEP or STEP@OFFSET (e.g. 2h24m@7m11s), after the first; repeatable.").
		SetValue(&stepOffsets{&d.queryAlso})
	cmd.Flag("query.start-offset", "Start the queries this much after the data's start (e.g. 7m11s: steps that are not on the rollup windows' ends).").Default("0s").SetValue(&d.queryStartOffset)
	cmd.Flag("promhbase.resolution", "Time promhbase's queries with this max_source_resolution (0s or raw, 5m, 1h, auto), each as a system of its own (\"promhbase raw\", \"promhbase auto\"); repeatable. "+
		"With raw and another, the other's answers are compared with raw's point by point (and Prometheus's with raw's). Default: the parameter is not sent.").StringsVar(&d.resolutions)
	cmd.Flag("rollup.timeout", "Longest wait for promhbase's rollups to cover the data (promhbase_rollup_built_from_timestamp_seconds at or before its first hour, ..._until_... at or after its end), after the load and again before the queries; "+
		"the time it took is reported. 0: no wait. Nothing is waited for when promhbase exports no rollup metrics (--promhbase.flag=--no-rollup.enabled).").Default("30m").DurationVar(&d.rollupTimeout)
	cmd.Flag("rollup.after-load", "Load promhbase with --no-rollup.enabled: its rollups are built at its restart for the queries (the first start with rollups on), backwards over the data already stored, and that build is timed; "+
		"default: rollups on during the load, as serve runs by default, and the time they take to cover the data after the load ends is reported.").BoolVar(&d.rollupAfterLoad)
	cmd.Flag("rollup.joined", "Also time promhbase with its rollups built only up to this long before the data's end (whole hours), the rest read raw: the joined case, as while the rollups lag. "+
		"Implies --rollup.after-load; after the load a copy of the store gets `promhbase rollup --end`, and a serve over it (--rollup.grace="+joinedGrace+": it builds nothing) is timed at each resolution but raw, a row of its own, beside the process whose rollups cover the data. 0: not timed.").Default("0s").SetValue(&d.rollupJoined)
	cmd.Flag("promhbase.restart-after-compaction", "Stop promhbase (SIGTERM, as an upgrade does) as soon as its compaction of the loaded hours has ended, before its store settled, and start it again: "+
		"its directory is measured once the restarted serve, left idle, settled (what an earlier process left unsettled must settle after a restart too).").BoolVar(&d.restartAfterCompaction)
	cmd.Flag("promhbase.snapshots", "Once promhbase settled and its directory was measured, time this many snapshots (POST /api/v1/admin/tsdb/snapshot, serve run with --web.enable-admin-api), then delete them.").Default("0").IntVar(&d.snapshots)
	cmd.Flag("promhbase.flag", "Extra flag for every promhbase serve (the load's and the queries'); repeatable.").StringsVar(&d.promhbaseFlags)
	cmd.Flag("promhbase.gomaxprocs", "Time the queries on promhbase restarted with this GOMAXPROCS in its environment, a row of its own (\"promhbase (embedded, GOMAXPROCS=1)\"); repeatable, before the --promhbase.variant rows. "+
		"Any of these or --promhbase.variant: only those rows for promhbase (add --promhbase.variant=default: for one as the load's).").IntsVar(&d.gomaxprocs)
	cmd.Flag("promhbase.variant", "Time the queries on promhbase restarted with these serve flags, a row of its own: NAME:ITEMS or ITEMS (then named by them), ITEMS comma-separated serve flags and GOMAXPROCS=N, "+
		"e.g. --promhbase.variant=--query.engine=prometheus or --promhbase.variant='Prometheus engine at 1 proc:--query.engine=prometheus,GOMAXPROCS=1'; repeatable; "+
		"with any variant promhbase has only the variants' rows (--promhbase.variant=default: adds one as the load's). "+
		"Every variant's process runs at once with the others, over a copy of the embedded store's directory (on HBase: the same tables), and takes its turn in each round of the queries; the flags are added after --promhbase.flag's (a flag serve takes once must not be in both).").StringsVar(&d.variantSpecs)
	cmd.Flag("refresh", "After the queries, replay a dashboard on promhbase (embedded store) restarted with its results cache: each query over the span, then this many refreshes, each with the range a step later "+
		"and the samples of that step written first, timed with the cache and with nocache=1 in turns, the answers compared byte for byte; 0: no replay. "+
		"The data then ends this many steps (and 15 minutes) before now, and the refreshes follow each other at once (time compressed; see docs/disk.md).").Default("0").IntVar(&d.refresh)
	cmd.Flag("refresh.offset", "The replay's results cache offset as the first range's end sees it: promhbase gets --query.results-cache.offset = how long ago that end is + this.").Default("5m").DurationVar(&d.refreshOffset)
	cmd.Flag("victoria-metrics.flag", "Extra flag for VictoriaMetrics; repeatable.").StringsVar(&d.vmFlags)
	cmd.Flag("hbase.zookeeper.quorum", "promhbase-hbase: ZooKeeper quorum of the HBase.").Default("127.0.0.1:2181").StringVar(&d.hbaseQuorum)
	cmd.Flag("hbase.compression", "promhbase-hbase: compression of the tables (create-tables --hbase.compression); repeatable: the tables are created with the first, "+
		"then for each further one altered to it and major-compacted again, and measured each time (default GZ).").StringsVar(&d.hbaseCompressions)
	cmd.Flag("hbase.conf", "promhbase-hbase: the HBase's configuration directory (its hbase-site.xml names hbase.rootdir, which must be local: the tables' files are measured there).").Default(filepath.Join(".run", "hbase", "conf")).StringVar(&d.hbaseConf)
	cmd.Flag("hbase.jars", "promhbase-hbase: directory of HBase's jars (lib/) and codecs (codecs/), for the admin steps gohbase lacks (flush, major compaction, drop), run with java.").Default(defaultHBaseJars()).StringVar(&d.hbaseJars)
	cmd.Flag("hbase.java", "promhbase-hbase: java (JDK 11+) to run them with.").Default(defaultJava()).StringVar(&d.java)
	cmd.Flag("hbase.keep-tables", "promhbase-hbase: leave the tables in HBase (their names are printed).").BoolVar(&d.hbaseKeepTables)
	return cmd, &d
}

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

// checkDiskOptions checks the disk lab's options and fills in d's
// defaults (the systems, the HBase compressions) and its parsed variants.
// It returns the systems asked for.
func checkDiskOptions(o options, d *diskOptions) (map[string]bool, error) {
	if len(d.systems) == 0 {
		d.systems = []string{sysPromhbase, sysVM, sysPrometheus}
	}
	want := map[string]bool{}
	for _, s := range d.systems {
		switch s {
		case sysPromhbase, sysPromhbaseHBase, sysVM, sysPrometheus:
			want[s] = true
		default:
			return nil, fmt.Errorf("--systems=%q: want promhbase, victoriametrics, prometheus or promhbase-hbase", s)
		}
	}
	if want[sysVM] && d.vm == "" {
		return nil, errors.New("--victoria-metrics is needed for victoriametrics (scripts/victoriametrics.sh prints it)")
	}
	if want[sysPrometheus] && (d.promtool == "" || d.prometheus == "") {
		return nil, errors.New("--promtool and --prometheus are needed for prometheus (scripts/promtool.sh, scripts/prometheus.sh)")
	}
	if len(d.hbaseCompressions) == 0 {
		d.hbaseCompressions = []string{"GZ"}
	}
	if d.repeats < 1 || d.queryParts < 1 {
		return nil, errors.New("--query.repeats and --query.points must be at least 1")
	}
	if d.queryStep < 0 || time.Duration(d.queryStep)%time.Millisecond != 0 {
		return nil, fmt.Errorf("--query.step=%s: want a positive whole number of milliseconds", d.queryStep)
	}
	if d.refresh < 0 || d.refresh > 0 && !want[sysPromhbase] {
		return nil, fmt.Errorf("--refresh=%d: want 0, or more with promhbase among --systems", d.refresh)
	}
	if o.batch < 1 || o.concurrency < 1 {
		return nil, errors.New("--batch and --concurrency must be at least 1")
	}
	if j := time.Duration(d.rollupJoined); j != 0 {
		if j < 0 || j%time.Hour != 0 || j >= time.Duration(d.span) || !want[sysPromhbase] {
			return nil, fmt.Errorf("--rollup.joined=%s: want whole hours, less than --data.span, with promhbase among --systems", d.rollupJoined)
		}
		d.rollupAfterLoad = true
	}
	variants, err := parseVariants(d.gomaxprocs, d.variantSpecs)
	if err != nil {
		return nil, err
	}
	d.variants = variants
	return want, nil
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

// ---- promhbase ----

func diskPromhbase(o options, d diskOptions, g genConfig, work string) (*diskRun, error) {
	r := &diskRun{system: sysPromhbase, dataDir: filepath.Join(work, "promhbase")}
	var extra []string
	if d.rollupAfterLoad {
		extra = append(extra, "--no-rollup.enabled")
	}
	if d.snapshots > 0 {
		extra = append(extra, "--web.enable-admin-api")
	}
	srv, err := startPromhbase(d, r.dataDir, filepath.Join(work, "promhbase-load.log"), nil, extra...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.stop() }()
	fmt.Fprintf(os.Stderr, "promhbase: loading %d samples...\n", g.samples())
	cpu0, _ := procCPU(srv.cmd.Process.Pid)
	began := time.Now()
	if _, err := loadRemoteWrite(srv.base+"/api/v1/write", g, o.concurrency, o.batch); err != nil {
		return nil, srv.withLog(err)
	}
	r.load = time.Since(began)
	cpu1, _ := procCPU(srv.cmd.Process.Pid)
	r.loadCPU = cpu1 - cpu0
	fmt.Fprintf(os.Stderr, "promhbase: loaded in %s (%.0f samples/s, %.1f CPU s)\n", r.load.Round(time.Millisecond), float64(g.samples())/r.load.Seconds(), r.loadCPU)
	if d.rollupTimeout > 0 && !d.rollupAfterLoad {
		if r.rollup, err = waitRollups(srv, g, d.rollupTimeout, "promhbase (after the load)"); err != nil {
			return nil, srv.withLog(err)
		}
	}
	restarted := ""
	if d.restartAfterCompaction {
		fmt.Fprintf(os.Stderr, "promhbase: waiting for its compaction to end, to restart it...\n")
		if err := waitCompacted(srv, d.settleTimeout); err != nil {
			return nil, srv.withLog(err)
		}
		if err := srv.stop(); err != nil {
			return nil, err
		}
		if srv, err = startPromhbase(d, r.dataDir, filepath.Join(work, "promhbase-restarted.log"), nil, extra...); err != nil {
			return nil, err
		}
		restarted = "; restarted once its compaction ended, before it settled"
		fmt.Fprintf(os.Stderr, "promhbase: restarted\n")
	}
	fmt.Fprintf(os.Stderr, "promhbase: waiting for it to settle...\n")
	began = time.Now()
	how, err := settlePromhbase(srv, d.settleQuiet, d.settleTimeout)
	if err != nil {
		return nil, srv.withLog(err)
	}
	r.settle, r.note = time.Since(began), how+restarted
	fmt.Fprintf(os.Stderr, "promhbase: %s after %s\n", how, r.settle.Round(time.Second))
	if r.running, err = measureDir(r.dataDir, promhbaseKind); err != nil {
		return nil, err
	}
	if d.snapshots > 0 {
		took, err := timeSnapshots(srv, r.dataDir, d.snapshots)
		if err != nil {
			return nil, srv.withLog(err)
		}
		r.note += "; " + took
		fmt.Fprintf(os.Stderr, "promhbase: %s\n", took)
	}
	if err := srv.stop(); err != nil {
		return nil, err
	}
	r.usage, err = measureDir(r.dataDir, promhbaseKind)
	return r, err
}

// startPromhbase starts promhbase serve on the embedded store in data,
// with --promhbase.flag's flags and extra, in env (nil: this process's).
func startPromhbase(d diskOptions, data, logPath string, env []string, extra ...string) (*server, error) {
	return startServer(sysPromhbase, logPath, syscall.SIGTERM, "/-/ready", func(addr string) *exec.Cmd {
		args := []string{"serve", "--web.listen-address=" + addr, "--storage.embedded.path=" + data,
			"--limits.new-series-rate=0", "--limits.max-active-series=0"}
		args = append(args, d.promhbaseFlags...)
		cmd := exec.Command(d.promhbase, append(args, extra...)...)
		cmd.Env = env
		return cmd
	})
}

// promhbaseKind names the kind of a file of promhbase's embedded store
// (rel: its path below the data directory).
func promhbaseKind(rel string) string {
	switch {
	case strings.HasPrefix(rel, "rowbuf"+string(filepath.Separator)):
		return "row buffer logs"
	case strings.HasSuffix(rel, ".sst"):
		return "sstables"
	case strings.HasSuffix(rel, ".log"):
		return "Pebble WAL"
	}
	return "other"
}

// ---- VictoriaMetrics ----

func startVM(d diskOptions, data, logPath string) (*server, error) {
	return startServer(sysVM, logPath, os.Interrupt, "/health", func(addr string) *exec.Cmd {
		return exec.Command(d.vm, append([]string{"-storageDataPath=" + data, "-httpListenAddr=" + addr,
			"-search.disableCache", "-retentionPeriod=100y", "-search.maxQueryDuration=2m"}, d.vmFlags...)...)
	})
}

func diskVM(o options, d diskOptions, g genConfig, work string) (*diskRun, error) {
	r := &diskRun{system: sysVM, dataDir: filepath.Join(work, "victoriametrics")}
	srv, err := startVM(d, r.dataDir, filepath.Join(work, "victoriametrics-load.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.stop() }()
	fmt.Fprintf(os.Stderr, "victoriametrics: loading %d samples...\n", g.samples())
	began := time.Now()
	if _, err := loadRemoteWrite(srv.base+"/api/v1/write", g, o.concurrency, o.batch); err != nil {
		return nil, srv.withLog(err)
	}
	r.load = time.Since(began)
	fmt.Fprintf(os.Stderr, "victoriametrics: loaded in %s (%.0f samples/s); flushing and merging...\n", r.load.Round(time.Millisecond), float64(g.samples())/r.load.Seconds())
	began = time.Now()
	deadline := time.Now().Add(d.settleTimeout)
	settled := true
	// Flush, wait for the merges it starts, then merge every partition
	// (a partition already merging would be skipped), and wait again.
	for _, step := range []string{"/internal/force_flush", "/internal/force_merge", "/internal/force_flush"} {
		if err := httpGet(srv.base + step); err != nil {
			return nil, srv.withLog(err)
		}
		time.Sleep(time.Second)
		ok, err := waitVMQuiet(srv.base, deadline)
		if err != nil {
			return nil, srv.withLog(err)
		}
		settled = settled && ok
	}
	r.settle = time.Since(began)
	r.note = "force_flush, force_merge, no merges, pending rows or in-memory parts left; stopped with SIGINT"
	if !settled {
		r.note = fmt.Sprintf("NOT settled within %s; measured anyway", d.settleTimeout)
	}
	fmt.Fprintf(os.Stderr, "victoriametrics: settled after %s\n", r.settle.Round(time.Second))
	if err := srv.stop(); err != nil {
		return nil, err
	}
	r.usage, err = measureDir(r.dataDir, vmKind)
	return r, err
}

// waitVMQuiet waits until VictoriaMetrics reports no force merge, no
// merge, no pending rows and no in-memory parts in three polls in a row.
func waitVMQuiet(base string, deadline time.Time) (bool, error) {
	calm := 0
	for time.Now().Before(deadline) {
		m, err := scrapeMetrics(base + "/metrics")
		if err != nil {
			return false, err
		}
		busy := m["vm_active_force_merges"] > 0
		for k, v := range m {
			if v != 0 && (strings.HasPrefix(k, "vm_active_merges{") || strings.HasPrefix(k, "vm_pending_rows{") ||
				k == `vm_parts{type="storage/inmemory"}` || k == `vm_parts{type="indexdb/inmemory"}`) {
				busy = true
			}
		}
		if busy {
			calm = 0
		} else if calm++; calm >= 3 {
			return true, nil
		}
		time.Sleep(2 * time.Second)
	}
	return false, nil
}

// vmKind names the kind of a file below VictoriaMetrics' -storageDataPath.
func vmKind(rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch {
	case slices.Contains(parts, "indexdb"):
		return "indexdb"
	case parts[0] == "cache":
		return "cache"
	case parts[0] == "data" && len(parts) > 1 && (parts[1] == "small" || parts[1] == "big"):
		return "data parts"
	}
	return "other"
}

// ---- Prometheus ----

func diskPrometheus(d diskOptions, g genConfig, work string) (*diskRun, error) {
	r := &diskRun{system: sysPrometheus, dataDir: filepath.Join(work, "prometheus")}
	om := filepath.Join(work, "samples.om.txt")
	fmt.Fprintf(os.Stderr, "prometheus: writing %d samples as OpenMetrics...\n", g.samples())
	f, err := os.Create(om)
	if err != nil {
		return nil, err
	}
	if _, err := writeOpenMetrics(f, g); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	defer os.Remove(om)
	if err := os.MkdirAll(r.dataDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "prometheus: promtool tsdb create-blocks-from openmetrics (blocks up to %s)...\n", d.blockDuration)
	began := time.Now()
	cmd := exec.Command(d.promtool, "tsdb", "create-blocks-from", "--quiet", "--max-block-duration="+d.blockDuration.String(), "openmetrics", om, r.dataDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("promtool: %w\n%s", err, out)
	}
	r.load = time.Since(began)
	r.note = "promtool tsdb create-blocks-from openmetrics, blocks up to " + d.blockDuration.String()
	fmt.Fprintf(os.Stderr, "prometheus: blocks written in %s\n", r.load.Round(time.Millisecond))
	r.usage, err = measureDir(r.dataDir, prometheusKind)
	return r, err
}

func startPrometheus(d diskOptions, data, work string) (*server, error) {
	cfg := filepath.Join(work, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global: {}\n"), 0o644); err != nil {
		return nil, err
	}
	// Blocks as large as promtool's already: nothing to compact while the
	// queries are timed.
	return startServer(sysPrometheus, filepath.Join(work, "prometheus-query.log"), syscall.SIGTERM, "/-/ready", func(addr string) *exec.Cmd {
		return exec.Command(d.prometheus, "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.listen-address="+addr,
			"--storage.tsdb.retention.time=100y", "--storage.tsdb.max-block-duration="+d.blockDuration.String())
	})
}

// prometheusKind names the kind of a file of Prometheus's blocks.
func prometheusKind(rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch {
	case len(parts) >= 2 && parts[1] == "chunks":
		return "chunks"
	case len(parts) == 2 && parts[1] == "index":
		return "index"
	}
	return "other"
}

// ---- loading ----

// loadRemoteWrite sends every sample of g to url as remote write 1.0
// requests of up to batch samples, shards requests in flight (one per
// shard, each shard in time order), and returns the samples sent.
func loadRemoteWrite(url string, g genConfig, shards, batch int) (int64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chans := make([]chan []byte, shards)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range chans {
		chans[i] = make(chan []byte, 2)
		wg.Add(1)
		go func(ch chan []byte) {
			defer wg.Done()
			for req := range ch {
				if ctx.Err() != nil {
					continue
				}
				if err := post(ctx, url, "application/x-protobuf", snappy.Encode(nil, req)); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}(chans[i])
	}
	n, err := streamRequests(g, shards, batch, func(sh int, req []byte, _ int) error {
		select {
		case chans[sh] <- req:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	if firstErr != nil {
		return n, firstErr
	}
	return n, err
}

// stepOffset is a step and a start offset of --query.also.
type stepOffset struct{ step, offset model.Duration }

// stepOffsets is the kingpin value of --query.also.
type stepOffsets struct{ to *[]stepOffset }

func (s *stepOffsets) Set(v string) error {
	stepS, offS, _ := strings.Cut(v, "@")
	var so stepOffset
	var err error
	if so.step, err = model.ParseDuration(stepS); err != nil || so.step <= 0 {
		return fmt.Errorf("--query.also=%s: want STEP or STEP@OFFSET (e.g. 2h24m@7m11s)", v)
	}
	if offS != "" {
		if so.offset, err = model.ParseDuration(offS); err != nil {
			return fmt.Errorf("--query.also=%s: offset: %w", v, err)
		}
	}
	*s.to = append(*s.to, so)
	return nil
}

func (s *stepOffsets) String() string { return "" }

// IsCumulative makes the flag repeatable.
func (s *stepOffsets) IsCumulative() bool { return true }
