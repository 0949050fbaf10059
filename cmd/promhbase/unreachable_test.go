package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// These tests need no HBase: the point is that none is there. The
// quorum is a loopback port nobody listens on.

// giveUpBound is how long a command may take to give up with
// --hbase.connect-timeout=2s: far less than gohbase's own retries, which
// never end, and room for a busy machine.
const giveUpBound = 30 * time.Second

// TestUnreachableHBase: every command that talks to HBase gives up after
// --hbase.connect-timeout when its ZooKeeper quorum cannot be reached,
// exits 1 with an error naming the quorum and what failed, and says
// meanwhile that it waits.
func TestUnreachableHBase(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	quorum := testproc.FreeAddr(t) // free a moment ago: nobody listens
	flags := []string{"--storage.backend=hbase", "--hbase.zookeeper.quorum=" + quorum, "--hbase.connect-timeout=2s"}
	for _, args := range [][]string{
		{"create-tables"},
		{"create-tables", "--tenant=acme"},
		{"scan", "up", "--start=0", "--end=3600"},
		{"uid", "grep", "metrics", "up"},
		{"uid", "name", "metrics", "000001"},
		{"uid", "assign", "metrics", "up"},
		{"uid", "fsck"},
		{"compact", "--start=0", "--end=3600"},
		{"reindex", "--start=0", "--end=3600"},
		{"delete", "--match=up", "--start=0", "--end=3600"},
		{"rollup", "--start=0", "--end=3600"},
		{"tenants"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*giveUpBound)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(args, flags...)...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v after %s, want status 1\n%s", err, took, out.String())
			}
			if took > giveUpBound {
				t.Errorf("gave up after %s, want within %s", took, giveUpBound)
			}
			for _, want := range []string{
				"hbase: cannot reach ZooKeeper quorum " + quorum + " within 2s: zk: could not connect to a server",
				"waiting for HBase", "quorum=" + quorum,
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			t.Logf("gave up after %s", took.Round(100*time.Millisecond))
		})
	}
}

// get answers a GET of url: its status, body and Retry-After; status 0
// when it got no answer.
func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Retry-After")
}

// TestServeUnreachableHBase: `serve` on an HBase it cannot reach answers
// at once, /-/healthy with 200 and /-/ready (and every other endpoint)
// with 503 and the reason; it does not give up at
// --hbase.connect-timeout but tries again in the background, and stops
// cleanly on SIGTERM.
func TestServeUnreachableHBase(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"one tenant", nil},
		{"tenants", []string{"--auth.multitenancy-enabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			quorum, addr := testproc.FreeAddr(t), testproc.FreeAddr(t)
			for addr == quorum {
				addr = testproc.FreeAddr(t)
			}
			base := "http://" + addr
			args := append([]string{"serve", "--web.listen-address=" + addr, "--storage.backend=hbase",
				"--hbase.zookeeper.quorum=" + quorum, "--hbase.connect-timeout=2s"}, tc.extra...)
			srv := testproc.Start(t, "serve", exec.Command(bin, args...), filepath.Join(t.TempDir(), "serve.log"), 40)
			// Until a try has given up (after --hbase.connect-timeout) and
			// serve has logged that it tries again.
			poll.Until(t, giveUpBound, 50*time.Millisecond, "saying it tries again", func() (bool, string) {
				select {
				case <-srv.Exited():
					t.Fatalf("serve exited: %v\n%s", srv.Wait(), srv.Log())
				default:
				}
				return strings.Contains(srv.Log(), "trying again"), "serve's log:\n" + srv.Log()
			})
			code, body, retry := get(t, base+"/-/ready")
			want := "cannot reach ZooKeeper quorum " + quorum
			if code != http.StatusServiceUnavailable || !strings.Contains(body, want) || retry == "" {
				t.Errorf("/-/ready: %d %q (Retry-After %q), want 503 with Retry-After and %q", code, body, retry, want)
			}
			if code, body, _ := get(t, base+"/-/healthy"); code != http.StatusOK {
				t.Errorf("/-/healthy: %d %q, want 200", code, body)
			}
			if code, body, _ := get(t, base+"/api/v1/query?query=up"); code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
				t.Errorf("/api/v1/query: %d %q, want 503 with %q", code, body, want)
			}
			if code, _, _ := get(t, base+"/metrics"); code != http.StatusOK {
				t.Errorf("/metrics: %d, want 200", code)
			}
			stopServe(t, srv)
			if l := srv.Log(); !strings.Contains(l, "waiting for HBase") || !strings.Contains(l, "within 2s") {
				t.Errorf("serve's log lacks the wait and the try that gave up:\n%s", l)
			}
		})
	}
}
