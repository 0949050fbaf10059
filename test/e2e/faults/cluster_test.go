//go:build faults && cluster

package faults

// The cluster tests run against the cluster of tools/scripts/hbase.sh
// cluster-up (ZooKeeper, a master and three region servers, each its own
// JVM) and kill its processes with SIGKILL:
//
//	tools/scripts/hbase.sh cluster-up
//	PROMHBASE_HBASE_ZK=127.0.0.1:2182 go test -tags 'faults cluster' -run Cluster ./test/e2e/faults
//
// make test-cluster does both. Under CI=true a missing cluster fails them.

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// writerPause is the pause of a cluster test writer between requests.
const writerPause = 200 * time.Millisecond

// clusterRecovery is how long the writers go on after a kill: well over
// what HBase needs to reassign the regions of a dead region server with
// tools/scripts/hbase.sh's 10 s ZooKeeper session timeout.
const clusterRecovery = 75 * time.Second

// clusterSalt is the salting of the cluster tests' tables: the data table
// is pre-split at each bucket, so that every region server holds some.
const clusterSaltBuckets = 6

// clusterScript runs tools/scripts/hbase.sh with a cluster command against the
// cluster whose ZooKeeper the tests use.
func clusterScript(ctx context.Context, t testing.TB, args ...string) (string, error) {
	t.Helper()
	return runHBaseScript(ctx, t, "HBASE_CLUSTER_ZK_PORT", args...)
}

// requireCluster makes sure every process of the cluster runs.
func requireCluster(t *testing.T) {
	t.Helper()
	if _, err := clusterScript(t.Context(), t, "cluster-status"); err != nil {
		testbackend.HBaseMissing(t, err)
	}
}

// clusterTables creates every table of a replica, the data table pre-split
// at the salt buckets, and drops them when the test ends.
func clusterTables(t *testing.T, st *hbase.Store, name string) testbackend.Tables {
	t.Helper()
	return allTables(t, st, "cluster", name, clusterSaltBuckets)
}

// startReplica starts `promhbase serve` on the cluster with all the
// tables and their salting (startFull).
func startReplica(t *testing.T, bin, name string, tb testbackend.Tables) *promhbaseProcess {
	t.Helper()
	return startFull(t, bin, name, tb, clusterSaltBuckets)
}

// ingest is what the cluster tests' writers acknowledged and saw.
type ingest struct {
	// base is the hour (Unix ms) the writers write into: round r's
	// samples are at base + r s.
	base  int64
	mu    sync.Mutex
	model map[string]*modelSeries
	// acks are the times of each writer's acknowledged attempts, fails
	// the times of its failed ones (5xx, 429 or no answer).
	acks, fails [][]time.Time
	requests    atomic.Int64
	samples     atomic.Int64
	writers     []*writer
}

// runWriters sends new series and new samples of the series before
// through the replicas, writers goroutines per replica, until stop is
// closed (each finishes the request it is sending: every request it
// built is acknowledged, so the model holds exactly what was written).
func runWriters(ctx context.Context, replicas []*promhbaseProcess, perReplica int, base int64, stop <-chan struct{}) (*ingest, <-chan error) {
	n := len(replicas) * perReplica
	in := &ingest{base: base, model: map[string]*modelSeries{}, acks: make([][]time.Time, n), fails: make([][]time.Time, n)}
	for w := range n {
		wr := newWriter(replicas[w%len(replicas)].base)
		for k := 1; k < len(replicas); k++ {
			wr.others = append(wr.others, newWriter(replicas[(w+k)%len(replicas)].base).url)
		}
		in.writers = append(in.writers, wr)
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := range n {
		rep := replicas[w%len(replicas)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr := in.writers[w]
			wr.onAttempt = func(ok bool) {
				now := time.Now()
				in.mu.Lock()
				defer in.mu.Unlock()
				if ok {
					in.acks[w] = append(in.acks[w], now)
				} else {
					in.fails[w] = append(in.fails[w], now)
				}
			}
			for round := 0; ; round++ {
				// A request every 200 ms or so a writer, as a Prometheus
				// shard sends them under a steady load.
				select {
				case <-stop:
					errs <- nil
					return
				case <-time.After(writerPause):
				}
				// 50 series a request: 25 new ones, and the 25 of the
				// round before again, a sample later.
				req := &prompb.WriteRequest{}
				for i := range 50 {
					r, k := round, i
					if i >= 25 {
						r, k = round-1, i-25
					}
					if r < 0 {
						continue
					}
					ts := series([]prompb.Sample{{Timestamp: base + int64(round)*1000, Value: float64(round*100 + i)}},
						"__name__", fmt.Sprintf("cluster_w%d", w), "round", strconv.Itoa(r), "k", strconv.Itoa(k))
					req.Timeseries = append(req.Timeseries, ts)
				}
				if err := wr.send(ctx, req); err != nil {
					errs <- fmt.Errorf("writer %d to %s, round %d: %w", w, rep.name, round, err)
					return
				}
				in.requests.Add(1)
				in.mu.Lock()
				for _, ts := range req.Timeseries {
					lbls := labelsOf(ts)
					m := in.model[lbls.String()]
					if m == nil {
						m = &modelSeries{labels: lbls}
						in.model[lbls.String()] = m
					}
					m.samples = append(m.samples, sample{ts.Samples[0].Timestamp, ts.Samples[0].Value})
					in.samples.Add(1)
				}
				in.mu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	return in, errs
}

// clusterScenario runs two promhbase replicas on fresh tables with
// Prometheus-like writers, calls fault once the writers have run a while
// (it returns what to log of it, and heal, nil or what to do once the
// writers stopped, before anything is read), lets the writers go on for
// recovery, then checks that every acknowledged sample reads back through
// both replicas (remote read and the query API, raw and from the rollups
// the replicas built), that the UID table is consistent, and that
// OpenTSDB's fsck and uid fsck find nothing wrong. It logs each writer's
// longest wait for an acknowledgement after the fault began, and fails
// when a writer had none in the last 20 s.
//
// The writers write into the hour that began two hours ago: an hour that
// has ended, so that both replicas compact its rows and build its rollups
// (and build them again, one at a time through the build lease, as late
// writes keep coming) while the writes go on.
func clusterScenario(t *testing.T, name string, recovery time.Duration, fault func(ctx context.Context, replicas []*promhbaseProcess, tb testbackend.Tables, in *ingest) (what string, heal func())) {
	t.Helper()
	requireCluster(t)
	st := newStore(t)
	tb := clusterTables(t, st, name)
	out, err := clusterScript(t.Context(), t, "cluster-servers")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("region servers (live count, then each with its regions):\n%s", out)
	bin := testproc.BuildBinary(t, filepath.Join(repoRoot(t), "cmd", "promhbase"))
	replicas := []*promhbaseProcess{startReplica(t, bin, "a", tb), startReplica(t, bin, "b", tb)}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	base := (time.Now().Unix()/3600 - 2) * 3600 * 1000
	stop := make(chan struct{})
	in, errs := runWriters(ctx, replicas, 2, base, stop)
	// The load is the subject: the writers run for a while before the
	// fault, and for recovery after it.
	time.Sleep(8 * time.Second)
	before := in.samples.Load()
	began := time.Now()
	what, heal := fault(ctx, replicas, tb, in)
	time.Sleep(recovery)
	close(stop)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	end := time.Now()
	if heal != nil {
		heal()
	}
	// Each writer's longest wait between two acknowledgements from the
	// fault on, and when the longest of them ended: when writes resumed.
	in.mu.Lock()
	var stall time.Duration
	var resumedAt time.Time
	fails := 0
	for w, acks := range in.acks {
		prev := began
		for _, a := range acks {
			if a.Before(began) {
				continue
			}
			if gap := a.Sub(prev); gap > stall {
				stall, resumedAt = gap, a
			}
			prev = a
		}
		if end.Sub(prev) > 20*time.Second {
			t.Errorf("writer %d: no acknowledgement in the last %s of the run (the last %s after the fault)", w, end.Sub(prev).Round(time.Second), prev.Sub(began).Round(time.Millisecond))
		}
		for _, f := range in.fails[w] {
			if !f.Before(began) {
				fails++
			}
		}
	}
	in.mu.Unlock()
	t.Logf("%s: the longest wait of a writer for an acknowledgement was %s, ending %s after the fault began; %d failed attempts after it; %d requests, %d samples acknowledged in all (%d before the fault)",
		what, stall.Round(time.Millisecond), resumedAt.Sub(began).Round(time.Millisecond), fails, in.requests.Load(), in.samples.Load(), before)
	for w, wr := range in.writers {
		t.Logf("writer %d to %s: %s", w, replicas[w%len(replicas)].name, &wr.stats)
	}
	for _, p := range replicas {
		if p.killed.Load() {
			continue
		}
		retries, _ := metricValue(ctx, p.base, "promhbase_hbase_retries_total")
		failures, _ := metricValue(ctx, p.base, "promhbase_hbase_failures_total")
		t.Logf("%s: %v HBase operations retried, %v failed after their retries", p.name, retries, failures)
	}
	live := func() []*promhbaseProcess {
		var out []*promhbaseProcess
		for _, p := range replicas {
			if !p.killed.Load() {
				out = append(out, p)
			}
		}
		return out
	}()
	// What the model holds of metric in (from, to]: its sample count and
	// largest value, as the query API prints them.
	inRange := func(metric string, from, to int64) (count, maxV string) {
		n, best := 0, math.Inf(-1)
		for _, m := range filterModel(in.model, []*labels.Matcher{eq("__name__", metric)}) {
			for _, s := range m {
				if s.t > from && s.t <= to {
					n++
					best = max(best, s.v)
				}
			}
		}
		return strconv.Itoa(n), strconv.FormatFloat(best, 'f', -1, 64)
	}
	wantCount := func(metric string) string {
		n, _ := inRange(metric, math.MinInt64, math.MaxInt64)
		return n
	}

	t.Run("every acknowledged sample through every live replica", func(t *testing.T) {
		client := &http.Client{Timeout: 2 * time.Minute}
		for w := range len(in.acks) {
			ms := []*labels.Matcher{eq("__name__", fmt.Sprintf("cluster_w%d", w))}
			exp := filterModel(in.model, ms)
			for _, p := range live {
				got, err := remoteRead(ctx, client, p.base, base, base+24*3600_000, ms...)
				if err != nil {
					t.Fatalf("%s: %v: %v", p.name, ms, err)
				}
				problems, _ := compareExact(got, exp, 10)
				for _, pr := range problems {
					t.Errorf("%s: %v: %s", p.name, ms, pr)
				}
			}
		}
	})
	t.Run("sample counts through the query API of every live replica", func(t *testing.T) {
		client := &http.Client{Timeout: 2 * time.Minute}
		for w := range len(in.acks) {
			metric := fmt.Sprintf("cluster_w%d", w)
			for _, p := range live {
				got, res, err := instantQuery(ctx, client, p.base, fmt.Sprintf("sum(count_over_time(%s[2h]))", metric), base+3600_000, "raw")
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				if got != wantCount(metric) || res != "raw" {
					t.Errorf("%s: %s has %s samples through the query API (resolution %q), %s acknowledged", p.name, metric, got, res, wantCount(metric))
				}
			}
		}
	})
	t.Run("rollups built by the replicas", func(t *testing.T) {
		// Each replica builds again the hours it took late writes into
		// at its next check (every 30 s): the answers from the 5m
		// rollups settle on the raw ones within a check or two, and
		// stay there.
		client := &http.Client{Timeout: 2 * time.Minute}
		start := time.Now()
		deadline := start.Add(3 * time.Minute)
		for _, p := range live {
			for w := range len(in.acks) {
				metric := fmt.Sprintf("cluster_w%d", w)
				// The hour's windows: (base, base+1h], so not the
				// first round's samples, at base itself.
				count, maxV := inRange(metric, base, base+3600_000)
				for _, q := range []struct{ expr, want string }{
					{fmt.Sprintf("sum(count_over_time(%s[1h]))", metric), count},
					{fmt.Sprintf("max(max_over_time(%s[1h]))", metric), maxV},
				} {
					poll.Until(t, time.Until(deadline), 2*time.Second, p.name+": "+q.expr+" from the rollups as from the raw samples", func() (bool, string) {
						got, res, err := instantQuery(ctx, client, p.base, q.expr, base+3600_000, "5m")
						return err == nil && got == q.want && res == "5m", fmt.Sprintf("%s (resolution %q, %v), raw %s", got, res, err, q.want)
					})
				}
			}
			built, _ := metricValue(ctx, p.base, "promhbase_rollup_hours_built_total")
			rebuilt, _ := metricValue(ctx, p.base, "promhbase_rollup_hours_rebuilt_total")
			waited, _ := metricValue(ctx, p.base, "promhbase_rollup_lease_wait_seconds_total")
			compacted, _ := metricValue(ctx, p.base, "promhbase_compaction_rows_compacted_total")
			t.Logf("%s: hours built %v, built again %v, waited %.3fs for the build lease; rows compacted %v", p.name, built, rebuilt, waited, compacted)
		}
		t.Logf("the rollups answered as the raw samples %s after the writers stopped", time.Since(end).Round(time.Second))
	})
	t.Run("uid fsck", func(t *testing.T) {
		rep, err := uid.UIDFsck(ctx, st, tb.UID, mapping.Layout{SaltWidth: 1, SaltBuckets: clusterSaltBuckets, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3})
		if err != nil {
			t.Fatal(err)
		}
		logFsck(t, rep)
	})
	t.Run("OpenTSDB fsck", func(t *testing.T) {
		// The replicas first compact every row they wrote (trying again
		// the rows a fault interrupted half way) and stop, finishing the
		// rows under way: fsck reads the tables at rest.
		for _, p := range live {
			poll.Until(t, 2*time.Minute, time.Second, p.name+": every row compacted", func() (bool, string) {
				n, err := metricValue(ctx, p.base, "promhbase_compaction_pending_rows")
				return err == nil && n == 0, fmt.Sprintf("%v rows still wait for compaction (%v)", n, err)
			})
			errs, _ := metricValue(ctx, p.base, "promhbase_compaction_errors_total")
			t.Logf("%s: %v rows whose compaction failed (tried again)", p.name, errs)
			p.proc.Stop()
		}
		opentsdbFsck(ctx, t, tb)
	})
}

// opentsdbFsck runs OpenTSDB 2.4.1's `tsdb fsck --full-scan` and `tsdb uid
// fsck` (tools/scripts/opentsdb.sh, no TSD started) on tb, salted as the
// cluster tests salt, and fails on any error they report.
func opentsdbFsck(ctx context.Context, t *testing.T, tb testbackend.Tables) {
	t.Helper()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "tools", "scripts", "opentsdb.sh"), args...)
		cmd.Env = append(os.Environ(),
			"OPENTSDB_ZK="+testbackend.ZKQuorum(),
			"OPENTSDB_DATA_TABLE="+tb.Data,
			"OPENTSDB_UID_TABLE="+tb.UID,
			"OPENTSDB_SALT_WIDTH=1",
			"OPENTSDB_SALT_BUCKETS="+strconv.Itoa(clusterSaltBuckets),
			"OPENTSDB_CONF_EXTRA=tsd.storage.hbase.meta_table = "+tb.Meta)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("opentsdb.sh %s: %v\n%s", strings.Join(args, " "), err, tail(string(out), 40))
		}
		return string(out)
	}
	run("conf")
	out := run("fsck", "--full-scan", "--threads=1")
	fields := map[string]string{}
	for _, k := range []string{"Total Errors", "Rows Processed", "Valid Datapoints", "Unknown Objects"} {
		m := regexp.MustCompile(regexp.QuoteMeta(k) + `: (\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("OpenTSDB fsck printed no %q:\n%s", k, tail(out, 40))
		}
		fields[k] = m[1]
	}
	if fields["Total Errors"] != "0" || fields["Unknown Objects"] != "0" || fields["Rows Processed"] == "0" || strings.Contains(out, "Shouldn't be here") {
		t.Errorf("OpenTSDB fsck:\n%s", tail(out, 40))
	}
	t.Logf("OpenTSDB fsck: %v", fields)
	if out := run("uid-fsck"); !strings.Contains(out, "No errors found") {
		t.Errorf("OpenTSDB uid fsck:\n%s", tail(out, 40))
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// metricValue returns the value of a metric on base's /metrics: the sum
// of its series.
func metricValue(ctx context.Context, base, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum, found := 0.0, false
	for line := range strings.SplitSeq(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("%s/metrics: %q: %w", base, line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("%s/metrics has no %s", base, name)
	}
	return sum, nil
}

// restartAtEnd starts role again when the test ends, whatever happened,
// so that the next test finds the whole cluster.
func restartAtEnd(t *testing.T, role string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := clusterScript(ctx, t, "cluster-start", role); err != nil {
			t.Errorf("restart %s: %v", role, err)
		}
	})
}

// TestClusterRegionServerKill: a region server killed with SIGKILL under
// ingest. HBase needs the ZooKeeper session timeout to see it dead, then
// splits its WALs and reopens its regions on the others; the writers go
// on meanwhile, as Prometheus's would, and nothing acknowledged is lost.
func TestClusterRegionServerKill(t *testing.T) {
	restartAtEnd(t, "rs1")
	clusterScenario(t, "rskill", clusterRecovery, func(ctx context.Context, _ []*promhbaseProcess, _ testbackend.Tables, _ *ingest) (string, func()) {
		if _, err := clusterScript(ctx, t, "cluster-kill", "rs1"); err != nil {
			t.Fatal(err)
		}
		return "kill -9 of rs1", nil
	})
}

// TestClusterMasterKill: the HMaster killed with SIGKILL under ingest.
// The region servers go on serving their regions, so writes go on; the
// master is started again once the writers stopped (the test's tables are
// dropped through it).
func TestClusterMasterKill(t *testing.T) {
	restartAtEnd(t, "master")
	clusterScenario(t, "masterkill", 20*time.Second, func(ctx context.Context, _ []*promhbaseProcess, _ testbackend.Tables, _ *ingest) (string, func()) {
		if _, err := clusterScript(ctx, t, "cluster-kill", "master"); err != nil {
			t.Fatal(err)
		}
		return "kill -9 of the master", func() {
			if _, err := clusterScript(ctx, t, "cluster-start", "master"); err != nil {
				t.Error(err)
			}
		}
	})
}

// TestClusterRegionMoveAndSplit: a region of the data table moved to
// another region server, then the data table split, under ingest and
// during long reads: a reader reads every writer's metric through remote
// read (streamed chunks, Prometheus's own client, consuming the answer
// slowly) from replica b, read after read, through the move and the
// split. The clients see no error beyond retries, every read holds every
// sample acknowledged before it began and nothing that was not written,
// and nothing is lost.
func TestClusterRegionMoveAndSplit(t *testing.T) {
	clusterScenario(t, "move", 20*time.Second, func(ctx context.Context, replicas []*promhbaseProcess, tb testbackend.Tables, in *ingest) (string, func()) {
		table := tb.Data
		stopRead := make(chan struct{})
		readDone := make(chan string, 1)
		type span struct{ from, to time.Time }
		var moveAt, splitAt span
		var mu sync.Mutex
		go func() {
			var (
				reads, retried, overlapMove, overlapSplit int
				longest                                   time.Duration
				problems                                  []string
			)
			defer func() {
				for _, p := range problems {
					t.Error(p)
				}
				readDone <- fmt.Sprintf("%d long reads of every writer's metric during the move and split (the longest %s; %d spanned the move, %d the split), %d retried",
					reads, longest.Round(time.Millisecond), overlapMove, overlapSplit, retried)
			}()
			for {
				select {
				case <-stopRead:
					return
				default:
				}
				// What was acknowledged before the read began.
				in.mu.Lock()
				acked := make(map[string]int, len(in.model))
				for k, m := range in.model {
					acked[k] = len(m.samples)
				}
				in.mu.Unlock()
				began := time.Now()
				got, err := slowStreamedRead(ctx, replicas[1].base, in.base, in.base+24*3600_000, re("__name__", "cluster_w.+"))
				if err != nil {
					if !retryable(err) {
						problems = append(problems, fmt.Sprintf("remote read during the move: %v", err))
					}
					retried++
					time.Sleep(minBackoff) // a client's backoff before it reads again
					continue
				}
				ended := time.Now()
				reads++
				longest = max(longest, ended.Sub(began))
				mu.Lock()
				if !moveAt.from.IsZero() && began.Before(moveAt.to) && ended.After(moveAt.from) {
					overlapMove++
				}
				if !splitAt.from.IsZero() && began.Before(splitAt.to) && ended.After(splitAt.from) {
					overlapSplit++
				}
				mu.Unlock()
				// Every sample acknowledged before, each bit for bit as
				// the model holds it, and at most the one sample a
				// series' writer is sending beyond what the model holds
				// now.
				in.mu.Lock()
				seen := map[string]bool{}
				for _, s := range got {
					k := s.labels.String()
					seen[k] = true
					m := in.model[k]
					n := 0
					if m != nil {
						n = min(len(m.samples), len(s.samples))
						if msg := sampleProblems(s.samples[:n], m.samples[:n]); len(msg) > 0 {
							problems = append(problems, fmt.Sprintf("read %d: %s: %v", reads, k, msg))
						}
					}
					if len(s.samples) < acked[k] {
						problems = append(problems, fmt.Sprintf("read %d: %s: %d samples, %d acknowledged before the read", reads, k, len(s.samples), acked[k]))
					}
					if len(s.samples) > n+1 {
						// A series' one sample in flight may be read
						// before its writer saw the acknowledgement.
						problems = append(problems, fmt.Sprintf("read %d: %s: %d samples, %d written", reads, k, len(s.samples), n))
					}
				}
				for k, n := range acked {
					if n > 0 && !seen[k] {
						problems = append(problems, fmt.Sprintf("read %d: %s missing, %d samples acknowledged before the read", reads, k, n))
					}
				}
				in.mu.Unlock()
				if len(problems) > 20 {
					problems = problems[:20]
				}
			}
		}()
		time.Sleep(2 * time.Second) // a read under way
		from := time.Now()
		out, err := clusterScript(ctx, t, "cluster-move", table)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		moveAt = span{from, time.Now()}
		mu.Unlock()
		from = time.Now()
		if _, err := clusterScript(ctx, t, "cluster-split", table); err != nil {
			t.Error(err)
		}
		mu.Lock()
		splitAt = span{from, time.Now()}
		mu.Unlock()
		time.Sleep(5 * time.Second) // reads after the split
		close(stopRead)
		return fmt.Sprintf("a region of %s moved (%s, %s) and the table split (%s); %s", table, strings.TrimSpace(out),
			moveAt.to.Sub(moveAt.from).Round(time.Millisecond), splitAt.to.Sub(splitAt.from).Round(time.Millisecond), <-readDone), nil
	})
}

// slowStreamedRead is remoteReadStreamed consuming the answer slowly, a
// millisecond a series, as a busy client does: the read stays under way
// for seconds.
func slowStreamedRead(ctx context.Context, base string, start, end int64, ms ...*labels.Matcher) ([]readSeries, error) {
	return remoteReadStreamedEach(ctx, base, start, end, func() { time.Sleep(time.Millisecond) }, ms...)
}

// TestClusterReplicaKill: one of the two promhbase replicas killed with
// SIGKILL under ingest. Its writers move on to the other replica, as
// behind a load balancer, and send again what it had not acknowledged;
// nothing acknowledged is lost.
func TestClusterReplicaKill(t *testing.T) {
	clusterScenario(t, "replicakill", 20*time.Second, func(ctx context.Context, replicas []*promhbaseProcess, _ testbackend.Tables, _ *ingest) (string, func()) {
		a := replicas[0]
		a.killed.Store(true)
		if err := syscall.Kill(-a.proc.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-a.proc.Exited()
		return "kill -9 of replica a", nil
	})
}

// instantQuery runs an instant query whose answer is one number at the
// given max_source_resolution, and returns the number as the API prints it
// and the resolution the answer says it read.
func instantQuery(ctx context.Context, client *http.Client, base, q string, at int64, resolution string) (value, read string, err error) {
	v := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at)/1000, 'f', 3, 64)}, "max_source_resolution": {resolution}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/query", strings.NewReader(v.Encode()))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	r, err := promjson.Decode(resp.Body)
	if err != nil {
		return "", "", fmt.Errorf("%s: status %d: %w", q, resp.StatusCode, err)
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return "", "", fmt.Errorf("%s: status %d %q %s, %d results", q, resp.StatusCode, r.Status, r.Error, len(r.Data.Result))
	}
	return r.Data.Result[0].ValueString(), resp.Header.Get("X-Promhbase-Resolution"), nil
}
