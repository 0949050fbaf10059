package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain gives the package's tests a directory for the one promhbase
// binary they share (see promhbaseBinary), removed when they end, and
// fails them when they leave goroutines behind.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "promhbase-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	built.dir = dir
	goleak.VerifyTestMain(removeAfter{m, dir},
		// The HBase store's admin client cannot be closed (gohbase's
		// AdminClient panics in Close, see hbase.Store.Close): the reader
		// of its connection to the master stays after the tests that
		// create or drop tables.
		goleak.IgnoreAnyFunction("github.com/tsuna/gohbase/region.(*client).receiveRPCs"),
	)
}

// removeAfter runs the tests, then removes dir.
type removeAfter struct {
	m   *testing.M
	dir string
}

func (r removeAfter) Run() int {
	defer os.RemoveAll(r.dir)
	return r.m.Run()
}
