package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/opentsdb"
	"github.com/promhbase/promhbase/store"
)

// openTSDBFlags are the --opentsdb.* flags: OpenTSDB's port.
type openTSDBFlags struct {
	listen      string
	tenant      string
	autoMetrics bool
	maxTags     int
}

// registerOpenTSDB adds the --opentsdb.* flags.
func registerOpenTSDB(cmd *kingpin.CmdClause, f *openTSDBFlags) {
	cmd.Flag("opentsdb.listen-address", "Address of OpenTSDB's port, as a TSD's --port (4242): telnet put lines and HTTP (/api/put, /api/query, /api/suggest, /api/aggregators, /api/config/filters, /api/version) on one port, told apart by the first byte of a connection, answered as a TSD 2.4.1 answers them (docs/opentsdb.md). Empty: off. /api/put, /api/query and /api/suggest are also served on --web.listen-address.").Default("").StringVar(&f.listen)
	cmd.Flag("opentsdb.tenant", "With --auth.multitenancy-enabled, the tenant that telnet put lines write to (HTTP requests name theirs in X-Scope-OrgID).").Default("anonymous").StringVar(&f.tenant)
	cmd.Flag("opentsdb.auto-create-metrics", "A put of a metric without a UID makes one, as tsd.core.auto_create_metrics=true; off (a TSD's default), such a point is refused as \"unknown metric\". Tag names and values always get UIDs.").Default("false").BoolVar(&f.autoMetrics)
	cmd.Flag("opentsdb.max-tags", "Most tags of a put point, as tsd.storage.max_tags.").Default("8").IntVar(&f.maxTags)
}

// openTSDBOptions are the adapter's options of the --opentsdb.* flags.
func (f openTSDBFlags) options() adapter.OpenTSDBOptions {
	return adapter.OpenTSDBOptions{AutoCreateMetrics: f.autoMetrics, MaxTags: f.maxTags}
}

// lazyPuts is the telnet lines' writer once serve has wired its server
// (on HBase, once the cluster answered): before, a put is the store's
// trouble.
type lazyPuts struct {
	w atomic.Pointer[opentsdb.Writer]
}

func (l *lazyPuts) set(w opentsdb.Writer) { l.w.Store(&w) }

func (l *lazyPuts) PutPoints(ctx context.Context, pts []opentsdb.Point, errs []*opentsdb.PointError) error {
	w := l.w.Load()
	if w == nil {
		return fmt.Errorf("%w: promhbase is starting", store.ErrUnavailable)
	}
	return (*w).PutPoints(ctx, pts, errs)
}

// startOpenTSDB listens on --opentsdb.listen-address and serves
// OpenTSDB's port there: telnet lines to puts, HTTP to h. It returns what
// stops it (nothing to stop when the flag is empty).
func startOpenTSDB(f openTSDBFlags, h http.Handler, puts opentsdb.Writer, reg prometheus.Registerer, logger *slog.Logger) (stop func(), err error) {
	if f.listen == "" {
		return func() {}, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", f.listen)
	if err != nil {
		return nil, fmt.Errorf("--opentsdb.listen-address: listen on %s: %w", f.listen, err)
	}
	p := opentsdb.NewPort(opentsdb.PortConfig{Telnet: puts, HTTP: opentsdb.HTTPHandler(h, tenantOf(f), tsdVersion()), MaxTags: f.maxTags,
		Version: "promhbase-" + version.Version + " built at revision " + version.Revision + " (MINT)", Built: version.BuildDate + " by " + version.BuildUser,
		WriteTimeout: serveOpts.writeTimeout, Logger: logger.With("component", "opentsdb"), Registerer: reg})
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	logger.Info("OpenTSDB port serving", "address", ln.Addr().String())
	return func() {
		_ = ln.Close()
		_ = p.Close()
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			logger.Warn("OpenTSDB port", "err", err)
		}
	}, nil
}

// tenantOf is the tenant of the port's requests that name none: with
// tenants, --opentsdb.tenant; without, none.
func tenantOf(f openTSDBFlags) string {
	if !serveOpts.tenants.enabled {
		return ""
	}
	return f.tenant
}
