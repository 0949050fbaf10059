package opentsdb_test

import (
	"testing"

	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// TestMain fails the package's tests when they leave goroutines behind.
func TestMain(m *testing.M) { testleak.VerifyTestMain(m) }
