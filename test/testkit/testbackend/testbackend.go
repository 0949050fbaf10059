// Package testbackend gives tests a store of the backend chosen by the
// environment, with fresh tables that are dropped when the test ends.
//
//	PROMHBASE_TEST_BACKEND  embedded (default) or hbase
//	PROMHBASE_HBASE_ZK      ZooKeeper quorum of the test HBase (127.0.0.1:2181)
//
// Under CI=true a test that asks for HBase fails when HBase is not there;
// elsewhere it is skipped with a message.
package testbackend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
)

// Tables names the tables a test got.
type Tables struct {
	Data, UID, Exemplar string
	// Meta and Index are the series index's tables (OpenTSDB's tsdb-meta
	// and promhbase's tsdb-index).
	Meta, Index string
	// Rollup5m, Rollup1h and their pre-aggregation tables are the tables
	// of RollupConfig.
	Rollup5m, Rollup1h, RollupAgg5m, RollupAgg1h string
	// HA is the HA tracker's table (NewWithHA; always on the embedded
	// store).
	HA string
	// Rules is the ruler's table (NewWithHA, NewWithRules; always on the
	// embedded store).
	Rules string
}

// RollupTables returns the rollup and pre-aggregation tables.
func (tb Tables) RollupTables() []string {
	return []string{tb.Rollup5m, tb.RollupAgg5m, tb.Rollup1h, tb.RollupAgg1h}
}

// rollupTables is RollupTables, or none when tb has no rollup tables.
func (tb Tables) rollupTables() []string {
	if tb.Rollup5m == "" {
		return nil
	}
	return tb.RollupTables()
}

// RollupConfig returns promhbase's default rollup configuration
// (rollup.Default) over tb's tables.
func (tb Tables) RollupConfig() *rollup.Config {
	c, err := rollup.New(
		[]rollup.Aggregation{{Name: "sum", ID: 0}, {Name: "count", ID: 1}, {Name: "max", ID: 2}, {Name: "min", ID: 3}},
		[]rollup.Interval{
			{Table: tb.Data, PreAggregationTable: tb.Data + "-agg", Name: "1m", RowSpan: "1h", Default: true},
			{Table: tb.Rollup5m, PreAggregationTable: tb.RollupAgg5m, Name: "5m", RowSpan: "1d"},
			{Table: tb.Rollup1h, PreAggregationTable: tb.RollupAgg1h, Name: "1h", RowSpan: "1n"},
		})
	if err != nil {
		panic(err)
	}
	return c
}

// Name returns the backend in use.
func Name() string {
	if b := os.Getenv("PROMHBASE_TEST_BACKEND"); b != "" {
		return b
	}
	return "embedded"
}

var seq atomic.Int64

// uniqueSuffix returns a table-name suffix unique to this process and call.
func uniqueSuffix() string {
	return fmt.Sprintf("%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
}

// New returns a store with fresh data and UID tables (and, on the
// embedded store, the rollup tables; on HBase see NewWithRollups).
func New(t testing.TB) (store.Store, Tables) {
	t.Helper()
	return newStore(t, false, false)
}

// NewWithHA is New with the HA tracker's table on every backend.
func NewWithHA(t testing.TB) (store.Store, Tables) {
	t.Helper()
	return newStore(t, false, true)
}

// NewWithRules is New with the ruler's table (and the HA tracker's) on
// every backend.
func NewWithRules(t testing.TB) (store.Store, Tables) {
	t.Helper()
	return newStore(t, false, true)
}

// NewWithRollups is New with the rollup tables of RollupConfig on every
// backend.
func NewWithRollups(t testing.TB) (store.Store, Tables) {
	t.Helper()
	return newStore(t, true, false)
}

func newStore(t testing.TB, rollups, ha bool) (store.Store, Tables) {
	t.Helper()
	switch Name() {
	case "embedded":
		tb := Tables{Data: "tsdb", UID: "tsdb-uid", Exemplar: "tsdb-exemplar", Meta: "tsdb-meta", Index: "tsdb-index",
			Rollup5m: "tsdb-rollup-5m", Rollup1h: "tsdb-rollup-1h", RollupAgg5m: "tsdb-rollup-agg-5m", RollupAgg1h: "tsdb-rollup-agg-1h", HA: "tsdb-ha", Rules: "tsdb-rules"}
		s, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: append([]string{tb.Data, tb.UID, tb.Exemplar, tb.Meta, tb.Index, tb.HA, tb.Rules}, tb.RollupTables()...),
			BufferTables: []string{tb.Data, tb.Rollup5m, tb.Rollup1h},
			RowCodecs:    map[string]embedded.RowCodec{tb.Data: &dense.Pool{}, tb.Rollup5m: &rollup.Codec{}, tb.Rollup1h: &rollup.Codec{}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, tb
	case "hbase":
		return newHBase(t, rollups, ha)
	}
	t.Fatalf("unknown PROMHBASE_TEST_BACKEND %q (want embedded or hbase)", Name())
	return nil, Tables{}
}

// ServeFlags returns the storage flags that point a promhbase process at
// fresh tables of the backend in use: an empty embedded directory, or new
// HBase tables (dropped when the test ends).
func ServeFlags(t testing.TB) []string {
	t.Helper()
	switch Name() {
	case "embedded":
		return []string{"--storage.embedded.path=" + t.TempDir()}
	case "hbase":
		_, tb := newHBase(t, true, true)
		// The rollup tables of the test: a configuration naming them.
		cfg := filepath.Join(t.TempDir(), "rollups.json")
		if err := os.WriteFile(cfg, tb.RollupConfig().AppendJSON(nil), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"--storage.backend=hbase", "--hbase.zookeeper.quorum=" + ZKQuorum(),
			"--hbase.table.data=" + tb.Data, "--hbase.table.uid=" + tb.UID, "--hbase.table.exemplar=" + tb.Exemplar,
			"--hbase.table.meta=" + tb.Meta, "--hbase.table.index=" + tb.Index, "--hbase.table.ha=" + tb.HA, "--hbase.table.rules=" + tb.Rules, "--rollup.config-file=" + cfg}
	}
	t.Fatalf("unknown PROMHBASE_TEST_BACKEND %q (want embedded or hbase)", Name())
	return nil
}

// ProvisionTenant returns the function that creates a tenant's
// namespace in st (New's store), with the tables of tb in it on HBase;
// what it creates is dropped when the test ends.
func ProvisionTenant(t testing.TB, st store.Store, tb Tables) func(ctx context.Context, ns string) error {
	t.Helper()
	switch s := st.(type) {
	case *embedded.Store:
		return func(ctx context.Context, ns string) error {
			_, err := s.CreateNamespace(ctx, ns)
			return err
		}
	case *hbase.Store:
		return func(ctx context.Context, ns string) error {
			tables := append([]string{tb.Data, tb.UID, tb.Exemplar, tb.Meta, tb.Index}, tb.rollupTables()...)
			for _, n := range []string{tb.HA, tb.Rules} {
				if n != "" {
					tables = append(tables, n)
				}
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				drop := make([]string, len(tables))
				for i, n := range tables {
					drop[i] = store.NamespacedTable(ns, n)
				}
				if err := s.DropTables(ctx, drop...); err != nil {
					t.Logf("drop tenant tables: %v", err)
				}
				if err := s.DropNamespace(ctx, ns); err != nil {
					t.Logf("drop namespace %s: %v", ns, err)
				}
			})
			_, err := s.CreateTables(ctx, hbase.TablesConfig{Namespace: ns, DataTable: tb.Data, UIDTable: tb.UID, ExemplarTable: tb.Exemplar,
				MetaTable: tb.Meta, IndexTable: tb.Index, HATable: tb.HA, RulesTable: tb.Rules, RollupTables: tb.rollupTables()})
			return err
		}
	}
	t.Fatalf("no tenants on a %T", st)
	return nil
}
