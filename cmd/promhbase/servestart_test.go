package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testzk"
)

// answer is what h answers a GET of path.
func answer(h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// TestStartOnHBase: serve's start on HBase, in process, over a fake
// ZooKeeper (no HBase): it answers 503 with the reason until HBase is
// reached and the server built, builds again after the store was
// unavailable, gives up on other errors (fatal), and stops cleanly at
// any point (TestMain's leak check).
func TestStartOnHBase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		reachable bool
		fails     []error // build's errors, one per call, then success
		wantBuilt int     // calls of build
		fatal     bool
	}{
		{name: "built", reachable: true, wantBuilt: 1},
		{name: "store unavailable, built again", reachable: true, fails: []error{fmt.Errorf("exemplar table: %w", store.ErrUnavailable)}, wantBuilt: 2},
		{name: "a table missing", reachable: true, fails: []error{fmt.Errorf("table tsdb-exemplar: %w", store.ErrTableNotFound)}, wantBuilt: 1, fatal: true},
		{name: "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quorum := testzk.ClosedAddr(t)
			if tc.reachable {
				quorum = testzk.Start(t, map[string][]byte{"/hbase/meta-region-server": testzk.MetaZnode(t, testzk.Listen(t).Addr().String())})
			}
			h := &hbaseFlags{quorum: quorum, root: "/hbase", connectTimeout: time.Second}
			reg := prometheus.NewRegistry()
			var calls, stopped atomic.Int32
			build := func(ctx context.Context, sreg *prometheus.Registry) (http.Handler, func(), error) {
				n := int(calls.Add(1))
				if sreg == reg || sreg == nil {
					t.Errorf("build %d: given serve's registry, want one of its own", n)
				}
				if n <= len(tc.fails) {
					return nil, nil, tc.fails[n-1]
				}
				return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "built") }),
					func() { stopped.Add(1) }, nil
			}
			handler, fatal, stop := startOnHBase(h, reg, slog.New(slog.DiscardHandler), build)
			stopOnce := func() {
				if stop != nil {
					stop()
					stop = nil
				}
			}
			defer stopOnce()

			if code, body := answer(handler, "/-/healthy"); code != http.StatusOK {
				t.Errorf("/-/healthy: %d %q, want 200", code, body)
			}
			switch {
			case tc.fatal:
				select {
				case err := <-fatal:
					if !errors.Is(err, tc.fails[0]) {
						t.Errorf("fatal: %v, want %v", err, tc.fails[0])
					}
				case <-time.After(30 * time.Second):
					t.Fatal("no fatal error")
				}
			case tc.wantBuilt > 0:
				poll.Until(t, 30*time.Second, 10*time.Millisecond, "built", func() (bool, string) {
					code, body := answer(handler, "/-/ready")
					if code == http.StatusOK && body == "built" {
						return true, ""
					}
					if code != http.StatusServiceUnavailable || !strings.Contains(body, "promhbase is not ready: waiting for HBase for ") {
						t.Fatalf("/-/ready before it was built: %d %q", code, body)
					}
					return false, fmt.Sprintf("/-/ready: %d %q", code, body)
				})
			default:
				want := "cannot reach ZooKeeper quorum " + quorum + ": zk: could not connect to a server"
				poll.Until(t, 30*time.Second, 10*time.Millisecond, "naming "+want+" in /-/ready", func() (bool, string) {
					code, body := answer(handler, "/-/ready")
					if code != http.StatusServiceUnavailable {
						t.Fatalf("/-/ready: %d %q, want 503", code, body)
					}
					return strings.Contains(body, want), fmt.Sprintf("/-/ready: %q", body)
				})
				if code, body := answer(handler, "/api/v1/write"); code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
					t.Errorf("/api/v1/write: %d %q, want 503 naming %q", code, body, want)
				}
			}
			stopOnce()
			if got := int(calls.Load()); got != tc.wantBuilt {
				t.Errorf("build called %d times, want %d", got, tc.wantBuilt)
			}
			if want := map[bool]int32{true: 1, false: 0}[tc.wantBuilt > 0 && !tc.fatal]; stopped.Load() != want {
				t.Errorf("the built server's background stopped %d times, want %d", stopped.Load(), want)
			}
		})
	}
}
