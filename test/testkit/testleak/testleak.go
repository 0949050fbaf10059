// Package testleak is the one goroutine-leak check of promhbase's test
// packages: their TestMain calls VerifyTestMain. Only tests import it.
package testleak

import (
	"go.uber.org/goleak"
)

// Options returns the goroutines every package's leak check ignores,
// then extra.
//
// On HBase (PROMHBASE_TEST_BACKEND=hbase) the store's admin client,
// which creates and drops the test tables, cannot be closed (gohbase's
// AdminClient panics in Close, see hbase.Store.Close): the reader of its
// connection to the master stays. A store's admin client is one per
// process in serve.
func Options(extra ...goleak.Option) []goleak.Option {
	return append([]goleak.Option{goleak.IgnoreAnyFunction("github.com/tsuna/gohbase/region.(*client).receiveRPCs")}, extra...)
}

// VerifyTestMain runs the package's tests (a *testing.M, or one that
// wraps it) and fails them when they leave
// goroutines behind other than those Options(extra...) ignores.
func VerifyTestMain(m goleak.TestingM, extra ...goleak.Option) {
	goleak.VerifyTestMain(m, Options(extra...)...)
}
