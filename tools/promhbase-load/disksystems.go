package main

// The disk command's systems: each one loaded, settled and measured,
// and started again to serve the queries; the remote write load.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/golang/snappy"

	"github.com/promhbase/promhbase/store/embedded"
)

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
// (rel: its path below the data directory). Its ballast is reservedKind.
func promhbaseKind(rel string) string {
	switch {
	case rel == embedded.BallastName:
		return reservedKind
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
