package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when they leave goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// On HBase (PROMHBASE_TEST_BACKEND=hbase) the store's admin
		// client, which creates and drops the test tables, cannot be
		// closed (gohbase's AdminClient panics in Close, see
		// hbase.Store.Close): the reader of its connection to the master
		// stays.
		goleak.IgnoreAnyFunction("github.com/tsuna/gohbase/region.(*client).receiveRPCs"),
	)
}
