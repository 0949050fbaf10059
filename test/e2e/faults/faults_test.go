//go:build faults

// Package faults runs promhbase against the real standalone HBase of
// tools/scripts/hbase.sh while that HBase is restarted and its regions split, and
// runs several promhbase processes against one UID table at once.
//
// The tests restart and split the shared test HBase, so they carry the
// build tag faults and run on their own, after every other HBase test:
//
//	tools/scripts/hbase.sh up
//	go test -tags faults -count=1 -timeout 20m ./test/e2e/faults
//
// Under CI=true a missing HBase fails the tests; elsewhere they are skipped.
package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix ms.
const t0 = int64(1700002800) * 1000

// Settings of the in-process servers. The store's attempts and the write
// deadline are much shorter than promhbase's defaults (30 s and 25 s), as
// with Prometheus's remote_timeout lowered to match, so that any outage of
// HBase longer than a few seconds turns into 503s, and retried requests
// that had partly landed, for the writer.
const (
	storeRPCTimeout    = 3 * time.Second
	serverWriteTimeout = 5 * time.Second
	// clientTimeout is the writer's per-request timeout, Prometheus's
	// default remote_timeout.
	clientTimeout = 30 * time.Second
)

// repoRoot returns the module's root directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	return testproc.Root(t, ".")
}

// hbaseScript runs tools/scripts/hbase.sh with args against the HBase whose
// ZooKeeper the tests use, and returns its standard output. Its standard
// error is logged.
func hbaseScript(ctx context.Context, t testing.TB, args ...string) (string, error) {
	t.Helper()
	return runHBaseScript(ctx, t, "HBASE_ZK_PORT", args...)
}

// runHBaseScript runs tools/scripts/hbase.sh with args, its environment
// variable portVar set to the port of the tests' ZooKeeper.
func runHBaseScript(ctx context.Context, t testing.TB, portVar string, args ...string) (string, error) {
	t.Helper()
	_, port, err := net.SplitHostPort(testbackend.ZKQuorum())
	if err != nil {
		return "", fmt.Errorf("zookeeper quorum %q: tools/scripts/hbase.sh runs loopback HBases, want host:port: %w", testbackend.ZKQuorum(), err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "tools", "scripts", "hbase.sh"), args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), portVar+"="+port)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("tools/scripts/hbase.sh %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), strings.TrimRight(stderr.String(), "\n"))
	if err != nil {
		return stdout.String(), fmt.Errorf("tools/scripts/hbase.sh %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}

// requireHBase makes sure the HBase of tools/scripts/hbase.sh runs: the fault
// tests restart and split it through that script.
func requireHBase(t *testing.T) {
	t.Helper()
	if _, err := hbaseScript(t.Context(), t, "status"); err != nil {
		testbackend.HBaseMissing(t, err)
	}
}

// regionCount returns the number of online regions of table.
func regionCount(ctx context.Context, t *testing.T, table string) (int, error) {
	t.Helper()
	out, err := hbaseScript(ctx, t, "regions", table)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("region count of %s: %q: %w", table, out, err)
	}
	return n, nil
}

// newStore returns a store on the test HBase.
func newStore(t *testing.T) *hbase.Store {
	t.Helper()
	st, err := hbase.New(hbase.Config{ZKQuorum: testbackend.ZKQuorum(), RPCTimeout: storeRPCTimeout},
		prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// createTables creates fresh data and UID tables named after the test and
// drops them when it ends.
func createTables(t *testing.T, st *hbase.Store, name string) testbackend.Tables {
	t.Helper()
	sfx := fmt.Sprintf("%s_%d_%d", name, os.Getpid(), time.Now().UnixNano()%1e9)
	tb := testbackend.Tables{Data: "faults_tsdb_" + sfx, UID: "faults_tsdb-uid_" + sfx}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, hbase.TablesConfig{DataTable: tb.Data, UIDTable: tb.UID}); err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, tb.Data, tb.UID); err != nil {
			t.Errorf("drop test tables: %v", err)
		}
	})
	return tb
}

// allTables creates the data, UID, exemplar, meta, series index and
// rollup tables, named after prefix and the test, the data table pre-split
// at saltBuckets one-byte salt buckets when saltBuckets > 0, and drops them
// when the test ends.
func allTables(t *testing.T, st *hbase.Store, prefix, name string, saltBuckets int) testbackend.Tables {
	t.Helper()
	sfx := fmt.Sprintf("%s_%d_%d", name, os.Getpid(), time.Now().UnixNano()%1e9)
	tb := testbackend.Tables{Data: prefix + "_tsdb_" + sfx, UID: prefix + "_tsdb-uid_" + sfx, Exemplar: prefix + "_tsdb-exemplar_" + sfx,
		Meta: prefix + "_tsdb-meta_" + sfx, Index: prefix + "_tsdb-index_" + sfx,
		Rollup5m: prefix + "_tsdb-rollup-5m_" + sfx, Rollup1h: prefix + "_tsdb-rollup-1h_" + sfx,
		RollupAgg5m: prefix + "_tsdb-rollup-agg-5m_" + sfx, RollupAgg1h: prefix + "_tsdb-rollup-agg-1h_" + sfx}
	cfg := hbase.TablesConfig{DataTable: tb.Data, UIDTable: tb.UID, ExemplarTable: tb.Exemplar,
		MetaTable: tb.Meta, IndexTable: tb.Index, RollupTables: tb.RollupTables()}
	if saltBuckets > 0 {
		cfg.SaltWidth, cfg.SaltBuckets = 1, saltBuckets
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, cfg); err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, append([]string{tb.Data, tb.UID, tb.Exemplar, tb.Meta, tb.Index}, tb.RollupTables()...)...); err != nil {
			t.Errorf("drop test tables: %v", err)
		}
	})
	return tb
}

// server is an in-process promhbase on the test HBase, wired as
// cmd/promhbase serve wires it, with fresh tables.
type server struct {
	st     *hbase.Store
	tables testbackend.Tables
	layout mapping.Layout
	url    string
}

func newServer(t *testing.T, name string) *server {
	t.Helper()
	requireHBase(t)
	st := newStore(t)
	tb := createTables(t, st, name)
	layout := mapping.DefaultLayout()
	srv := testserver.Start(t, st, tb, layout, testserver.Options{
		Adapter: adapter.Options{WriteTimeout: serverWriteTimeout}, Logger: testLogger(t),
	})
	return &server{st: st, tables: tb, layout: layout, url: srv.URL}
}

// testLogger returns a logger into a file that is printed when the test
// fails.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	path := filepath.Join(t.TempDir(), "promhbase.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		if t.Failed() {
			t.Logf("promhbase log (last lines):\n%s", testproc.Tail(path, 30))
		}
	})
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// writeStats counts what a writer saw.
type writeStats struct {
	requests   atomic.Int64 // requests acknowledged with 2xx
	attempts   atomic.Int64 // HTTP attempts, retries included
	retries    atomic.Int64 // attempts after a failed one
	status5xx  atomic.Int64 // 5xx answers
	status429  atomic.Int64 // 429 answers
	connErrors atomic.Int64 // attempts without an answer

	mu    sync.Mutex
	codes map[int]int // answers other than 2xx, by status code
}

func (s *writeStats) failed(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[int]int{}
	}
	s.codes[code]++
}

func (s *writeStats) String() string {
	s.mu.Lock()
	codes := make([]string, 0, len(s.codes))
	for c, n := range s.codes {
		codes = append(codes, fmt.Sprintf("%d×%d", n, c))
	}
	s.mu.Unlock()
	slices.Sort(codes)
	return fmt.Sprintf("%d requests acknowledged, %d attempts, %d retries, %d 5xx answers %v, %d 429 answers, %d connection errors",
		s.requests.Load(), s.attempts.Load(), s.retries.Load(), s.status5xx.Load(), codes, s.status429.Load(), s.connErrors.Load())
}

// writer sends remote-write requests the way Prometheus's queue manager
// does: snappy-compressed prompb.WriteRequest POSTed to /api/v1/write; a
// 5xx answer, a 429 or no answer is retried with the same request after a
// backoff that doubles from 30 ms to 5 s; a 2xx is success; any other 4xx
// is an error (Prometheus would drop the data).
type writer struct {
	url    string
	client *http.Client
	stats  writeStats
	// onAttempt, when set, is told of each attempt: acknowledged or not.
	onAttempt func(ok bool)
	// others are the write URLs of other replicas, which the writer moves
	// on to, in turn, after an attempt without an answer, as a load
	// balancer takes a dead backend out.
	others []string
}

func newWriter(base string) *writer {
	return &writer{url: base + "/api/v1/write", client: &http.Client{Timeout: clientTimeout}}
}

// Backoff of Prometheus's remote write (min_backoff, max_backoff).
const (
	minBackoff = 30 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// send writes req, retrying until it is acknowledged, an answer says it
// never will be, or ctx ends.
func (w *writer) send(ctx context.Context, req *prompb.WriteRequest) error {
	body, err := promremote.Body(req)
	if err != nil {
		return err
	}
	backoff := minBackoff
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			w.stats.retries.Add(1)
		}
		w.stats.attempts.Add(1)
		code, msg, err := w.post(ctx, body)
		if w.onAttempt != nil && ctx.Err() == nil {
			w.onAttempt(err == nil && code/100 == 2)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("write request of %d series: %w (last error: %w)", len(req.Timeseries), ctx.Err(), err)
		case err != nil:
			w.stats.connErrors.Add(1)
			if len(w.others) > 0 {
				w.url, w.others = w.others[0], append(w.others[1:], w.url)
			}
		case code/100 == 2:
			w.stats.requests.Add(1)
			return nil
		case code/100 == 5:
			w.stats.status5xx.Add(1)
			w.stats.failed(code)
		case code == http.StatusTooManyRequests:
			w.stats.status429.Add(1)
			w.stats.failed(code)
		default:
			w.stats.failed(code)
			return fmt.Errorf("write request of %d series: status %d: %s", len(req.Timeseries), code, msg)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("write request of %d series: %w", len(req.Timeseries), ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (w *writer) post(ctx context.Context, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "promhbase-faults-test")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("post %s: %w", w.url, err)
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, "", fmt.Errorf("read answer of %s: %w", w.url, err)
	}
	return resp.StatusCode, strings.TrimSpace(string(msg)), nil
}

// sample is one sample as read back.
type sample struct {
	t int64
	v float64
}

// readSeries is one series of a remote-read answer.
type readSeries struct {
	labels  labels.Labels
	samples []sample
}

// statusError is a remote-read answer other than 200.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.code, e.msg) }

// retryable reports whether a failed read may be retried: no answer, or a
// 5xx answer.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code/100 == 5
	}
	return err != nil
}

// remoteRead runs one remote-read query against base/api/v1/read asking for
// SAMPLES, and returns the series in the order of the answer.
func remoteRead(ctx context.Context, client *http.Client, base string, start, end int64, ms ...*labels.Matcher) ([]readSeries, error) {
	pq, err := remote.ToQuery(start, end, ms, nil)
	if err != nil {
		return nil, fmt.Errorf("read query: %w", err)
	}
	data, err := promremote.Body(&prompb.ReadRequest{
		Queries:               []*prompb.Query{pq},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES},
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/read", bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("new read request: %w", err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote read: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read remote-read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{code: resp.StatusCode, msg: strings.TrimSpace(string(body))}
	}
	var rr prompb.ReadResponse
	if err := promremote.Decode(body, &rr); err != nil {
		return nil, fmt.Errorf("remote-read answer: %w", err)
	}
	if len(rr.Results) != 1 {
		return nil, fmt.Errorf("remote-read answer holds %d results, want 1", len(rr.Results))
	}
	out := make([]readSeries, 0, len(rr.Results[0].Timeseries))
	for _, ts := range rr.Results[0].Timeseries {
		b := labels.NewScratchBuilder(len(ts.Labels))
		for _, l := range ts.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		s := readSeries{labels: b.Labels(), samples: make([]sample, len(ts.Samples))}
		for i, smp := range ts.Samples {
			s.samples[i] = sample{smp.Timestamp, smp.Value}
		}
		out = append(out, s)
	}
	return out, nil
}

// remoteReadStreamed runs one query through Prometheus's own remote-read
// client, asking for STREAMED_XOR_CHUNKS as Prometheus does.
func remoteReadStreamed(ctx context.Context, base string, start, end int64, ms ...*labels.Matcher) ([]readSeries, error) {
	return remoteReadStreamedEach(ctx, base, start, end, nil, ms...)
}

// remoteReadStreamedEach is remoteReadStreamed calling each (when not nil)
// before it takes each series from the answer.
func remoteReadStreamedEach(ctx context.Context, base string, start, end int64, each func(), ms ...*labels.Matcher) ([]readSeries, error) {
	rc, err := promremote.NewReader("faults", base, promremote.Options{Timeout: 2 * time.Minute, ChunkedReadLimit: 256 << 20,
		ReadTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}})
	if err != nil {
		return nil, err
	}
	pq, err := remote.ToQuery(start, end, ms, nil)
	if err != nil {
		return nil, fmt.Errorf("read query: %w", err)
	}
	ss, err := rc.Read(ctx, pq, true)
	if err != nil {
		return nil, fmt.Errorf("remote read (streamed): %w", err)
	}
	var out []readSeries
	for {
		if each != nil {
			each()
		}
		if !ss.Next() {
			break
		}
		s := ss.At()
		rs := readSeries{labels: s.Labels()}
		it := s.Iterator(nil)
		for it.Next() != 0 {
			ts, v := it.At()
			rs.samples = append(rs.samples, sample{ts, v})
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("series %s: %w", rs.labels, err)
		}
		out = append(out, rs)
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("remote read (streamed): %w", err)
	}
	return out, nil
}

// expectation is what a read must return for one series: every sample in
// want, in timestamp order, values bit for bit.
type expectation map[string][]sample // by labels.String()

// compareExact reports how got differs from want: series missing, extra
// or repeated, samples missing, extra, repeated, out of order or with
// other values, series out of label order. It returns at most limit
// findings and the number of samples compared.
func compareExact(got []readSeries, want expectation, limit int) (problems []string, samples int) {
	add := func(format string, args ...any) {
		if len(problems) < limit {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	seen := make(map[string]bool, len(got))
	for i, s := range got {
		key := s.labels.String()
		if i > 0 && labels.Compare(got[i-1].labels, s.labels) >= 0 {
			add("series %s after %s: not sorted by labels", key, got[i-1].labels)
		}
		if seen[key] {
			add("series %s returned twice", key)
			continue
		}
		seen[key] = true
		w, ok := want[key]
		if !ok {
			add("unexpected series %s", key)
			continue
		}
		samples += len(s.samples)
		for _, p := range sampleProblems(s.samples, w) {
			add("series %s: %s", key, p)
		}
	}
	for key := range want {
		if !seen[key] {
			add("missing series %s", key)
		}
	}
	slices.Sort(problems)
	return problems, samples
}

// sampleProblems compares the samples of one series with want.
func sampleProblems(got, want []sample) []string {
	var out []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case i > 0 && i < len(got) && got[i].t <= got[i-1].t:
			out = append(out, fmt.Sprintf("sample at %d after one at %d (duplicate or out of order)", got[i].t, got[i-1].t))
			i++
		case j >= len(want) || (i < len(got) && got[i].t < want[j].t):
			out = append(out, fmt.Sprintf("unexpected sample (%d, %v)", got[i].t, got[i].v))
			i++
		case i >= len(got) || want[j].t < got[i].t:
			out = append(out, fmt.Sprintf("missing sample (%d, %v)", want[j].t, want[j].v))
			j++
		default:
			if math.Float64bits(got[i].v) != math.Float64bits(want[j].v) {
				out = append(out, fmt.Sprintf("sample at %d is %v (%x), want %v (%x)", got[i].t, got[i].v, math.Float64bits(got[i].v), want[j].v, math.Float64bits(want[j].v)))
			}
			i++
			j++
		}
	}
	return out
}

// checkExact reads a query back through both response types, in subtests
// name/samples and name/streamed, and fails them on any difference from
// want.
func checkExact(t *testing.T, name, base string, want expectation, start, end int64, ms ...*labels.Matcher) {
	t.Helper()
	wantSamples := 0
	for _, w := range want {
		wantSamples += len(w)
	}
	for _, rt := range []struct {
		name string
		read func(ctx context.Context) ([]readSeries, error)
	}{
		{"samples", func(ctx context.Context) ([]readSeries, error) {
			return remoteRead(ctx, &http.Client{Timeout: 2 * time.Minute}, base, start, end, ms...)
		}},
		{"streamed", func(ctx context.Context) ([]readSeries, error) {
			return remoteReadStreamed(ctx, base, start, end, ms...)
		}},
	} {
		t.Run(name+"/"+rt.name, func(t *testing.T) {
			got, err := rt.read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			problems, n := compareExact(got, want, 20)
			for _, p := range problems {
				t.Error(p)
			}
			if len(problems) == 0 {
				t.Logf("read back %d series, %d samples: each exactly once, values exact", len(got), n)
			} else {
				t.Errorf("read back %d series, %d samples; want %d series, %d samples", len(got), n, len(want), wantSamples)
			}
		})
	}
}

// tableRows returns the row keys of a table.
func tableRows(ctx context.Context, st store.Store, table string) ([][]byte, error) {
	sc := st.Scan(ctx, store.ScanRequest{Table: table})
	defer sc.Close()
	var rows [][]byte
	for sc.Next() {
		rows = append(rows, bytes.Clone(sc.Row().Key))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan %s: %w", table, err)
	}
	return rows, nil
}

// series builds a prompb.TimeSeries from name, value pairs.
func series(samples []prompb.Sample, kv ...string) prompb.TimeSeries {
	ls := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	slices.SortFunc(ls, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	return prompb.TimeSeries{Labels: ls, Samples: samples}
}

// labelsOf returns the labels of a prompb series as labels.Labels.
func labelsOf(ts prompb.TimeSeries) labels.Labels {
	b := labels.NewScratchBuilder(len(ts.Labels))
	for _, l := range ts.Labels {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels()
}

// valueOf returns the value of series s in request r. Values cycle through
// the three encodings: small integers (stored as longs), values a float32
// holds exactly and values that need a double.
func valueOf(s, r int) float64 {
	v := float64(r*1000 + s)
	switch r % 3 {
	case 1:
		v += 0.5
	case 2:
		v += 0.1
	}
	return v
}

// eq and re are label matchers.
func eq(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, n, v) }
func re(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchRegexp, n, v) }

// streamProblems checks the samples of one series that a writer streams,
// the sample of its request r at t0 + r*step with value value(r), as read
// while the writer ran: acked requests were acknowledged before the read
// started and sent requests started before it ended. Every acknowledged
// sample must be there; otherwise only samples of sent requests, in order,
// once, with their exact values.
func streamProblems(samples []sample, step, acked, sent int64, value func(r int64) float64) []string {
	var out []string
	prev, ackedSeen := int64(-1), int64(0)
	for _, smp := range samples {
		off := smp.t - t0
		r := off / step
		switch {
		case off < 0 || off%step != 0:
			out = append(out, fmt.Sprintf("sample at %d was never written", smp.t))
			continue
		case r <= prev:
			out = append(out, fmt.Sprintf("sample of request %d after one of request %d (duplicate or out of order)", r, prev))
			continue
		case r >= sent:
			out = append(out, fmt.Sprintf("sample of request %d, but only %d were sent when the read ended", r, sent))
		case math.Float64bits(smp.v) != math.Float64bits(value(r)):
			out = append(out, fmt.Sprintf("sample of request %d is %v, want %v", r, smp.v, value(r)))
		}
		prev = r
		if r < acked {
			ackedSeen++
		}
	}
	if ackedSeen != acked {
		out = append(out, fmt.Sprintf("%d of the %d samples acknowledged before the read started", ackedSeen, acked))
	}
	return out
}
