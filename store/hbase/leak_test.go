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
	)
}
