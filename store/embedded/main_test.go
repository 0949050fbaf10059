package embedded

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// row buffer's flusher and sorter, and Pebble's own, must all end with
// Close. With faultChildEnv set the binary is a fault child of
// TestFaultEveryOperation instead: it runs one workload and exits.
func TestMain(m *testing.M) {
	if spec := os.Getenv(faultChildEnv); spec != "" {
		os.Exit(runFaultChild(spec))
	}
	goleak.VerifyTestMain(m)
}
