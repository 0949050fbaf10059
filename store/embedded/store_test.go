package embedded

import (
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

// contractStore returns the storetest factory of a store opened with opts
// in a fresh directory, whose table "contract" the contract runs on.
func contractStore(opts Options) func(t *testing.T) (store.Store, string) {
	return func(t *testing.T) (store.Store, string) {
		t.Helper()
		s := openTemp(t, opts)
		return s, "contract"
	}
}

func TestContract(t *testing.T) {
	storetest.Run(t, contractStore(Options{NoSync: true, Tables: []string{"contract"}}), storetest.Options{})
}

// TestContractBuffered runs the contract on a table in the row buffer:
// with a budget no test reaches (cells stay in memory, merged with
// Pebble's on reads) and with one of a few bytes (a flush after every
// put: cells in Pebble, put there by ingestion, while deletes and reads
// run against flushes), and with the log synced in the background
// (LogSyncInterval: acknowledged once written, fdatasynced each
// millisecond).
func TestContractBuffered(t *testing.T) {
	for _, tc := range []struct {
		name     string
		budget   int64
		interval time.Duration
	}{{"in memory", 1 << 30, 0}, {"flushing", 1, 0}, {"log synced each ms", 1 << 30, time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{NoSync: tc.interval == 0, LogSyncInterval: tc.interval, Tables: []string{"contract"}, BufferTables: []string{"contract"}, BufferBytes: tc.budget}
			storetest.Run(t, contractStore(opts), storetest.Options{})
		})
	}
}

// plainStore hides every method of a store but store.Store's: the
// contract's DeleteRows then takes the path of a store without a range
// delete (scans and deletes in batches), as on HBase.
type plainStore struct{ store.Store }

func TestContractPlainStore(t *testing.T) {
	newTable := contractStore(Options{NoSync: true, Tables: []string{"contract"}, BufferTables: []string{"contract"}})
	storetest.Run(t, func(t *testing.T) (store.Store, string) {
		s, table := newTable(t)
		return plainStore{s}, table
	}, storetest.Options{LargeScanRows: 20_000})
}

// mustOpen opens the store in dir with opts, failing t if it cannot.
func mustOpen(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openTemp opens a store with opts in a new temporary directory, failing t
// if it cannot, and closes it when t ends.
func openTemp(t *testing.T, opts Options) *Store {
	t.Helper()
	s := mustOpen(t, t.TempDir(), opts)
	t.Cleanup(func() { s.Close() })
	return s
}
