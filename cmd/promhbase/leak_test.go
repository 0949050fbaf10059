package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when they leave goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The HBase store's admin client cannot be closed (gohbase's
		// AdminClient panics in Close, see hbase.Store.Close): the reader
		// of its connection to the master stays after the tests that
		// create or drop tables.
		goleak.IgnoreAnyFunction("github.com/tsuna/gohbase/region.(*client).receiveRPCs"),
	)
}
