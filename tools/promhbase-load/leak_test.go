package main

import (
	"testing"

	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// TestMain fails the package's tests when they leave goroutines behind
// (beyond testleak's list: the HBase harness's admin client).
func TestMain(m *testing.M) {
	testleak.VerifyTestMain(m)
}
