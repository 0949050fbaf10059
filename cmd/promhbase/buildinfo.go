package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/promhbase/promhbase/adapter/opentsdb"
)

// defaultVersion is promhbase's version, unless the build sets
// github.com/prometheus/common/version.Version (tools/scripts/build.sh
// sets the revision, branch, build user and date as Prometheus's promu
// does, and the version only when told).
const defaultVersion = "0.1.0"

// stampVersion fills in the version the build did not set. The other
// fields stay as the build stamped them; the revision, unstamped, is
// what go build recorded of the checkout (version.GetRevision).
func stampVersion() {
	if version.Version == "" {
		version.Version = defaultVersion
	}
}

// buildInfo returns promhbase_build_info: always 1, its labels the
// version, revision, branch, Go version, platform and build tags of the
// running binary, as prometheus_build_info. A restart shows as a change
// of process_start_time_seconds; an upgrade as a change of these labels.
func buildInfo() prometheus.Collector {
	return versioncollector.NewCollector("promhbase")
}

// buildVersion is what /api/v1/status/buildinfo and the status page show.
func buildVersion() v1.PrometheusVersion {
	return v1.PrometheusVersion{Version: version.Version, Revision: version.GetRevision(), Branch: version.Branch,
		BuildUser: version.BuildUser, BuildDate: version.BuildDate, GoVersion: version.GoVersion}
}

// tsdVersion is /api/version's answer on the OpenTSDB port: the fields a
// TSD reads from its BuildData, from the build's stamps (the revision's
// first 7 characters as the short one; the build date as Unix seconds;
// "MODIFIED" for a revision built with changes, else "MINT"; the build
// user's name and host).
func tsdVersion() opentsdb.Version {
	rev := strings.TrimSuffix(version.GetRevision(), "-modified")
	status := "MINT"
	if strings.HasSuffix(version.GetRevision(), "-modified") {
		status = "MODIFIED"
	}
	user, host, _ := strings.Cut(version.BuildUser, "@")
	var stamp string
	if t, err := time.Parse("20060102-15:04:05", version.BuildDate); err == nil {
		stamp = strconv.FormatInt(t.Unix(), 10)
	}
	return opentsdb.Version{Version: version.Version, ShortRevision: rev[:min(7, len(rev))], FullRevision: rev, Timestamp: stamp,
		RepoStatus: status, User: user, Host: host, Repo: "github.com/promhbase/promhbase", Branch: version.Branch}
}
