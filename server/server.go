// Package server wires one promhbase server from a Config over an open
// store: the write path (ingest) with its limits, exemplars, metadata and
// series index, the read path (query), background compaction, retention,
// series deletion for the admin API, the remote
// endpoints (adapter), the Prometheus query API (promapi) and the web
// pages (web). `promhbase serve` and the test server both build theirs
// with New, so the suites run what users run.
//
// New and its steps over the store are in wiring.go; the endpoints (the
// write and read paths behind the remote ones, the query API and its
// options) in endpoints.go; Run and Start, the background work, in
// background.go.
//
// Also wired here: the admin API (admin.go: Admin over package deletion and
// the store's snapshots, every table of the server, the UID table last);
// the rollup scheduler, told of the rows written; the results cache, told
// of every change of old data and, on HBase, polling the log of the other
// replicas' changes (resultcache.go, package cachelog); the HA tracker,
// given to the write path; the ruler's view of a server (ruler.go: its
// engine, queryable and write path).
//
// Tenants (tenants.go) reads the tenant of each request (X-Scope-OrgID or
// the login; statusOf answers 401, 400, 403, or 503 for a tenant whose
// tables cannot be opened) and keeps one Server per tenant over its
// namespace of the store (store.Namespaced), opened at its first request,
// with shared request and query slots, federated query APIs, and the limits
// of package overrides put in force on reload.
package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/jobs/retention"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/resultcache"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/web"
	"github.com/promhbase/promhbase/web/promapi"
)

// Tables names the tables a server uses. Exemplar, Meta and Index may be
// empty: exemplars, TSMeta rows or the series index are then not kept.
type Tables struct {
	Data, UID, Exemplar, Meta, Index string
	// HA is the HA tracker's table of elections.
	HA string
	// Rules is the ruler's table of rule groups (package ruler).
	Rules string
}

// HAConfig configures the deduplication of HA Prometheus pairs (package
// hatracker); its Table is Tables.HA.
type HAConfig struct {
	Enabled bool
	hatracker.Config
}

// IndexConfig configures the series index.
type IndexConfig struct {
	Enabled bool
	// Query answers label questions and name-less selectors from the
	// index for the ranges it covers.
	Query      bool
	CacheBytes int
	// SkipTSMeta leaves OpenTSDB's TSMeta rows out: /api/search/lookup
	// (meta mode, its only mode on GET) then finds nothing.
	SkipTSMeta bool
}

// CompactionConfig configures background compaction of the rows written.
type CompactionConfig struct {
	Enabled        bool
	Grace          time.Duration
	MaxRowsPerHour int
	Concurrency    int
	// CheckInterval is how often due hours are looked for (0:
	// compact.DefaultCheckInterval).
	CheckInterval time.Duration
}

// RetentionConfig configures the retention cycle (package retention).
// Time and Size of zero keep everything.
type RetentionConfig struct {
	Time     time.Duration
	Size     int64 // bytes; the embedded store only
	Interval time.Duration
	// Raw is the retention of raw samples when shorter than Time (0:
	// Time); Resolutions that of the rollups of an interval, by name
	// ("5m"), when shorter (absent or 0: Time).
	Raw         time.Duration
	Resolutions map[string]time.Duration
	// Now is the cycles' clock (tests); nil: time.Now.
	Now func() time.Time
}

// RollupConfig configures downsampling (package rollup).
type RollupConfig struct {
	// Enabled builds rollups in the background and lets queries read
	// them.
	Enabled bool
	// Config is the rollup configuration (its tables must exist); nil
	// means rollup.Default.
	Config *rollup.Config
	// Grace is how long after an hour ends its rollups are built.
	Grace time.Duration
	// AutoDownsampling makes queries choose a resolution by their step
	// unless they name one (max_source_resolution).
	AutoDownsampling bool
	// Approximate lets auto downsampling answer approximately
	// (promapi.Downsampling.Approximate).
	Approximate bool
	// MinRolledShare is promapi.Downsampling.MinRolledShare (tests).
	MinRolledShare float64
	// CheckInterval is how often due hours are looked for (0: 30s).
	CheckInterval time.Duration
	// Now is the scheduler's clock (tests); nil: time.Now.
	Now func() time.Time
}

// Config is everything New needs besides the store.
type Config struct {
	// Tenant is the tenant the server serves (its HA elections are
	// kept under it); empty: the one implicit tenant of a server without
	// tenants (hatracker.DefaultTenant).
	Tenant string
	Layout mapping.Layout
	Tables Tables
	// Mapper is the write path's series mapper, over the UID table.
	Mapper *series.Mapper
	// ReadMapper resolves series on the read path; nil: Mapper.
	ReadMapper *series.Mapper
	// Limits are the write limits.
	Limits limits.Config
	// ExemplarSlots is the exemplars kept per series and hour; 0 keeps
	// none.
	ExemplarSlots int
	Index         IndexConfig
	Compaction    CompactionConfig
	Retention     RetentionConfig
	Rollup        RollupConfig
	HA            HAConfig
	// EnableAdmin serves the TSDB admin API (delete_series,
	// clean_tombstones) over package deletion.
	EnableAdmin bool
	// Query configures the read path; its tables, index and exemplar
	// table are set by New.
	Query query.Options
	// Adapter configures the remote endpoints; Ready is set by New.
	Adapter adapter.Options
	// API configures the query API; Queryable, Store, UIDTable,
	// MetricWidth, Logger and Registerer are set by New.
	API promapi.Options
	// Web is shown on the landing page; its tables and layout are set by
	// New.
	Web   web.Info
	Pprof bool
	// ResultsCache, when set, keeps the answers of range queries (package
	// resultcache), shared by every tenant; the server tells it of the
	// old data it changes.
	ResultsCache *resultcache.Cache
	// ResultsCacheLog shares the results cache's invalidations with the
	// other processes that write to the same tables (package cachelog).
	ResultsCacheLog ResultsCacheLogConfig
	// Registerer takes the server's metrics; nil: none are registered.
	Registerer prometheus.Registerer
	// SharedRegisterer takes the metrics that carry a tenant label of
	// their own (the HA tracker's), shared by the servers of every
	// tenant; nil: Registerer.
	SharedRegisterer prometheus.Registerer
	// Ruler is what the server serves of the ruler; the zero value: the
	// ruler off.
	Ruler RulerConfig
	// Logger takes its logs; nil discards them.
	Logger *slog.Logger
}

// Server is a wired promhbase: Handler serves its HTTP endpoints, Run its
// background work.
type Server struct {
	handler http.Handler
	lim     *limits.Limits
	q       *query.Querier
	uids    *uid.UIDs
	sched   *compact.Scheduler // nil: no compaction
	ret     *retention.Retention
	// retentionTime is the flags' retention time (RetentionConfig.Time),
	// which a tenant's policy without a time keeps.
	retentionTime time.Duration
	rollups       *rollup.Scheduler // nil: no rollups
	builder       *rollup.Builder   // the rollups' builder
	cacheTeller   *cacheTeller      // nil: the cache is off
	logger        *slog.Logger
	// writer and api are the ruler's (RulerTenant).
	writer *ingest.Writer
	puts   *adapter.Handler // OpenTSDB's put (PutPoints)
	api    func() (*promapi.API, error)
	// setGuards puts query guardrails in force on the query API, built
	// or not yet (SetQueryGuards).
	setGuards func(promapi.Guards)
}

// SetLimits puts new write limits and a new query sample limit (0: the
// default) in force, for requests that start from now on.
func (s *Server) SetLimits(l limits.Config, maxQuerySamples int) error {
	if err := s.lim.SetConfig(l); err != nil {
		return err
	}
	s.q.SetMaxSamples(maxQuerySamples)
	// A limit may turn an answer into an error or back: the tenant's kept
	// answers go.
	if t := s.cacheTeller; t != nil {
		t.c.Reset(t.tenant)
	}
	return nil
}

// Queryable is the server's read path for PromQL.
func (s *Server) Queryable() *query.Storage { return s.q.Storage() }
