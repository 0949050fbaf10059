package hbase

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testlog"
	"github.com/promhbase/promhbase/test/testkit/testzk"
)

// These tests need no HBase: Probe meets a fake ZooKeeper (testzk), plain
// listeners standing for HBase's servers, and ports nobody listens on.

// TestProbe: Probe reaches a cluster whose ZooKeeper and servers answer,
// and otherwise gives up at Config.ConnectTimeout with an
// *UnreachableError naming the quorum and what failed, logging
// meanwhile, with no goroutine left behind (TestMain's check).
// refusedOrLate is the cause a dial to a closed port gives: refused, or,
// on a machine so loaded that the second went by before the dial, its
// timeout (a want of TestProbe's; "|" separates what may stand there).
const refusedOrLate = "connection refused|i/o timeout"

func TestProbe(t *testing.T) {
	up, up2 := testzk.Listen(t).Addr().String(), testzk.Listen(t).Addr().String()
	down := testzk.ClosedAddr(t)
	hang := testzk.Listen(t).Addr().String() // accepts, never answers
	for _, tc := range []struct {
		name   string
		quorum func(t *testing.T) string
		master bool
		want   []string // in the error; none: Probe succeeds
		is     error
		silent bool // no failure for OnWait before Probe gives up
	}{
		{name: "reached", quorum: func(t *testing.T) string {
			return testzk.Start(t, map[string][]byte{"/hbase/meta-region-server": testzk.MetaZnode(t, up)})
		}},
		{name: "reached with the master", master: true, quorum: func(t *testing.T) string {
			return testzk.Start(t, map[string][]byte{"/hbase/meta-region-server": testzk.MetaZnode(t, up), "/hbase/master": testzk.MasterZnode(t, up2)})
		}},
		{name: "no ZooKeeper", quorum: func(*testing.T) string { return down },
			want: []string{"hbase: cannot reach ZooKeeper quorum " + down + " within 1s", "zk: could not connect to a server", "connection refused"}, is: zk.ErrNoServer},
		{name: "ZooKeeper never answers", quorum: func(*testing.T) string { return hang },
			want: []string{"hbase: cannot reach ZooKeeper quorum " + hang + " within 1s", "gave no ZooKeeper session"}, is: context.DeadlineExceeded, silent: true},
		{name: "no HBase in ZooKeeper", quorum: func(t *testing.T) string { return testzk.Start(t, nil) },
			want: []string{"cannot read /hbase/meta-region-server from ZooKeeper quorum 127.0.0.1:", "within 1s", "node does not exist", "zookeeper.znode.parent /hbase"}, is: zk.ErrNoNode},
		{name: "meta's region server down", quorum: func(t *testing.T) string {
			return testzk.Start(t, map[string][]byte{"/hbase/meta-region-server": testzk.MetaZnode(t, down)})
		}, want: []string{"cannot reach the region server of hbase:meta " + down + " (from /hbase/meta-region-server in ZooKeeper quorum 127.0.0.1:", "within 1s", refusedOrLate}},
		{name: "master down", master: true, quorum: func(t *testing.T) string {
			return testzk.Start(t, map[string][]byte{"/hbase/meta-region-server": testzk.MetaZnode(t, up), "/hbase/master": testzk.MasterZnode(t, down)})
		}, want: []string{"cannot reach the HBase master " + down, "within 1s", refusedOrLate}},
		{name: "master unknown", master: true, quorum: func(t *testing.T) string {
			return testzk.Start(t, map[string][]byte{"/hbase/meta-region-server": testzk.MetaZnode(t, up)})
		}, want: []string{"cannot read /hbase/master from ZooKeeper quorum", "node does not exist"}, is: zk.ErrNoNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			quorum := tc.quorum(t)
			var logs testlog.Buffer
			var waits sync.Map
			err := Probe(t.Context(), Config{ZKQuorum: quorum, ConnectTimeout: time.Second}, ProbeOptions{
				Master: tc.master, Logger: slog.New(slog.NewTextHandler(&logs, nil)), LogInterval: 100 * time.Millisecond,
				OnWait: func(err error) { waits.Store(err.Error(), true) },
			})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Probe: %v", err)
				}
				return
			}
			t.Logf("Probe: %v", err)
			ue, ok := errors.AsType[*UnreachableError](err)
			if !ok {
				t.Fatalf("Probe: %v (%T), want an *UnreachableError", err, err)
			}
			if ue.Quorum != quorum || ue.Timeout != time.Second || !strings.Contains(err.Error(), quorum) {
				t.Errorf("error %q: quorum %q, timeout %s; want quorum %q named, timeout 1s", err, ue.Quorum, ue.Timeout, quorum)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(strings.Split(w, "|"), func(w string) bool { return strings.Contains(err.Error(), w) }) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !errors.Is(err, store.ErrUnavailable) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("error %v: errors.Is store.ErrUnavailable %v, %v %v", err, errors.Is(err, store.ErrUnavailable), tc.is, errors.Is(err, tc.is))
			}
			if l := logs.String(); !strings.Contains(l, "waiting for HBase") || !strings.Contains(l, "quorum="+quorum) {
				t.Errorf("no warning while waiting:\n%s", l)
			}
			if !tc.silent {
				told := false
				waits.Range(func(k, _ any) bool { told = strings.Contains(k.(string), quorum); return !told })
				if !told {
					t.Errorf("OnWait was never told of a failure naming %s", quorum)
				}
			}
		})
	}
}

// TestProbeInterrupted: Probe returns when its context ends, saying so,
// with the failure it had met.
func TestProbeInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	down := testzk.ClosedAddr(t)
	err := Probe(ctx, Config{ZKQuorum: down, ConnectTimeout: time.Hour}, ProbeOptions{OnWait: func(error) { cancel() }})
	ue, ok := errors.AsType[*UnreachableError](err)
	if !ok || ue.Timeout != 0 || !errors.Is(err, context.Canceled) || !errors.Is(err, zk.ErrNoServer) ||
		!strings.Contains(err.Error(), "hbase: cannot reach ZooKeeper quorum "+down+" (tried for") || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Probe = %v, want an interrupted *UnreachableError naming %s", err, down)
	}
}

func TestParseServer(t *testing.T) {
	meta := testzk.MetaZnode(t, "rs1.example.com:16020")
	for _, tc := range []struct {
		name, znode string
		data        []byte
		want        string // "": an error
	}{
		{"meta", "/hbase/meta-region-server", meta, "rs1.example.com:16020"},
		{"master", "/hbase/master", testzk.MasterZnode(t, "[::1]:16000"), "[::1]:16000"},
		{"empty", "/hbase/meta-region-server", nil, ""},
		{"no 0xFF", "/hbase/meta-region-server", append([]byte{0}, meta[1:]...), ""},
		{"metadata past the end", "/hbase/meta-region-server", meta[:8], ""},
		{"no PBUF", "/hbase/meta-region-server", bytes.Replace(meta, []byte("PBUF"), []byte("JSON"), 1), ""},
		{"no server", "/hbase/meta-region-server", meta[:len(meta)-len("rs1.example.com")-10], ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseServer(tc.znode, tc.data)
			if tc.want == "" {
				if err == nil || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.znode) {
					t.Fatalf("parseServer = %q, %v; want an invalid error naming %s", got, err, tc.znode)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseServer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestQuorumServers(t *testing.T) {
	got := strings.Join(quorumServers(" zk1:2181, zk2:2181,,zk3 "), "|")
	if got != "zk1:2181|zk2:2181|zk3" {
		t.Errorf("quorumServers = %q", got)
	}
}
