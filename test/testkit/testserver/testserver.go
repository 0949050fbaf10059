// Package testserver starts an in-process promhbase over a given store on
// a loopback HTTP server, for end-to-end tests: wired by server.New as
// `promhbase serve` wires it, with serve's defaults (compaction and the
// series index on).
package testserver

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/resultcache"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
	"github.com/promhbase/promhbase/web/promapi"
)

// Options tune the server.
type Options struct {
	// Adapter configures the HTTP handler.
	Adapter adapter.Options
	// ColdReads makes reads go through a second mapper with empty caches
	// and no metric-name caching, as a second promhbase process would read.
	ColdReads bool
	// Logger receives the handler's logs; nil discards them.
	Logger *slog.Logger
	// Limits are the write limits; nil means limits.DefaultConfig, as
	// serve's defaults.
	Limits *limits.Config
	// MaxSamples and MaxBytes are the query limits (query.Options); 0
	// means query's defaults.
	MaxSamples int
	MaxBytes   int64
	// EnableAdmin serves the TSDB admin API (delete_series,
	// clean_tombstones), as serve's --web.enable-admin-api.
	EnableAdmin bool
	// Rollup, when set, builds and reads rollups (its Config defaults to
	// the tables' testbackend.Tables.RollupConfig).
	Rollup *server.RollupConfig
	// HA, when set, deduplicates HA pairs over the tables' HA table.
	HA *server.HAConfig
	// Tenants, when set, serves tenants (server.Tenants), each in its
	// namespace of st's tables.
	Tenants *TenantOptions
	// ResultsCache, when set, keeps the answers of range queries
	// (server.Config.ResultsCache).
	ResultsCache *resultcache.Cache
	// ResultsCacheLog shares the cache's invalidations through the store
	// (server.Config.ResultsCacheLog).
	ResultsCacheLog server.ResultsCacheLogConfig
	// Retention, when set, configures the retention cycles.
	Retention *server.RetentionConfig
	// Engine is the PromQL evaluator (promapi.Options.Engine); empty:
	// promhbase's.
	Engine string
	// NoCompaction turns the background compactor off, for tests that
	// compact rows themselves at a moment of their own.
	NoCompaction bool
}

// TenantOptions configure a multi-tenant test server.
type TenantOptions struct {
	Federation, AutoCreate bool
	// RuntimeFile is the runtime configuration (overrides and logins);
	// empty: none.
	RuntimeFile string
	// ReloadPeriod is how often it is read again; 0: overrides' default.
	ReloadPeriod time.Duration
	// BasicAuthUsers maps logins to passwords, checked before a request
	// reaches the server (as --web.config.file's basic_auth_users); nil:
	// no logins.
	BasicAuthUsers map[string]string
}

// startTenants serves tenants with cfg as every tenant's configuration.
func startTenants(t testing.TB, st store.Store, tables testbackend.Tables, layout mapping.Layout, cfg server.Config, to TenantOptions) *Server {
	t.Helper()
	reg := cfg.Registerer.(*prometheus.Registry)
	// As serve makes them: the flags' limits and OTLP settings.
	defaults := overrides.FromConfig(cfg.Limits, cfg.Query.MaxSamples)
	otlpCfg := otlp.DefaultConfig()
	if cfg.Adapter.OTLP != nil {
		otlpCfg = cfg.Adapter.OTLP()
	}
	defaults.OTel = overrides.OTelLimitsOf(otlpCfg)
	rt, err := overrides.New(overrides.Options{Path: to.RuntimeFile, Period: to.ReloadPeriod,
		Defaults: defaults, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	tc := server.TenantsConfig{Federation: to.Federation, AutoCreate: to.AutoCreate, Runtime: rt, Gatherer: reg,
		BasicAuth: to.BasicAuthUsers != nil, Provision: testbackend.ProvisionTenant(t, st, tables),
		NewMapper: func(view store.Store, r prometheus.Registerer) (*series.Mapper, error) {
			uids, err := uid.NewUIDs(view, layout, uid.UIDOptions{Table: tables.UID, Registerer: r})
			if err != nil {
				return nil, err
			}
			return series.NewMapper(uids, layout, 0), nil
		}}
	cfg.Mapper, cfg.ReadMapper = nil, nil
	ts, err := server.NewTenants(st, cfg, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Start())
	var h http.Handler = ts
	if users := to.BasicAuthUsers; users != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); ok && (users[u] != p) {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			ts.ServeHTTP(w, r)
		})
	}
	return &Server{Handler: h, Tenants: ts, Provision: tc.Provision, Registry: reg}
}

// Server is a running in-process promhbase.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port (Start).
	URL string
	// Handler serves every endpoint.
	Handler http.Handler
	// Mapper is the write path's mapper (its UIDs, its caches); nil
	// with tenants.
	Mapper *series.Mapper
	// Tenants is the multi-tenant server (TenantOptions), Provision how
	// it creates a tenant's tables.
	Tenants   *server.Tenants
	Provision func(ctx context.Context, ns string) error
	// Server is the wired server (SetLimits); nil with tenants.
	Server *server.Server
	// Registry holds the server's metrics (testproc.GatherSum).
	Registry *prometheus.Registry
}

// Start serves promhbase over st's tables on a loopback HTTP server
// until the test ends.
func Start(t testing.TB, st store.Store, tables testbackend.Tables, layout mapping.Layout, opts Options) *Server {
	t.Helper()
	s := New(t, st, tables, layout, opts)
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Write sends req to the server's remote write 1.0 endpoint,
// snappy-compressed, failing t unless it answers 204 No Content.
func (s *Server) Write(t testing.TB, req *prompb.WriteRequest) {
	t.Helper()
	testhttp.Expect(t, testhttp.Request{Method: http.MethodPost, URL: s.URL + "/api/v1/write", Body: promremote.MustBody(t, req),
		Header: map[string]string{"Content-Type": "application/x-protobuf"}}, http.StatusNoContent)
}

// New wires promhbase over st's tables, its background work running
// until the test ends, without an HTTP server: Server.Handler serves it
// (benchmarks call it directly).
func New(t testing.TB, st store.Store, tables testbackend.Tables, layout mapping.Layout, opts Options) *Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	uidReg := prometheus.Registerer(reg)
	if opts.Tenants != nil {
		uidReg = nil // each tenant's metrics carry its label
	}
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tables.UID, Registerer: uidReg})
	if err != nil {
		t.Fatal(err)
	}
	m := series.NewMapper(uids, layout, 0)
	readMapper, qopts := m, query.Options{DataTable: tables.Data, UIDTable: tables.UID}
	if opts.ColdReads {
		ruids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tables.UID})
		if err != nil {
			t.Fatal(err)
		}
		readMapper = series.NewMapper(ruids, layout, 0)
		qopts.MetricNamesTTL = time.Nanosecond
	}
	lcfg := limits.DefaultConfig()
	if opts.Limits != nil {
		lcfg = *opts.Limits
	}
	qopts.MaxSamples, qopts.MaxBytes = opts.MaxSamples, opts.MaxBytes
	// As serve wires it, with serve's defaults.
	cfg := server.Config{
		Layout: layout,
		Tables: server.Tables{Data: tables.Data, UID: tables.UID, Exemplar: tables.Exemplar, Meta: tables.Meta, Index: tables.Index, HA: tables.HA},
		Mapper: m, ReadMapper: readMapper, Limits: lcfg, ExemplarSlots: ingest.DefaultExemplarSlots,
		Index: server.IndexConfig{Enabled: true, Query: true, CacheBytes: index.DefaultCacheBytes},
		Compaction: server.CompactionConfig{Enabled: !opts.NoCompaction, Grace: compact.DefaultGrace,
			MaxRowsPerHour: compact.DefaultMaxRowsPerHour, Concurrency: 4},
		Query: qopts, Adapter: opts.Adapter,
		EnableAdmin:  opts.EnableAdmin,
		API:          promapi.Options{Build: v1.PrometheusVersion{Version: "test"}, Engine: opts.Engine},
		ResultsCache: opts.ResultsCache, ResultsCacheLog: opts.ResultsCacheLog,
		Registerer: reg, Logger: opts.Logger,
	}
	if opts.Retention != nil {
		cfg.Retention = *opts.Retention
	}
	if opts.Rollup != nil {
		cfg.Rollup = *opts.Rollup
		if cfg.Rollup.Config == nil {
			cfg.Rollup.Config = tables.RollupConfig()
		}
	}
	if opts.HA != nil {
		cfg.HA = *opts.HA
	}
	if opts.Tenants != nil {
		return startTenants(t, st, tables, layout, cfg, *opts.Tenants)
	}
	s, err := server.New(t.Context(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Start())
	return &Server{Handler: s.Handler(), Mapper: m, Server: s, Registry: reg}
}
