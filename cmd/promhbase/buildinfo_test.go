package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/version"
)

// TestBuildInfo: promhbase_build_info is 1 with the version, revision,
// branch, Go version and platform as labels, as prometheus_build_info.
func TestBuildInfo(t *testing.T) {
	stampVersion()
	want := `# HELP promhbase_build_info A metric with a constant '1' value labeled by version, revision, branch, goversion from which promhbase was built, and the goos and goarch for the build.
# TYPE promhbase_build_info gauge
promhbase_build_info{branch="` + version.Branch + `",goarch="` + runtime.GOARCH + `",goos="` + runtime.GOOS + `",goversion="` + runtime.Version() +
		`",revision="` + version.GetRevision() + `",tags="` + version.GetTags() + `",version="` + defaultVersion + `"} 1
`
	if err := testutil.CollectAndCompare(buildInfo(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if b := buildVersion(); b.Version != defaultVersion || b.Revision == "" || b.GoVersion != runtime.Version() {
		t.Errorf("buildVersion() = %+v, want version %s, a revision, Go %s", b, defaultVersion, runtime.Version())
	}
}
