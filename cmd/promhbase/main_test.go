package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// built is the promhbase binary the package's tests share: built once,
// by the first test that needs it, into dir (TestMain's).
var built struct {
	dir  string
	once sync.Once
	path string
	err  error
}

// promhbaseBinary returns the path of this command's binary, built once
// for all the package's tests (a build takes 10-20 s on a busy machine).
func promhbaseBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		start := time.Now()
		built.path, built.err = testproc.Build(context.Background(), ".", built.dir)
		t.Logf("go build . took %s", time.Since(start).Round(100*time.Millisecond))
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// storageFlags returns the flags that point the CLI at the test backend.
func storageFlags(t *testing.T) []string {
	t.Helper()
	if testbackend.Name() == "hbase" {
		testbackend.NewHBaseStore(t) // fails under CI, skips elsewhere, when HBase is missing
		sfx := tenantSuffix()        // the tests run at once: each its own tables
		return []string{"--storage.backend=hbase", "--hbase.zookeeper.quorum=" + testbackend.ZKQuorum(),
			"--hbase.table.data=tsdb_cli_" + sfx, "--hbase.table.uid=tsdb-uid_cli_" + sfx}
	}
	return []string{"--storage.embedded.path=" + t.TempDir()}
}

// createTestTables creates the tables that flags name when the backend
// is HBase, and drops them when the test ends.
func createTestTables(t *testing.T, bin string, flags []string) {
	t.Helper()
	if testbackend.Name() != "hbase" {
		return
	}
	if out, err := run(t, bin, append([]string{"create-tables"}, flags...)...); err != nil {
		t.Fatalf("create-tables: %v\n%s", err, out)
	}
	dropTestTables(t, flags)
}

// dropTestTables drops the HBase tables that flags name when the test
// ends.
func dropTestTables(t *testing.T, flags []string) {
	t.Cleanup(func() {
		st := testbackend.NewHBaseStore(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, strings.TrimPrefix(flags[2], "--hbase.table.data="), strings.TrimPrefix(flags[3], "--hbase.table.uid=")); err != nil {
			t.Errorf("drop the test tables: %v", err)
		}
	})
}

// startServe starts `promhbase serve` with args on a free loopback
// address, waits up to a minute until it is ready and returns it with its
// base URL. It is stopped when the test ends if it has not exited before.
func startServe(t *testing.T, bin string, args ...string) (*testproc.Process, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--web.listen-address=127.0.0.1:0"}, args...)...)
	srv := testproc.Start(t, "serve", cmd, filepath.Join(t.TempDir(), "serve.log"), 0)
	base, err := srv.WaitServing(t.Context(), time.Minute)
	if err != nil {
		t.Fatalf("serve not ready: %v\n%s", err, srv.Log())
	}
	return srv, base
}

// stopServe sends SIGTERM to serve and fails the test unless it then
// exits cleanly.
func stopServe(t *testing.T, srv *testproc.Process) {
	t.Helper()
	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal serve: %v", err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, srv.Log())
	}
}

// remoteWrite sends series to serve's remote-write endpoint in one
// request and fails the test unless it answers 204.
func remoteWrite(t *testing.T, base string, series []prompb.TimeSeries) {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/write", "application/x-protobuf", bytes.NewReader(promremote.WriteBody(t, series...)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write: %d", resp.StatusCode)
	}
}

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestCLI(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	if testbackend.Name() == "hbase" {
		out, err := run(t, bin, append([]string{"create-tables"}, flags...)...)
		if err != nil || !strings.Contains(out, "created:") {
			t.Fatalf("create-tables: %v\n%s", err, out)
		}
		out, err = run(t, bin, append([]string{"create-tables"}, flags...)...)
		if err != nil || !strings.Contains(out, "already there, left alone") {
			t.Fatalf("create-tables again: %v\n%s", err, out)
		}
		dropTestTables(t, flags)
	}
	// The first assign's UIDs are read from its output: an Increment of
	// the counter that HBase applied but whose answer was lost (a retry
	// after a region move) leaves a hole, which OpenTSDB's uid fsck
	// accepts, so the numbers need not start at 000001.
	uids := map[string]string{}
	for _, tc := range []struct {
		args    func() []string
		want    func() []string
		wantErr bool
		capture bool
	}{
		{args: fixed("uid", "assign", "metrics", "sys.cpu.user", "sys.cpu.nice"), want: fixed("metrics sys.cpu.user: ", "metrics sys.cpu.nice: "), capture: true},
		{args: fixed("uid", "assign", "tagk", "host"), want: fixed("tagk host: ")},
		{args: fixed("uid", "grep", "metrics", "sys.cpu.nice"), want: func() []string { return []string{"metrics sys.cpu.nice: " + uids["sys.cpu.nice"]} }},
		{args: func() []string { return []string{"uid", "name", "metrics", uids["sys.cpu.user"]} }, want: func() []string { return []string{"metrics " + uids["sys.cpu.user"] + ": sys.cpu.user"} }},
		{args: fixed("uid", "grep", "tagv", "nope"), want: fixed("no such name"), wantErr: true},
		{args: fixed("uid", "fsck"), want: fixed("forward mappings: metrics 2, tagk 1, tagv 0", "0 errors, 0 orphans")},
		{args: fixed("scan", "sys.cpu.user", "--start=0"), want: fixed()},
		{args: fixed("scan", "never.written"), want: fixed("no such name"), wantErr: true},
	} {
		args := tc.args()
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := run(t, bin, append(args, flags...)...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v\n%s", err, tc.wantErr, out)
			}
			for _, w := range tc.want() {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.capture {
				captureUIDs(t, out, uids)
				if uids["sys.cpu.user"] == "" || uids["sys.cpu.nice"] == "" {
					t.Fatalf("no UIDs read from the output:\n%s", out)
				}
			}
		})
	}
}

// fixed returns a function that returns ss, for TestCLI's cases that
// depend on no earlier output.
func fixed(ss ...string) func() []string { return func() []string { return ss } }

// captureUIDs records in uids each "kind name: UID" line of out, and fails
// the test when two names got one UID.
func captureUIDs(t *testing.T, out string, uids map[string]string) {
	t.Helper()
	seen := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		kindName, id, ok := strings.Cut(line, ": ")
		_, name, ok2 := strings.Cut(kindName, " ")
		if !ok || !ok2 || len(id) != 6 || strings.Contains(kindName, "=") {
			continue
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("%s and %s both got UID %s:\n%s", other, name, id, out)
		}
		seen[id], uids[name] = name, id
	}
}

// TestServeThenScan starts `promhbase serve`, writes through it, stops it
// with SIGTERM, and reads the rows back with `promhbase scan`.
func TestServeThenScan(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	createTestTables(t, bin, flags)
	srv, base := startServe(t, bin, flags...)
	remoteWrite(t, base, []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "cli_test"}, {Name: "host", Value: "web01"}},
		Samples: []prompb.Sample{{Timestamp: 1292148123456, Value: 0.1}, {Timestamp: 1292151599999, Value: 42}},
	}})
	stopServe(t, srv)
	out, err := run(t, bin, append([]string{"scan", "cli_test", "--start=1292148000", "--end=1292151600"}, flags...)...)
	if err != nil {
		t.Fatalf("scan: %v\n%s", err, out)
	}
	// Row key 000001 4D049D20 000001 000001; qualifier F078900F = ms offset
	// 123456 float64, value 0.1.
	for _, want := range []string{"0000014D049D20000001000001 1292148000", `{__name__="cli_test", host="web01"}`,
		"F078900F\t3FB999999999999A", "1292148123456\t0.1", "1292151599999\t42"} {
		if !strings.Contains(out, want) {
			t.Errorf("scan output lacks %q:\n%s", want, out)
		}
	}
}

// exportSeries is one line of /api/v1/export's answer (JSON lines).
type exportSeries struct {
	Metric     map[string]string
	Values     []float64
	Timestamps []int64
}

// parseExport reads the series of /api/v1/export's answer body, failing
// the test with what on a line it cannot read.
func parseExport(t *testing.T, what, body string) []exportSeries {
	t.Helper()
	var out []exportSeries
	dec := json.NewDecoder(strings.NewReader(body))
	for dec.More() {
		var line exportSeries
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, line)
	}
	return out
}

// parseVector returns the series of an instant query's JSON answer, or
// an error when it is not a successful vector.
func parseVector(body string) ([]promjson.Series, error) {
	a, err := promjson.Decode(strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	return a.Vector()
}
