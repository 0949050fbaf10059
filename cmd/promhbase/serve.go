package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/version"
	toolkitweb "github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/internal/gctune"
	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/resultcache"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web"
	"github.com/promhbase/promhbase/web/promapi"
)

// splitFeatures splits comma-separated --enable-feature values.
func splitFeatures(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// flagValues is every flag of app with its value, for
// /api/v1/status/flags.
func flagValues(app *kingpin.Application) map[string]string {
	out := map[string]string{}
	add := func(fs []*kingpin.FlagModel) {
		for _, f := range fs {
			out[f.Name] = f.String()
		}
	}
	m := app.Model()
	add(m.Flags)
	for _, c := range m.Commands {
		add(c.Flags)
	}
	return out
}

type serveFlags struct {
	gogc            int
	autoMemLimit    bool    // --auto-gomemlimit
	memLimitRatio   float64 // --auto-gomemlimit.ratio
	gcHeadroom      autoBytes
	gcHeadroomMin   autoBytes
	listen          string
	openTSDB        openTSDBFlags
	maxRequestBytes int
	maxSamples      int
	readTimeout     time.Duration
	writeTimeout    time.Duration
	maxConcurrent   int
	exemplarSlots   int
	compaction      compactionFlags
	ha              haFlags
	queryTimeout    time.Duration
	slowQuery       time.Duration
	lookbackDelta   time.Duration
	queryMaxConc    int
	queryEngine     string
	enablePprof     bool
	// mutexFraction and blockRate are the runtime's profile rates.
	mutexFraction, blockRate int
	features                 []string
	scanConc                 int
	corsOrigin               string
	externalURL              string
	routePrefix              string
	webConfigFile            string
	maxConnections           int
	readHeaderTime           time.Duration
	bodyTimeout              time.Duration
	idleTimeout              time.Duration
	stallTimeout             time.Duration
	limits                   limits.Config
	rulerLimits              rulerLimitFlags
	queryGuards              queryGuardFlags
	maxBytes                 int64
	readConcurrent           int
	index                    indexFlags
	retention                retentionFlags
	rollup                   rollupFlags
	enableAdmin              bool
	tenants                  tenantFlags
	resultsCache             resultsCacheFlags
	otlp                     otlpFlags
}

// rulerLimitFlags are the --ruler.max-* flags of serve: every tenant's
// limits on its rule groups, unless --runtime-config.file overrides them.
type rulerLimitFlags struct {
	maxGroups, maxRules int
}

// resultsCacheFlags are the --query.results-cache.* flags of serve.
type resultsCacheFlags struct {
	maxBytes                     units.Base2Bytes
	offset, maxAge, pollInterval time.Duration
	dataClock                    bool
}

// rollupFlags are the --rollup.* flags of serve and --query.auto-downsampling.
type rollupFlags struct {
	enabled       bool
	grace         time.Duration
	checkInterval time.Duration
	auto          bool
	approximate   bool
}

// retentionFlags are the --storage.retention.* flags of serve.
type retentionFlags struct {
	raw, res5m, res1h model.Duration
	time              model.Duration
	size              units.Base2Bytes
	interval          time.Duration
}

// indexFlags are the --storage.index.* flags of serve.
type indexFlags struct {
	enabled    bool
	query      bool
	cacheBytes int
}

// haFlags are the --ha-tracker.* flags of serve.
type haFlags struct {
	enabled                bool
	clusterLabel, replica  string
	failover, update, jitt time.Duration
	maxClusters            int
}

// compactionFlags are the --storage.compaction.* flags of serve.
type compactionFlags struct {
	enabled        bool
	grace          time.Duration
	maxRowsPerHour int
	concurrency    int
	checkInterval  time.Duration
}

var serveOpts serveFlags

func registerServe(app *kingpin.Application, cfg *config) *kingpin.CmdClause {
	cmd := app.Command("serve", "Serve Prometheus remote write and remote read.").Default()
	cmd.Flag("web.listen-address", "Address to listen on.").Default(":9201").StringVar(&serveOpts.listen)
	cmd.Flag("web.max-request-bytes", "Largest decoded (uncompressed) request body; larger ones get 413.").Default("33554432").IntVar(&serveOpts.maxRequestBytes)
	cmd.Flag("query.max-samples", "Most samples one remote-read request (all its queries together) or one PromQL query may load: past it a remote read gets 413, a PromQL query 422, as Prometheus's flag of this name.").Default("50000000").IntVar(&serveOpts.maxSamples)
	cmd.Flag("query.max-bytes-per-query", "Most bytes one remote-read request (all its queries) or PromQL query holds at once: its series' samples as chunks (a SAMPLES answer's floats as 16-byte samples), a SAMPLES answer as it is built. Past it: 413 for remote read, 422 for PromQL.").Default(fmt.Sprint(query.DefaultMaxBytes)).Int64Var(&serveOpts.maxBytes)
	cmd.Flag("storage.remote.read-concurrent-limit", "Remote-read requests answered at once; further ones wait up to 10s for one to end, then get 503. As Prometheus's flag of this name.").Default("10").IntVar(&serveOpts.readConcurrent)
	cmd.Flag("query.timeout", "Longest time a PromQL query may take (then 503).").Default("2m").DurationVar(&serveOpts.queryTimeout)
	cmd.Flag("query.slow-threshold", "Instant and range queries that take longer are counted (promhbase_query_slow_total) and logged once, at warn, with the query, its time or range and step, and its duration, as Prometheus's query log. 0 turns it off.").Default("10s").DurationVar(&serveOpts.slowQuery)
	cmd.Flag("query.lookback-delta", "How far back PromQL looks for a series' latest sample at an evaluation instant.").Default("5m").DurationVar(&serveOpts.lookbackDelta)
	cmd.Flag("query.max-concurrency", "PromQL queries evaluated at once; the others wait (within --query.timeout).").Default("20").IntVar(&serveOpts.queryMaxConc)
	cmd.Flag("query.results-cache.max-bytes", "Memory for the answers of range queries kept for refreshes: a refresh of a query_range with its range moved forward evaluates only the steps not kept (the oldest kept answers go first when full); shared by every tenant; 0 turns the cache off. nocache=1 on a request bypasses it. See docs/query-engine.md.").Default("256MiB").BytesVar(&serveOpts.resultsCache.maxBytes)
	cmd.Flag("query.results-cache.offset", "Steps later than now minus this are never kept: the newest samples may still arrive (scrapes, slow senders, an HA failover; at least --ha-tracker.failover-timeout when the HA tracker is on). Older samples written later drop the kept steps that read them.").Default("5m").DurationVar(&serveOpts.resultsCache.offset)
	cmd.Flag("query.results-cache.max-age", "How long a kept step is served before it is evaluated again: the longest that samples written or deleted through another promhbase process (a replica behind the same load balancer, `promhbase rollup`) or by OpenTSDB stay unseen. 0: no bound on the embedded store (only the serve that opened it writes to it, and it tells the cache of every change), 1h on HBase, where replicas tell each other through the store within --query.results-cache.log-poll-interval and this bounds only the changes made around serve (OpenTSDB's TSDs, the rules backfill command, a snapshot restored; the delete command appends to the log too).").Default("0s").DurationVar(&serveOpts.resultsCache.maxAge)
	cmd.Flag("query.results-cache.log-poll-interval", "HBase: how often the changes of old data other replicas made (old writes, deletions, rollup hours built) are read from the results cache's log in the series index table, and their kept steps dropped: the longest a replica serves steps another replica changed. Each replica appends its own changes before it acknowledges them.").Default("5s").DurationVar(&serveOpts.resultsCache.pollInterval)
	cmd.Flag("query.results-cache.data-clock", "The results cache's now is the newest sample written through this process, not the wall clock: for replays of old data (make bench-refresh).").Hidden().BoolVar(&serveOpts.resultsCache.dataClock)
	cmd.Flag("query.engine", "The PromQL evaluator of /api/v1/query and query_range: promhbase (its own, on every core, for selectors, range functions, aggregations, classic histogram_quantile and simple binary operations, with Prometheus's engine for every other expression) or prometheus (Prometheus's engine for every query). Both give Prometheus's answers; see docs/query-engine.md.").Default(promapi.EnginePromhbase).EnumVar(&serveOpts.queryEngine, promapi.EnginePromhbase, promapi.EnginePrometheus)
	cmd.Flag("query.scan-concurrency", "Scans (metrics × salt buckets, or parts of one) one query runs at once on goroutines of their own; the query's own goroutine runs one more.").Default("4").IntVar(&serveOpts.scanConc)
	cmd.Flag("web.cors.origin", `Regex of the origins allowed cross-origin query API requests, fully anchored, as Prometheus's flag.`).Default(".*").StringVar(&serveOpts.corsOrigin)
	cmd.Flag("enable-feature", "PromQL features to enable, as Prometheus's flag of this name: "+strings.Join(promapi.Features, ", ")+". Repeat it or separate with commas.").StringsVar(&serveOpts.features)
	cmd.Flag("web.enable-admin-api", "Serve the TSDB admin endpoints /api/v1/admin/tsdb/delete_series and clean_tombstones, as Prometheus's flag of this name; off, they answer 500 \"admin APIs disabled\" as Prometheus's do.").Default("false").BoolVar(&serveOpts.enableAdmin)
	cmd.Flag("storage.retention.time", "How long samples are kept, counted from their own timestamps (backfilled samples expire by their age, not by when they were written), as Prometheus's --storage.tsdb.retention.time: a background cycle deletes the hours older than this from the data, exemplar and series index tables (UIDs stay). 0 keeps everything, the default of a long-term store. Units: ms, s, m, h, d, w, y.").Default("0").SetValue(&serveOpts.retention.time)
	cmd.Flag("storage.retention.size", "Most bytes the embedded store's tables may take on disk: past it the oldest hours are deleted first, as Prometheus's --storage.tsdb.retention.size. Units: B, KB, MB, GB, TB, PB, EB (powers of 1024). 0 means no limit. Embedded store only.").Default("0").BytesVar(&serveOpts.retention.size)
	cmd.Flag("storage.retention.resolution-raw", "How long raw samples are kept when shorter than --storage.retention.time, as Thanos's --retention.resolution-raw: queries over older ranges then read the rollups (keep raw samples at least as long as you zoom in on). 0: --storage.retention.time. Units: ms, s, m, h, d, w, y.").Default("0").SetValue(&serveOpts.retention.raw)
	cmd.Flag("storage.retention.resolution-5m", "How long the rollups of the interval named 5m are kept when shorter than --storage.retention.time (Thanos's --retention.resolution-5m); rows go whole, a row span (1d) at a time. 0: --storage.retention.time.").Default("0").SetValue(&serveOpts.retention.res5m)
	cmd.Flag("storage.retention.resolution-1h", "How long the rollups of the interval named 1h are kept when shorter than --storage.retention.time (Thanos's --retention.resolution-1h); rows go whole, a row span (1n: a month) at a time. 0: --storage.retention.time.").Default("0").SetValue(&serveOpts.retention.res1h)
	cmd.Flag("storage.retention.interval", "How often the retention cycle runs.").Default("1m").DurationVar(&serveOpts.retention.interval)
	cmd.Flag("web.enable-pprof", "Serve Go's profiling endpoints under /debug/pprof/.").Default("false").BoolVar(&serveOpts.enablePprof)
	cmd.Flag("debug.mutex-profile-fraction", "Record one in this many contended mutex events in /debug/pprof/mutex (runtime.SetMutexProfileFraction), as Mimir's flag of this name; 0: none. With --web.enable-pprof.").Default("0").IntVar(&serveOpts.mutexFraction)
	cmd.Flag("debug.block-profile-rate", "Record a blocking event (channel, lock, select) in /debug/pprof/block about once every this many nanoseconds blocked (runtime.SetBlockProfileRate), as Mimir's flag of this name; 0: none. With --web.enable-pprof.").Default("0").IntVar(&serveOpts.blockRate)
	cmd.Flag("web.external-url", "URL under which clients reach promhbase: the setup page's config snippets, the ruler's alert links, and the route prefix's default (its path). Default: the request's host.").Default("").StringVar(&serveOpts.externalURL)
	cmd.Flag("web.route-prefix", "Prefix of every endpoint's path (the web UI, the query API, remote write and read, /-/ready, /metrics), as Prometheus's flag of this name; / and the prefix itself redirect to the web UI below it. Default: the path of --web.external-url.").Default("").StringVar(&serveOpts.routePrefix)
	cmd.Flag("web.read-timeout", "Longest time a request may take, except remote write and read, which --web.request-body-timeout and --web.response-write-timeout bound instead.").Default("5m").DurationVar(&serveOpts.readTimeout)
	cmd.Flag("web.config.file", "Path to a web configuration file (TLS, client certificates, basic auth, HTTP headers), the same format as Prometheus's --web.config.file.").Default("").StringVar(&serveOpts.webConfigFile)
	cmd.Flag("web.max-connections", "Most simultaneous connections; further ones wait in the kernel's accept queue. 0 means no limit.").Default("512").IntVar(&serveOpts.maxConnections)
	cmd.Flag("web.read-header-timeout", "Longest time a client may take to send a request's headers.").Default("10s").DurationVar(&serveOpts.readHeaderTime)
	cmd.Flag("web.request-body-timeout", "Longest time a client may take to send the body of a remote write or read (it holds no decoding slot meanwhile); then the connection is closed.").Default("30s").DurationVar(&serveOpts.bodyTimeout)
	cmd.Flag("web.idle-timeout", "How long an idle keep-alive connection is kept open.").Default("2m").DurationVar(&serveOpts.idleTimeout)
	cmd.Flag("web.response-write-timeout", "Longest time one write of a remote write or read answer to the connection (up to 32 KiB of frames of a streamed read) may wait for a client that does not read; then the connection is closed.").Default("1m").DurationVar(&serveOpts.stallTimeout)
	cmd.Flag("web.max-concurrent-requests", "Remote write and read requests decoded at once (bounds their memory); further ones wait up to --web.write-timeout, then get 503. 0 means 2×GOMAXPROCS+8.").Default("0").IntVar(&serveOpts.maxConcurrent)
	cmd.Flag("web.write-timeout", "Longest time a remote write waits for the store before answering 503 (keep it below Prometheus's remote_timeout, 30s by default).").Default("25s").DurationVar(&serveOpts.writeTimeout)
	cmd.Flag("storage.exemplars.per-series-hour", "Exemplars kept per series and hour: the hour is cut into this many slots and a slot keeps its latest exemplar (720: one per 5 s). 0 keeps none.").Default(fmt.Sprint(ingest.DefaultExemplarSlots)).IntVar(&serveOpts.exemplarSlots)
	ix := &serveOpts.index
	cmd.Flag("runtime.gogc", "Go's garbage collector target (GOGC) when the GOGC environment variable is not set: the heap may grow this many percent over the live data before a collection. 75 as Prometheus's default.").Default("75").IntVar(&serveOpts.gogc)
	cmd.Flag("auto-gomemlimit", "Set GOMEMLIMIT, the heap's soft limit, from the container's memory limit (cgroup v1 or v2), as Prometheus 3 does, so that the collector works harder before the kernel kills the process. An explicit GOMEMLIMIT environment variable wins. --no-auto-gomemlimit turns it off.").Default("true").BoolVar(&serveOpts.autoMemLimit)
	cmd.Flag("auto-gomemlimit.ratio", "The share of the container's memory limit GOMEMLIMIT is set to, in (0, 1]: the rest is headroom for memory the Go runtime does not count.").Default("0.9").Float64Var(&serveOpts.memLimitRatio)
	cmd.Flag(serveOpts.gcHeadroom.named("runtime.gc-headroom-max-bytes"), "Most bytes the heap may grow over the live data before a collection: when --runtime.gogc's percentage of a large live heap (the caches at millions of series) would give more, the percentage is lowered after each collection to give this much (not below 10 %). auto: 16 MiB per core of GOMAXPROCS, at least 32 MiB and at most 256 MiB (more cores make more garbage a second). 0: --runtime.gogc alone. Ignored, like --runtime.gogc, when GOGC is set.").Default("auto").SetValue(&serveOpts.gcHeadroom)
	cmd.Flag(serveOpts.gcHeadroomMin.named("runtime.gc-headroom-min-bytes"), "Least bytes the heap may grow over the live data before a collection: while --runtime.gogc's percentage of a small live heap (a process just started) would give less, the percentage is raised after each collection to give this much (at most --runtime.gc-headroom-max-bytes), so that the first requests do not pay for a collection every few megabytes. auto: as --runtime.gc-headroom-max-bytes's auto. 0: --runtime.gogc alone. Ignored, like --runtime.gogc, when GOGC is set.").Default("auto").SetValue(&serveOpts.gcHeadroomMin)
	cmd.Flag("storage.index.enabled", "Keep the series index: a TSMeta row per series in the meta table (OpenTSDB's /api/search/lookup finds it) and label names and values by day in the index table, written once per series and day.").Default("true").BoolVar(&ix.enabled)
	cmd.Flag("storage.index.cache-bytes", "Memory for remembering which index cells this process wrote (above it the oldest are forgotten and written again when seen).").Default(fmt.Sprint(index.DefaultCacheBytes)).IntVar(&ix.cacheBytes)
	cmd.Flag("query.series-index", "Answer label names and values without matchers, and find the metrics of selectors without a metric name, from the series index, for ranges it covers (all of it when the index was first kept on an empty data table, else from the next day, or as far back as `promhbase reindex` reached). Turn it off while OpenTSDB writes into the same tables and no reindex follows it.").Default("true").BoolVar(&ix.query)
	registerLimits(cmd, &serveOpts.limits)
	registerRulerLimits(cmd, &serveOpts.rulerLimits)
	registerQueryGuards(cmd, &serveOpts.queryGuards)
	registerTenantFlags(cmd, &serveOpts.tenants)
	registerOTLPFlags(cmd, &serveOpts.otlp)
	r := &serveOpts.rollup
	cmd.Flag("rollup.enabled", "Build the rollups of every hour in the background once it has ended (plus --rollup.grace), into the tables of the rollup configuration (--rollup.config-file), and let queries read them (see --query.auto-downsampling). Hours written before are built by `promhbase rollup`.").Default("true").BoolVar(&r.enabled)
	cmd.Flag("rollup.grace", "How long after an hour ends its rollups are built, so that late samples land first; a sample that arrives later makes its hour's rollups stale until they are built again.").Default("10m").DurationVar(&r.grace)
	// Hidden: tests set it small so as not to wait for the default.
	cmd.Flag("rollup.check-interval", "How often the rollup scheduler looks for hours that are due or stale.").Default("30s").Hidden().DurationVar(&r.checkInterval)
	cmd.Flag("query.auto-downsampling", "Queries that do not name a resolution (max_source_resolution) read the widest rollups no wider than a fifth of their step (5m rollups from a 25m step, 1h rollups from a 5h step) where that gives the same answer as raw samples: the rate family and the sum, count, min, max and avg _over_time functions read the rollup windows inside each step's range and raw samples for the windows its ends cut; other functions and plain selectors read raw samples.").Default("true").BoolVar(&r.auto)
	cmd.Flag("query.auto-downsampling.approximate", "Let --query.auto-downsampling answer approximately, as Thanos's querier and an explicit max_source_resolution do: a step reads its range rounded to whole windows, a plain selector the average of the window before the step, other functions over a range the windows' averages (errors measured in docs/downsampling.md). X-Promhbase-Resolution then ends with \"; approximate\".").Default("false").BoolVar(&r.approximate)
	c := &serveOpts.compaction
	cmd.Flag("storage.compaction.enabled", "Rewrite each row this process wrote into OpenTSDB's compacted column once its hour has ended (plus the grace period).").Default("true").BoolVar(&c.enabled)
	cmd.Flag("storage.compaction.grace", "How long after an hour ends its rows are compacted, so that late samples land first.").Default(compact.DefaultGrace.String()).DurationVar(&c.grace)
	cmd.Flag("storage.compaction.max-rows-per-hour", "Rows remembered for compaction per hour (11 to 21 bytes each: a hash, not the key); rows beyond it are left for `promhbase compact`.").Default(fmt.Sprint(compact.DefaultMaxRowsPerHour)).IntVar(&c.maxRowsPerHour)
	cmd.Flag("storage.compaction.concurrency", "Rows compacted at once.").Default("4").IntVar(&c.concurrency)
	// Hidden: tests set it small so as not to wait for the default.
	cmd.Flag("storage.compaction.check-interval", "How often the compaction scheduler looks for hours that are due.").Default(compact.DefaultCheckInterval.String()).Hidden().DurationVar(&c.checkInterval)
	ha := &serveOpts.ha
	cmd.Flag("ha-tracker.enable", "Deduplicate HA Prometheus pairs as Mimir's HA tracker does: of the writes whose first series carries both the cluster and the replica label, only the elected replica's of each cluster are stored (without the replica label); the others are answered 202 and dropped, until the elected replica has sent nothing for --ha-tracker.failover-timeout. Elections are kept in the HA table (--hbase.table.ha), shared by every promhbase process.").Default("false").BoolVar(&ha.enabled)
	cmd.Flag("ha-tracker.cluster-label", "Label naming a Prometheus HA pair (Mimir's -distributor.ha-tracker.cluster); kept in storage.").Default("cluster").StringVar(&ha.clusterLabel)
	cmd.Flag("ha-tracker.replica-label", "Label naming a replica of an HA pair (Mimir's -distributor.ha-tracker.replica); dropped before storage.").Default("__replica__").StringVar(&ha.replica)
	cmd.Flag("ha-tracker.failover-timeout", "How long the elected replica may send nothing before another replica of its cluster is elected; must exceed --ha-tracker.update-timeout plus --ha-tracker.update-timeout-jitter-max.").Default("30s").DurationVar(&ha.failover)
	cmd.Flag("ha-tracker.update-timeout", "How often, at most, the elected replica's last-seen time is written to the HA table.").Default("15s").DurationVar(&ha.update)
	cmd.Flag("ha-tracker.update-timeout-jitter-max", "Most random time added to --ha-tracker.update-timeout, per cluster, so that the clusters' updates spread.").Default("5s").DurationVar(&ha.jitt)
	cmd.Flag("ha-tracker.max-clusters", "Most HA clusters a tenant may have; a write that would start one more gets 400. 0: no limit.").Default("100").IntVar(&ha.maxClusters)
	registerRulerFlags(cmd, &rulerOpts)
	registerOpenTSDB(cmd, &serveOpts.openTSDB)
	return cmd
}

// registerLimits adds the --limits.* flags, with limits.DefaultConfig's
// defaults.
func registerLimits(cmd *kingpin.CmdClause, l *limits.Config) {
	d := limits.DefaultConfig()
	cmd.Flag("limits.max-label-names-per-series", "Most labels a series may have, __name__ included; a series with more gets 400 (the rest of the request is written). 0 means no limit.").Default(fmt.Sprint(d.MaxLabelNamesPerSeries)).IntVar(&l.MaxLabelNamesPerSeries)
	cmd.Flag("limits.max-label-name-length", "Longest label name in bytes; a series with a longer one gets 400. 0 means no limit.").Default(fmt.Sprint(d.MaxLabelNameLength)).IntVar(&l.MaxLabelNameLength)
	cmd.Flag("limits.max-label-value-length", "Longest label value (metric name included) in bytes; a series with a longer one gets 400. 0 means no limit.").Default(fmt.Sprint(d.MaxLabelValueLength)).IntVar(&l.MaxLabelValueLength)
	cmd.Flag("limits.max-series-per-request", "Most series in one remote write (not OTLP); a larger request gets 413. 0 means no limit.").Default(fmt.Sprint(d.MaxSeriesPerRequest)).IntVar(&l.MaxSeriesPerRequest)
	cmd.Flag("limits.ingestion-rate", "Samples (floats and native histograms; not exemplars) admitted per second, a token bucket (Mimir's -distributor.ingestion-rate-limit); a request that finds it empty gets 429 with Retry-After. 0 means no limit.").Default(fmt.Sprint(d.IngestionRate)).Float64Var(&l.IngestionRate)
	cmd.Flag("limits.ingestion-burst-size", "Size of the ingestion token bucket in samples (Mimir's -distributor.ingestion-burst-size); a request of more samples still passes when the bucket is full, leaving it in debt. Must be positive when --limits.ingestion-rate is set.").Default(fmt.Sprint(d.IngestionBurst)).IntVar(&l.IngestionBurst)
	cmd.Flag("limits.new-series-rate", "New series (not seen by this process recently) admitted per second, a token bucket; a request that finds it empty gets 429 with Retry-After. 0 means no limit.").Default(fmt.Sprint(d.NewSeriesRate)).Float64Var(&l.NewSeriesRate)
	cmd.Flag("limits.new-series-burst", "Size of the new-series token bucket.").Default(fmt.Sprint(d.NewSeriesBurst)).IntVar(&l.NewSeriesBurst)
	cmd.Flag("limits.max-active-series", "Most series written in the last 10-20 minutes (estimated); at the limit new series get 400. 0 means no limit.").Default(fmt.Sprint(d.MaxActiveSeries)).IntVar(&l.MaxActiveSeries)
	cmd.Flag("limits.max-series-per-metric", "Most series of one metric name written in the last 10-20 minutes (counted exactly); its next series get 400 naming the limit and the metric, other metrics write on. Mimir's max_global_series_per_metric, per tenant in --runtime-config.file. 0 means no limit.").Default("0").IntVar(&l.MaxSeriesPerMetric)
}

// registerRulerLimits adds the --ruler.max-* flags: the limits of the
// ruler configuration API, as Mimir's flags of these names (whose
// defaults are 70 and 20; promhbase's, 0, set none).
func registerRulerLimits(cmd *kingpin.CmdClause, f *rulerLimitFlags) {
	cmd.Flag("ruler.max-rule-groups-per-tenant", "Most rule groups a tenant may store through the ruler configuration API, every namespace together; a POST of one more gets 400. Per tenant: ruler_max_rule_groups_per_tenant in --runtime-config.file. 0 means no limit.").Default("0").IntVar(&f.maxGroups)
	cmd.Flag("ruler.max-rules-per-rule-group", "Most rules one rule group may hold; a POST of a larger group gets 400. Per tenant: ruler_max_rules_per_rule_group in --runtime-config.file. 0 means no limit.").Default("0").IntVar(&f.maxRules)
}

// runServe is the serve command: it checks the flags, opens the store,
// wires the server (at once, or on HBase once the cluster answers),
// listens and serves until SIGINT or SIGTERM, then shuts down, the
// background work stopped before the store closes.
func runServe(app *kingpin.Application, cfg *config) error {
	logger := cfg.logger()
	setProfileRates()
	if err := setMemLimit(logger); err != nil {
		return err
	}
	defer tuneGC()()
	reg := prometheus.NewRegistry()
	reg.MustRegister(goCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	if err := checkRuntimeConfig(); err != nil {
		return err
	}
	st, err := cfg.openStore(reg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	srvCfg, err := serverConfig(app, cfg, reg, logger)
	if err != nil {
		return err
	}
	rulerCfg, err := cfg.rulerConfig(rulerOpts, serveOpts.externalURL, reg, logger)
	if err != nil {
		return err
	}
	w := &serveWiring{cfg: cfg, st: st, rulerCfg: rulerCfg, reg: reg, logger: logger}
	w.srvCfg = w.withRuler(srvCfg)
	prefix, err := web.RoutePrefix(serveOpts.routePrefix, serveOpts.externalURL)
	if err != nil {
		return err
	}
	handler, startFailed, stopBackground, err := w.start()
	if err != nil {
		return err
	}
	tsdHandler := handler
	handler = web.WithPrefix(prefix, handler)
	// Stop the background work, letting the rows in flight finish, before
	// the store closes (that defer was registered first, so it runs last).
	defer stopBackground()
	ln, err := listen()
	if err != nil {
		return err
	}
	stopTSD, err := startOpenTSDB(serveOpts.openTSDB, tsdHandler, &w.puts, reg, logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopTSD()
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: serveOpts.readHeaderTime, WriteTimeout: serveOpts.readTimeout, IdleTimeout: serveOpts.idleTimeout}
	logger.Info("promhbase serving", "address", ln.Addr().String(), "backend", cfg.backend, "data_table", cfg.dataTable, "uid_table", cfg.uidTable, "exemplar_table", cfg.exemplarTable,
		"salt_width", cfg.layout.SaltWidth, "salt_buckets", cfg.layout.SaltBuckets,
		"compaction", serveOpts.compaction.enabled, "compaction_grace", serveOpts.compaction.grace, "tenants", serveOpts.tenants.enabled)
	return serveUntilSignal(ln, srv, startFailed, logger)
}

// setProfileRates sets the runtime's mutex and block profile rates
// (--debug.mutex-profile-fraction, --debug.block-profile-rate) when
// either is on.
func setProfileRates() {
	if serveOpts.mutexFraction > 0 || serveOpts.blockRate > 0 {
		runtime.SetMutexProfileFraction(serveOpts.mutexFraction)
		runtime.SetBlockProfileRate(serveOpts.blockRate)
	}
}

// tuneGC starts the collector's tuning (--runtime.gogc and the headroom
// flags) unless the GOGC environment variable is set, and returns what
// stops it.
func tuneGC() (stop func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	auto := gctune.DefaultHeadroom(runtime.GOMAXPROCS(0))
	return gctune.Start(serveOpts.gogc, serveOpts.gcHeadroomMin.or(auto), serveOpts.gcHeadroom.or(auto)).Stop
}

// checkRuntimeConfig reads and parses --runtime-config.file once before
// anything is served: on HBase
// serve listens while it waits for the cluster, and a file that can
// never load must end it at once, not once the cluster answers.
func checkRuntimeConfig() error {
	f := serveOpts.tenants.runtimeFile
	if f == "" {
		return nil
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return fmt.Errorf("runtime configuration: %w", err)
	}
	if _, err := overrides.Parse(b, overrides.Limits{}); err != nil {
		return fmt.Errorf("runtime configuration %s: %w", f, err)
	}
	return nil
}

// serverConfig checks the flags the server takes and builds its
// configuration, the results cache (registered in reg) included; the
// ruler's part is added by serveWiring.withRuler.
func serverConfig(app *kingpin.Application, cfg *config, reg *prometheus.Registry, logger *slog.Logger) (server.Config, error) {
	rollupCfg, err := cfg.rollups()
	if err != nil {
		return server.Config{}, err
	}
	otlpCfg, err := serveOpts.otlp.config(serveOpts.lookbackDelta)
	if err != nil {
		return server.Config{}, err
	}
	cors, err := regexp.Compile("^(?:" + serveOpts.corsOrigin + ")$")
	if err != nil {
		return server.Config{}, fmt.Errorf("--web.cors.origin=%q: %w", serveOpts.corsOrigin, err)
	}
	rc, err := resultsCacheFlagsFor(cfg.backend)
	if err != nil {
		return server.Config{}, err
	}
	resultsCache := resultcache.New(resultcache.Options{MaxBytes: int64(rc.maxBytes), Offset: rc.offset, MaxAge: rc.maxAge, DataClock: rc.dataClock, Registerer: reg})
	srvCfg := server.Config{
		Layout: cfg.layout,
		Tables: server.Tables{Data: cfg.dataTable, UID: cfg.uidTable, Exemplar: cfg.exemplarTable, Meta: cfg.metaTable, Index: cfg.indexTable, HA: cfg.haTable,
			Rules: cfg.rulesTable},
		Limits: serveOpts.limits, ExemplarSlots: serveOpts.exemplarSlots,
		Index: server.IndexConfig{Enabled: serveOpts.index.enabled, Query: serveOpts.index.query, CacheBytes: serveOpts.index.cacheBytes},
		Compaction: server.CompactionConfig{Enabled: serveOpts.compaction.enabled, Grace: serveOpts.compaction.grace,
			MaxRowsPerHour: serveOpts.compaction.maxRowsPerHour, Concurrency: serveOpts.compaction.concurrency,
			CheckInterval: serveOpts.compaction.checkInterval},
		Retention: server.RetentionConfig{Time: time.Duration(serveOpts.retention.time), Size: int64(serveOpts.retention.size),
			Interval: serveOpts.retention.interval, Raw: time.Duration(serveOpts.retention.raw),
			Resolutions: map[string]time.Duration{"5m": time.Duration(serveOpts.retention.res5m), "1h": time.Duration(serveOpts.retention.res1h)}},
		EnableAdmin: serveOpts.enableAdmin,
		Rollup: server.RollupConfig{Enabled: serveOpts.rollup.enabled, Config: rollupCfg, Grace: serveOpts.rollup.grace, AutoDownsampling: serveOpts.rollup.auto, CheckInterval: serveOpts.rollup.checkInterval,
			Approximate: serveOpts.rollup.approximate},
		HA: server.HAConfig{Enabled: serveOpts.ha.enabled, Config: hatracker.Config{ClusterLabel: serveOpts.ha.clusterLabel, ReplicaLabel: serveOpts.ha.replica,
			FailoverTimeout: serveOpts.ha.failover, UpdateTimeout: serveOpts.ha.update, UpdateTimeoutJitterMax: serveOpts.ha.jitt, MaxClusters: serveOpts.ha.maxClusters}},
		Query: query.Options{MaxSamples: serveOpts.maxSamples, MaxBytes: serveOpts.maxBytes, ScanConcurrency: serveOpts.scanConc},
		Adapter: adapter.Options{
			MaxRequestBytes:       serveOpts.maxRequestBytes,
			WriteTimeout:          serveOpts.writeTimeout,
			MaxConcurrentRequests: serveOpts.maxConcurrent,
			BodyTimeout:           serveOpts.bodyTimeout,
			ResponseWriteTimeout:  serveOpts.stallTimeout,
			MaxConcurrentReads:    serveOpts.readConcurrent,
			OTLP:                  func() otlp.Config { return otlpCfg },
			OpenTSDB:              serveOpts.openTSDB.options(),
		},
		API: promapi.Options{CORSOrigin: cors, Timeout: serveOpts.queryTimeout, MaxSamples: serveOpts.maxSamples, LookbackDelta: serveOpts.lookbackDelta,
			MaxConcurrency: serveOpts.queryMaxConc, Flags: flagValues(app), Build: buildVersion(), Features: splitFeatures(serveOpts.features), SlowQueryThreshold: serveOpts.slowQuery,
			Engine: serveOpts.queryEngine},
		Web:             web.Info{Version: version.Version, Backend: cfg.backendString(), ExternalURL: serveOpts.externalURL},
		Pprof:           serveOpts.enablePprof,
		ResultsCache:    resultsCache,
		ResultsCacheLog: server.ResultsCacheLogConfig{Enabled: cfg.backend == "hbase", PollInterval: rc.pollInterval},
		Registerer:      reg,
		Logger:          logger,
	}
	if srvCfg.API.Guards, err = serveOpts.queryGuards.guards(); err != nil {
		return server.Config{}, err
	}
	if err := checkWebFlags(); err != nil {
		return server.Config{}, err
	}
	return srvCfg, nil
}

// resultsCacheFlagsFor checks the --query.results-cache.* flags and
// returns them with max-age's default for backend: 0 (no bound) on the
// embedded store, an hour on HBase.
func resultsCacheFlagsFor(backend string) (resultsCacheFlags, error) {
	rc := serveOpts.resultsCache
	if rc.offset < 0 || rc.maxAge < 0 {
		return rc, fmt.Errorf("--query.results-cache.offset=%s, --query.results-cache.max-age=%s: must not be negative", rc.offset, rc.maxAge)
	}
	if serveOpts.ha.enabled && rc.maxBytes > 0 && rc.offset < serveOpts.ha.failover {
		return rc, fmt.Errorf("--query.results-cache.offset=%s is shorter than --ha-tracker.failover-timeout=%s: the samples of a replica elected after a failover would land in kept steps", rc.offset, serveOpts.ha.failover)
	}
	if rc.pollInterval <= 0 {
		return rc, fmt.Errorf("--query.results-cache.log-poll-interval=%s: must be positive", rc.pollInterval)
	}
	if rc.maxAge == 0 && backend == "hbase" {
		rc.maxAge = time.Hour // what the log does not carry: TSDs, CLI jobs
	}
	return rc, nil
}

// checkWebFlags checks --web.read-timeout and --web.config.file.
func checkWebFlags() error {
	if serveOpts.readTimeout <= 0 {
		// It also resets, between requests on one connection, the write
		// deadlines the remote endpoints move (--web.response-write-timeout).
		return fmt.Errorf("--web.read-timeout=%s: must be positive", serveOpts.readTimeout)
	}
	if serveOpts.webConfigFile != "" {
		if err := toolkitweb.Validate(serveOpts.webConfigFile); err != nil {
			return fmt.Errorf("--web.config.file=%s: %w", serveOpts.webConfigFile, err)
		}
	}
	return nil
}

// serveWiring is what serve wires its server (or tenants' servers) and
// ruler from.
type serveWiring struct {
	cfg      *config
	st       store.Store
	srvCfg   server.Config
	rulerCfg ruler.Config
	reg      *prometheus.Registry
	logger   *slog.Logger
	// theRuler is the ruler once started: the servers answer
	// /api/v1/rules and /api/v1/alerts from it, and it starts after them
	// (it evaluates through them).
	theRuler atomic.Pointer[ruler.Ruler]
	// puts takes the OpenTSDB port's telnet lines once the server is
	// wired.
	puts lazyPuts
}

// withRuler returns c with the ruler's configuration API and its rules
// and alertmanagers (read from theRuler once started) when the ruler is
// on.
func (w *serveWiring) withRuler(c server.Config) server.Config {
	if !rulerOpts.enabled {
		return c
	}
	lim := ruler.Limits{MaxRuleGroupsPerTenant: serveOpts.rulerLimits.maxGroups, MaxRulesPerRuleGroup: serveOpts.rulerLimits.maxRules}
	c.Ruler = server.RulerConfig{ConfigAPI: true, Limits: func() ruler.Limits { return lim },
		Rules: func(tenant string) ruler.RulesRetriever {
			if r := w.theRuler.Load(); r != nil {
				return r.Retriever(tenant)
			}
			return nil
		},
		Alertmanagers: func(tenant string) ruler.AlertmanagerRetriever {
			if r := w.theRuler.Load(); r != nil {
				return r.Alertmanagers(tenant)
			}
			return nil
		}}
	return c
}

// start wires the server at once on the embedded store; on HBase, which
// may not be there yet, serve answers at once (/-/ready 503 with the
// reason) and wires the server once it is reached, failing startFailed
// when it never can. stop stops the background work.
func (w *serveWiring) start() (handler http.Handler, startFailed <-chan error, stop func(), err error) {
	if w.cfg.backend != "hbase" {
		handler, stop, err = w.build(context.Background(), w.reg)
		return handler, nil, stop, err
	}
	if err := w.cfg.hbase.checkConnectTimeout(); err != nil {
		return nil, nil, nil, err
	}
	handler, startFailed, stop = startOnHBase(&w.cfg.hbase, w.reg, w.logger, w.build)
	return handler, startFailed, stop, nil
}

// build wires the server; sreg takes its metrics (and the mapper's),
// served at /metrics with reg's. With tenants reg takes them: their
// servers open at their first requests, and NewTenants never fails
// for the store, so it is not tried twice.
func (w *serveWiring) build(ctx context.Context, sreg *prometheus.Registry) (http.Handler, func(), error) {
	if serveOpts.tenants.enabled {
		ts, err := w.cfg.newTenants(w.st, w.srvCfg, serveOpts.tenants, w.reg, w.logger)
		if err != nil {
			return nil, nil, err
		}
		w.puts.set(ts.OpenTSDBWriter(serveOpts.openTSDB.tenant))
		return w.startRuler(ts, ts.Start(), nil, ts)
	}
	c := w.srvCfg
	if sreg != w.reg {
		c.Registerer, c.Adapter.Gatherer = sreg, prometheus.Gatherers{w.reg, sreg}
	}
	var err error
	if c.Mapper, err = w.cfg.newMapper(w.st, sreg, w.logger); err != nil {
		return nil, nil, err
	}
	srvp, err := server.New(ctx, w.st, c)
	if err != nil {
		return nil, nil, err
	}
	h, stopRuntime, err := withRuntime(srvp.Handler(), srvp, c, serveOpts.tenants, sreg, w.logger)
	if err != nil {
		return nil, nil, err
	}
	stopServer := srvp.Start()
	w.puts.set(srvp)
	return w.startRuler(h, func() { stopRuntime(); stopServer() }, srvp, nil)
}

// startRuler starts the ruler, when on, over the server srv or the
// tenants ts, and returns h and what stops the ruler, then stopServing;
// when the ruler cannot start it stops the serving and returns the
// error.
func (w *serveWiring) startRuler(h http.Handler, stopServing func(), srv *server.Server, ts *server.Tenants) (http.Handler, func(), error) {
	if !rulerOpts.enabled {
		return h, stopServing, nil
	}
	r, stopRuler, err := w.cfg.startRuler(w.st, w.rulerCfg, srv, ts)
	if err != nil {
		stopServing()
		return nil, nil, err
	}
	w.theRuler.Store(r)
	return h, func() { stopRuler(); stopServing() }, nil
}

// listen listens on --web.listen-address, for at most
// --web.max-connections connections at once.
func listen() (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", serveOpts.listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", serveOpts.listen, err)
	}
	if serveOpts.maxConnections > 0 {
		ln = netutil.LimitListener(ln, serveOpts.maxConnections)
	}
	return ln, nil
}

// serveUntilSignal serves srv on ln until SIGINT or SIGTERM, then shuts
// it down within 30 seconds; it returns at once the error of the serving
// or of startFailed (nil: never).
func serveUntilSignal(ln net.Listener, srv *http.Server, startFailed <-chan error, logger *slog.Logger) error {
	// Signals are caught before the first request can be answered: a
	// SIGTERM right after /-/ready answered shuts down cleanly, never by
	// the signal's default action.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() {
		webCfg := serveOpts.webConfigFile
		errc <- toolkitweb.Serve(ln, srv, &toolkitweb.FlagConfig{WebListenAddresses: &[]string{serveOpts.listen}, WebConfigFile: &webCfg}, logger.With("component", "web"))
	}()
	select {
	case err := <-errc:
		return err
	case err := <-startFailed:
		srv.Close()
		return err
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// autoBytes is a flag's byte count, or auto (the zero value's meaning
// until Set): a default the program computes (or).
type autoBytes struct {
	name string // the flag's, for errors
	n    uint64
	set  bool
}

// named sets the flag's name, which errors give, and returns it.
func (a *autoBytes) named(name string) string {
	a.name = name
	return name
}

// Set parses auto or a count of bytes (as kingpin's integer flags do:
// decimal, or with a 0x, 0o or 0b prefix).
func (a *autoBytes) Set(s string) error {
	if s == "auto" {
		a.n, a.set = 0, false
		return nil
	}
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return fmt.Errorf("--%s: want auto or a count of bytes, got %q", a.name, s)
	}
	a.n, a.set = n, true
	return nil
}

func (a *autoBytes) String() string {
	if !a.set {
		return "auto"
	}
	return strconv.FormatUint(a.n, 10)
}

// or returns the count set, auto when none is.
func (a *autoBytes) or(auto uint64) uint64 {
	if !a.set {
		return auto
	}
	return a.n
}
