package main

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// revision returns the VCS revision the binary was built from (go build
// in a git checkout records it), with "-modified" when the tree had
// uncommitted changes; "unknown" when it was not recorded (go run, go
// test, a build outside a checkout).
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, modified := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && rev != "unknown" {
		rev += "-modified"
	}
	return rev
}

// buildInfo returns promhbase_build_info: always 1, its labels the
// version, revision and Go version of the running binary, as
// prometheus_build_info. A restart shows as a change of
// process_start_time_seconds; an upgrade as a change of these labels.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "promhbase_build_info",
		Help:        "Always 1; its labels name the version, revision and Go version promhbase was built with.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision(), "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
