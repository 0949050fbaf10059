package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestBuildInfo: promhbase_build_info is 1 with the version, a revision
// and the Go version as labels.
func TestBuildInfo(t *testing.T) {
	want := `# HELP promhbase_build_info Always 1; its labels name the version, revision and Go version promhbase was built with.
# TYPE promhbase_build_info gauge
promhbase_build_info{goversion="` + runtime.Version() + `",revision="` + revision() + `",version="` + version + `"} 1
`
	if err := testutil.CollectAndCompare(buildInfo(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if revision() == "" {
		t.Error("revision is empty")
	}
}
