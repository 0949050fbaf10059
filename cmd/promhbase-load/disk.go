package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	queryParts int // points of a query: step = span / queryParts

	promhbaseFlags, vmFlags []string

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

// defaultDiskQueries are the long-range queries timed on every system;
// $step is replaced by the step in seconds ("288s").
var defaultDiskQueries = []string{
	`sum by (mode) (rate(node_cpu_seconds_total[5m]))`,
	`max_over_time(node_load1[$step])`,
	`node_memory_MemFree_bytes`,
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
	cmd.Flag("query", "A query_range expression to time ($step: the step, e.g. 288s); repeatable (default: a summed rate of counters, a max_over_time of a gauge and a plain selector).").StringsVar(&d.queries)
	cmd.Flag("query.repeats", "Timed runs of each query on each system.").Default("5").IntVar(&d.repeats)
	cmd.Flag("query.warmups", "Untimed runs of each query on each system before the timed ones.").Default("1").IntVar(&d.warmups)
	cmd.Flag("query.points", "Points a query answers per series: step = span / this.").Default("300").IntVar(&d.queryParts)
	cmd.Flag("promhbase.flag", "Extra flag for promhbase serve; repeatable.").StringsVar(&d.promhbaseFlags)
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
	dataDir        string
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

func runDisk(o options, d diskOptions) error {
	if len(d.systems) == 0 {
		d.systems = []string{sysPromhbase, sysVM, sysPrometheus}
	}
	want := map[string]bool{}
	for _, s := range d.systems {
		switch s {
		case sysPromhbase, sysPromhbaseHBase, sysVM, sysPrometheus:
			want[s] = true
		default:
			return fmt.Errorf("--systems=%q: want promhbase, victoriametrics, prometheus or promhbase-hbase", s)
		}
	}
	if want[sysVM] && d.vm == "" {
		return errors.New("--victoria-metrics is needed for victoriametrics (scripts/victoriametrics.sh prints it)")
	}
	if want[sysPrometheus] && (d.promtool == "" || d.prometheus == "") {
		return errors.New("--promtool and --prometheus are needed for prometheus (scripts/promtool.sh, scripts/prometheus.sh)")
	}
	if len(d.hbaseCompressions) == 0 {
		d.hbaseCompressions = []string{"GZ"}
	}
	if d.repeats < 1 || d.queryParts < 1 {
		return errors.New("--query.repeats and --query.points must be at least 1")
	}
	if o.batch < 1 || o.concurrency < 1 {
		return errors.New("--batch and --concurrency must be at least 1")
	}
	g := genConfig{
		series: d.series, targets: d.targets, span: time.Duration(d.span), interval: d.interval, jitter: d.jitter, seed: d.seed,
		end: time.Now().Add(-15 * time.Minute).Truncate(time.Hour),
	}
	if err := g.validate(); err != nil {
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
	title := fmt.Sprintf("%d series × %s (%d targets, %s scrapes, ±%s jitter, seed %d): %d samples, %s to %s",
		g.series, d.span, g.targets, g.interval, g.jitter, g.seed, g.samples(),
		time.UnixMilli(g.startMs()).UTC().Format(time.RFC3339), time.UnixMilli(g.endMs()).UTC().Format(time.RFC3339))
	fmt.Fprintf(os.Stderr, "bench-disk: %s\n", title)

	// Cleanups (dropping HBase tables) run at the end, after the queries.
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	var runs []*diskRun
	for _, sys := range []string{sysPromhbase, sysPromhbaseHBase, sysVM, sysPrometheus} {
		if !want[sys] {
			continue
		}
		var r *diskRun
		switch sys {
		case sysPromhbase:
			r, err = diskPromhbase(o, d, g, work)
		case sysPromhbaseHBase:
			var rs []*diskRun
			rs, err = diskPromhbaseHBase(o, d, g, work, func(f func()) { cleanups = append(cleanups, f) })
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
			return fmt.Errorf("%s: %w", sys, err)
		}
		runs = append(runs, r)
	}
	printDisk(os.Stdout, title, g, runs)

	qs, err := diskQueries(d, g, work, runs)
	if err != nil {
		return fmt.Errorf("queries: %w", err)
	}
	printQueries(os.Stdout, g, d, qs)
	return nil
}

// ---- promhbase ----

func diskPromhbase(o options, d diskOptions, g genConfig, work string) (*diskRun, error) {
	r := &diskRun{system: sysPromhbase, dataDir: filepath.Join(work, "promhbase")}
	srv, err := startPromhbase(d, r.dataDir, filepath.Join(work, "promhbase-load.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.stop() }()
	fmt.Fprintf(os.Stderr, "promhbase: loading %d samples...\n", g.samples())
	began := time.Now()
	if _, err := loadRemoteWrite(srv.base+"/api/v1/write", g, o.concurrency, o.batch); err != nil {
		return nil, srv.withLog(err)
	}
	r.load = time.Since(began)
	fmt.Fprintf(os.Stderr, "promhbase: loaded in %s (%.0f samples/s); waiting for it to settle...\n", r.load.Round(time.Millisecond), float64(g.samples())/r.load.Seconds())
	began = time.Now()
	how, err := settlePromhbase(srv, d.settleQuiet, d.settleTimeout)
	if err != nil {
		return nil, srv.withLog(err)
	}
	r.settle, r.note = time.Since(began), how
	fmt.Fprintf(os.Stderr, "promhbase: %s after %s\n", how, r.settle.Round(time.Second))
	if r.running, err = measureDir(r.dataDir, promhbaseKind); err != nil {
		return nil, err
	}
	if err := srv.stop(); err != nil {
		return nil, err
	}
	r.usage, err = measureDir(r.dataDir, promhbaseKind)
	return r, err
}

func startPromhbase(d diskOptions, data, logPath string) (*server, error) {
	return startServer(sysPromhbase, logPath, syscall.SIGTERM, "/-/ready", func(addr string) *exec.Cmd {
		return exec.Command(d.promhbase, append([]string{"serve", "--web.listen-address=" + addr, "--storage.embedded.path=" + data,
			"--limits.new-series-rate=0", "--limits.max-active-series=0"}, d.promhbaseFlags...)...)
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

// settlePromhbase waits until promhbase's background work after a load
// has ended: no rows waiting for compaction, its compaction and store
// metrics unchanged and its CPU below 5 % of a core. When its store
// exports settles (promhbase_embedded_settles_total), one settle after the
// last compaction and 15 s of quiet suffice; else quiet must last quiet.
func settlePromhbase(srv *server, quiet, timeout time.Duration) (string, error) {
	const poll = 5 * time.Second
	start := time.Now()
	prev, err := scrapeMetrics(srv.base + "/metrics")
	if err != nil {
		return "", err
	}
	cpu0, err := procCPU(srv.cmd.Process.Pid)
	if err != nil {
		return "", err
	}
	lastChange, lastCompaction := time.Now(), time.Now()
	var lastSettle time.Time
	for {
		time.Sleep(poll)
		m, err := scrapeMetrics(srv.base + "/metrics")
		if err != nil {
			return "", err
		}
		cpu1, err := procCPU(srv.cmd.Process.Pid)
		if err != nil {
			return "", err
		}
		now := time.Now()
		busy := (cpu1-cpu0)/poll.Seconds() > 0.05
		cpu0 = cpu1
		for k, v := range m {
			if !strings.HasPrefix(k, "promhbase_compaction_") && !strings.HasPrefix(k, "promhbase_embedded_") && !strings.HasPrefix(k, "promhbase_dense") {
				continue
			}
			if strings.HasPrefix(k, "promhbase_embedded_block_cache_") {
				continue
			}
			if pv, ok := prev[k]; ok && pv == v {
				continue
			}
			lastChange = now
			switch {
			case strings.HasPrefix(k, "promhbase_embedded_settles_total"):
				lastSettle = now
			case strings.HasPrefix(k, "promhbase_compaction_"):
				lastCompaction = now
			}
		}
		if busy {
			lastChange = now
		}
		prev = m
		_, hasSettle := m["promhbase_embedded_settles_total"]
		pending := m["promhbase_compaction_pending_rows"]
		need := quiet
		if hasSettle && lastSettle.After(lastCompaction) {
			need = 15 * time.Second
		}
		if pending == 0 && now.Sub(lastChange) >= need {
			how := fmt.Sprintf("settled (compaction done, metrics and CPU quiet for %s)", need)
			if hasSettle && need < quiet {
				how = "settled (compaction done, the store settled after it, quiet for 15s)"
			}
			if u := m["promhbase_compaction_rows_untracked_total"]; u > 0 {
				how += fmt.Sprintf("; warning: %.0f rows were not tracked for compaction", u)
			}
			return how, nil
		}
		if now.Sub(start) > timeout {
			return fmt.Sprintf("NOT settled within %s (pending rows %.0f); measured anyway", timeout, pending), nil
		}
	}
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

// ---- servers ----

// server is a system's process with its HTTP base URL.
type server struct {
	name    string
	cmd     *exec.Cmd
	base    string
	logPath string
	logf    *os.File
	sig     os.Signal
	done    chan struct{}
	waitErr error
	stopped bool
}

// startServer starts the command that mk returns for a free loopback
// address, its output into logPath, and waits until readyPath answers 200.
func startServer(name, logPath string, sig os.Signal, readyPath string, mk func(addr string) *exec.Cmd) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := mk(addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &server{name: name, cmd: cmd, base: "http://" + addr, logPath: logPath, logf: logf, sig: sig, done: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-s.done:
			logf.Close()
			return nil, s.withLog(fmt.Errorf("%s exited at startup: %w", name, s.waitErr))
		default:
		}
		if resp, err := http.Get(s.base + readyPath); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			_ = s.stop()
			return nil, s.withLog(fmt.Errorf("%s not ready within 2m", name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop signals the server and waits for it to exit (killing it after two
// minutes); it reports an exit other than a clean one. Calling it again
// does nothing.
func (s *server) stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	defer s.logf.Close()
	_ = s.cmd.Process.Signal(s.sig)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		return s.withLog(fmt.Errorf("%s did not stop within 2m of %v; killed", s.name, s.sig))
	}
	if s.waitErr != nil {
		return s.withLog(fmt.Errorf("%s exited with %w after %v", s.name, s.waitErr, s.sig))
	}
	return nil
}

// withLog adds the end of the server's log to err.
func (s *server) withLog(err error) error {
	return fmt.Errorf("%w\nthe last lines of %s:\n%s", err, s.logPath, logTail(s.logPath, 30))
}

// scrapeMetrics reads a Prometheus text exposition into series text
// (name and labels as written) -> value.
func scrapeMetrics(u string) (map[string]float64, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// "name{labels} value [timestamp]": the value follows the
		// labels' closing brace, or the name.
		var key, rest string
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			key, rest = line[:i+1], strings.TrimSpace(line[i+1:])
		} else {
			key, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		m[key] = v
	}
	return m, sc.Err()
}

func httpGet(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: status %d: %s", u, resp.StatusCode, msg)
	}
	return nil
}

// ---- measuring ----

// dirUsage is what a directory holds: bytes (the files' sizes, as du -b
// counts them), allocated bytes (as du counts them), by kind.
type dirUsage struct {
	bytes, alloc int64
	files        int
	kinds        map[string]*kindUsage
}

type kindUsage struct {
	bytes, alloc int64
	files        int
}

// measureDir walks dir and sums its files, by the kind that kind names
// for each path relative to dir.
func measureDir(dir string, kind func(rel string) string) (*dirUsage, error) {
	u := &dirUsage{kinds: map[string]*kindUsage{}}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		var alloc int64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			alloc = st.Blocks * 512
		}
		k := kind(rel)
		ku := u.kinds[k]
		if ku == nil {
			ku = &kindUsage{}
			u.kinds[k] = ku
		}
		ku.bytes += fi.Size()
		ku.alloc += alloc
		ku.files++
		u.bytes += fi.Size()
		u.alloc += alloc
		u.files++
		return nil
	})
	return u, err
}

// ---- queries ----

// queryTiming is one query on one system.
type queryTiming struct {
	query, system  string
	name           string // the system's name in the report
	times          []time.Duration
	series, points int
	err            error
}

func diskQueries(d diskOptions, g genConfig, work string, runs []*diskRun) ([]*queryTiming, error) {
	servers := map[string]*server{}
	var order []string
	defer func() {
		for _, s := range servers {
			_ = s.stop()
		}
	}()
	names := map[string]string{}
	for _, r := range runs {
		if r.noQuery {
			continue
		}
		var s *server
		var err error
		names[r.system] = r.name()
		switch r.system {
		case sysPromhbase:
			s, err = startPromhbase(d, r.dataDir, filepath.Join(work, "promhbase-query.log"))
		case sysPromhbaseHBase:
			s, err = startPromhbaseHBase(d, r.tables, filepath.Join(work, "promhbase-hbase-query.log"))
		case sysVM:
			s, err = startVM(d, r.dataDir, filepath.Join(work, "victoriametrics-query.log"))
		case sysPrometheus:
			s, err = startPrometheus(d, r.dataDir, work)
		}
		if err != nil {
			return nil, err
		}
		servers[r.system] = s
		order = append(order, r.system)
	}
	step := stepOf(g, d)
	queries := d.queries
	if len(queries) == 0 {
		queries = defaultDiskQueries
	}
	var out []*queryTiming
	byKey := map[[2]string]*queryTiming{}
	for _, q := range queries {
		for _, sys := range order {
			t := &queryTiming{query: strings.ReplaceAll(q, "$step", promDuration(step)), system: sys, name: names[sys]}
			byKey[[2]string{q, sys}] = t
			out = append(out, t)
		}
	}
	fmt.Fprintf(os.Stderr, "queries: %d × %d systems, %d warm-up and %d timed runs each, step %s...\n", len(queries), len(order), d.warmups, d.repeats, promDuration(step))
	for rep := range d.warmups + d.repeats {
		for qi, q := range queries {
			// The systems take turns, each first in turn.
			for k := range order {
				sys := order[(k+rep+qi)%len(order)]
				t := byKey[[2]string{q, sys}]
				if t.err != nil {
					continue
				}
				extra := url.Values{}
				if sys == sysVM {
					extra.Set("nocache", "1")
				}
				series, points, took, err := rangeQuery(servers[sys].base, t.query, g.endMs()-g.span.Milliseconds(), g.endMs(), step, extra)
				if err != nil {
					t.err = err
					continue
				}
				t.series, t.points = series, points
				if rep >= d.warmups {
					t.times = append(t.times, took)
				}
			}
		}
	}
	return out, nil
}

// stepOf is the step of the queries: span / points, in whole
// milliseconds.
func stepOf(g genConfig, d diskOptions) time.Duration {
	return (g.span / time.Duration(d.queryParts)).Truncate(time.Millisecond)
}

// promDuration writes d as PromQL accepts it (whole seconds, else ms).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// rangeQuery runs /api/v1/query_range and returns the series and points
// of its answer and the time it took (the answer's JSON decoded).
func rangeQuery(base, query string, start, end int64, step time.Duration, extra url.Values) (int, int, time.Duration, error) {
	v := url.Values{}
	for k, vs := range extra {
		v[k] = vs
	}
	v.Set("query", query)
	v.Set("start", strconv.FormatFloat(float64(start)/1000, 'f', 3, 64))
	v.Set("end", strconv.FormatFloat(float64(end)/1000, 'f', 3, 64))
	v.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
	began := time.Now()
	resp, err := http.PostForm(base+"/api/v1/query_range", v)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, 0, 0, fmt.Errorf("%s: status %d: %s", query, resp.StatusCode, msg)
	}
	var qr struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Values []json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		return 0, 0, 0, err
	}
	took := time.Since(began)
	if qr.Status != "success" {
		return 0, 0, 0, fmt.Errorf("%s: status %q", query, qr.Status)
	}
	n := 0
	for _, r := range qr.Data.Result {
		n += len(r.Values)
	}
	return len(qr.Data.Result), n, took, nil
}

// ---- printing ----

var diskSystemNames = map[string]string{sysPromhbase: "promhbase (embedded)", sysVM: "VictoriaMetrics", sysPrometheus: "Prometheus blocks"}

func printDisk(w io.Writer, title string, g genConfig, runs []*diskRun) {
	samples := float64(g.samples())
	ref := map[string]float64{}
	for _, r := range runs {
		ref[r.system] = float64(r.usage.bytes)
	}
	fmt.Fprintf(w, "\n## Disk: %s\n\n", title)
	fmt.Fprintf(w, "| system | measured | bytes | du (allocated) | bytes/sample | ÷ VictoriaMetrics | ÷ Prometheus | load | settle |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	ratio := func(b float64, sys string) string {
		if v, ok := ref[sys]; ok && v > 0 {
			return fmt.Sprintf("%.2f", b/v)
		}
		return "–"
	}
	row := func(name, state string, u *dirUsage, r *diskRun) {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.3f | %s | %s | %s | %s |\n", name, state, u.bytes, u.alloc, float64(u.bytes)/samples,
			ratio(float64(u.bytes), sysVM), ratio(float64(u.bytes), sysPrometheus), r.load.Round(time.Millisecond), r.settle.Round(time.Second))
	}
	for _, r := range runs {
		switch r.system {
		case sysPromhbase:
			row(r.name(), "settled, running", r.running, r)
			row(r.name(), "stopped (SIGTERM)", r.usage, r)
		case sysPromhbaseHBase:
			row(r.name(), "store files, flushed and major-compacted", r.usage, r)
		case sysVM:
			row(r.name(), "stopped (SIGINT)", r.usage, r)
		default:
			row(r.name(), "as promtool wrote them", r.usage, r)
		}
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		fmt.Fprintf(w, "- %s: %s\n", r.name(), r.note)
	}
	for _, r := range runs {
		us := []*dirUsage{r.usage}
		states := []string{""}
		if r.running != nil {
			us, states = []*dirUsage{r.running, r.usage}, []string{" (settled, running)", " (stopped)"}
		}
		by := "file kind"
		if r.system == sysPromhbaseHBase {
			by = "table (store files)"
		}
		for i, u := range us {
			fmt.Fprintf(w, "\n%s%s by %s:\n\n| kind | files | bytes | bytes/sample | share |\n| --- | --- | --- | --- | --- |\n", r.name(), states[i], by)
			kinds := make([]string, 0, len(u.kinds))
			for k := range u.kinds {
				kinds = append(kinds, k)
			}
			slices.SortFunc(kinds, func(a, b string) int { return int(u.kinds[b].bytes - u.kinds[a].bytes) })
			for _, k := range kinds {
				ku := u.kinds[k]
				fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.1f %% |\n", k, ku.files, ku.bytes, float64(ku.bytes)/samples, 100*float64(ku.bytes)/float64(max(u.bytes, 1)))
			}
		}
	}
}

func printQueries(w io.Writer, g genConfig, d diskOptions, qs []*queryTiming) {
	fmt.Fprintf(w, "\n## query_range over the whole %s, step %s (%d timed runs each after %d warm-up, systems taking turns)\n\n", d.span, promDuration(stepOf(g, d)), d.repeats, d.warmups)
	fmt.Fprintf(w, "| query | system | median | min – max | spread | series | points |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, t := range qs {
		if t.err != nil {
			fmt.Fprintf(w, "| `%s` | %s | error: %s | | | | |\n", t.query, t.name, strings.ReplaceAll(t.err.Error(), "|", `\|`))
			continue
		}
		ts := slices.Clone(t.times)
		slices.Sort(ts)
		med := ts[len(ts)/2]
		if len(ts)%2 == 0 {
			med = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
		}
		spread := 0.0
		if med > 0 {
			spread = 100 * float64(ts[len(ts)-1]-ts[0]) / float64(med)
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s – %s | %.0f %% | %d | %d |\n", strings.ReplaceAll(t.query, "|", `\|`), t.name,
			roundDur(med), roundDur(ts[0]), roundDur(ts[len(ts)-1]), spread, t.series, t.points)
	}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
