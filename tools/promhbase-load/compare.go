package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
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
	system         string
	cpus           int // the cores it was pinned to; 0: not pinned
	series, rounds int
	samples        int64
	elapsed        time.Duration
	p50, p99       time.Duration
	firstRound     time.Duration
	steadyRate     float64 // samples/s after the first round
	steadyP99      time.Duration
	cpu            float64 // seconds of the server's CPU while writing
	// mutexWait is the seconds the server's goroutines spent waiting for
	// contended sync.Mutex and RWMutex locks while writing (the Go
	// runtime's /sync/mutex/wait/total:seconds, as each server exports
	// it; -1 when it does not).
	mutexWait               float64
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
	if c.protocol != "v1" && c.protocol != "v2" && c.protocol != "otlp" {
		return nil, fmt.Errorf("--protocol=%q: want v1, v2 or otlp", c.protocol)
	}
	if c.protocol == "otlp" && c.histograms {
		return nil, fmt.Errorf("--protocol=otlp sends gauges; --histograms is for v1 and v2")
	}
	if len(c.systems) == 0 {
		c.systems = []string{"prometheus", "promhbase"}
	}
	for _, sys := range c.systems {
		switch {
		case sys != "prometheus" && sys != "promhbase" && sys != "promhbase-hbase" && sys != "victoriametrics":
			return nil, fmt.Errorf("--systems=%q: want prometheus, promhbase, promhbase-hbase or victoriametrics", sys)
		case sys == "victoriametrics" && c.victoriaMetrics == "":
			return nil, errors.New("--systems=victoriametrics needs --victoria-metrics (tools/scripts/victoriametrics.sh prints the project's)")
		case sys == "prometheus" && c.prometheus == "":
			return nil, errors.New("--systems=prometheus needs --prometheus (tools/scripts/prometheus.sh prints the project's)")
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
	if c.protocol == "otlp" {
		return encodeOTLP(o, c, ts, round, first, n)
	}
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

// printResults prints one Markdown table row per system.
func printResults(w io.Writer, c compareOptions, rs []result) {
	fmt.Fprintf(w, "| system | series × rounds | protocol, churn | samples/s | first round (all new) | p50 / p99 request | after the first round: samples/s, p99 | CPU s per M samples | mutex wait s | peak RSS | disk bytes/sample | remote read SAMPLES / streamed, samples/s | query_range points/s |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		sys := r.system
		if r.cpus > 0 {
			sys = fmt.Sprintf("%s, %d cores", sys, r.cpus)
		}
		wait := "-"
		if r.mutexWait >= 0 {
			wait = fmt.Sprintf("%.3f", r.mutexWait)
		}
		fmt.Fprintf(w, "| %s | %d × %d | %s, %.0f %% | %.0f | %s | %s / %s | %.0f, %s | %.2f | %s | %.0f MB | %.2f | %.2f M / %.2f M | %.2f M |\n",
			sys, r.series, r.rounds, c.kind(), 100*c.churn, float64(r.samples)/r.elapsed.Seconds(),
			r.firstRound.Round(time.Millisecond), r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond),
			r.steadyRate, r.steadyP99.Round(time.Millisecond),
			r.cpu/(float64(r.samples)/1e6), wait, float64(r.peakRSS)/1e6, float64(r.diskBytes)/float64(max(r.samples, 1)),
			r.readSamples/1e6, r.streamRate/1e6, r.queryRate/1e6)
	}
}
