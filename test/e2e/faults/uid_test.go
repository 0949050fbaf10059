//go:build faults

package faults

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// Shape of the UID race: uidRounds rounds, each with uidSeries series
// whose metric names, tag names and tag values are all new, sent to both
// processes at once in requests of uidPerRequest series.
const (
	uidRounds     = 3
	uidSeries     = 3000
	uidPerRequest = 500
	uidSenders    = 3 // concurrent requests per process, like Prometheus's shards
	uidMetrics    = 10
	uidTagValues  = 300
)

// uidRaceSeries returns the labels of series i of a round: 10 metric names,
// 4 tag names and 300 tag values, all new to the round; the values are
// shared among the tag names so that many series of one request need the
// same new UIDs at once.
func uidRaceSeries(round, i int) []string {
	v := func(n int) string { return fmt.Sprintf("r%dv%d", round, n) }
	kv := []string{
		"__name__", fmt.Sprintf("uidrace_r%d_m%d", round, i%uidMetrics),
		fmt.Sprintf("r%d_a", round), v(i % 7),
		fmt.Sprintf("r%d_b", round), v(i % uidTagValues),
		fmt.Sprintf("r%d_c", round), v(i / uidTagValues),
	}
	if i%2 == 0 {
		kv = append(kv, fmt.Sprintf("r%d_d", round), v(i%3))
	}
	return kv
}

// uidSample returns the sample process p writes for series i of a round:
// each process writes its own timestamp, so each series ends up with one
// sample from each, in one row when both used the same UIDs.
func uidSample(p, round, i int) prompb.Sample {
	return prompb.Sample{Timestamp: t0 + int64(p+1)*10_000 + int64(round), Value: valueOf(i, 2*round+p)}
}

// TestConcurrentUIDCreation runs two promhbase processes on one pair of
// tables and sends both, at the same time, series whose every name is new.
// Both must end up with the same UID for each name: both answer every
// query identically and as written, every data row uses only the UIDs the
// forward mappings hold, and the UID table passes UIDFsck (orphan reverse
// mappings from lost races are fine).
func TestConcurrentUIDCreation(t *testing.T) {
	requireHBase(t)
	st := newStore(t)
	// Every table its own: the HBase may hold no default table (the fault
	// tests have one of their own under make test).
	tb := allTables(t, st, "faults", "uid", 0)
	bin := testproc.BuildBinary(t, filepath.Join(repoRoot(t), "cmd", "promhbase"))
	own := append(ownTableFlags(tb), "--no-rollup.enabled") // no rollup tables: not the subject
	procs := []*promhbaseProcess{startPromhbase(t, bin, "a", tb, own...), startPromhbase(t, bin, "b", tb, own...)}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	want := map[string]*modelSeries{}
	for round := range uidRounds {
		var reqs [2][]*prompb.WriteRequest
		for p := range procs {
			for start := 0; start < uidSeries; start += uidPerRequest {
				req := &prompb.WriteRequest{}
				for i := start; i < min(start+uidPerRequest, uidSeries); i++ {
					ts := series([]prompb.Sample{uidSample(p, round, i)}, uidRaceSeries(round, i)...)
					req.Timeseries = append(req.Timeseries, ts)
					lbls := labelsOf(ts)
					m := want[lbls.String()]
					if m == nil {
						m = &modelSeries{labels: lbls}
						want[lbls.String()] = m
					}
					m.samples = append(m.samples, sample{ts.Samples[0].Timestamp, ts.Samples[0].Value})
				}
				reqs[p] = append(reqs[p], req)
			}
		}
		start := time.Now()
		errs := sendAll(ctx, procs, reqs)
		for _, err := range errs {
			t.Error(err)
		}
		if len(errs) > 0 {
			t.FailNow()
		}
		t.Logf("round %d: %d series with new names written through both processes at once in %s",
			round, uidSeries, time.Since(start).Round(time.Millisecond))
	}
	for _, p := range procs {
		t.Logf("writer to %s: %s", p.name, &p.writer.stats)
	}

	t.Run("same answers", func(t *testing.T) {
		client := &http.Client{Timeout: 2 * time.Minute}
		queries := [][]*labels.Matcher{}
		for round := range uidRounds {
			for m := range uidMetrics {
				queries = append(queries, []*labels.Matcher{eq("__name__", fmt.Sprintf("uidrace_r%d_m%d", round, m))})
			}
			queries = append(queries,
				[]*labels.Matcher{re("__name__", fmt.Sprintf("uidrace_r%d_m.*", round)), eq(fmt.Sprintf("r%d_b", round), fmt.Sprintf("r%dv17", round))},
				[]*labels.Matcher{eq("__name__", fmt.Sprintf("uidrace_r%d_m3", round)), re(fmt.Sprintf("r%d_a", round), fmt.Sprintf("r%dv1|r%dv2", round, round)), eq(fmt.Sprintf("r%d_d", round), "")},
				[]*labels.Matcher{re("__name__", "uidrace_.*"), eq(fmt.Sprintf("r%d_c", round), fmt.Sprintf("r%dv9", round)), eq(fmt.Sprintf("r%d_d", round), fmt.Sprintf("r%dv2", round))},
			)
		}
		seriesRead := 0
		for _, ms := range queries {
			exp := filterModel(want, ms)
			var answers [][]readSeries
			for _, p := range procs {
				got, err := remoteRead(ctx, client, p.base, t0, t0+3600_000-1, ms...)
				if err != nil {
					t.Fatalf("%s: query %v: %v", p.name, ms, err)
				}
				problems, _ := compareExact(got, exp, 10)
				for _, pr := range problems {
					t.Errorf("%s: query %v: %s", p.name, ms, pr)
				}
				answers = append(answers, got)
				seriesRead += len(got)
			}
			if d := diffAnswers(answers[0], answers[1]); d != "" {
				t.Errorf("query %v: %s and %s answer differently: %s", ms, procs[0].name, procs[1].name, d)
			}
		}
		t.Logf("%d queries through each process: identical answers, %d series in all, each as written", len(queries), seriesRead)
	})

	t.Run("data rows use the forward uids", func(t *testing.T) {
		forward, err := forwardUIDs(ctx, st, tb.UID)
		if err != nil {
			t.Fatal(err)
		}
		layout := mapping.DefaultLayout()
		sc := st.Scan(ctx, store.ScanRequest{Table: tb.Data})
		defer sc.Close()
		rows, bad := 0, 0
		for sc.Next() {
			r := sc.Row()
			rows++
			problem := rowProblem(layout, forward, r)
			if problem != "" {
				bad++
				if bad <= 10 {
					t.Errorf("row %x: %s", r.Key, problem)
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if want := uidRounds * uidSeries; rows != want {
			t.Errorf("%d data rows, want %d (one per series: both processes wrote each series into the same row)", rows, want)
		}
		t.Logf("%d data rows, %d using a uid that no forward mapping holds or not holding both processes' samples", rows, bad)
	})

	t.Run("uid fsck", func(t *testing.T) {
		rep, err := uid.UIDFsck(ctx, st, tb.UID, mapping.DefaultLayout())
		if err != nil {
			t.Fatal(err)
		}
		logFsck(t, rep)
		if want := [3]int{uidRounds * uidMetrics, uidRounds * 4, uidRounds * uidTagValues}; rep.Forward != want {
			t.Errorf("forward mappings (metrics, tagk, tagv) = %v, want %v", rep.Forward, want)
		}
		// Each name is assigned by the one process that won its forward
		// check-and-put; a process that counts a win it did not have
		// would have used a uid no forward mapping holds.
		var assigned [3]float64
		for _, p := range procs {
			byKind, err := uidsAssigned(ctx, p.base)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s assigned: metrics %v, tagk %v, tagv %v", p.name, byKind["metrics"], byKind["tagk"], byKind["tagv"])
			for k, kind := range []string{"metrics", "tagk", "tagv"} {
				assigned[k] += byKind[kind]
			}
		}
		for k := range assigned {
			if assigned[k] > float64(rep.Forward[k]) {
				t.Errorf("%s: the processes counted %v assignments, but %d forward mappings exist", uid.Kind(k), assigned[k], rep.Forward[k])
			}
		}
		t.Logf("lost races (orphans): %d; assignments counted by both processes: %v of %v forward mappings", len(rep.Orphans), assigned, rep.Forward)
	})
}

// modelSeries is a series as written.
type modelSeries struct {
	labels  labels.Labels
	samples []sample
}

// filterModel returns what a query with matchers ms selects from the model.
func filterModel(model map[string]*modelSeries, ms []*labels.Matcher) expectation {
	out := expectation{}
	for key, s := range model {
		ok := true
		for _, m := range ms {
			if !m.Matches(s.labels.Get(m.Name)) {
				ok = false
				break
			}
		}
		if ok {
			out[key] = s.samples
		}
	}
	return out
}

// diffAnswers describes the first difference between two answers, or
// returns "" when they are the same, values compared bit for bit.
func diffAnswers(a, b []readSeries) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d series and %d series", len(a), len(b))
	}
	for i := range a {
		if !labels.Equal(a[i].labels, b[i].labels) {
			return fmt.Sprintf("series %d is %s and %s", i, a[i].labels, b[i].labels)
		}
		if len(a[i].samples) != len(b[i].samples) {
			return fmt.Sprintf("series %s has %d and %d samples", a[i].labels, len(a[i].samples), len(b[i].samples))
		}
		for j := range a[i].samples {
			x, y := a[i].samples[j], b[i].samples[j]
			if x.t != y.t || math.Float64bits(x.v) != math.Float64bits(y.v) {
				return fmt.Sprintf("series %s sample %d is (%d, %v) and (%d, %v)", a[i].labels, j, x.t, x.v, y.t, y.v)
			}
		}
	}
	return ""
}

// forwardUIDs returns the UIDs that the forward mappings of the UID table
// hold, by kind.
func forwardUIDs(ctx context.Context, st store.Store, table string) ([3]map[string]string, error) {
	var out [3]map[string]string // uid -> name
	for k := range out {
		out[k] = map[string]string{}
	}
	sc := st.Scan(ctx, store.ScanRequest{Table: table, Start: []byte{0x01}, Family: "id"})
	defer sc.Close()
	for sc.Next() {
		r := sc.Row()
		for _, c := range r.Cells {
			kind, err := uid.ParseKind(string(c.Qualifier))
			if err != nil {
				continue
			}
			if other, dup := out[kind][string(c.Value)]; dup {
				return out, fmt.Errorf("%s uid %x is the forward mapping of %q and %q", kind, c.Value, other, r.Key)
			}
			out[kind][string(c.Value)] = string(r.Key)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("scan %s: %w", table, err)
	}
	return out, nil
}

// rowProblem checks that a data row uses only UIDs some forward mapping
// holds and carries one sample from each process.
func rowProblem(layout mapping.Layout, forward [3]map[string]string, r store.Row) string {
	_, metric, _, tags, err := layout.ParseRowKey(r.Key)
	if err != nil {
		return err.Error()
	}
	if _, ok := forward[uid.KindMetric][string(metric)]; !ok {
		return fmt.Sprintf("metric uid %x is no forward mapping's", metric)
	}
	pair := layout.PairLen()
	for i := 0; i+pair <= len(tags); i += pair {
		k, v := tags[i:i+layout.TagKWidth], tags[i+layout.TagKWidth:i+pair]
		if _, ok := forward[uid.KindTagK][string(k)]; !ok {
			return fmt.Sprintf("tagk uid %x is no forward mapping's", k)
		}
		if _, ok := forward[uid.KindTagV][string(v)]; !ok {
			return fmt.Sprintf("tagv uid %x is no forward mapping's", v)
		}
	}
	if len(r.Cells) != 2 {
		return fmt.Sprintf("%d cells, want 2 (one sample from each process)", len(r.Cells))
	}
	return ""
}

// sendAll sends reqs[p] to procs[p], all processes at once, each with
// uidSenders requests in flight, and returns the errors.
func sendAll(ctx context.Context, procs []*promhbaseProcess, reqs [2][]*prompb.WriteRequest) []error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		start = make(chan struct{})
	)
	for p, proc := range procs {
		next := make(chan *prompb.WriteRequest)
		go func() {
			defer close(next)
			for _, r := range reqs[p] {
				select {
				case next <- r:
				case <-ctx.Done():
					return
				}
			}
		}()
		for range uidSenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for r := range next {
					if err := proc.writer.send(ctx, r); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s: %w", proc.name, err))
						mu.Unlock()
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	return errs
}

// uidsAssigned reads promhbase_uid_assigned_total by kind from a process's
// /metrics.
func uidsAssigned(ctx context.Context, base string) (map[string]float64, error) {
	page, err := testproc.FetchMetrics(ctx, base)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range page["promhbase_uid_assigned_total"] {
		if kind, ok := s.Labels["kind"]; ok {
			out[kind] += s.Value
		}
	}
	return out, nil
}

// promhbaseProcess is a `promhbase serve` process started by the test.
type promhbaseProcess struct {
	name   string
	base   string // http://127.0.0.1:port
	proc   *testproc.Process
	writer *writer
	// killed is set by a test that killed the process on purpose.
	killed atomic.Bool
}

// startPromhbase starts `promhbase serve` on the HBase backend and the
// tables tb (with extra flags), waits until /-/ready answers 200, and stops the process when
// the test ends (TERM, then KILL after 15 s); on failure it prints the
// tail of its log.
func startPromhbase(t *testing.T, bin, name string, tb testbackend.Tables, extra ...string) *promhbaseProcess {
	t.Helper()
	proc, base := testproc.StartServe(t, bin, name, 30, append([]string{
		"--storage.backend=hbase",
		"--hbase.zookeeper.quorum=" + testbackend.ZKQuorum(),
		"--hbase.table.data=" + tb.Data,
		"--hbase.table.uid=" + tb.UID,
	}, extra...)...)
	p := &promhbaseProcess{name: name, base: base, proc: proc}
	p.writer = newWriter(p.base)
	return p
}

// ownTableFlags names tb's exemplar, meta and series index tables, so
// that a promhbase started with them uses no table of another test.
func ownTableFlags(tb testbackend.Tables) []string {
	return []string{
		"--hbase.table.exemplar=" + tb.Exemplar,
		"--hbase.table.meta=" + tb.Meta,
		"--hbase.table.index=" + tb.Index,
	}
}

// startFull starts `promhbase serve` with all of tb's tables (allTables)
// and their salting (saltBuckets one-byte buckets; none when 0): it
// indexes the series, compacts the rows it writes and builds rollups in
// the background, as every replica does.
func startFull(t *testing.T, bin, name string, tb testbackend.Tables, saltBuckets int, extra ...string) *promhbaseProcess {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "rollups.json")
	if err := os.WriteFile(cfg, tb.RollupConfig().AppendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := append(ownTableFlags(tb), "--rollup.config-file="+cfg)
	if saltBuckets > 0 {
		flags = append(flags, "--storage.salt.width=1", "--storage.salt.buckets="+strconv.Itoa(saltBuckets))
	}
	return startPromhbase(t, bin, name, tb, append(flags, extra...)...)
}
