package main

// The disk command's options: its flags, their defaults and their checks.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
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
	cmd.Flag("prometheus", "Prometheus binary, to serve the blocks for the queries (tools/scripts/prometheus.sh prints the project's).").StringVar(&d.prometheus)
	cmd.Flag("promtool", "promtool binary of the same Prometheus (tools/scripts/promtool.sh prints it).").StringVar(&d.promtool)
	cmd.Flag("victoria-metrics", "VictoriaMetrics single-node binary (tools/scripts/victoriametrics.sh prints it).").StringVar(&d.vm)
	cmd.Flag("systems", "Systems to run: promhbase, victoriametrics, prometheus, promhbase-hbase; repeatable (default: the first three). "+
		"promhbase-hbase is promhbase serve on a running HBase (tools/scripts/hbase.sh up): fresh tables created by promhbase create-tables, flushed and major-compacted after the load, their store files measured, dropped at the end.").StringsVar(&d.systems)
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
		return nil, errors.New("--victoria-metrics is needed for victoriametrics (tools/scripts/victoriametrics.sh prints it)")
	}
	if want[sysPrometheus] && (d.promtool == "" || d.prometheus == "") {
		return nil, errors.New("--promtool and --prometheus are needed for prometheus (tools/scripts/promtool.sh, tools/scripts/prometheus.sh)")
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
