// Package testuid gives tests of the packages above uid (series,
// metadata, ingest) a UID table on a fresh embedded store. Only tests
// import it.
package testuid

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// Store opens an embedded store with table tsdb-uid in a temporary
// directory, closed when the test ends.
func Store(tb testing.TB) store.Store {
	tb.Helper()
	return StoreWith(tb, "tsdb-uid")
}

// StoreWith opens an embedded store with tables in a temporary directory,
// closed when the test ends.
func StoreWith(tb testing.TB, tables ...string) store.Store {
	tb.Helper()
	st, err := embedded.Open(tb.TempDir(), embedded.Options{NoSync: true, Tables: tables})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// UIDs returns the UIDs of table tsdb-uid in st under layout, its metrics
// on a registry of their own.
func UIDs(tb testing.TB, st store.Store, layout mapping.Layout) *uid.UIDs {
	tb.Helper()
	u, err := uid.NewUIDs(st, layout, uid.UIDOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		tb.Fatal(err)
	}
	return u
}
