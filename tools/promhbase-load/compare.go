package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// compareOptions are the flags of the compare command.
type compareOptions struct {
	prometheus, promhbase, victoriaMetrics string // binaries
	protocol                               string // v1 or v2
	// histograms sends one integer native histogram a series a round
	// instead of a float sample.
	histograms  bool
	churn       float64
	readRepeats int
	// idleWait bounds the wait for the machine to go idle before each
	// system's run; 0 does not wait.
	idleWait     time.Duration
	dir          string
	svg          string
	seriesCounts []int
	systems      []string
	runs         []string // SERIESxROUNDS
	// hbaseQuorum is the ZooKeeper quorum of the HBase that the system
	// promhbase-hbase writes into (fresh tables per run).
	hbaseQuorum string
	// extraFlags are passed to every promhbase serve it starts (e.g.
	// --web.enable-pprof to profile a run).
	extraFlags []string
	// serverCPUs are the core counts each system runs at, in turn (its
	// CPU affinity and GOMAXPROCS; see pinned); none: unpinned.
	serverCPUs []int
	// profileCPU, with profile, is how long a CPU profile of each run's
	// writes lasts; 0: none.
	profileCPU time.Duration
	// profile, when set, is the directory where promhbase's mutex, block
	// and CPU profiles of each run's writes go (needs --web.enable-pprof
	// and the profile rates among extraFlags).
	profile string
}

// kind names the traffic: the protocol, and whether it carries native
// histograms.
func (c compareOptions) kind() string {
	if c.histograms {
		return c.protocol + " histograms"
	}
	return c.protocol
}

// result is what one system did under one load.
type result struct {
	system                  string
	cpus                    int // the cores it was pinned to; 0: not pinned
	series, rounds          int
	samples                 int64
	elapsed                 time.Duration
	p50, p99                time.Duration
	firstRound              time.Duration
	steadyRate              float64 // samples/s after the first round
	steadyP99               time.Duration
	cpu                     float64 // seconds of the server's CPU while writing
	peakRSS                 int64   // VmHWM, bytes
	diskBytes               int64   // data directory after the run
	readSamples, streamRate float64 // remote read, samples/s (SAMPLES, STREAMED_XOR_CHUNKS)
	queryRate               float64 // /api/v1/query_range of the same metric, points/s
	queryPoints             int     // points of one such answer
}

// runCompare writes the same pre-encoded remote-write traffic into
// Prometheus's own receiver and into promhbase (embedded store), one after
// the other, each a fresh process on a fresh directory, then reads one
// metric back with both remote-read response types, and prints a Markdown
// table: samples/s, request latency, the first round (every series new),
// CPU seconds per million samples, peak RSS, bytes on disk per sample,
// remote-read samples/s.
func runCompare(o options, c compareOptions) ([]result, error) {
	if c.protocol != "v1" && c.protocol != "v2" {
		return nil, fmt.Errorf("--protocol=%q: want v1 or v2", c.protocol)
	}
	if len(c.systems) == 0 {
		c.systems = []string{"prometheus", "promhbase"}
	}
	for _, sys := range c.systems {
		switch {
		case sys != "prometheus" && sys != "promhbase" && sys != "promhbase-hbase" && sys != "victoriametrics":
			return nil, fmt.Errorf("--systems=%q: want prometheus, promhbase, promhbase-hbase or victoriametrics", sys)
		case sys == "victoriametrics" && c.victoriaMetrics == "":
			return nil, errors.New("--systems=victoriametrics needs --victoria-metrics (scripts/victoriametrics.sh prints the project's)")
		case sys == "prometheus" && c.prometheus == "":
			return nil, errors.New("--systems=prometheus needs --prometheus (scripts/prometheus.sh prints the project's)")
		}
	}
	cpuCounts := c.serverCPUs
	if len(cpuCounts) == 0 {
		cpuCounts = []int{0}
	}
	type run struct{ series, rounds int }
	var runs []run
	for _, r := range c.runs {
		var n, k int
		if _, err := fmt.Sscanf(r, "%dx%d", &n, &k); err != nil || n <= 0 || k <= 0 {
			return nil, fmt.Errorf("--runs=%q: want SERIESxROUNDS, e.g. 20000x100", r)
		}
		runs = append(runs, run{n, k})
	}
	if len(runs) == 0 {
		if o.maxRounds <= 0 {
			return nil, errors.New("compare needs --runs or --max-rounds (every round is encoded up front, with its own timestamps)")
		}
		if len(c.seriesCounts) == 0 {
			c.seriesCounts = []int{o.series}
		}
		for _, n := range c.seriesCounts {
			runs = append(runs, run{n, o.maxRounds})
		}
	}
	var results []result
	for _, ru := range runs {
		n := ru.series
		o.series, o.maxRounds, o.rounds = ru.series, ru.rounds, ru.rounds
		// The rounds end about now: Prometheus refuses samples more than a
		// few minutes ahead of its clock.
		t0 := time.Now().Add(-time.Duration(o.maxRounds) * 15 * time.Second).Truncate(time.Minute).UnixMilli()
		fmt.Fprintf(os.Stderr, "encoding %d rounds of %d series (%s, churn %.0f %%)...\n", o.maxRounds, o.series, c.kind(), 100*c.churn)
		pre := precompute(o, func(round, first, n int) []byte { return encodeRound(o, c, t0, round, first, n) })
		for _, cpus := range cpuCounts {
			for _, sys := range c.systems {
				r, err := compareOne(o, c, sys, cpus, pre, t0)
				if err != nil {
					return results, fmt.Errorf("%s, %d series: %w", sys, n, err)
				}
				results = append(results, r)
				printResults(os.Stderr, c, []result{r})
			}
		}
	}
	printResults(os.Stdout, c, results)
	if c.svg != "" {
		return results, writeSVG(c.svg, fmt.Sprintf("promhbase vs Prometheus's receiver: remote write %s, churn %.0f %%", c.kind(), 100*c.churn), results)
	}
	return results, nil
}

// seriesID is the series at position p in round r: with churn, the window
// of series slides by churn × series a round (that many new, as many
// gone), as pods restart.
func seriesID(o options, c compareOptions, round, p int) int {
	return p + round*int(c.churn*float64(o.series))
}

// encodeRound encodes one request of round: series first..first+n, one
// sample each at t0 + 15 s × round.
func encodeRound(o options, c compareOptions, t0 int64, round, first, n int) []byte {
	ts := t0 + int64(round)*15_000
	var data []byte
	var err error
	if c.protocol == "v1" {
		req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, n)}
		for i := range n {
			id := seriesID(o, c, round, first+i)
			req.Timeseries[i] = prompb.TimeSeries{Labels: seriesLabels(id)}
			if c.histograms {
				req.Timeseries[i].Histograms = []prompb.Histogram{prompb.FromIntHistogram(ts, loadHistogram(round, id))}
			} else {
				req.Timeseries[i].Samples = []prompb.Sample{{Timestamp: ts, Value: float64(round*7 + id)}}
			}
		}
		data, err = proto.Marshal(&req)
	} else {
		st := writev2.NewSymbolTable()
		req := writev2.Request{Timeseries: make([]writev2.TimeSeries, n)}
		for i := range n {
			id := seriesID(o, c, round, first+i)
			b := labels.NewScratchBuilder(10)
			for _, l := range seriesLabels(id) {
				b.Add(l.Name, l.Value)
			}
			b.Sort()
			req.Timeseries[i] = writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(b.Labels(), nil)}
			if c.histograms {
				req.Timeseries[i].Histograms = []writev2.Histogram{writev2.FromIntHistogram(0, ts, loadHistogram(round, id))}
			} else {
				req.Timeseries[i].Samples = []writev2.Sample{{Timestamp: ts, Value: float64(round*7 + id)}}
			}
		}
		req.Symbols = st.Symbols()
		data, err = proto.Marshal(&req)
	}
	if err != nil {
		panic(err) // these messages always marshal
	}
	return snappy.Encode(nil, data)
}

// loadHistogram is series id's native histogram in round: an integer
// histogram of schema 3 (Prometheus's default resolution) with 12 buckets
// in two spans, like a request-duration histogram, whose counts grow every
// round as a counter's do.
func loadHistogram(round, id int) *histogram.Histogram {
	h := &histogram.Histogram{
		Schema:          3,
		ZeroThreshold:   1e-128,
		ZeroCount:       uint64(round),
		PositiveSpans:   []histogram.Span{{Offset: -4, Length: 6}, {Offset: 3, Length: 6}},
		PositiveBuckets: make([]int64, 12), // deltas
	}
	h.Count = h.ZeroCount
	prev := int64(0)
	for i := range h.PositiveBuckets {
		c := int64((round+1)*(i%6+1) + id%5)
		h.PositiveBuckets[i] = c - prev
		prev = c
		h.Count += uint64(c)
	}
	h.Sum = float64(h.Count) * 0.37
	return h
}

// compareOne runs the load against one system: it waits for the machine
// to go quiet, starts the system on its own data directory, writes the
// load, reads it back through remote read and the query API, and takes
// the system's footprint. On a failure once the system is started, the
// error carries the end of its log.
func compareOne(o options, c compareOptions, sys string, cpus int, pre [][][]byte, t0 int64) (_ result, err error) {
	res := result{system: sys, series: o.series, rounds: o.maxRounds, cpus: cpus}
	waitQuiet(c, sys)
	dir, err := os.MkdirTemp(c.dir, "compare-"+sys+"-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	s := &compared{name: sys, data: filepath.Join(dir, "data")}
	// Deferred in this order so that the process is stopped first, then
	// its log's tail read, then what it held released.
	defer s.release()
	defer func() { err = s.withLogTail(err) }()
	defer s.stop()
	if err := s.start(c, cpus, dir); err != nil {
		return res, err
	}
	if err := s.write(o, c, pre, &res); err != nil {
		return res, err
	}
	if err := s.flush(); err != nil {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "%s: reading...\n", sys)
	if err := s.remoteReads(o, c, t0, &res); err != nil {
		return res, err
	}
	if err := s.queries(o, c, t0, &res); err != nil {
		return res, err
	}
	return res, s.footprint(&res)
}

// compared is one system of the comparison, as compareOne runs it.
type compared struct {
	name    string
	data    string    // its data directory
	base    string    // http://addr
	logPath string    // its log; empty until the log is created
	cmd     *exec.Cmd // nil until started
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
// its output to a log in dir, and waits until it is ready.
func (s *compared) start(c compareOptions, cpus int, dir string) error {
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
	return waitReady(s.base+ready, time.Minute)
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
		return exec.Command(c.prometheus, "--config.file="+cfg, "--storage.tsdb.path="+s.data, "--web.listen-address="+addr, "--web.enable-remote-write-receiver"), nil
	case "promhbase-hbase":
		tables, drop, err := benchTables(c.hbaseQuorum, dir)
		if err != nil {
			return nil, err
		}
		s.releases = append(s.releases, drop)
		return exec.Command(c.promhbase, append([]string{"serve", "--web.listen-address=" + addr, "--storage.backend=hbase",
			"--hbase.zookeeper.quorum=" + c.hbaseQuorum, "--limits.new-series-rate=0", "--limits.max-active-series=0"}, append(tables, c.extraFlags...)...)...), nil
	case "victoriametrics":
		return exec.Command(c.victoriaMetrics, "-storageDataPath="+s.data, "-httpListenAddr="+addr, "-retentionPeriod=100y", "-search.disableCache"), nil
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
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
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
	o.url = s.base + "/api/v1/write"
	o.duration = 24 * time.Hour    // bounded by the rounds
	o.shift = seriesID(o, c, 1, 0) // the window's slide a round
	ct := "application/x-protobuf"
	if c.protocol == "v2" {
		ct = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	}
	fmt.Fprintf(os.Stderr, "%s: writing...\n", s.name)
	stopProfiles := profileWrites(c, s.name, res.cpus, o.series, s.base)
	r, err := run(o, func(ctx context.Context, round, first, n int) error {
		return post(ctx, o.url, ct, pre[round][first/o.batch])
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
	return nil
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

// readAll runs one remote read and returns the samples it got and the
// time it took.
func readAll(url string, t prompb.ReadRequest_ResponseType, ms []*prompb.LabelMatcher, start, end int64) (int, time.Duration, error) {
	data, err := proto.Marshal(&prompb.ReadRequest{
		Queries:               []*prompb.Query{{StartTimestampMs: start, EndTimestampMs: end, Matchers: ms}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{t},
	})
	if err != nil {
		return 0, 0, err
	}
	began := time.Now()
	hr, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, data)))
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return 0, 0, fmt.Errorf("status %d: %.300s", resp.StatusCode, msg)
	}
	n := 0
	if t == prompb.ReadRequest_SAMPLES {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, 0, err
		}
		dec, err := snappy.Decode(nil, raw)
		if err != nil {
			return 0, 0, err
		}
		var rr prompb.ReadResponse
		if err := proto.Unmarshal(dec, &rr); err != nil {
			return 0, 0, err
		}
		for _, q := range rr.Results {
			for _, s := range q.Timeseries {
				n += len(s.Samples) + len(s.Histograms)
			}
		}
		return n, time.Since(began), nil
	}
	series, samples, _, err := countFrames(resp.Body)
	_ = series
	return samples, time.Since(began), err
}

// queryRange runs /api/v1/query_range of query from start to end (ms)
// every step seconds and returns the points (floats and histograms) of
// its answer and the time it took, the answer's JSON decoded.
func queryRange(base, query string, start, end int64, step int) (int, time.Duration, error) {
	v := url.Values{}
	v.Set("query", query)
	v.Set("start", strconv.FormatFloat(float64(start)/1000, 'f', 3, 64))
	v.Set("end", strconv.FormatFloat(float64(end)/1000, 'f', 3, 64))
	v.Set("step", strconv.Itoa(step))
	began := time.Now()
	resp, err := http.PostForm(base+"/api/v1/query_range", v)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	var qr struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Values     []json.RawMessage `json:"values"`
				Histograms []json.RawMessage `json:"histograms"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		return 0, 0, err
	}
	if qr.Status != "success" {
		return 0, 0, fmt.Errorf("status %q", qr.Status)
	}
	n := 0
	for _, r := range qr.Data.Result {
		n += len(r.Values) + len(r.Histograms)
	}
	return n, time.Since(began), nil
}

// waitReady polls url until it answers 200.
func waitReady(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s", url, within)
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

// printResults prints one Markdown table row per system.
func printResults(w io.Writer, c compareOptions, rs []result) {
	fmt.Fprintf(w, "| system | series × rounds | protocol, churn | samples/s | first round (all new) | p50 / p99 request | after the first round: samples/s, p99 | CPU s per M samples | peak RSS | disk bytes/sample | remote read SAMPLES / streamed, samples/s | query_range points/s |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		sys := r.system
		if r.cpus > 0 {
			sys = fmt.Sprintf("%s, %d cores", sys, r.cpus)
		}
		fmt.Fprintf(w, "| %s | %d × %d | %s, %.0f %% | %.0f | %s | %s / %s | %.0f, %s | %.2f | %.0f MB | %.2f | %.2f M / %.2f M | %.2f M |\n",
			sys, r.series, r.rounds, c.kind(), 100*c.churn, float64(r.samples)/r.elapsed.Seconds(),
			r.firstRound.Round(time.Millisecond), r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond),
			r.steadyRate, r.steadyP99.Round(time.Millisecond),
			r.cpu/(float64(r.samples)/1e6), float64(r.peakRSS)/1e6, float64(r.diskBytes)/float64(max(r.samples, 1)),
			r.readSamples/1e6, r.streamRate/1e6, r.queryRate/1e6)
	}
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
