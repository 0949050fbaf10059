package hbase

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// TestMain fails the package's tests when they leave goroutines behind.
// Beyond testleak's list: gohbase looks a region up again in a goroutine
// of its own, which Close does not stop: it ends when its backoff (up to
// seconds) does, or when the region is found. TestUnavailable, against no
// HBase, leaves one in lookupRegion's backoff. (The data client's region
// connections are closed by Close, so a leak of theirs is caught only
// while no admin helper ran.)
func TestMain(m *testing.M) {
	testleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/tsuna/gohbase.(*client).reestablishRegion"))
}
