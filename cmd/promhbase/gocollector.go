package main

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// goCollector is the Go runtime's collector of /metrics: client_golang's
// defaults, and the seconds goroutines waited for contended mutexes
// (go_sync_mutex_wait_total_seconds_total, the runtime's
// /sync/mutex/wait/total:seconds; VictoriaMetrics exports it as
// go_mutex_wait_seconds_total), which tells lock contention on the write
// path without a profile.
func goCollector() prometheus.Collector {
	return collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sync/mutex/wait/total:seconds$`)}))
}
