package embedded

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// row buffer's flusher and sorter, and Pebble's own, must all end with
// Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
