// Package testserver starts an in-process promhbase over a given store on
// a loopback HTTP server, for end-to-end tests: wired by server.New as
// `promhbase serve` wires it, with serve's defaults (compaction and the
// series index on).
package testserver

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/compact"
	"github.com/promhbase/promhbase/index"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/internal/testkit/testbackend"
	"github.com/promhbase/promhbase/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/promapi"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/uid"
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
}

// Server is a running in-process promhbase.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port.
	URL string
	// Mapper is the write path's mapper (its UIDs, its caches).
	Mapper *series.Mapper
}

// Start serves promhbase over st's tables until the test ends.
func Start(t testing.TB, st store.Store, tables testbackend.Tables, layout mapping.Layout, opts Options) *Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: tables.UID, Registerer: reg})
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
		Compaction: server.CompactionConfig{Enabled: true, Grace: compact.DefaultGrace,
			MaxRowsPerHour: compact.DefaultMaxRowsPerHour, Concurrency: 4},
		Query: qopts, Adapter: opts.Adapter,
		EnableAdmin: opts.EnableAdmin,
		API:         promapi.Options{Version: "test"},
		Registerer:  reg, Logger: opts.Logger,
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
	s, err := server.New(t.Context(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Start())
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &Server{URL: srv.URL, Mapper: m}
}
