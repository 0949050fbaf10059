package wlog

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them (a
// log's syncLoop not stopped by Close).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
