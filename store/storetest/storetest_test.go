package storetest

import (
	"testing"

	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// TestMain fails the package's tests when they leave goroutines behind:
// the concurrent contracts' workers must all end with their test.
func TestMain(m *testing.M) { testleak.VerifyTestMain(m) }

// TestConcurrentContracts runs the suite's goroutine-starting contracts
// against the embedded store, so that this package's own leak check
// covers their workers (the backends' packages run the whole suite).
func TestConcurrentContracts(t *testing.T) {
	concurrent := map[string]bool{"CheckAndPutConcurrent": true, "CheckAndPutBatch": true, "IncrementConcurrent": true}
	ran := 0
	for _, tc := range contracts(Options{}) {
		if !concurrent[tc.name] {
			continue
		}
		ran++
		t.Run(tc.name, func(t *testing.T) {
			s, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"contract"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s, "contract")
		})
	}
	if ran != len(concurrent) {
		t.Fatalf("ran %d of the %d concurrent contracts: one was renamed or removed", ran, len(concurrent))
	}
}
