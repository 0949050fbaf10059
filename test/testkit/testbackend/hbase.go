package testbackend

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
)

// ZKQuorum returns the ZooKeeper quorum of the test HBase.
func ZKQuorum() string {
	if q := os.Getenv("PROMHBASE_HBASE_ZK"); q != "" {
		return q
	}
	return "127.0.0.1:2181"
}

// HBaseMissing fails the test under CI=true and skips it elsewhere: the
// one place that decides what a test does when HBase is not there.
func HBaseMissing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("HBase at %s is required under CI=true (start it with tools/scripts/hbase.sh up): %v", ZKQuorum(), err)
	}
	t.Skipf("no HBase at %s (start it with `make hbase-up`): %v", ZKQuorum(), err)
}

// NewHBaseStore connects to the test HBase and checks that it serves.
func NewHBaseStore(t testing.TB) *hbase.Store {
	t.Helper()
	st, err := hbase.New(hbase.Config{ZKQuorum: ZKQuorum(), RPCTimeout: 20 * time.Second}, prometheus.NewRegistry(),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		HBaseMissing(t, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newHBase creates fresh tables, the rollup tables too when rollups is
// set (four more tables: only the tests that build rollups pay for them),
// the HA and rules tables when ha is.
func newHBase(t testing.TB, rollups, ha bool) (store.Store, Tables) {
	t.Helper()
	st := NewHBaseStore(t)
	sfx := uniqueSuffix()
	tb := Tables{Data: "tsdb_test_" + sfx, UID: "tsdb-uid_test_" + sfx, Exemplar: "tsdb-exemplar_test_" + sfx, Meta: "tsdb-meta_test_" + sfx, Index: "tsdb-index_test_" + sfx}
	if rollups {
		tb.Rollup5m, tb.Rollup1h = "tsdb-rollup-5m_test_"+sfx, "tsdb-rollup-1h_test_"+sfx
		tb.RollupAgg5m, tb.RollupAgg1h = "tsdb-rollup-agg-5m_test_"+sfx, "tsdb-rollup-agg-1h_test_"+sfx
	}
	if ha {
		tb.HA = "tsdb-ha_test_" + sfx
		tb.Rules = "tsdb-rules_test_" + sfx
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Up to three tries: with many tests creating tables at once, the
	// master once answered a create's progress poll with "procedure not
	// found"; CreateTables keeps the tables an earlier try made.
	cfg := hbase.TablesConfig{DataTable: tb.Data, UIDTable: tb.UID, ExemplarTable: tb.Exemplar, MetaTable: tb.Meta, IndexTable: tb.Index, HATable: tb.HA, RulesTable: tb.Rules, RollupTables: tb.rollupTables()}
	var err error
	for try := 0; try < 3; try++ {
		if _, err = st.CreateTables(ctx, cfg); err == nil {
			break
		}
	}
	if err != nil {
		HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		drop := append([]string{tb.Data, tb.UID, tb.Exemplar, tb.Meta, tb.Index}, tb.rollupTables()...)
		for _, n := range []string{tb.HA, tb.Rules} {
			if n != "" {
				drop = append(drop, n)
			}
		}
		if err := st.DropTables(ctx, drop...); err != nil {
			t.Logf("drop test tables: %v", err)
		}
	})
	return st, tb
}
