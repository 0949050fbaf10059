package store

import (
	"testing"

	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// TestMain fails the package's tests when they leave goroutines behind:
// Parallel's workers must all end before it returns.
func TestMain(m *testing.M) { testleak.VerifyTestMain(m) }
