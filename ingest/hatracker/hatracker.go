// Package hatracker deduplicates the writes of HA Prometheus pairs as
// Mimir's HA tracker does: two (or more) Prometheus replicas scrape the
// same targets and remote-write with the same cluster label and different
// replica labels; of each cluster, one elected replica's writes are stored
// (without the replica label), the others' are dropped and answered 202,
// until the elected replica has sent nothing for the failover timeout.
//
// The elections live in the store, so that every promhbase process agrees
// and they survive restarts: one row per tenant and cluster in the HA
// table (promhbase's own, `tsdb-ha` by default; OpenTSDB never reads it),
//
//	row key   tenant 0x00 cluster
//	family    h
//	qualifier e
//	value     JSON: {"replica":"b","received_at":1700000000000,
//	          "elected_at":1700000000000,"elected_changes":1}
//	          (Mimir's ReplicaDesc fields; times in Unix ms)
//
// changed only with check-and-puts on the value last read. The hot path
// reads a cache: the elected replica's last-seen time is written at most
// every update timeout plus a jitter, a failover is decided on the stored
// value read again, and a replica that is not elected reads the store at
// most once a second per cluster, to learn of a failover another process
// decided.
//
// Its metrics and the /distributor/ha_tracker page (http.go, as Mimir's)
// show the elections; the page answers 503 when the store fails.
package hatracker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
)

// Family and Qualifier are the column of an election.
const (
	Family    = "h"
	Qualifier = "e"
)

// DefaultTenant is the tenant of every write while tenants are off, as in
// Mimir.
const DefaultTenant = "anonymous"

// ErrNotElected means a write came from a replica that is not the elected
// one of its cluster: it is dropped and answered 202, so that the sender
// does not retry it.
var ErrNotElected = errors.New("replicas did not match, rejecting sample")

// ErrTooManyClusters means a write would start one more HA cluster than
// the tenant may have (400).
var ErrTooManyClusters = errors.New("too many HA clusters")

// Config configures a Tracker.
type Config struct {
	// Table is the HA table.
	Table string
	// ClusterLabel and ReplicaLabel name the labels that identify a
	// Prometheus HA pair and each replica in it.
	ClusterLabel, ReplicaLabel string
	// FailoverTimeout is how long the elected replica may send nothing
	// before another replica of its cluster is elected.
	FailoverTimeout time.Duration
	// UpdateTimeout is how often, at most, the elected replica's last-seen
	// time is written to the store; each cluster adds a random jitter of
	// up to UpdateTimeoutJitterMax.
	UpdateTimeout, UpdateTimeoutJitterMax time.Duration
	// MaxClusters bounds the clusters of one tenant; 0 means no bound.
	MaxClusters int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate checks the configuration as Mimir does: the failover timeout
// must exceed the update timeout plus its jitter, or a replica that is
// still sending could be failed over.
func (c Config) Validate() error {
	switch {
	case c.ClusterLabel == "" || c.ReplicaLabel == "":
		return fmt.Errorf("ha tracker: the cluster and replica labels must be set (cluster %q, replica %q)", c.ClusterLabel, c.ReplicaLabel)
	case c.ClusterLabel == c.ReplicaLabel:
		return fmt.Errorf("ha tracker: the cluster and replica labels are both %q", c.ClusterLabel)
	case c.UpdateTimeout <= 0 || c.UpdateTimeoutJitterMax < 0:
		return fmt.Errorf("ha tracker: update timeout %s and jitter %s: the timeout must be positive, the jitter not negative", c.UpdateTimeout, c.UpdateTimeoutJitterMax)
	case c.FailoverTimeout <= c.UpdateTimeout+c.UpdateTimeoutJitterMax:
		return fmt.Errorf("ha tracker: failover timeout %s must be greater than the update timeout %s plus its jitter %s",
			c.FailoverTimeout, c.UpdateTimeout, c.UpdateTimeoutJitterMax)
	case c.MaxClusters < 0:
		return fmt.Errorf("ha tracker: max clusters %d is negative", c.MaxClusters)
	}
	return nil
}

// trackerStore is the part of store.Store the tracker uses.
type trackerStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error)
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// Election is the stored state of one cluster.
type Election struct {
	Tenant  string `json:"-"`
	Cluster string `json:"-"`
	// Replica is the elected replica.
	Replica string `json:"replica"`
	// ReceivedAt is when the elected replica was last seen, as last
	// written (Unix ms): at most the update timeout plus jitter behind.
	ReceivedAt int64 `json:"received_at"`
	// ElectedAt is when Replica was elected (Unix ms).
	ElectedAt int64 `json:"elected_at"`
	// ElectedChanges counts the elections of the cluster after its first.
	ElectedChanges int64 `json:"elected_changes"`
}

// entry is the cache's view of one cluster.
type entry struct {
	mu     sync.Mutex
	e      Election
	raw    []byte        // the stored value e was read from or written as; nil: none stored
	jitter time.Duration // this process's jitter of the cluster's updates
	read   time.Time     // when raw was last read from the store
}

// Tracker decides which writes of HA pairs are stored. It is safe for
// concurrent use.
type Tracker struct {
	st  trackerStore
	cfg Config

	mu      sync.Mutex
	entries map[string]*entry // by row key

	changes  *prometheus.CounterVec
	deduped  *prometheus.CounterVec
	lastSeen *prometheus.GaugeVec
	elected  *prometheus.GaugeVec
	writes   *prometheus.CounterVec
	shown    map[string]string // the replica elected shows for each row key
}

// New returns a Tracker over st. It registers its metrics on reg (nil:
// none).
func New(st trackerStore, cfg Config, reg prometheus.Registerer) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	t := &Tracker{st: st, cfg: cfg, entries: map[string]*entry{}, shown: map[string]string{},
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promhbase_ha_tracker_elected_replica_changes_total",
			Help: "Times the elected replica of an HA cluster changed, as this process decided or learnt it."}, []string{"tenant", "cluster"}),
		deduped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promhbase_ha_tracker_deduped_samples_total",
			Help: "Samples (floats and histograms) dropped because they came from a replica that is not the elected one of their cluster."}, []string{"tenant", "cluster"}),
		lastSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promhbase_ha_tracker_elected_replica_timestamp_seconds",
			Help: "When the elected replica of an HA cluster was last seen, as stored."}, []string{"tenant", "cluster"}),
		elected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promhbase_ha_tracker_elected_replica",
			Help: "1 for the elected replica of each HA cluster, as this process last read or wrote it (as Mimir's cortex_ha_tracker_elected_replica_status)."}, []string{"tenant", "cluster", "replica"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promhbase_ha_tracker_store_writes_total",
			Help: "Check-and-puts of elections, by outcome: written, or lost to another process."}, []string{"outcome"}),
	}
	if reg != nil {
		// The trackers of several tenants share reg: the first registers
		// the metrics (labelled by tenant), the others use its.
		t.changes = register(reg, t.changes)
		t.deduped = register(reg, t.deduped)
		t.lastSeen = register(reg, t.lastSeen)
		t.elected = register(reg, t.elected)
		t.writes = register(reg, t.writes)
		for _, c := range []prometheus.Collector{t.changes, t.deduped, t.lastSeen, t.elected, t.writes} {
			if c == nil {
				return nil, fmt.Errorf("ha tracker: register metrics: %w", errRegister)
			}
		}
	}
	return t, nil
}

var errRegister = errors.New("a metric of another kind has the name")

// register registers c on reg and returns it, or the collector of the
// same description registered before; nil when reg refuses c otherwise.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if ex, ok := are.ExistingCollector.(C); ok {
			return ex
		}
	}
	var zero C
	return zero
}

// Config returns the tracker's configuration.
func (t *Tracker) Config() Config { return t.cfg }

// rowKey is tenant 0x00 cluster.
func rowKey(tenant, cluster string) []byte {
	k := make([]byte, 0, len(tenant)+1+len(cluster))
	return append(append(append(k, tenant...), 0), cluster...)
}

// Check decides a write whose first series carries cluster and replica:
// nil when it is to be stored (replica is, or has just become, the
// elected one), an error wrapping ErrNotElected when it is to be dropped,
// ErrTooManyClusters when cluster would be one too many for the tenant,
// or the store's error.
func (t *Tracker) Check(ctx context.Context, tenant, cluster, replica string) error {
	key := rowKey(tenant, cluster)
	t.mu.Lock()
	en := t.entries[string(key)]
	if en == nil {
		en = &entry{}
		if j := t.cfg.UpdateTimeoutJitterMax; j > 0 {
			en.jitter = rand.N(j)
		}
		t.entries[string(key)] = en
	}
	t.mu.Unlock()
	en.mu.Lock()
	defer en.mu.Unlock()
	now := t.cfg.Now()
	if en.read.IsZero() {
		if err := t.load(ctx, en, key); err != nil {
			return err
		}
	}
	for range 8 {
		switch en.e.Replica {
		case "":
			// No election yet (or one that does not parse): this
			// replica is the first.
			if en.raw == nil {
				if err := t.checkClusters(ctx, tenant); err != nil {
					return err
				}
			}
			ok, err := t.swap(ctx, en, key, Election{Replica: replica, ReceivedAt: now.UnixMilli(), ElectedAt: now.UnixMilli()})
			if err != nil || ok {
				return err
			}
		case replica:
			if now.Sub(time.UnixMilli(en.e.ReceivedAt)) < t.cfg.UpdateTimeout+en.jitter {
				return nil
			}
			next := en.e
			next.ReceivedAt = now.UnixMilli()
			ok, err := t.swap(ctx, en, key, next)
			if err != nil || ok {
				return err
			}
		default:
			stale := now.Sub(time.UnixMilli(en.e.ReceivedAt)) >= t.cfg.FailoverTimeout
			if !stale && now.Sub(en.read) < time.Second {
				return t.notElected(tenant, cluster, replica, en)
			}
			// Read the stored election again: another process may have
			// seen the elected replica since, or elected another.
			if err := t.load(ctx, en, key); err != nil {
				return err
			}
			if en.e.Replica == "" || en.e.Replica == replica {
				continue
			}
			if now.Sub(time.UnixMilli(en.e.ReceivedAt)) < t.cfg.FailoverTimeout {
				return t.notElected(tenant, cluster, replica, en)
			}
			next := Election{Replica: replica, ReceivedAt: now.UnixMilli(), ElectedAt: now.UnixMilli(), ElectedChanges: en.e.ElectedChanges + 1}
			ok, err := t.swap(ctx, en, key, next)
			if err != nil {
				return err
			}
			if ok {
				t.changes.WithLabelValues(tenant, cluster).Inc()
				return nil
			}
		}
	}
	return fmt.Errorf("ha tracker: cluster %q: too many concurrent changes to its election: %w", cluster, store.ErrUnavailable)
}

// Decide is Check for the write path: drop is true (with the error that
// says why) when the write is to be dropped.
func (t *Tracker) Decide(ctx context.Context, tenant, cluster, replica string) (drop bool, err error) {
	err = t.Check(ctx, tenant, cluster, replica)
	return errors.Is(err, ErrNotElected), err
}

func (t *Tracker) notElected(tenant, cluster, replica string, en *entry) error {
	return fmt.Errorf("%w: %s=%q, %s=%q, elected=%q (tenant %q)", ErrNotElected, t.cfg.ClusterLabel, cluster, t.cfg.ReplicaLabel, replica, en.e.Replica, tenant)
}

// Deduped counts n samples of cluster dropped.
func (t *Tracker) Deduped(tenant, cluster string, n int) {
	t.deduped.WithLabelValues(tenant, cluster).Add(float64(n))
}

// load reads the stored election of key into en.
func (t *Tracker) load(ctx context.Context, en *entry, key []byte) error {
	row, err := t.st.Get(ctx, t.cfg.Table, key, Family)
	if err != nil {
		return fmt.Errorf("ha tracker: read the election of %q: %w", key, err)
	}
	en.read = t.cfg.Now()
	var raw []byte
	for _, c := range row.Cells {
		if string(c.Qualifier) == Qualifier {
			raw = c.Value
		}
	}
	if raw == nil {
		en.raw, en.e = nil, Election{}
		return nil
	}
	var e Election
	if err := json.Unmarshal(raw, &e); err != nil {
		// A value that does not parse names no replica: the next
		// write elects its own, replacing it (with a check-and-put on
		// these very bytes).
		e = Election{}
	}
	if en.raw != nil && e.Replica != en.e.Replica {
		tenant, cluster, _ := bytes.Cut(key, []byte{0})
		t.changes.WithLabelValues(string(tenant), string(cluster)).Inc()
	}
	en.raw, en.e = bytes.Clone(raw), e
	t.seen(key, e)
	return nil
}

// swap writes next in place of en's stored value; false: another process
// changed it first, and en now holds what it wrote.
func (t *Tracker) swap(ctx context.Context, en *entry, key []byte, next Election) (bool, error) {
	raw, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("ha tracker: encode an election: %w", err)
	}
	put := store.Put{Row: key, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(Qualifier), Value: raw}}}
	ok, err := t.st.CheckAndPut(ctx, t.cfg.Table, put, Family, Qualifier, en.raw)
	if err != nil {
		return false, fmt.Errorf("ha tracker: write the election of %q: %w", key, err)
	}
	if ok {
		// An election acknowledged only once it is durable, so that a
		// restart keeps it.
		if err := store.Sync(ctx, t.st); err != nil {
			return false, fmt.Errorf("ha tracker: write the election of %q: %w", key, err)
		}
		t.writes.WithLabelValues("written").Inc()
		en.raw, en.e, en.read = raw, next, t.cfg.Now()
		t.seen(key, next)
		return true, nil
	}
	t.writes.WithLabelValues("lost").Inc()
	return false, t.load(ctx, en, key)
}

func (t *Tracker) seen(key []byte, e Election) {
	tenant, cluster, _ := bytes.Cut(key, []byte{0})
	t.lastSeen.WithLabelValues(string(tenant), string(cluster)).Set(float64(e.ReceivedAt) / 1000)
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.shown[string(key)]; ok && old == e.Replica {
		return
	} else if ok {
		t.elected.DeleteLabelValues(string(tenant), string(cluster), old)
	}
	t.shown[string(key)] = e.Replica
	t.elected.WithLabelValues(string(tenant), string(cluster), e.Replica).Set(1)
}

// checkClusters refuses a new cluster beyond MaxClusters for tenant,
// counting the tenant's stored elections.
func (t *Tracker) checkClusters(ctx context.Context, tenant string) error {
	if t.cfg.MaxClusters == 0 {
		return nil
	}
	prefix := rowKey(tenant, "")
	n := 0
	sc := t.st.Scan(ctx, store.ScanRequest{Table: t.cfg.Table, Start: prefix, Stop: prefixEnd(prefix), Family: Family, KeysOnly: true})
	for sc.Next() {
		n++
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		return fmt.Errorf("ha tracker: count the clusters of tenant %q: %w", tenant, err)
	}
	if n >= t.cfg.MaxClusters {
		return fmt.Errorf("%w (limit: %d) for tenant %q", ErrTooManyClusters, t.cfg.MaxClusters, tenant)
	}
	return nil
}

// prefixEnd returns the first key after every key starting with p (p
// ends with 0x00, so incrementing its last byte is enough).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	end[len(end)-1]++
	return end
}

// Elections returns every stored election, in table order.
func (t *Tracker) Elections(ctx context.Context) ([]Election, error) {
	var out []Election
	sc := t.st.Scan(ctx, store.ScanRequest{Table: t.cfg.Table, Family: Family})
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		tenant, cluster, ok := bytes.Cut(row.Key, []byte{0})
		if !ok {
			continue
		}
		for _, c := range row.Cells {
			if string(c.Qualifier) != Qualifier {
				continue
			}
			var e Election
			if err := json.Unmarshal(c.Value, &e); err != nil {
				e = Election{} // listed with no replica; the next write replaces it
			}
			e.Tenant, e.Cluster = string(tenant), string(cluster)
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ha tracker: list elections: %w", err)
	}
	return out, nil
}
