// What compare runs for each system: its process (started pinned, its
// log kept, stopped), the load through it, the reads back, and the
// probes of the process and the machine (CPU, memory, disk, idleness).

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// compareOne runs the load against one system: it waits for the machine
// to go quiet, starts the system on its own data directory, writes the
// load, reads it back through remote read and the query API, and takes
// the system's footprint. On a failure once the system is started, the
// error carries the end of its log.
func compareOne(o options, c compareOptions, sys string, cpus int, pre [][][]byte, t0 int64) (result, error) {
	res := result{system: sys, series: o.series, rounds: o.maxRounds, cpus: cpus}
	err := withCompared(c, sys, "compare", cpus, func(s *compared) error {
		if err := s.write(o, c, pre, &res); err != nil {
			return err
		}
		if err := s.flush(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: reading...\n", sys)
		if err := s.remoteReads(o, c, t0, &res); err != nil {
			return err
		}
		if err := s.queries(o, c, t0, &res); err != nil {
			return err
		}
		return s.footprint(&res)
	})
	return res, err
}

// withCompared waits for the machine to go quiet, starts sys pinned to
// cpus on a fresh directory under c.dir (named after kind and sys), and
// runs f with it; then it stops the system, adds the end of its log to
// an error (one of starting it or of f), releases what it held and
// removes the directory.
func withCompared(c compareOptions, sys, kind string, cpus int, f func(s *compared) error) (err error) {
	waitQuiet(c, sys)
	dir, err := os.MkdirTemp(c.dir, kind+"-"+sys+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s := &compared{name: sys, data: filepath.Join(dir, "data")}
	// Deferred in this order so that the process is stopped first, then
	// its log's tail read, then what it held released.
	defer s.release()
	defer func() { err = s.withLogTail(err) }()
	defer s.stop()
	if err := s.start(c, cpus, dir); err != nil {
		return err
	}
	return f(s)
}

// compared is one system of the comparison, as compareOne runs it.
type compared struct {
	name    string
	data    string    // its data directory
	base    string    // http://addr
	logPath string    // its log; empty until the log is created
	cmd     *exec.Cmd // nil until started
	// exited is closed when cmd has exited (its Wait runs from the
	// start), exitErr then its Wait's error.
	exited  chan struct{}
	exitErr error
	// releases are run last first by release: the tables dropped, the
	// CPUs unpinned, the log closed.
	releases []func()
}

// waitQuiet waits, for at most c.idleWait, until what the run before left
// running (HBase flushing and compacting what promhbase-hbase wrote, a
// server's exit) is done, so that it does not share the cores with this
// one; it says so when it waited long or in vain.
func waitQuiet(c compareOptions, sys string) {
	waited, idle := waitIdle(c.idleWait)
	switch {
	case c.idleWait <= 0:
	case !idle:
		fmt.Fprintf(os.Stderr, "%s: the machine stayed busy for %s; starting anyway\n", sys, waited.Round(time.Second))
	case waited > time.Second:
		fmt.Fprintf(os.Stderr, "%s: waited %s for the machine to go idle\n", sys, waited.Round(time.Second))
	}
}

// start starts the system on a free loopback address, pinned to cpus,
// its output to a log in dir, and waits until it is ready. The address
// is free when picked, not when the system binds it: another process (a
// test's, at once) may take it first, and then answer the readiness
// check. A system that exited is started again on another address, at
// most startTries times.
func (s *compared) start(c compareOptions, cpus int, dir string) error {
	for try := 1; ; try++ {
		err := s.startOnce(c, cpus, dir)
		if !errors.Is(err, errExited) || try == startTries {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: %v; starting it again on another address\n", s.name, err)
		s.cmd = nil
		for _, r := range slices.Backward(s.releases) {
			r()
		}
		s.releases = nil
	}
}

// startTries bounds the starts of a system whose address was taken.
const startTries = 3

// errExited is the error of a system that exited while starting.
var errExited = errors.New("exited before it was ready")

// startOnce is one try of start.
func (s *compared) startOnce(c compareOptions, cpus int, dir string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd, err := s.command(c, dir, addr)
	if err != nil {
		return err
	}
	restore, err := pinned(cmd, cpus)
	if err != nil {
		return err
	}
	s.releases = append(s.releases, restore)
	logPath := filepath.Join(dir, "log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	s.releases = append(s.releases, func() { logf.Close() })
	s.logPath = logPath
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.base = "http://" + addr
	ready := "/-/ready"
	if s.name == "victoriametrics" {
		ready = "/health"
	}
	s.exited = make(chan struct{})
	go func() { s.exitErr = cmd.Wait(); close(s.exited) }()
	return s.waitListening(s.base+ready, time.Minute)
}

// command is the command that runs the system listening on addr, its
// data under dir. For promhbase-hbase it creates the benchmark's tables,
// which release drops.
func (s *compared) command(c compareOptions, dir, addr string) (*exec.Cmd, error) {
	switch s.name {
	case "prometheus":
		cfg := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(cfg, []byte("global: {}\n"), 0o644); err != nil {
			return nil, err
		}
		return exec.Command(c.prometheus, "--config.file="+cfg, "--storage.tsdb.path="+s.data, "--web.listen-address="+addr, "--web.enable-remote-write-receiver",
			"--web.enable-otlp-receiver"), nil
	case "promhbase-hbase":
		tables, drop, err := benchTables(c.hbaseQuorum, dir)
		if err != nil {
			return nil, err
		}
		s.releases = append(s.releases, drop)
		return exec.Command(c.promhbase, append([]string{"serve", "--web.listen-address=" + addr, "--storage.backend=hbase",
			"--hbase.zookeeper.quorum=" + c.hbaseQuorum, "--limits.new-series-rate=0", "--limits.max-active-series=0"}, append(tables, c.extraFlags...)...)...), nil
	case "victoriametrics":
		// With Prometheus's naming of OTLP metrics, so that all make the
		// same series of --protocol=otlp.
		return exec.Command(c.victoriaMetrics, "-storageDataPath="+s.data, "-httpListenAddr="+addr, "-retentionPeriod=100y", "-search.disableCache",
			"-opentelemetry.usePrometheusNaming"), nil
	default:
		return exec.Command(c.promhbase, append([]string{"serve", "--web.listen-address=" + addr, "--storage.embedded.path=" + s.data,
			"--limits.new-series-rate=0", "--limits.max-active-series=0"}, c.extraFlags...)...), nil
	}
}

// stop interrupts the system, when it was started, and waits for it to
// exit, killing it after 30 seconds.
func (s *compared) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// withLogTail is err with the last lines of the system's log (a crash's
// trace, say), which goes with its data directory; err as it is when nil
// or when the log was not created yet.
func (s *compared) withLogTail(err error) error {
	if err == nil || s.logPath == "" {
		return err
	}
	return fmt.Errorf("%w\nthe last lines of %s's log:\n%s", err, s.name, logTail(s.logPath, 30))
}

// release runs what start and command left to undo, last first.
func (s *compared) release() {
	for i := len(s.releases) - 1; i >= 0; i-- {
		s.releases[i]()
	}
}

// write sends the pre-encoded load (pre[round][batch]) to the system's
// remote write, profiling it as c asks, and records the write figures
// and the CPU time the system spent on them in res.
func (s *compared) write(o options, c compareOptions, pre [][][]byte, res *result) error {
	pid := s.cmd.Process.Pid
	cpu0, err := procCPU(pid)
	if err != nil {
		return err
	}
	wait0 := mutexWait(s.base)
	o.url = s.base + "/api/v1/write"
	if c.protocol == "otlp" {
		o.url = s.base + "/api/v1/otlp/v1/metrics"
		if s.name == "victoriametrics" {
			o.url = s.base + "/opentelemetry/v1/metrics"
		}
	}
	o.duration = 24 * time.Hour    // bounded by the rounds
	o.shift = seriesID(o, c, 1, 0) // the window's slide a round
	ct := "application/x-protobuf"
	enc := "snappy"
	if c.protocol == "otlp" {
		ct, enc = otlpContentType, "gzip" // as OTLP exporters send it by default
	}
	if c.protocol == "v2" {
		ct = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	}
	fmt.Fprintf(os.Stderr, "%s: writing...\n", s.name)
	stopProfiles := profileWrites(c, s.name, res.cpus, o.series, s.base)
	r, err := run(o, func(ctx context.Context, round, first, n int) error {
		return postEncoded(ctx, o.url, ct, enc, pre[round][first/o.batch])
	})
	if perr := stopProfiles(); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	res.samples, res.elapsed, res.p50, res.p99, res.firstRound = r.samples, r.elapsed, r.p50, r.p99, r.firstRound
	res.steadyRate, res.steadyP99 = r.steadyRate, r.steadyP99
	cpu1, err := procCPU(pid)
	if err != nil {
		return err
	}
	res.cpu = cpu1 - cpu0
	res.mutexWait = -1
	if wait0 >= 0 {
		if wait1 := mutexWait(s.base); wait1 >= 0 {
			res.mutexWait = wait1 - wait0
		}
	}
	return nil
}

// mutexWaitMetrics are the names under which the servers export the Go
// runtime's /sync/mutex/wait/total:seconds: client_golang's (promhbase)
// and VictoriaMetrics's metrics package's.
var mutexWaitMetrics = []string{"go_sync_mutex_wait_total_seconds_total", "go_mutex_wait_seconds_total"}

// mutexWait returns the seconds the server at base has waited for
// contended mutexes, from its /metrics; -1 when it exports none.
func mutexWait(base string) float64 {
	m, err := scrapeMetrics(base + "/metrics")
	if err != nil {
		return -1
	}
	for _, name := range mutexWaitMetrics {
		if v, ok := m[name]; ok {
			return v
		}
	}
	return -1
}

// flush makes what VictoriaMetrics took in searchable: only after a flush
// of its in-memory parts (about a second on its own). Other systems need
// none.
func (s *compared) flush() error {
	if s.name != "victoriametrics" {
		return nil
	}
	resp, err := http.Get(s.base + "/internal/force_flush")
	if err != nil {
		return fmt.Errorf("force_flush: %w", err)
	}
	resp.Body.Close()
	return nil
}

// remoteReads times remote reads of one metric (1 % of the series), every
// round: the median of c.readRepeats reads of each response type, the two
// types taking turns so that both meet the store's work after the writes
// (its flushes and compactions) alike. VictoriaMetrics single-node has no
// remote read: only its query_range is timed.
func (s *compared) remoteReads(o options, c compareOptions, t0 int64, res *result) error {
	if s.name == "victoriametrics" {
		return nil
	}
	ms := []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "load_metric_0"}}
	types := []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS}
	readRates := make([][]float64, len(types))
	for range max(c.readRepeats, 1) {
		for i, t := range types {
			n, d, err := readAll(s.base+"/api/v1/read", t, ms, t0-3600_000, t0+int64(o.maxRounds)*15_000+3600_000)
			if err != nil {
				return fmt.Errorf("remote read %s: %w", t, err)
			}
			readRates[i] = append(readRates[i], float64(n)/d.Seconds())
		}
	}
	for _, r := range readRates {
		slices.Sort(r)
	}
	res.readSamples, res.streamRate = readRates[0][len(readRates[0])/2], readRates[1][len(readRates[1])/2]
	return nil
}

// queries times the same metric through the query API, one point a
// round: the median of c.readRepeats query_range calls.
func (s *compared) queries(o options, c compareOptions, t0 int64, res *result) error {
	var rates []float64
	for range max(c.readRepeats, 1) {
		n, d, err := queryRange(s.base, "load_metric_0", t0, t0+int64(o.maxRounds-1)*15_000, 15)
		if err != nil {
			return fmt.Errorf("query_range: %w", err)
		}
		rates = append(rates, float64(n)/d.Seconds())
		res.queryPoints = n
	}
	slices.Sort(rates)
	res.queryRate = rates[len(rates)/2]
	return nil
}

// footprint records the system's peak resident memory and, but for
// promhbase-hbase (whose bytes are HBase's, in its own directory), the
// size of its data directory.
func (s *compared) footprint(res *result) (err error) {
	if res.peakRSS, err = procHWM(s.cmd.Process.Pid); err != nil {
		return err
	}
	if s.name == "promhbase-hbase" {
		return nil
	}
	res.diskBytes, err = dirBytes(s.data)
	return err
}

// waitListening polls url until it answers 200 while the system has
// said in its log that it listens ("Listening on": promhbase and
// Prometheus; "started server at": VictoriaMetrics) and has not exited
// (s.exited): an answer from another process that took
// the address is not taken for its own.
func (s *compared) waitListening(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("%w (%w): %s", errExited, s.exitErr, tailFile(s.logPath, 5))
		default:
		}
		if listening(s.logPath) && answers(url) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s", url, within)
}

// listening reports whether the log at path says its process listens.
func listening(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && (bytes.Contains(b, []byte("Listening on")) || bytes.Contains(b, []byte("started server at")))
}

// answers reports whether url answers 200.
func answers(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// procCPU returns the user and system CPU seconds of pid.
func procCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces), from field 3 on.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// procCPUs returns the CPU seconds of pid, as procCPU, and of this
// process (the load generator).
func procCPUs(pid int) (server, gen float64, err error) {
	if server, err = procCPU(pid); err != nil {
		return 0, 0, err
	}
	gen, err = procCPU(os.Getpid())
	return server, gen, err
}

// waitIdle waits until the machine's CPUs were busy less than a tenth of
// the time over one second (/proc/stat), at most max; it returns how long
// it waited and whether the machine went idle. Where /proc/stat cannot be
// read it does not wait.
func waitIdle(max time.Duration) (time.Duration, bool) {
	if max <= 0 {
		return 0, true
	}
	start := time.Now()
	busy0, total0, err := cpuTicks()
	if err != nil {
		return 0, true
	}
	for {
		time.Sleep(time.Second)
		busy1, total1, err := cpuTicks()
		if err != nil {
			return time.Since(start), true
		}
		// (Counters that went back, as a CPU going offline may make
		// them, only start a new window.)
		if total1 > total0 && busy1 >= busy0 && float64(busy1-busy0) < 0.1*float64(total1-total0) {
			return time.Since(start), true
		}
		if time.Since(start) >= max {
			return time.Since(start), false
		}
		busy0, total0 = busy1, total1
	}
}

// cpuTicks returns the busy and the total ticks of all CPUs since boot,
// from /proc/stat (see parseCPUTicks).
func cpuTicks() (busy, total uint64, err error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return parseCPUTicks(line)
}

// parseCPUTicks reads the first line of /proc/stat: "cpu" and the ticks
// spent in user, nice, system, idle, iowait, irq, softirq, steal, guest
// and guest_nice (the last two already counted in user and nice; the
// later ones absent on old kernels). Busy is user, nice, system, irq
// and softirq; total adds idle, iowait and steal (the hypervisor's, not
// this machine's work).
func parseCPUTicks(line string) (busy, total uint64, err error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: field %d of %q: %w", i+1, line, err)
		}
		total += v
		switch i {
		case 3, 4, 7: // idle, iowait, steal
		default:
			busy += v
		}
	}
	return busy, total, nil
}

// procHWM returns the peak resident set of pid (VmHWM), in bytes.
func procHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// logTail returns the last n lines of the file at path (or why it cannot).
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
