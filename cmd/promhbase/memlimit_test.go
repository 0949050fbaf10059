package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// memCgroup is a memory cgroup the test made, v1 or v2.
type memCgroup struct {
	dir string
	v2  bool
}

// newMemCgroup makes a memory cgroup limited to limit bytes, removed when
// the test ends, or skips the test saying why it cannot (not root, no
// writable memory controller).
func newMemCgroup(t *testing.T, limit int64) memCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a memory cgroup needs root")
	}
	name := fmt.Sprintf("promhbase-test-%d", os.Getpid())
	var cg memCgroup
	switch {
	case fileExists("/sys/fs/cgroup/memory/memory.limit_in_bytes") || fileExists("/sys/fs/cgroup/memory/cgroup.procs"):
		cg = memCgroup{dir: "/sys/fs/cgroup/memory/" + name}
	case fileExists("/sys/fs/cgroup/cgroup.controllers"):
		b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if err != nil || !strings.Contains(string(b), "memory") {
			t.Skipf("cgroup v2 without the memory controller delegated at its root (%q, %v)", b, err)
		}
		cg = memCgroup{dir: "/sys/fs/cgroup/" + name, v2: true}
	default:
		t.Skip("no cgroup memory controller mounted at /sys/fs/cgroup")
	}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		// The processes in it have been stopped by then (cleanups run
		// last registered first); an empty cgroup is removed with rmdir.
		if err := os.Remove(cg.dir); err != nil {
			t.Logf("remove cgroup %s: %v", cg.dir, err)
		}
	})
	limitFile := "memory.limit_in_bytes"
	if cg.v2 {
		limitFile = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Fatalf("limit the cgroup: %v", err)
	}
	return cg
}

// peak returns the most memory the cgroup's processes held, and how many
// were killed for want of memory (-1: not reported).
func (cg memCgroup) peak(t *testing.T) (peak int64, oomKills int64) {
	t.Helper()
	peakFile := "memory.max_usage_in_bytes"
	if cg.v2 {
		peakFile = "memory.peak"
	}
	peak = readInt(t, filepath.Join(cg.dir, peakFile))
	oomKills = -1
	if b, err := os.ReadFile(filepath.Join(cg.dir, map[bool]string{false: "memory.oom_control", true: "memory.events"}[cg.v2])); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
				oomKills, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return peak, oomKills
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestServeMemLimitFromCgroup: serve in a memory cgroup limited to 1 GiB
// sets GOMEMLIMIT to 0.9 of it (--auto-gomemlimit.ratio's default), says
// so in its log and in go_gc_gomemlimit_bytes, and takes a million new
// series without being killed; the same run with --no-auto-gomemlimit
// logs that it is off, and the two runs' peaks are logged (what the limit
// saves). An explicit GOMEMLIMIT wins over the cgroup's.
func TestServeMemLimitFromCgroup(t *testing.T) {
	const limit = 1 << 30
	const series = 1_000_000
	bin := promhbaseBinary(t)
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		wantLog string
		wantGo  string // go_gc_gomemlimit_bytes
		feed    bool
	}{
		{name: "auto", wantLog: `msg="GOMEMLIMIT set from the container's memory limit" cgroup_limit_bytes=1073741824 ratio=0.9 gomemlimit_bytes=966367641`,
			wantGo: "go_gc_gomemlimit_bytes 9.66367641e+08", feed: true},
		{name: "off", args: []string{"--no-auto-gomemlimit"}, wantLog: `--no-auto-gomemlimit`, wantGo: "go_gc_gomemlimit_bytes 9.223372036854776e+18", feed: true},
		{name: "environment wins", env: "GOMEMLIMIT=300MiB", wantLog: `msg="GOMEMLIMIT from the environment" gomemlimit=314572800`,
			wantGo: "go_gc_gomemlimit_bytes 3.145728e+08"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := newMemCgroup(t, limit)
			// The shell joins the cgroup and becomes serve: the limit is
			// there before serve reads it.
			script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec "$@"`, cg.dir)
			args := append([]string{"-c", script, "sh", bin, "serve", "--web.listen-address=127.0.0.1:0", "--storage.embedded.path=" + t.TempDir(),
				"--limits.ingestion-rate=0", "--limits.new-series-rate=0", "--limits.max-active-series=0", "--limits.max-series-per-request=0",
				"--storage.min-free-disk-space-bytes=0"}, tc.args...)
			cmd := exec.Command("/bin/sh", args...)
			if tc.env != "" {
				cmd.Env = append(os.Environ(), tc.env)
			}
			srv := testproc.Start(t, "serve", cmd, filepath.Join(t.TempDir(), "serve.log"), 30)
			base, err := srv.WaitServing(t.Context(), time.Minute)
			if err != nil {
				t.Fatalf("serve: %v\n%s", err, srv.Log())
			}
			if !strings.Contains(srv.Log(), tc.wantLog) {
				t.Errorf("the log lacks %s:\n%s", tc.wantLog, testproc.TailLines(srv.Log(), 20))
			}
			if code, body := httpDo(t, "GET", base+"/metrics", "", "", nil); code != 200 || !strings.Contains(body, tc.wantGo) {
				t.Errorf("/metrics: %d, want %s", code, tc.wantGo)
			}
			if !tc.feed {
				return
			}
			start := time.Now()
			feedSeries(t, base, series, 10_000)
			select {
			case <-srv.Exited():
				t.Fatalf("serve exited while fed %d series: %v\n%s", series, srv.Wait(), testproc.TailLines(srv.Log(), 20))
			default:
			}
			peak, kills := cg.peak(t)
			t.Logf("%s: %d new series in %s; the cgroup's peak %d MiB of its %d MiB, %d OOM kills", tc.name, series,
				time.Since(start).Round(100*time.Millisecond), peak>>20, limit>>20, kills)
			if kills > 0 {
				t.Errorf("%d processes of the cgroup were killed for want of memory", kills)
			}
		})
	}
}

// feedSeries writes n new series, a sample each, in requests of batch.
func feedSeries(t *testing.T, base string, n, batch int) {
	t.Helper()
	ts := time.Now().UnixMilli()
	for lo := 0; lo < n; lo += batch {
		req := make([]prompb.TimeSeries, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			req = append(req, prompb.TimeSeries{
				Labels: []prompb.Label{{Name: "__name__", Value: "memlimit_test"}, {Name: "instance", Value: "host-" + strconv.Itoa(i%1000)},
					{Name: "job", Value: "node"}, {Name: "series", Value: strconv.Itoa(i)}},
				Samples: []prompb.Sample{{Timestamp: ts, Value: float64(i)}},
			})
		}
		remoteWrite(t, base, req)
	}
}
