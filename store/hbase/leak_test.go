package hbase

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when they leave goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gohbase looks a region up again in a goroutine of its own, which
		// Close does not stop: it ends when its backoff (up to seconds)
		// does, or when the region is found. TestUnavailable, against no
		// HBase, leaves one in lookupRegion's backoff.
		goleak.IgnoreAnyFunction("github.com/tsuna/gohbase.(*client).reestablishRegion"),
		// The admin client cannot be closed (gohbase's AdminClient panics
		// in Close, see Store.Close): the reader of its connection to the
		// master stays. The data client's region connections are closed
		// by Close, so a leak of theirs is caught only while no admin
		// helper ran; a store's admin client is one per process in serve.
		goleak.IgnoreAnyFunction("github.com/tsuna/gohbase/region.(*client).receiveRPCs"),
	)
}
