package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/grafana/regexp"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/opentsdb"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/tsd"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web/promapi"
)

// paths builds the write path, the read path and the remote write and
// read endpoints over them (ready once the UID table answers).
func (b *wiring) paths() error {
	st, uidTable := b.st, b.cfg.Tables.UID
	w := ingest.New(b.cfg.Mapper, st, b.wopts)
	q := query.New(st, b.readMapper, b.qopts)
	b.s.q, b.s.writer = q, w
	aopts := b.cfg.Adapter
	aopts.Ready = func(ctx context.Context) error {
		_, err := st.Get(ctx, uidTable, []byte{0}, uid.FamilyID)
		return err
	}
	uids := b.cfg.Mapper.UIDs()
	aopts.OpenTSDB.MetricExists = func(ctx context.Context, metric string) (bool, error) {
		_, err := uids.ID(ctx, uid.KindMetric, metric)
		if errors.Is(err, uid.ErrNoSuchName) {
			return false, nil
		}
		return err == nil, err
	}
	aopts.OpenTSDB.Names = func(ctx context.Context, kind string, start, stop []byte, max int) ([][]byte, error) {
		return uidNames(ctx, st, uidTable, kind, start, stop, max)
	}
	tsq := tsd.New(st, uids, b.cfg.Layout, b.cfg.Tables.Data)
	aopts.OpenTSDB.Query = tsq.Eval
	if b.info.MetaTable != "" {
		tsq.SetMetaTable(b.info.MetaTable)
	}
	aopts.OpenTSDB.Lookup = tsq.Lookup
	if err := readOnly(st, &aopts, b.reg); err != nil {
		return err
	}
	h, err := adapter.New(w, q, aopts, b.reg, b.logger)
	if err != nil {
		return err
	}
	h.SetReadGuards(readGuards(b.cfg.API.Guards))
	b.remote, b.s.puts = h, h
	return nil
}

// queryAPI builds the query API's options (admin, cardinality,
// downsampling, the ruler's endpoints) and the API: at once for the
// single tenant, at a tenant's first query otherwise.
func (b *wiring) queryAPI() error {
	popts := b.apiOptions()
	if b.cfg.Tenant == "" {
		a, err := promapi.New(popts)
		if err != nil {
			return err
		}
		b.api, b.s.api, b.s.setGuards = a, func() (*promapi.API, error) { return a, nil }, a.SetGuards
		return nil
	}
	// A tenant's query API is built at its first query: building
	// one costs about a third of a CPU second (Prometheus's OpenAPI
	// document), which tenants that only write never pay.
	l := &lazyAPI{opts: popts}
	b.api, b.s.api, b.s.setGuards = l, l.get, l.setGuards
	return nil
}

// apiOptions returns the query API's options: the Config's, with the
// read path, the admin API, cardinality from the series index, the
// retention, the ruler's endpoints and downsampling filled in.
func (b *wiring) apiOptions() promapi.Options {
	cfg, st, q, s := b.cfg, b.st, b.s.q, b.s
	popts := cfg.API
	popts.Queryable, popts.Store, popts.UIDTable, popts.MetricWidth = q.Storage(), st, cfg.Tables.UID, cfg.Layout.MetricWidth
	var rollupTables []string
	if cfg.Rollup.Enabled {
		for _, iv := range rollup.Buildable(b.qopts.Rollups) {
			rollupTables = append(rollupTables, iv.Table)
		}
	}
	popts.EnableAdmin, popts.Admin = cfg.EnableAdmin, admin{del: b.del, st: st, cache: s.cacheTeller,
		tables: snapshotTables(cfg.Tables, rollupTables)}
	popts.ResultsCache, popts.Tenant = cfg.ResultsCache, cfg.Tenant
	if b.ixw != nil && popts.Cardinality == nil {
		// /api/v1/status/tsdb counts the index's series rows.
		popts.Cardinality = index.NewReader(st, cfg.Tables.Index, b.readMapper.UIDs(), cfg.Layout)
	}
	if popts.Retention == "" {
		popts.Retention = retentionString(cfg.Retention)
	}
	popts.Logger, popts.Registerer = b.logger, b.reg
	rulerAPIOptions(&popts, cfg)
	if s.rollups != nil {
		rc := b.qopts.Rollups
		popts.Downsampling = &promapi.Downsampling{Config: rc, Intervals: rollup.Buildable(rc), Auto: cfg.Rollup.AutoDownsampling,
			Approximate: cfg.Rollup.Approximate, MinRolledShare: cfg.Rollup.MinRolledShare, Built: s.rollups.Hours}
		if r := cfg.Retention; r.Raw > 0 && (r.Time == 0 || r.Raw < r.Time) {
			now := r.Now
			if now == nil {
				now = time.Now
			}
			popts.Downsampling.RawFrom = func() int64 { return now().Add(-r.Raw).UnixMilli() }
		}
	}
	if popts.CORSOrigin == nil {
		popts.CORSOrigin = regexp.MustCompile("^(?:.*)$")
	}
	return popts
}

// lazyAPI is a query API built at its first request.
type lazyAPI struct {
	opts promapi.Options
	once sync.Once
	mu   sync.Mutex // api and opts.Guards, for setGuards
	api  *promapi.API
	err  error
}

// get returns the API, built at the first call.
func (l *lazyAPI) get() (*promapi.API, error) {
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.api, l.err = promapi.New(l.opts)
	})
	return l.api, l.err
}

// setGuards puts g in force on the API, or in the options it will be
// built with: setting them does not build it.
func (l *lazyAPI) setGuards(g promapi.Guards) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.api != nil {
		l.api.SetGuards(g)
		return
	}
	l.opts.Guards = g
}

func (l *lazyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api, err := l.get()
	if err != nil {
		http.Error(w, "query API: "+err.Error(), http.StatusInternalServerError)
		return
	}
	api.ServeHTTP(w, r)
}

// Handler serves every endpoint: remote write and read, the query API,
// the web pages, health and readiness.
func (s *Server) Handler() http.Handler { return s.handler }

// PutPoints stores OpenTSDB put points in the server's tables
// (opentsdb.Writer; adapter.Handler.PutPoints).
func (s *Server) PutPoints(ctx context.Context, pts []opentsdb.Point, errs []*opentsdb.PointError) error {
	return s.puts.PutPoints(ctx, pts, errs)
}

// uidNames returns the names of kind whose forward rows of the UID table
// lie in [start, stop), in row order, at most max (0: all): the rows with
// a cell of the "id" family whose qualifier is kind, as a TSD's suggest
// scans them.
func uidNames(ctx context.Context, st store.Store, table, kind string, start, stop []byte, max int) ([][]byte, error) {
	sc := st.Scan(ctx, store.ScanRequest{Table: table, Start: start, Stop: stop, Family: uid.FamilyID})
	defer sc.Close()
	var names [][]byte
	for (max == 0 || len(names) < max) && sc.Next() {
		row := sc.Row()
		for _, c := range row.Cells {
			if string(c.Qualifier) == kind {
				names = append(names, bytes.Clone(row.Key))
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan %s for %s names: %w", table, kind, err)
	}
	return names, nil
}
