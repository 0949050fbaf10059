package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestCompareSmoke runs the side-by-side harness small: the project's
// Prometheus and a freshly built promhbase (embedded store), remote write
// 1.0 and 2.0 with churn, and 2.0 native histograms, each system fed the
// same requests. Every sample must be acknowledged by both, both must read
// samples back with both response types and through the query API (one
// point a round for each series of the metric read), and the plot must be
// drawn. (The harness itself is a
// benchmark, `make bench-e2e`; this keeps it working.)
func TestCompareSmoke(t *testing.T) {
	t.Parallel()
	prom := testproc.PrometheusBinary(t, testproc.Root(t, "tools/scripts/prometheus.sh"))
	promhbase := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	for _, tc := range []struct {
		name, proto string
		histograms  bool
	}{{"v1", "v1", false}, {"v2", "v2", false}, {"v2 histograms", "v2", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own servers and directories
			svg := filepath.Join(t.TempDir(), "plot.svg")
			o := options{series: 600, batch: 200, concurrency: 2, maxRounds: 3}
			c := compareOptions{prometheus: prom, promhbase: promhbase, protocol: tc.proto, histograms: tc.histograms, churn: 0.1, dir: t.TempDir(), svg: svg}
			rs := compareResults(t, o, c, 2)
			for _, r := range rs {
				if r.samples != 600*3 {
					t.Errorf("%s: %d samples acknowledged, want %d", r.system, r.samples, 600*3)
				}
				// CPU seconds come in clock ticks (10 ms): a run this small
				// may have used none.
				if r.readSamples <= 0 || r.streamRate <= 0 || r.queryRate <= 0 || r.peakRSS <= 0 || r.cpu < 0 {
					t.Errorf("%s: read %v / %v samples/s, query %v points/s, peak RSS %d, CPU %v s: want positive reads and RSS", r.system, r.readSamples, r.streamRate, r.queryRate, r.peakRSS, r.cpu)
				}
				// load_metric_0 is every 100th series; with churn the
				// window slides by 60 a round, so each round writes 6 of
				// them, and the answer holds one point a round for each.
				if r.queryPoints < 6*3 {
					t.Errorf("%s: query_range gave %d points, want at least %d", r.system, r.queryPoints, 6*3)
				}
			}
			// Both answer the same query over the same samples.
			if rs[0].queryPoints != rs[1].queryPoints {
				t.Errorf("query_range points: %s %d, %s %d; want the same", rs[0].system, rs[0].queryPoints, rs[1].system, rs[1].queryPoints)
			}
			b, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "promhbase 600 series") {
				t.Errorf("plot lacks the bars:\n%.500s", b)
			}
		})
	}
}

// compareResults runs the comparison of o and c and fails the test
// unless it gives want results, which it returns.
func compareResults(t *testing.T, o options, c compareOptions, want int) []result {
	t.Helper()
	rs, err := runCompare(o, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != want {
		t.Fatalf("%d results, want %d", len(rs), want)
	}
	return rs
}

// TestCompareHBaseSmoke runs the harness small against promhbase on the
// test HBase (--systems=promhbase-hbase): fresh tables under a suffix,
// the rollup tables of the built-in configuration among them, which serve
// refuses to start without; every sample acknowledged and read back.
func TestCompareHBaseSmoke(t *testing.T) {
	t.Parallel()
	testbackend.NewHBaseStore(t) // fails under CI=true without the HBase
	promhbase := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	o := options{series: 600, batch: 200, concurrency: 2, maxRounds: 3}
	c := compareOptions{promhbase: promhbase, systems: []string{"promhbase-hbase"}, hbaseQuorum: testbackend.ZKQuorum(), protocol: "v1", dir: t.TempDir()}
	rs := compareResults(t, o, c, 1)
	if r := rs[0]; r.samples != 600*3 || r.readSamples <= 0 || r.queryPoints < 6*3 {
		t.Errorf("%s: %d samples acknowledged (want %d), %v read back, %d query points (want at least %d)", r.system, r.samples, 600*3, r.readSamples, r.queryPoints, 6*3)
	}
}

// TestRunKeepsSeriesOrder: with a sliding window of series (churn), a
// series moves between batches and senders from round to round, yet no
// request of a round starts before every request of the round before
// that held its series has been answered; with senders that answer in
// random order a series' rounds would otherwise overtake each other, and
// Prometheus refuses such a sample as out of order.
func TestRunKeepsSeriesOrder(t *testing.T) {
	t.Parallel()
	o := options{series: 600, batch: 200, concurrency: 3, maxRounds: 8, shift: 60, duration: time.Minute}
	var mu sync.Mutex
	last := map[int]int{} // series → last round answered
	rng := rand.New(rand.NewPCG(3, 4))
	var bad []string
	_, err := run(o, func(ctx context.Context, round, first, n int) error {
		mu.Lock()
		d := time.Duration(rng.IntN(3000)) * time.Microsecond
		for p := first; p < first+n; p++ {
			id := p + round*o.shift
			if r, ok := last[id]; (ok && r != round-1) || (!ok && round > 0 && p+o.shift < o.series) {
				bad = append(bad, fmt.Sprintf("series %d: round %d started after round %d (seen %v)", id, round, r, ok))
			}
		}
		mu.Unlock()
		time.Sleep(d) // the sender's answer takes a random while: the subject, answers out of order
		mu.Lock()
		for p := first; p < first+n; p++ {
			last[p+round*o.shift] = round
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%d series out of order, e.g. %s", len(bad), bad[0])
	}
}

func TestParseCPUTicks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line        string
		busy, total uint64
		err         bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 2 30 500 7 1 4 9 50 0", 137, 653, false},
		{"cpu 10 0 5 100", 15, 115, false}, // an old kernel's four fields
		{"cpu0 1 2 3 4 5", 0, 0, true},
		{"cpu 1 x 3 4 5", 0, 0, true},
		{"", 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			busy, total, err := parseCPUTicks(tc.line)
			if (err != nil) != tc.err || busy != tc.busy || total != tc.total {
				t.Fatalf("busy %d, total %d, error %v; want %d, %d, error %v", busy, total, err, tc.busy, tc.total, tc.err)
			}
		})
	}
}

// TestCompareVictoriaMetricsPinned: VictoriaMetrics single-node is a
// system of compare (remote write in, its query_range read back after a
// flush), and --server.cpus=1 runs each system pinned (TestPinned: how).
func TestCompareVictoriaMetricsPinned(t *testing.T) {
	t.Parallel()
	vm, promhbase := vmAndPromhbase(t)
	o := options{series: 600, batch: 200, concurrency: 2, maxRounds: 3}
	c := compareOptions{promhbase: promhbase, victoriaMetrics: vm, protocol: "v1", dir: t.TempDir(),
		systems: []string{"victoriametrics", "promhbase"}, serverCPUs: []int{1}}
	rs := compareResults(t, o, c, 2)
	for _, r := range rs {
		if r.samples != 600*3 || r.cpus != 1 {
			t.Errorf("%s: %d samples acknowledged at %d cores, want %d at 1", r.system, r.samples, r.cpus, 600*3)
		}
		if r.queryPoints < 6*3 || r.queryRate <= 0 {
			t.Errorf("%s: query_range gave %d points at %v points/s, want at least %d", r.system, r.queryPoints, r.queryRate, 6*3)
		}
	}
	if rs[0].queryPoints != rs[1].queryPoints {
		t.Errorf("query_range points: %s %d, %s %d; want the same", rs[0].system, rs[0].queryPoints, rs[1].system, rs[1].queryPoints)
	}
}

// vmAndPromhbase returns the project's VictoriaMetrics and a freshly
// built promhbase.
func vmAndPromhbase(t *testing.T) (vm, promhbase string) {
	t.Helper()
	vm = testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/victoriametrics.sh"), "VictoriaMetrics")
	return vm, testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
}

// TestPinned: the command of a pinned server runs under taskset on the
// first cores with GOMAXPROCS set; unpinned it is left alone; more cores
// than the machine has is an error.
func TestPinned(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/true", "a")
	restore, err := pinned(cmd, 1)
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if got := strings.Join(cmd.Args, " "); !strings.HasSuffix(got, "taskset -c 0-0 /bin/true a") || !slices.Contains(cmd.Env, "GOMAXPROCS=1") {
		t.Errorf("pinned command %q, env has GOMAXPROCS=1: %v", got, slices.Contains(cmd.Env, "GOMAXPROCS=1"))
	}
	if err := cmd.Run(); err != nil {
		t.Errorf("run the pinned command: %v", err)
	}
	plain := exec.Command("/bin/true")
	if _, err := pinned(plain, 0); err != nil || len(plain.Args) != 1 || plain.Env != nil {
		t.Errorf("unpinned: %v %q %v", err, plain.Args, plain.Env)
	}
	if _, err := pinned(exec.Command("/bin/true"), runtime.NumCPU()+1); err == nil {
		t.Error("more cores than the machine has: no error")
	}
}

// TestCompareProfiles: with --profile, a run of promhbase saves its mutex
// and block profiles, and with --profile.cpu-seconds its CPU profile of
// the writes, each a gzipped profile named by system, cores and series.
func TestCompareProfiles(t *testing.T) {
	t.Parallel()
	promhbase := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	dir := t.TempDir()
	o := options{series: 600, batch: 200, concurrency: 2, maxRounds: 3}
	c := compareOptions{promhbase: promhbase, protocol: "v1", dir: t.TempDir(), systems: []string{"promhbase"},
		profile: dir, profileCPU: time.Second,
		extraFlags: []string{"--web.enable-pprof", "--debug.mutex-profile-fraction=10", "--debug.block-profile-rate=10000"}}
	if _, err := runCompare(o, c); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"mutex", "block", "cpu"} {
		path := filepath.Join(dir, "promhbase-0cpu-600series."+kind+".pb.gz")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s profile: %v", kind, err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, not gzip", path, len(b))
		}
	}
}
