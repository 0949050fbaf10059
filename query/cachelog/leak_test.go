package cachelog

import (
	"testing"

	"github.com/promhbase/promhbase/test/testkit/testleak"
)

// TestMain fails the package's tests when they leave goroutines behind:
// an Append's drain must end once the batches it carries are written.
func TestMain(m *testing.M) { testleak.VerifyTestMain(m) }
