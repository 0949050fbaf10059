package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/promhbase/promhbase/test/testkit/testleak"
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
	testleak.VerifyTestMain(removeAfter{m, dir})
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
