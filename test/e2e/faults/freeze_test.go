//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// Shape of TestHBaseFreeze's load: freezeSenders senders, each with
// freezeSeries series of its own (the first half recent, the others hours
// old) and freezePerReq samples a series per request.
const (
	freezeSenders = 8
	freezeSeries  = 100
	freezePerReq  = 10
	freezeStepMs  = 1000
	freezeMetric  = "freeze_test"
	// freezePace is the least time between the starts of one sender's
	// requests.
	freezePace = 500 * time.Millisecond
	// freezeFor is how long HBase stays stopped: longer than promhbase's
	// write timeout (25 s) and than Prometheus's remote_timeout (30 s).
	freezeFor = 60 * time.Second
	// answerBudget bounds every answer: Prometheus's remote_timeout.
	answerBudget = 30 * time.Second
	// readyBudget bounds every answer of /-/ready: its check's own
	// deadline (800 ms), and what a loaded 2-core machine adds to it
	// (1.13 s seen with make test's HBase suites beside the freeze).
	readyBudget = 1500 * time.Millisecond
	// rssGrowth is how much serve's RSS may grow over its most before the
	// freeze.
	rssGrowth = 256 << 20
)

// freezeSender is one of TestHBaseFreeze's senders.
type freezeSender struct {
	w      int
	recent int64        // the first sample of the recent series (Unix ms)
	acked  atomic.Int64 // requests answered 2xx, in order
	sent   int          // requests sent (the last may have been refused)
}

// base returns the first sample's time of series i: the recent base for
// the first half, 3 to 6 hours before it for the others, so that the
// writes go into hours long ended (compacted, rolled up, their changes
// logged for the results cache) as well as the current ones.
func (s *freezeSender) base(i int) int64 {
	if i < freezeSeries/2 {
		return s.recent
	}
	return s.recent - int64(3+i%4)*3600_000
}

// request returns the k-th request: sample j of series i at base(i) +
// (k*freezePerReq+j) s.
func (s *freezeSender) request(k int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, freezeSeries)}
	for i := range req.Timeseries {
		smp := make([]prompb.Sample, freezePerReq)
		for j := range smp {
			n := k*freezePerReq + j
			smp[j] = prompb.Sample{Timestamp: s.base(i) + int64(n)*freezeStepMs, Value: freezeValue(s.w, i, n)}
		}
		req.Timeseries[i] = series(smp, "__name__", freezeMetric, "w", strconv.Itoa(s.w), "i", strconv.Itoa(i))
	}
	return req
}

// freezeValue is the value of sample n of series (w, i): an integer, a
// float32 or a double in turn, so that each value encoding is written.
func freezeValue(w, i, n int) float64 {
	v := rand.New(rand.NewPCG(uint64(w)<<32|uint64(i), uint64(n))).NormFloat64() * 1e3
	switch n % 3 {
	case 0:
		// Not -0: remote write 1.0's encoder leaves a zero value out, so
		// -0 arrives as 0.
		if r := math.Round(v); r != 0 {
			return r
		}
		return 0
	case 1:
		return float64(float32(v))
	}
	return v
}

// Phases of TestHBaseFreeze, by when a request started.
const (
	phaseBefore = "before"
	phaseFrozen = "frozen"
	phaseAfter  = "after"
)

// freezeClock tells the phase of a request from when it started.
type freezeClock struct {
	stopped, continued atomic.Int64 // Unix ns of SIGSTOP and SIGCONT; 0 before
}

func (c *freezeClock) phase(at time.Time) string {
	switch n := at.UnixNano(); {
	case c.stopped.Load() == 0 || n < c.stopped.Load():
		return phaseBefore
	case c.continued.Load() == 0 || n < c.continued.Load():
		return phaseFrozen
	}
	return phaseAfter
}

// answerKind is what answerLog keeps of one kind of request in one phase.
type answerKind struct {
	n        int
	longest  time.Duration
	codes    map[int]int
	noAnswer int
}

// answerLog records every answer's time and status by request kind and
// phase, and the answers over their budget.
type answerLog struct {
	clock *freezeClock
	mu    sync.Mutex
	kinds map[string]*answerKind // by "kind/phase"
	bad   []string
}

// add records one request of kind that started at start and took d:
// answered with code, or without an answer (err). One that took longer
// than budget, or got no answer, is a problem.
func (a *answerLog) add(kind string, start time.Time, d time.Duration, code int, err error, budget time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := kind + "/" + a.clock.phase(start)
	k := a.kinds[key]
	if k == nil {
		k = &answerKind{codes: map[int]int{}}
		a.kinds[key] = k
	}
	k.n++
	k.longest = max(k.longest, d)
	if err != nil {
		k.noAnswer++
		a.problem("%s at %s: no answer after %s: %v", key, start.Format("15:04:05.000"), d.Round(time.Millisecond), err)
		return
	}
	k.codes[code]++
	if d > budget {
		a.problem("%s at %s: answered %d after %s, over its %s", key, start.Format("15:04:05.000"), code, d.Round(time.Millisecond), budget)
	}
}

// problem records a failure of the test; a.mu is held.
func (a *answerLog) problem(format string, args ...any) {
	if len(a.bad) < 30 {
		a.bad = append(a.bad, fmt.Sprintf(format, args...))
	}
}

// fail records a failure of the test.
func (a *answerLog) fail(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.problem(format, args...)
}

// report returns one line per kind and phase.
func (a *answerLog) report() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for key, k := range a.kinds {
		codes := make([]string, 0, len(k.codes))
		for c, n := range k.codes {
			codes = append(codes, fmt.Sprintf("%d×%d", n, c))
		}
		slices.Sort(codes)
		out = append(out, fmt.Sprintf("%-16s %5d requests, longest %7s, answers %v, %d without an answer", key, k.n, k.longest.Round(time.Millisecond), codes, k.noAnswer))
	}
	slices.Sort(out)
	return out
}

// TestHBaseFreeze stops the whole standalone HBase (master, region server
// and ZooKeeper: one JVM) with SIGSTOP for a minute while 8 senders write
// into a real `promhbase serve` (remote write 1.0, recent data and data 3
// to 6 hours old), queries run and /-/ready is polled every 250 ms, then
// lets it go on with SIGCONT. Every answer must come within Prometheus's
// remote_timeout (30 s), every /-/ready answer within a second; writes
// are answered 503 with Retry-After while HBase is stopped, never 4xx;
// serve's memory stays bounded; writes succeed again soon after SIGCONT,
// and every acknowledged sample reads back bit for bit, nothing that was
// never sent.
//
// serve runs with its defaults (--query.timeout=2m, as Prometheus's): a
// query's scan notices a region server that stopped answering within
// about twice the RPC timeout (store/hbase), a write's wait is bounded by
// --web.write-timeout (25s). tools/scripts/hbase.sh gives HBase's ZooKeeper sessions a 180 s timeout, so
// that they outlive the minute's pause.
func TestHBaseFreeze(t *testing.T) {
	requireHBase(t)
	pids := hbasePIDs(t)
	st := newStore(t)
	tb := allTables(t, st, "faults", "freeze", 0)
	bin := testproc.BuildBinary(t, filepath.Join(repoRoot(t), "cmd", "promhbase"))
	p := startFull(t, bin, "freeze", tb, 0)
	servePID := p.proc.Cmd.Process.Pid

	clock := &freezeClock{}
	answers := &answerLog{clock: clock, kinds: map[string]*answerKind{}}
	recent := time.Now().Add(-30 * time.Minute).Truncate(time.Minute).UnixMilli()
	senders := make([]*freezeSender, freezeSenders)
	var (
		stop       atomic.Bool
		firstAck   atomic.Int64 // Unix ns of the first 2xx of a request started after SIGCONT
		ackedAfter atomic.Int64 // senders with a 2xx of a request started after SIGCONT
		wg         sync.WaitGroup
	)
	client := &http.Client{Timeout: 2 * answerBudget}
	for w := range senders {
		s := &freezeSender{w: w, recent: recent}
		senders[w] = s
		wg.Go(func() {
			seenAfter := false
			for !stop.Load() {
				acked := int(s.acked.Load())
				body, err := promremote.Body(s.request(acked))
				if err != nil {
					answers.fail("sender %d: %v", w, err)
					return
				}
				s.sent = max(s.sent, acked+1)
				start := time.Now()
				code, retryAfter, err := postWrite(client, p.base, body)
				answers.add("write", start, time.Since(start), code, err, answerBudget)
				switch {
				case err != nil:
				case code/100 == 2:
					s.acked.Add(1)
					if !seenAfter && clock.phase(start) == phaseAfter {
						seenAfter = true
						firstAck.CompareAndSwap(0, time.Now().UnixNano())
						ackedAfter.Add(1)
					}
				case code == http.StatusServiceUnavailable:
					if retryAfter == "" {
						answers.fail("sender %d: 503 without Retry-After", w)
					}
				default:
					answers.fail("sender %d: write answered %d, want 2xx or 503", w, code)
					return
				}
				wait := freezePace - time.Since(start)
				if err != nil || code/100 != 2 {
					wait = time.Second // Retry-After
				}
				if wait > 0 {
					time.Sleep(wait) // pacing the senders, not a wait on anything
				}
			}
		})
	}

	// /-/ready every 250 ms, serve's RSS with it; queries every second,
	// range and instant in turn.
	var (
		pollers                     sync.WaitGroup
		rssBefore, rssMax, rssAfter atomic.Int64
		readyBodies                 sync.Map // the bodies of answers other than 200
	)
	pollers.Go(func() {
		rc := &http.Client{Timeout: 5 * time.Second}
		for !stop.Load() {
			start := time.Now()
			code, body, err := get(rc, p.base+"/-/ready")
			answers.add("ready", start, time.Since(start), code, err, readyBudget)
			if err == nil && code != http.StatusOK {
				readyBodies.LoadOrStore(fmt.Sprintf("%d %s", code, body), true)
			}
			if rss, err := processRSS(servePID); err != nil {
				answers.fail("RSS of serve: %v", err)
			} else {
				switch clock.phase(start) {
				case phaseBefore:
					rssBefore.Store(max(rssBefore.Load(), rss))
				case phaseAfter:
					rssAfter.Store(rss)
				}
				rssMax.Store(max(rssMax.Load(), rss))
			}
			time.Sleep(250*time.Millisecond - time.Since(start))
		}
	})
	pollers.Go(func() {
		// A query every second, each on its own: one that hangs does not
		// hold back the next; at most 4 at once.
		qc := &http.Client{Timeout: 2 * answerBudget}
		inFlight := make(chan struct{}, 4)
		var queries sync.WaitGroup
		defer queries.Wait()
		for n := 0; !stop.Load(); n++ {
			start := time.Now()
			select {
			case inFlight <- struct{}{}:
			default:
				time.Sleep(time.Second)
				continue
			}
			queries.Go(func() {
				defer func() { <-inFlight }()
				end := start.UnixMilli()
				kind, u := "query", p.base+"/api/v1/query?"+url.Values{
					"query": {"count(count_over_time(" + freezeMetric + "[10m]))"}, "time": {strconv.FormatInt(end/1000, 10)},
				}.Encode()
				if n%2 == 1 {
					kind, u = "query_range", p.base+"/api/v1/query_range?"+url.Values{
						"query": {"sum by (w) (rate(" + freezeMetric + "[1m]))"}, "start": {strconv.FormatInt(recent/1000, 10)},
						"end": {strconv.FormatInt(end/1000, 10)}, "step": {"15"},
					}.Encode()
				}
				code, body, err := get(qc, u)
				answers.add(kind, start, time.Since(start), code, err, answerBudget)
				if err == nil && code/100 == 4 {
					answers.fail("%s answered %d: %s", kind, code, body)
				}
			})
			time.Sleep(time.Second - time.Since(start))
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	stopAll := func() {
		stop.Store(true)
		wg.Wait()
		pollers.Wait()
	}
	t.Cleanup(stopAll)
	// Warm: 20 s of writes, every sender with 10 requests acknowledged.
	warm := time.Now()
	for (!allAcked(senders, 10) || time.Since(warm) < 20*time.Second) && time.Since(warm) < 2*time.Minute && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if !allAcked(senders, 10) {
		stopAll()
		t.Fatalf("the senders did not get 10 requests each acknowledged within 2 minutes: %s", strings.Join(answers.report(), "; "))
	}
	t.Logf("warm after %s; HBase's processes %v, serve's pid %d", time.Since(warm).Round(time.Millisecond), pids, servePID)

	freezeHBase(t, pids, clock)
	time.Sleep(freezeFor) // HBase stays stopped this long: the fault itself
	contAt := time.Now()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Errorf("SIGCONT %d: %v", pid, err)
		}
	}
	clock.continued.Store(contAt.UnixNano())
	t.Logf("HBase stopped for %s", contAt.Sub(time.Unix(0, clock.stopped.Load())).Round(time.Millisecond))

	// Back: every sender has a request started after SIGCONT
	// acknowledged, then 10 s more of writes.
	for ackedAfter.Load() < freezeSenders && time.Since(contAt) < 2*time.Minute && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	allBack := time.Since(contAt)
	time.Sleep(10 * time.Second) // writes go on after the recovery: the load, not a wait on anything
	stopAll()

	if f := firstAck.Load(); f == 0 {
		t.Errorf("no write was acknowledged within 2 minutes of SIGCONT")
	} else {
		t.Logf("after SIGCONT: first write acknowledged after %s, every sender's after %s (%d of %d senders)",
			time.Duration(f-contAt.UnixNano()).Round(time.Millisecond), allBack.Round(time.Millisecond), ackedAfter.Load(), freezeSenders)
	}
	if n := ackedAfter.Load(); n < freezeSenders {
		t.Errorf("only %d of %d senders had a write acknowledged within 2 minutes of SIGCONT", n, freezeSenders)
	}
	for _, line := range answers.report() {
		t.Log(line)
	}
	readyBodies.Range(func(k, _ any) bool {
		t.Logf("/-/ready answered: %s", k)
		return true
	})
	answers.mu.Lock()
	if k := answers.kinds["write/"+phaseFrozen]; k == nil || k.codes[http.StatusServiceUnavailable] == 0 {
		answers.problem("no write was answered 503 while HBase was stopped")
	}
	for _, b := range answers.bad {
		t.Error(b)
	}
	answers.mu.Unlock()
	t.Logf("serve's RSS: at most %d MiB before the freeze, at most %d MiB in all, %d MiB at the end",
		rssBefore.Load()>>20, rssMax.Load()>>20, rssAfter.Load()>>20)
	if rssMax.Load() > rssBefore.Load()+rssGrowth {
		t.Errorf("serve's RSS grew to %d MiB, over %d MiB more than its most before the freeze (%d MiB)",
			rssMax.Load()>>20, rssGrowth>>20, rssBefore.Load()>>20)
	}
	if strings.Contains(p.proc.Log(), "panic") {
		t.Errorf("serve panicked:\n%s", testproc.TailLines(p.proc.Log(), 40))
	}
	checkFreezeSamples(ctx, t, p.base, senders)
}

// hbasePIDs returns the processes of the standalone HBase of
// tools/scripts/hbase.sh: the one tools/scripts/hbase.sh status names and every
// process that carries its marker argument (-Dpromhbase.hbase.run=...).
func hbasePIDs(t *testing.T) []int {
	t.Helper()
	out, err := hbaseScript(t.Context(), t, "status")
	if err != nil {
		t.Fatalf("HBase's status: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(out, "running (pid %d,", &pid); err != nil {
		t.Fatalf("HBase's status %q: %v", out, err)
	}
	marker := ""
	for _, a := range cmdline(pid) {
		if strings.HasPrefix(a, "-Dpromhbase.hbase.run=") {
			marker = a
		}
	}
	if marker == "" {
		t.Fatalf("HBase's process %d carries no -Dpromhbase.hbase.run= argument", pid)
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{pid}
	for _, d := range dirs {
		n, err := strconv.Atoi(filepath.Base(d))
		if err == nil && n != pid && slices.Contains(cmdline(n), marker) {
			pids = append(pids, n)
		}
	}
	return pids
}

// cmdline returns the arguments of process pid; none when it is gone.
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// freezeHBase stops pids with SIGSTOP and records when in clock. They
// get SIGCONT when the test ends, whatever happens, and from a watchdog
// process of their own should the test's process die first (a panic, go
// test's timeout) and leave HBase stopped for the tests after it.
func freezeHBase(t *testing.T, pids []int, clock *freezeClock) {
	t.Helper()
	list := make([]string, len(pids))
	for i, pid := range pids {
		list[i] = strconv.Itoa(pid)
	}
	watchdog := exec.Command("sh", "-c", fmt.Sprintf("sleep %d; kill -CONT %s", int((freezeFor+time.Minute)/time.Second), strings.Join(list, " ")))
	watchdog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := watchdog.Start(); err != nil {
		t.Fatalf("start the SIGCONT watchdog: %v", err)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT %d: %v", pid, err)
			}
		}
		_ = syscall.Kill(-watchdog.Process.Pid, syscall.SIGKILL)
		_ = watchdog.Wait()
	})
	clock.stopped.Store(time.Now().UnixNano())
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %d: %v", pid, err)
		}
	}
}

// postWrite sends one remote-write 1.0 body and returns the answer's
// status and Retry-After.
func postWrite(client *http.Client, base string, body []byte) (code int, retryAfter string, err error) {
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, "", fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// get GETs u and returns the answer's status and the start of its body.
func get(client *http.Client, u string) (int, string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return 0, "", fmt.Errorf("get: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 300)])), nil
}

// processRSS returns the resident memory of process pid in bytes.
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// allAcked reports whether every sender had n requests acknowledged.
func allAcked(senders []*freezeSender, n int64) bool {
	for _, s := range senders {
		if s.acked.Load() < n {
			return false
		}
	}
	return true
}

// checkFreezeSamples reads every sender's series back through remote read
// and fails the test for an acknowledged sample missing or different, or
// a sample that no request sent.
func checkFreezeSamples(ctx context.Context, t *testing.T, base string, senders []*freezeSender) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Minute}
	acked, read, missing, wrong, extra := 0, 0, 0, 0, 0
	for _, s := range senders {
		start, end := s.recent-7*3600_000, time.Now().Add(time.Hour).UnixMilli()
		got, err := remoteRead(ctx, client, base, start, end, eq("__name__", freezeMetric), eq("w", strconv.Itoa(s.w)))
		if err != nil {
			t.Fatalf("read sender %d's series: %v", s.w, err)
		}
		have := map[int]map[int64]uint64{} // series -> timestamp -> value bits
		for _, rs := range got {
			i, err := strconv.Atoi(rs.labels.Get("i"))
			if err != nil || have[i] != nil {
				t.Fatalf("sender %d: series %s read back: not one of its series, or twice", s.w, rs.labels)
			}
			m := make(map[int64]uint64, len(rs.samples))
			for _, smp := range rs.samples {
				m[smp.t] = math.Float64bits(smp.v)
			}
			read += len(rs.samples)
			have[i] = m
		}
		for i := range freezeSeries {
			m := have[i]
			for n := range s.sent * freezePerReq {
				ts := s.base(i) + int64(n)*freezeStepMs
				bits, ok := m[ts]
				if want := freezeValue(s.w, i, n); ok && bits != math.Float64bits(want) {
					wrong++
					if wrong <= 10 {
						t.Errorf("sender %d series %d sample %d (at %d): read %v (%016x), want %v (%016x)", s.w, i, n, ts, math.Float64frombits(bits), bits, want, math.Float64bits(want))
					}
				}
				if n < int(s.acked.Load())*freezePerReq {
					acked++
					if !ok {
						missing++
					}
				}
				delete(m, ts)
			}
			extra += len(m)
			delete(have, i)
		}
		for i, m := range have {
			extra += len(m)
			t.Errorf("sender %d: series i=%d was never sent", s.w, i)
		}
	}
	t.Logf("%d samples acknowledged, %d read back: %d missing, %d different, %d never sent", acked, read, missing, wrong, extra)
	if missing+wrong+extra > 0 {
		t.Errorf("%d acknowledged samples missing, %d different, %d never sent", missing, wrong, extra)
	}
}
