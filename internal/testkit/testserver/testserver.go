// Package testserver starts an in-process promhbase (the real adapter,
// mapping and query packages over a given store) on a loopback HTTP server,
// for end-to-end tests.
package testserver

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/index"
	"github.com/promhbase/promhbase/internal/testkit/testbackend"
	"github.com/promhbase/promhbase/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/promapi"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web"
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
}

// Server is a running in-process promhbase.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port.
	URL string
	// Mapper is the write path's mapper (its UIDs, its caches).
	Mapper *mapping.Mapper
}

// Start serves promhbase over st's tables until the test ends.
func Start(t testing.TB, st store.Store, tables testbackend.Tables, layout mapping.Layout, opts Options) *Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	uids, err := mapping.NewUIDs(st, layout, mapping.UIDOptions{Table: tables.UID, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	m := mapping.NewMapper(uids, layout, 0)
	readMapper, qopts := m, query.Options{DataTable: tables.Data, UIDTable: tables.UID}
	if opts.ColdReads {
		ruids, err := mapping.NewUIDs(st, layout, mapping.UIDOptions{Table: tables.UID})
		if err != nil {
			t.Fatal(err)
		}
		readMapper = mapping.NewMapper(ruids, layout, 0)
		qopts.MetricNamesTTL = time.Nanosecond
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := adapter.NewWriter(m, st, tables.Data)
	lcfg := limits.DefaultConfig()
	if opts.Limits != nil {
		lcfg = *opts.Limits
	}
	lim, err := limits.New(lcfg, layout, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.SetLimits(lim)
	if tables.Exemplar != "" {
		w.SetExemplars(tables.Exemplar, adapter.DefaultExemplarSlots)
	}
	w.SetMetadata(mapping.NewMetas(uids, 0))
	qopts.ExemplarTable = tables.Exemplar
	if tables.Meta != "" && tables.Index != "" {
		// The series index, as serve keeps it: covered from the start.
		ixw := index.NewWriter(st, index.Options{MetaTable: tables.Meta, IndexTable: tables.Index, Layout: layout}, reg)
		if err := ixw.MarkCoverage(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		w.SetIndexer(ixw)
		qopts.Index = index.NewReader(st, tables.Index, readMapper.UIDs(), layout)
	}
	qopts.MaxSamples, qopts.MaxBytes = opts.MaxSamples, opts.MaxBytes
	q := query.New(st, readMapper, qopts)
	h, err := adapter.New(w, q, opts.Adapter, reg, logger)
	if err != nil {
		t.Fatal(err)
	}
	api, err := promapi.New(promapi.Options{Queryable: q.Storage(), Store: st, UIDTable: tables.UID, MetricWidth: layout.MetricWidth, Logger: logger, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Options{Remote: h, API: api}))
	t.Cleanup(srv.Close)
	return &Server{URL: srv.URL, Mapper: m}
}
