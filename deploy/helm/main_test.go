package helm

import (
	"io"
	"log"
	"os"
	"testing"
)

// TestMain quiets Helm's loader, which logs each symbolic link it
// follows (promhbase/mixin/ links to deploy/mixin's files, so that the
// chart's rules and dashboard are the mixin's own).
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}
