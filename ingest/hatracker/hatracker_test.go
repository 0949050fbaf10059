package hatracker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testclock"
)

// rig is an HA table on the test backend and the clock of the trackers
// (processes) over it, which they share as processes share time.
type rig struct {
	*testclock.Clock
	st store.Store
	tb testbackend.Tables
}

func newRig(t *testing.T) *rig {
	st, tb := testbackend.NewWithHA(t)
	return &rig{Clock: testclock.New(time.Unix(1_700_000_000, 0)), st: st, tb: tb}
}

// cfg is Mimir's defaults but the jitter (none, so that update times are
// exact), over r's HA table and clock.
func (r *rig) cfg() hatracker.Config {
	return hatracker.Config{Table: r.tb.HA, ClusterLabel: "cluster", ReplicaLabel: "__replica__",
		FailoverTimeout: 30 * time.Second, UpdateTimeout: 15 * time.Second, Now: r.Now}
}

// tracker is a new tracker over r with r.cfg(), and its registry.
func (r *rig) tracker(t *testing.T) (*hatracker.Tracker, *prometheus.Registry) {
	t.Helper()
	return newTracker(t, r.st, r.cfg())
}

func newTracker(t *testing.T, st store.Store, c hatracker.Config) (*hatracker.Tracker, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	tr, err := hatracker.New(st, c, reg)
	if err != nil {
		t.Fatal(err)
	}
	return tr, reg
}

// expect checks that replica's write to cluster is accepted (ok) or
// dropped as not elected.
func expect(t *testing.T, tr *hatracker.Tracker, cluster, replica string, ok bool) {
	t.Helper()
	err := tr.Check(context.Background(), hatracker.DefaultTenant, cluster, replica)
	switch {
	case ok && err != nil:
		t.Fatalf("%s/%s: %v, want accepted", cluster, replica, err)
	case !ok && !errors.Is(err, hatracker.ErrNotElected):
		t.Fatalf("%s/%s: %v, want not elected", cluster, replica, err)
	}
}

// TestElectionAndFailover: the first replica seen is elected; the other is
// dropped while the elected one writes, and elected once it has sent
// nothing for the failover timeout; the old one is dropped then.
func TestElectionAndFailover(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	tr, reg := r.tracker(t)
	expect(t, tr, "prod", "a", true)
	expect(t, tr, "prod", "b", false)
	expect(t, tr, "other", "b", true) // clusters are independent
	for range 10 {                    // a writes every 10 s: never failed over
		r.Add(10 * time.Second)
		expect(t, tr, "prod", "a", true)
		expect(t, tr, "prod", "b", false)
	}
	r.Add(29 * time.Second) // a silent, but not for the failover timeout
	expect(t, tr, "prod", "b", false)
	r.Add(16 * time.Second) // a's last stored time is now 30 s old or more
	expect(t, tr, "prod", "b", true)
	expect(t, tr, "prod", "a", false)
	want := `# HELP promhbase_ha_tracker_elected_replica 1 for the elected replica of each HA cluster, as this process last read or wrote it (as Mimir's cortex_ha_tracker_elected_replica_status).
# TYPE promhbase_ha_tracker_elected_replica gauge
promhbase_ha_tracker_elected_replica{cluster="other",replica="b",tenant="anonymous"} 1
promhbase_ha_tracker_elected_replica{cluster="prod",replica="b",tenant="anonymous"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "promhbase_ha_tracker_elected_replica"); err != nil {
		t.Error(err)
	}
	es, err := tr.Elections(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Cluster != "prod" || es[1].Replica != "b" || es[1].ElectedChanges != 1 || es[1].Tenant != hatracker.DefaultTenant {
		t.Fatalf("elections %+v", es)
	}
}

// TestUpdatesAtMostEveryUpdateTimeout: the elected replica's writes reach
// the store once per update timeout, not once per request.
func TestUpdatesAtMostEveryUpdateTimeout(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	tr, reg := r.tracker(t)
	for range 60 { // a minute of a write a second
		expect(t, tr, "prod", "a", true)
		r.Add(time.Second)
	}
	// The election, then an update at 15, 30 and 45 s.
	want := `# HELP promhbase_ha_tracker_store_writes_total Check-and-puts of elections, by outcome: written, or lost to another process.
# TYPE promhbase_ha_tracker_store_writes_total counter
promhbase_ha_tracker_store_writes_total{outcome="written"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "promhbase_ha_tracker_store_writes_total"); err != nil {
		t.Fatal(err)
	}
}

// TestTwoProcesses: two trackers over one store, as two promhbase
// processes: one sees the elected replica's writes, the other the other
// replica's. The second does not fail over while the first keeps the
// stored time fresh; once the elected replica stops, the second elects
// the other, and the first learns it at the next write it gets.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p1, _ := r.tracker(t)
	p2, _ := r.tracker(t)
	expect(t, p1, "prod", "a", true)
	for range 12 { // two minutes: a through p1, b through p2
		r.Add(10 * time.Second)
		expect(t, p1, "prod", "a", true)
		expect(t, p2, "prod", "b", false)
	}
	r.Add(31 * time.Second) // a stops
	expect(t, p2, "prod", "b", true)
	expect(t, p1, "prod", "b", true) // p1 reads the failover p2 decided
	expect(t, p1, "prod", "a", false)
}

// TestConcurrentFailover: processes that see two other replicas after the
// elected one went quiet, at once, elect exactly one of them.
func TestConcurrentFailover(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first, _ := r.tracker(t)
	expect(t, first, "prod", "a", true)
	r.Add(time.Minute)
	var trackers []*hatracker.Tracker
	for range 8 {
		tr, _ := r.tracker(t)
		trackers = append(trackers, tr)
	}
	accepted := make([]string, len(trackers))
	var wg sync.WaitGroup
	for i, tr := range trackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replica := []string{"b", "c"}[i%2]
			err := tr.Check(context.Background(), hatracker.DefaultTenant, "prod", replica)
			switch {
			case err == nil:
				accepted[i] = replica
			case !errors.Is(err, hatracker.ErrNotElected):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	winner := ""
	for _, r := range accepted {
		if r != "" && winner != "" && r != winner {
			t.Fatalf("both %s and %s were accepted: %v", winner, r, accepted)
		}
		if r != "" {
			winner = r
		}
	}
	if winner == "" {
		t.Fatalf("nobody elected: %v", accepted)
	}
}

// TestMaxClusters: a write that would start one cluster too many gets
// ErrTooManyClusters; clusters already elected go on.
func TestMaxClusters(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	conf := r.cfg()
	conf.MaxClusters = 2
	tr, _ := newTracker(t, r.st, conf)
	expect(t, tr, "c1", "a", true)
	expect(t, tr, "c2", "a", true)
	if err := tr.Check(t.Context(), hatracker.DefaultTenant, "c3", "a"); !errors.Is(err, hatracker.ErrTooManyClusters) {
		t.Fatalf("a third cluster: %v, want ErrTooManyClusters", err)
	}
	expect(t, tr, "c1", "a", true)
}

// TestRestartKeepsElection: a new tracker over the same store (a restart)
// keeps the elected replica.
func TestRestartKeepsElection(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	before, _ := r.tracker(t)
	expect(t, before, "prod", "b", true)
	r.Add(5 * time.Second)
	after, _ := r.tracker(t)
	expect(t, after, "prod", "a", false)
	expect(t, after, "prod", "b", true)
}

// TestUnparseableElection: a stored value that does not parse (written by
// hand, or by a future version) is replaced by the next write's replica,
// never refused: refusing would drop the pair's data.
func TestUnparseableElection(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	key := append([]byte(hatracker.DefaultTenant+"\x00"), "prod"...)
	if err := r.st.Put(t.Context(), r.tb.HA, []store.Put{{Row: key, Cells: []store.Cell{{Family: []byte(hatracker.Family), Qualifier: []byte(hatracker.Qualifier), Value: []byte("{not json")}}}}); err != nil {
		t.Fatal(err)
	}
	tr, _ := r.tracker(t)
	expect(t, tr, "prod", "b", true)
	expect(t, tr, "prod", "a", false)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := hatracker.Config{ClusterLabel: "cluster", ReplicaLabel: "__replica__", FailoverTimeout: 30 * time.Second,
		UpdateTimeout: 15 * time.Second, UpdateTimeoutJitterMax: 5 * time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*hatracker.Config){
		"failover not above update plus jitter": func(c *hatracker.Config) { c.FailoverTimeout = 20 * time.Second },
		"same labels":                           func(c *hatracker.Config) { c.ReplicaLabel = "cluster" },
		"no cluster label":                      func(c *hatracker.Config) { c.ClusterLabel = "" },
		"no update timeout":                     func(c *hatracker.Config) { c.UpdateTimeout = 0 },
		"negative max clusters":                 func(c *hatracker.Config) { c.MaxClusters = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			mod(&c)
			if err := c.Validate(); err == nil {
				t.Fatalf("%+v accepted", c)
			}
		})
	}
}
