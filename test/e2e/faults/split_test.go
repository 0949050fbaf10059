//go:build faults

package faults

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
)

// Shape of the split test's data: numWriters writers, each the only one to
// write its perWriter series, one sample per series per request, the
// samples of request r at t0 + r*splitStep.
const (
	numWriters = 2
	perWriter  = 100
	splitStep  = int64(1000)
)

// splitProgress is how far the writers are: requests started and requests
// acknowledged, per writer. Requests of one writer run one after another,
// so the acknowledged ones are exactly requests 0..acked-1.
type splitProgress struct {
	sent, acked [numWriters]atomic.Int64
}

func (p *splitProgress) snapshot(of *[numWriters]atomic.Int64) [numWriters]int64 {
	var out [numWriters]int64
	for i := range of {
		out[i] = of[i].Load()
	}
	return out
}

func (p *splitProgress) minAcked() int64 {
	n := int64(math.MaxInt64)
	for i := range p.acked {
		n = min(n, p.acked[i].Load())
	}
	return n
}

// splitQuery is a query the readers run, with the series it selects.
type splitQuery struct {
	name    string
	ms      []*labels.Matcher
	selects func(s int) bool
}

// TestRegionSplitDuringWritesAndReads splits the data table's region twice
// (tools/scripts/hbase.sh split: once at the split point HBase picks, once at a
// row the test picks) while writers stream remote-write requests and
// readers run remote-read queries. No read may return wrong data: every
// sample acknowledged before a read started is in its answer, every sample
// in it was sent, with its exact value, in order, once. Afterwards
// everything written reads back exactly once and the table has more
// regions.
func TestRegionSplitDuringWritesAndReads(t *testing.T) {
	const (
		numReaders = 2
		pace       = 50 * time.Millisecond // at most one request per writer per pace
		warmup     = 100                   // requests per writer before the first split
		between    = 60                    // requests per writer after each split
	)
	srv := newServer(t, "split")
	data := srv.tables.Data
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	var (
		prog      splitProgress
		splitting atomic.Bool // a split runs
		writers   [numWriters]*writer
		wg        sync.WaitGroup
		stop      = make(chan struct{})
		stopOnce  = sync.OnceFunc(func() { close(stop) })
		failures  = make(chan error, numWriters+numReaders)
		// acknowledged while a split ran
		writesDuringSplit atomic.Int64
	)
	defer func() {
		stopOnce()
		if t.Failed() {
			cancel()
		}
		wg.Wait()
	}()
	for wi := range numWriters {
		writers[wi] = newWriter(srv.url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, perWriter)}
				for s := wi * perWriter; s < (wi+1)*perWriter; s++ {
					req.Timeseries = append(req.Timeseries, series([]prompb.Sample{{Timestamp: t0 + int64(r)*splitStep, Value: valueOf(s, r)}},
						"__name__", "fault_split", "series", fmt.Sprintf("s%03d", s), "writer", strconv.Itoa(wi)))
				}
				prog.sent[wi].Add(1)
				if err := writers[wi].send(ctx, req); err != nil {
					failures <- fmt.Errorf("writer %d, request %d: %w", wi, r, err)
					return
				}
				prog.acked[wi].Add(1)
				if splitting.Load() {
					writesDuringSplit.Add(1)
				}
				if d := pace - time.Since(start); d > 0 {
					time.Sleep(d) // pacing the load at its rate: not a wait on anything
				}
			}
		}()
	}

	queries := []splitQuery{
		{"all", []*labels.Matcher{eq("__name__", "fault_split")}, func(int) bool { return true }},
		{"one writer", []*labels.Matcher{eq("__name__", "fault_split"), eq("writer", "1")}, func(s int) bool { return s/perWriter == 1 }},
		{"series regex", []*labels.Matcher{eq("__name__", "fault_split"), re("series", "s0[0-4][0-9]|s1[5-9][0-9]")},
			func(s int) bool { return s < 50 || s >= 150 }},
		{"one series", []*labels.Matcher{eq("__name__", "fault_split"), eq("series", "s142")}, func(s int) bool { return s == 142 }},
	}
	var (
		readsOK, readsFailed, readsDuringSplit, samplesChecked atomic.Int64
		problemsMu                                             sync.Mutex
		problems                                               []string
	)
	for ri := range numReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 2 * time.Minute}
			for i := ri; ; i += numReaders {
				select {
				case <-stop:
					return
				default:
				}
				q := queries[i%len(queries)]
				during := splitting.Load()
				acked := prog.snapshot(&prog.acked)
				got, err := remoteRead(ctx, client, srv.url, t0, t0+1e9, q.ms...)
				sent := prog.snapshot(&prog.sent)
				during = during || splitting.Load()
				if err != nil {
					if retryable(err) && ctx.Err() == nil {
						readsFailed.Add(1)
						continue
					}
					if ctx.Err() == nil {
						failures <- fmt.Errorf("reader %d, query %s: %w", ri, q.name, err)
					}
					return
				}
				readsOK.Add(1)
				if during {
					readsDuringSplit.Add(1)
				}
				ps, n := checkConsistent(got, q.selects, acked, sent)
				samplesChecked.Add(int64(n))
				if len(ps) > 0 {
					problemsMu.Lock()
					for _, p := range ps {
						problems = append(problems, fmt.Sprintf("query %s (acknowledged %v, sent %v): %s", q.name, acked, sent, p))
					}
					problemsMu.Unlock()
				}
			}
		}()
	}

	// waitAcked waits until every writer has n requests acknowledged.
	waitAcked := func(n int64) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for prog.minAcked() < n {
			select {
			case err := <-failures:
				t.Fatal(err)
			case <-ctx.Done():
				t.Fatalf("waiting for %d acknowledged requests per writer: %v", n, ctx.Err())
			case <-tick.C:
			}
		}
	}
	split := func(args ...string) int {
		t.Helper()
		splitting.Store(true)
		defer splitting.Store(false)
		out, err := hbaseScript(ctx, t, append([]string{"split", data}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("split printed %q, want a region count: %v", out, err)
		}
		return n
	}

	waitAcked(warmup)
	regionsBefore, err := regionCount(ctx, t, data)
	if err != nil {
		t.Fatal(err)
	}
	// First split: HBase picks the split point (it flushes the region and
	// takes the middle key of its largest store file).
	regionsFirst := split()
	waitAcked(prog.minAcked() + between)
	// Second split: at a row a quarter into the table, in whichever region
	// holds it.
	rows, err := tableRows(ctx, srv.st, data)
	if err != nil {
		t.Fatal(err)
	}
	at := rows[len(rows)/4]
	regionsSecond := split(fmt.Sprintf("%x", at))
	waitAcked(prog.minAcked() + between)
	stopOnce()
	wg.Wait()
	select {
	case err := <-failures:
		t.Fatal(err)
	default:
	}
	regionsAfter, err := regionCount(ctx, t, data)
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("regions of %s: %d before, %d after the first split, %d after the second (at row %x), %d at the end",
		data, regionsBefore, regionsFirst, regionsSecond, at, regionsAfter)
	for wi, w := range writers {
		t.Logf("writer %d: %s", wi, &w.stats)
	}
	t.Logf("writes acknowledged while a split ran: %d", writesDuringSplit.Load())
	t.Logf("reads: %d answered (%d of them while a split ran, %d samples checked), %d failed with 5xx or no answer and were not checked",
		readsOK.Load(), readsDuringSplit.Load(), samplesChecked.Load(), readsFailed.Load())
	if regionsAfter < regionsBefore+2 {
		t.Errorf("%s has %d regions after two splits, %d before", data, regionsAfter, regionsBefore)
	}
	if readsDuringSplit.Load() == 0 {
		t.Errorf("no read was answered while a split ran")
	}
	for _, p := range problems[:min(len(problems), 30)] {
		t.Error(p)
	}
	if len(problems) > 30 {
		t.Errorf("and %d more problems", len(problems)-30)
	}

	acked := prog.snapshot(&prog.acked)
	want := expectation{}
	for s := range numWriters * perWriter {
		wi := s / perWriter
		lbls := labels.FromStrings("__name__", "fault_split", "series", fmt.Sprintf("s%03d", s), "writer", strconv.Itoa(wi))
		smp := make([]sample, acked[wi])
		for r := range smp {
			smp[r] = sample{t0 + int64(r)*splitStep, valueOf(s, r)}
		}
		want[lbls.String()] = smp
	}
	checkExact(t, "fault_split", srv.url, want, t0, t0+1e9, eq("__name__", "fault_split"))
}

// checkConsistent checks one answer read while writers ran: acked and sent
// are the requests per writer acknowledged before the read started and
// started before it ended. The answer must hold exactly the series selects
// picks among those with an acknowledged sample, each once, sorted by
// labels; each with every acknowledged sample, and otherwise only samples
// of requests that were sent, in order, once, with their exact values.
func checkConsistent(got []readSeries, selects func(int) bool, acked, sent [numWriters]int64) (problems []string, samples int) {
	seen := map[int]bool{}
	for i, rs := range got {
		if i > 0 && labels.Compare(got[i-1].labels, rs.labels) >= 0 {
			problems = append(problems, fmt.Sprintf("series %s after %s: not sorted by labels", rs.labels, got[i-1].labels))
		}
		var s int
		if _, err := fmt.Sscanf(rs.labels.Get("series"), "s%03d", &s); err != nil || s < 0 || s >= numWriters*perWriter || !selects(s) {
			problems = append(problems, fmt.Sprintf("unexpected series %s", rs.labels))
			continue
		}
		if seen[s] {
			problems = append(problems, fmt.Sprintf("series %s returned twice", rs.labels))
			continue
		}
		seen[s] = true
		w := s / perWriter
		if want := labels.FromStrings("__name__", "fault_split", "series", fmt.Sprintf("s%03d", s), "writer", strconv.Itoa(w)); !labels.Equal(rs.labels, want) {
			problems = append(problems, fmt.Sprintf("series %s, want labels %s", rs.labels, want))
		}
		samples += len(rs.samples)
		for _, p := range streamProblems(rs.samples, splitStep, acked[w], sent[w], func(r int64) float64 { return valueOf(s, int(r)) }) {
			problems = append(problems, fmt.Sprintf("series %s: %s", rs.labels, p))
		}
	}
	for s := range numWriters * perWriter {
		if selects(s) && acked[s/perWriter] > 0 && !seen[s] {
			problems = append(problems, fmt.Sprintf("series s%03d (acknowledged before the read started) is missing", s))
		}
	}
	return problems, samples
}
