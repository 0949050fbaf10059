//go:build faults && cluster

package faults

// The cluster tests run against the cluster of scripts/hbase.sh
// cluster-up (ZooKeeper, a master and three region servers, each its own
// JVM) and kill its processes with SIGKILL:
//
//	scripts/hbase.sh cluster-up
//	PROMHBASE_HBASE_ZK=127.0.0.1:2182 go test -tags 'faults cluster' -run Cluster ./e2e/faults
//
// make test-cluster does both. Under CI=true a missing cluster fails them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/internal/testkit/testbackend"
	"github.com/promhbase/promhbase/internal/testkit/testproc"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/uid"
)

// writerPause is the pause of a cluster test writer between requests.
const writerPause = 200 * time.Millisecond

// clusterRecovery is how long the writers go on after a kill: well over
// what HBase needs to reassign the regions of a dead region server with
// scripts/hbase.sh's 10 s ZooKeeper session timeout.
const clusterRecovery = 75 * time.Second

// clusterSalt is the salting of the cluster tests' tables: the data table
// is pre-split at each bucket, so that every region server holds some.
const clusterSaltBuckets = 6

// clusterScript runs scripts/hbase.sh with a cluster command against the
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

// clusterTables creates data and UID tables, the data table pre-split at
// the salt buckets, and drops them when the test ends.
func clusterTables(t *testing.T, st *hbase.Store, name string) testbackend.Tables {
	t.Helper()
	sfx := fmt.Sprintf("%s_%d_%d", name, os.Getpid(), time.Now().UnixNano()%1e9)
	tb := testbackend.Tables{Data: "cluster_tsdb_" + sfx, UID: "cluster_tsdb-uid_" + sfx, Exemplar: "cluster_tsdb-exemplar_" + sfx,
		Meta: "cluster_tsdb-meta_" + sfx, Index: "cluster_tsdb-index_" + sfx}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, hbase.TablesConfig{DataTable: tb.Data, UIDTable: tb.UID, ExemplarTable: tb.Exemplar,
		MetaTable: tb.Meta, IndexTable: tb.Index, SaltWidth: 1, SaltBuckets: clusterSaltBuckets}); err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, tb.Data, tb.UID, tb.Exemplar, tb.Meta, tb.Index); err != nil {
			t.Errorf("drop test tables: %v", err)
		}
	})
	return tb
}

// startReplica starts `promhbase serve` on the cluster with all the
// tables and their salting, rollups off.
func startReplica(t *testing.T, bin, name string, tb testbackend.Tables) *promhbaseProcess {
	t.Helper()
	return startPromhbase(t, bin, name, tb,
		"--hbase.table.exemplar="+tb.Exemplar,
		"--hbase.table.meta="+tb.Meta,
		"--hbase.table.index="+tb.Index,
		"--storage.salt.width=1",
		"--storage.salt.buckets="+strconv.Itoa(clusterSaltBuckets),
		"--no-rollup.enabled",
	)
}

// ingest is what the cluster tests' writers acknowledged and saw.
type ingest struct {
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
func runWriters(ctx context.Context, replicas []*promhbaseProcess, perReplica int, stop <-chan struct{}) (*ingest, <-chan error) {
	n := len(replicas) * perReplica
	in := &ingest{model: map[string]*modelSeries{}, acks: make([][]time.Time, n), fails: make([][]time.Time, n)}
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
					ts := series([]prompb.Sample{{Timestamp: t0 + int64(round)*1000, Value: float64(round*100 + i)}},
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
// recovery, then checks that every acknowledged sample reads back through both
// replicas and that the UID table is consistent. It logs each writer's
// longest wait for an acknowledgement after the fault began, and fails
// when a writer had none in the last 20 s.
func clusterScenario(t *testing.T, name string, recovery time.Duration, fault func(ctx context.Context, replicas []*promhbaseProcess, tb testbackend.Tables) (what string, heal func())) {
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

	stop := make(chan struct{})
	in, errs := runWriters(ctx, replicas, 2, stop)
	time.Sleep(8 * time.Second)
	before := in.samples.Load()
	began := time.Now()
	what, heal := fault(ctx, replicas, tb)
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

	t.Run("every acknowledged sample through every live replica", func(t *testing.T) {
		client := &http.Client{Timeout: 2 * time.Minute}
		for w := range len(in.acks) {
			ms := []*labels.Matcher{eq("__name__", fmt.Sprintf("cluster_w%d", w))}
			exp := filterModel(in.model, ms)
			for _, p := range replicas {
				if p.killed.Load() {
					continue
				}
				got, err := remoteRead(ctx, client, p.base, t0, t0+24*3600_000, ms...)
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
			want := 0
			for _, m := range filterModel(in.model, []*labels.Matcher{eq("__name__", metric)}) {
				want += len(m)
			}
			for _, p := range replicas {
				if p.killed.Load() {
					continue
				}
				got, err := instantCount(ctx, client, p.base, fmt.Sprintf("sum(count_over_time(%s[2h]))", metric), t0+3600_000)
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				if got != want {
					t.Errorf("%s: %s has %d samples through the query API, %d acknowledged", p.name, metric, got, want)
				}
			}
		}
	})
	t.Run("uid fsck", func(t *testing.T) {
		rep, err := uid.UIDFsck(ctx, st, tb.UID, mapping.Layout{SaltWidth: 1, SaltBuckets: clusterSaltBuckets, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3})
		if err != nil {
			t.Fatal(err)
		}
		logFsck(t, rep)
	})
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
	clusterScenario(t, "rskill", clusterRecovery, func(ctx context.Context, _ []*promhbaseProcess, _ testbackend.Tables) (string, func()) {
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
	clusterScenario(t, "masterkill", 20*time.Second, func(ctx context.Context, _ []*promhbaseProcess, _ testbackend.Tables) (string, func()) {
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
// while a reader reads a metric through remote read over and over: the
// clients see no error beyond retries, and nothing is lost.
func TestClusterRegionMoveAndSplit(t *testing.T) {
	clusterScenario(t, "move", 20*time.Second, func(ctx context.Context, replicas []*promhbaseProcess, tb testbackend.Tables) (string, func()) {
		table := tb.Data
		stopRead := make(chan struct{})
		readDone := make(chan string, 1)
		go func() {
			// The long read: the first writer's metric, through replica b,
			// again and again while the regions move.
			client := &http.Client{Timeout: 2 * time.Minute}
			n, retried := 0, 0
			for {
				select {
				case <-stopRead:
					readDone <- fmt.Sprintf("%d remote reads of cluster_w0 during the move and split, %d retried", n, retried)
					return
				default:
				}
				if _, err := remoteRead(ctx, client, replicas[1].base, t0, t0+24*3600_000, eq("__name__", "cluster_w0")); err != nil {
					if !retryable(err) {
						t.Errorf("remote read during the move: %v", err)
					}
					retried++
					time.Sleep(minBackoff)
					continue
				}
				n++
			}
		}()
		out, err := clusterScript(ctx, t, "cluster-move", table)
		if err != nil {
			t.Error(err)
		}
		if _, err := clusterScript(ctx, t, "cluster-split", table); err != nil {
			t.Error(err)
		}
		close(stopRead)
		return fmt.Sprintf("a region of %s moved (%s) and the table split; %s", table, strings.TrimSpace(out), <-readDone), nil
	})
}

// TestClusterReplicaKill: one of the two promhbase replicas killed with
// SIGKILL under ingest. Its writers move on to the other replica, as
// behind a load balancer, and send again what it had not acknowledged;
// nothing acknowledged is lost.
func TestClusterReplicaKill(t *testing.T) {
	clusterScenario(t, "replicakill", 20*time.Second, func(ctx context.Context, replicas []*promhbaseProcess, _ testbackend.Tables) (string, func()) {
		a := replicas[0]
		a.killed.Store(true)
		if err := syscall.Kill(-a.proc.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-a.proc.Exited()
		return "kill -9 of replica a", nil
	})
}

// instantCount runs an instant query whose answer is one number and
// returns it as an integer.
func instantCount(ctx context.Context, client *http.Client, base, q string, at int64) (int, error) {
	v := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at)/1000, 'f', 3, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/query", strings.NewReader(v.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("%s: status %d: %w", q, resp.StatusCode, err)
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: status %d %q %s, %d results", q, resp.StatusCode, r.Status, r.Error, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: value %q: %w", q, s, err)
	}
	return n, nil
}
