// Package server wires one promhbase server from a Config over an open
// store: the write path (ingest) with its limits, exemplars, metadata and
// series index, the read path (query), background compaction, retention,
// series deletion for the admin API, the remote
// endpoints (adapter), the Prometheus query API (promapi) and the web
// pages (web). `promhbase serve` and the test server both build theirs
// with New, so the suites run what users run.
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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/compact"
	"github.com/promhbase/promhbase/deletion"
	"github.com/promhbase/promhbase/hatracker"
	"github.com/promhbase/promhbase/index"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/metadata"
	"github.com/promhbase/promhbase/promapi"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/resultcache"
	"github.com/promhbase/promhbase/retention"
	"github.com/promhbase/promhbase/rollup"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/uid"
	"github.com/promhbase/promhbase/web"
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
	// SkipTSMeta leaves OpenTSDB's TSMeta rows out (the embedded store,
	// which no TSD reads).
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
	handler     http.Handler
	lim         *limits.Limits
	q           *query.Querier
	uids        *uid.UIDs
	sched       *compact.Scheduler // nil: no compaction
	ret         *retention.Retention
	rollups     *rollup.Scheduler // nil: no rollups
	builder     *rollup.Builder   // the rollups' builder
	cacheTeller *cacheTeller      // nil: the cache is off
	logger      *slog.Logger
	// writer and api are the ruler's (RulerTenant).
	writer *ingest.Writer
	api    func() (*promapi.API, error)
}

// New wires a server over st. It checks that the tables the Config asks
// for exist, and marks where the series index starts covering: from day 0
// when the data table is empty, else from tomorrow (today may hold rows
// written before the index was kept; `promhbase reindex` covers them).
func New(ctx context.Context, st store.Store, cfg Config) (*Server, error) {
	b, err := newWiring(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	for _, step := range []func() error{
		b.exemplars,
		b.seriesIndex,
		b.compaction,
		b.resultsCache,
		b.rollups,
		b.haTracker,
		b.paths,
		b.deletion,
		b.retention,
		b.queryAPI,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	b.s.handler = web.New(web.Options{Remote: b.remote, API: b.api, Pprof: cfg.Pprof, Info: b.info, Flags: cfg.API.Flags, HATracker: b.haPage,
		RulerConfig: rulerConfigAPI(st, cfg, b.logger)})
	return b.s, nil
}

// wiring is a Server being wired by New: the options of its parts,
// filled in step by step, and what each step built for the next.
type wiring struct {
	ctx        context.Context
	st         store.Store
	cfg        Config
	logger     *slog.Logger
	reg        prometheus.Registerer
	readMapper *series.Mapper
	s          *Server

	wopts ingest.Options
	qopts query.Options
	info  web.Info

	ixw    *index.Writer      // nil: no series index
	comp   *compact.Compactor // nil: no compaction
	haPage http.Handler       // nil: no HA tracker
	remote http.Handler       // remote write and read
	del    *deletion.Deleter
	api    http.Handler // the query API
}

// newWiring fills in the Config's defaults (a discarding logger, a
// registry of its own, the write mapper for reads), sets up the limits
// and starts the write, read and web options from the Config.
func newWiring(ctx context.Context, st store.Store, cfg Config) (*wiring, error) {
	b := &wiring{ctx: ctx, st: st, cfg: cfg, logger: cfg.Logger, reg: cfg.Registerer, readMapper: cfg.ReadMapper}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	if b.reg == nil {
		b.reg = prometheus.NewRegistry()
	}
	if b.readMapper == nil {
		b.readMapper = cfg.Mapper
	}
	lim, err := limits.New(cfg.Limits, cfg.Layout, b.reg, nil)
	if err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	b.wopts = ingest.Options{Table: cfg.Tables.Data, Limits: lim, Metadata: metadata.NewMetas(cfg.Mapper.UIDs(), st, 0),
		Retention: cfg.Retention.Time, Now: cfg.Retention.Now}
	b.qopts = cfg.Query
	b.qopts.DataTable, b.qopts.UIDTable = cfg.Tables.Data, cfg.Tables.UID
	b.info = cfg.Web
	b.info.DataTable, b.info.UIDTable = cfg.Tables.Data, cfg.Tables.UID
	b.info.SaltWidth, b.info.SaltBuckets = cfg.Layout.SaltWidth, cfg.Layout.SaltBuckets
	b.info.UIDWidths = [3]int{cfg.Layout.MetricWidth, cfg.Layout.TagKWidth, cfg.Layout.TagVWidth}
	b.s = &Server{uids: cfg.Mapper.UIDs(), logger: b.logger, lim: lim}
	return b, nil
}

// exemplars checks the exemplar table and has exemplars written and read
// when they are kept.
func (b *wiring) exemplars() error {
	cfg := b.cfg
	if cfg.ExemplarSlots <= 0 || cfg.Tables.Exemplar == "" {
		return nil
	}
	if cfg.ExemplarSlots > mapping.MaxExemplarSlots {
		return fmt.Errorf("--storage.exemplars.per-series-hour=%d: at most %d", cfg.ExemplarSlots, mapping.MaxExemplarSlots)
	}
	if err := checkTable(b.ctx, b.st, cfg.Tables.Exemplar, mapping.ExemplarFamily,
		"or set --storage.exemplars.per-series-hour=0"); err != nil {
		return fmt.Errorf("exemplar %w", err)
	}
	b.wopts.ExemplarTable, b.wopts.ExemplarSlots = cfg.Tables.Exemplar, cfg.ExemplarSlots
	b.qopts.ExemplarTable = cfg.Tables.Exemplar
	b.info.ExemplarTable = cfg.Tables.Exemplar
	return nil
}

// seriesIndex opens the series index's writer when the index is kept,
// and reads through it when the Config asks.
func (b *wiring) seriesIndex() error {
	cfg := b.cfg
	if !cfg.Index.Enabled || cfg.Tables.Meta == "" || cfg.Tables.Index == "" {
		return nil
	}
	ixw, err := openIndex(b.ctx, b.st, cfg, b.reg)
	if err != nil {
		return err
	}
	b.ixw, b.wopts.Indexer = ixw, ixw
	if cfg.Index.Query {
		b.qopts.Index = index.NewReader(b.st, cfg.Tables.Index, b.readMapper.UIDs(), cfg.Layout)
	}
	b.info.IndexTable = cfg.Tables.Index
	if !cfg.Index.SkipTSMeta {
		b.info.MetaTable = cfg.Tables.Meta
	}
	return nil
}

// compaction sets up the compactor and its scheduler, which notes the
// rows written, when compaction is on.
func (b *wiring) compaction() error {
	c := b.cfg.Compaction
	if !c.Enabled {
		return nil
	}
	b.comp = compact.New(b.st, compact.Options{DataTable: b.cfg.Tables.Data, UIDTable: b.cfg.Tables.UID, Layout: b.cfg.Layout, Concurrency: c.Concurrency})
	sched, err := compact.NewScheduler(b.comp, compact.SchedulerOptions{
		Grace: c.Grace, MaxRowsPerHour: c.MaxRowsPerHour, CheckInterval: c.CheckInterval, Registerer: b.reg, Logger: b.logger.With("component", "compaction"),
	})
	b.s.sched = sched
	if err != nil {
		return fmt.Errorf("compaction: %w", err)
	}
	b.wopts.RowNoter = b.s.sched
	return nil
}

// resultsCache has the writes tell the results cache what they change.
func (b *wiring) resultsCache() error {
	b.s.wireResultsCache(b.ctx, b.st, b.cfg, &b.wopts, b.reg, b.logger.With("component", "results-cache"))
	return nil
}

// rollups opens the rollups' builder and scheduler when rollups are on.
func (b *wiring) rollups() error {
	if !b.cfg.Rollup.Enabled {
		return nil
	}
	return b.s.openRollups(b.ctx, b.st, b.cfg, &b.qopts, &b.wopts, b.reg, b.logger)
}

// haTracker checks the HA table and has the writes deduplicated by the
// tracker, whose page the web UI shows, when it is on.
func (b *wiring) haTracker() error {
	cfg := b.cfg
	if !cfg.HA.Enabled {
		return nil
	}
	if err := checkTable(b.ctx, b.st, cfg.Tables.HA, hatracker.Family, "or turn --ha-tracker.enable off"); err != nil {
		return fmt.Errorf("HA tracker %w", err)
	}
	hc := cfg.HA.Config
	hc.Table = cfg.Tables.HA
	haReg := cfg.SharedRegisterer
	if haReg == nil {
		haReg = b.reg
	}
	tr, err := hatracker.New(b.st, hc, haReg)
	if err != nil {
		return err
	}
	haTenant := cfg.Tenant
	if haTenant == "" {
		haTenant = hatracker.DefaultTenant
	}
	b.wopts.HA = ingest.HA{Tracker: tr, ClusterLabel: hc.ClusterLabel, ReplicaLabel: hc.ReplicaLabel, Tenant: haTenant}
	b.haPage = tr.Handler(b.logger)
	return nil
}

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
	if err := readOnly(st, &aopts, b.reg); err != nil {
		return err
	}
	h, err := adapter.New(w, q, aopts, b.reg, b.logger)
	if err != nil {
		return err
	}
	b.remote = h
	return nil
}

// deletion sets up the deleter of the admin API, fenced against
// compaction, reindexing the days it prunes and rebuilding their
// rollups.
func (b *wiring) deletion() error {
	cfg := b.cfg
	dopts := deletion.Options{DataTable: cfg.Tables.Data, ExemplarTable: b.qopts.ExemplarTable, IndexTable: b.info.IndexTable,
		Layout: cfg.Layout, Registerer: b.reg, Logger: b.logger.With("component", "deletion")}
	if b.comp != nil {
		dopts.Fence = b.comp
	}
	if b.ixw != nil {
		// The days a delete prunes are indexed again when written anew.
		dopts.IndexWriter = b.ixw
	}
	if b.s.builder != nil {
		dopts.Rollups = b.s.builder
	}
	del, err := deletion.New(b.st, b.s.q, dopts)
	if err != nil {
		return err
	}
	b.del = del
	return nil
}

// retention sets up the retention cycle, also with nothing to delete:
// its cycles then measure the oldest hour kept, now and then.
func (b *wiring) retention() error {
	cfg := b.cfg
	r := cfg.Retention
	ropts := retention.Options{Time: r.Time, Size: r.Size, Interval: r.Interval, RawTime: r.Raw,
		DataTable: cfg.Tables.Data, ExemplarTable: cfg.Tables.Exemplar, IndexTable: cfg.Tables.Index, Layout: cfg.Layout,
		Registerer: b.reg, Logger: b.logger.With("component", "retention"), Now: r.Now, Deleted: b.s.cacheDeleted()}
	if b.ixw != nil {
		ropts.IndexWriter = b.ixw
	}
	if b.s.rollups != nil {
		for _, iv := range rollup.Buildable(b.qopts.Rollups) {
			ropts.Rollups = append(ropts.Rollups, retention.RollupTable{Table: iv.Table, Span: iv.Span(), Time: r.Resolutions[iv.Name]})
		}
	}
	var err error
	b.s.ret, err = retention.New(b.st, ropts)
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
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
		b.api, b.s.api = a, func() (*promapi.API, error) { return a, nil }
		return nil
	}
	// A tenant's query API is built at its first query: building
	// one costs about a third of a CPU second (Prometheus's OpenAPI
	// document), which tenants that only write never pay.
	l := &lazyAPI{opts: popts}
	b.api, b.s.api = l, l.get
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
	api  *promapi.API
	err  error
}

// get returns the API, built at the first call.
func (l *lazyAPI) get() (*promapi.API, error) {
	l.once.Do(func() { l.api, l.err = promapi.New(l.opts) })
	return l.api, l.err
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

// uidRefreshInterval is how often a server reads the UID counters, which
// other writers move too.
const uidRefreshInterval = time.Minute

// Run does the server's background work until ctx ends: compaction of
// the rows written, the retention cycle, and reading the UID counters every minute for the
// headroom gauges and the low-headroom warning. It returns once the work
// in flight has finished, so the store may be closed after it.
func (s *Server) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.sched != nil {
		wg.Go(func() { s.sched.Run(ctx) })
	}
	if s.ret != nil {
		wg.Go(func() { s.ret.Run(ctx) })
	}
	if s.rollups != nil {
		wg.Go(func() { s.rollups.Run(ctx) })
	}
	if t := s.cacheTeller; t != nil && t.log != nil && t.c.Enabled() {
		wg.Go(func() { t.run(ctx) })
	}
	wg.Go(func() { s.watchUIDs(ctx) })
	wg.Wait()
}

// Start runs Run in a goroutine of its own until stop is called; stop
// returns once Run has returned.
func (s *Server) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// watchUIDs reads the UID counters now and then every uidRefreshInterval
// until ctx ends.
func (s *Server) watchUIDs(ctx context.Context) {
	t := time.NewTicker(uidRefreshInterval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := s.uids.RefreshCounters(rctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("cannot read the uid counters", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// openRollups checks the rollup tables and sets up the scheduler that
// builds them, told of the rows written, and the read path's
// configuration.
func (s *Server) openRollups(ctx context.Context, st store.Store, cfg Config, qopts *query.Options, wopts *ingest.Options, reg prometheus.Registerer, logger *slog.Logger) error {
	rc := cfg.Rollup.Config
	if rc == nil {
		rc = rollup.Default()
	}
	for _, iv := range rollup.Buildable(rc) {
		if err := checkTable(ctx, st, iv.Table, rollup.Family, "or set --no-rollup.enabled"); err != nil {
			return fmt.Errorf("rollup %w", err)
		}
	}
	b, err := rollup.NewBuilder(st, rollup.Options{Config: rc, DataTable: cfg.Tables.Data, UIDTable: cfg.Tables.UID, Layout: cfg.Layout,
		Now: cfg.Rollup.Now})
	if err != nil {
		return err
	}
	s.builder = b
	s.rollups = rollup.NewScheduler(b, st, rollup.SchedulerOptions{Grace: cfg.Rollup.Grace, CheckInterval: cfg.Rollup.CheckInterval,
		Now: cfg.Rollup.Now, Registerer: reg, Logger: logger.With("component", "rollup"), Built: s.cacheBuilt()})
	qopts.Rollups = rc
	addNoter(wopts, rollupNoter{s: s.rollups, l: cfg.Layout})
	return nil
}

// rollupNoter tells the rollup scheduler of the rows written, which marks
// the hours built that they change in the store before the write is
// acknowledged (a failure fails the write, which the sender sends again).
type rollupNoter struct {
	s *rollup.Scheduler
	l mapping.Layout
}

func (n rollupNoter) NoteRows(puts []store.Put) { _ = n.NoteRowsChecked(context.Background(), puts) }

func (n rollupNoter) NoteRowsChecked(ctx context.Context, puts []store.Put) error {
	return n.s.NoteWritten(ctx, n.l, puts)
}

// noters tells each of its noters.
type noters []ingest.RowNoter

func (ns noters) NoteRows(puts []store.Put) { _ = ns.NoteRowsChecked(context.Background(), puts) }

// NoteRowsChecked tells each noter, the checked ones by NoteRowsChecked,
// and returns the first error.
func (ns noters) NoteRowsChecked(ctx context.Context, puts []store.Put) error {
	var first error
	for _, n := range ns {
		if c, ok := n.(ingest.CheckedRowNoter); ok {
			if err := c.NoteRowsChecked(ctx, puts); err != nil && first == nil {
				first = err
			}
			continue
		}
		n.NoteRows(puts)
	}
	return first
}

// checkTable returns an error naming table when it does not exist.
func checkTable(ctx context.Context, st store.Store, table, family, alternative string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := st.Get(ctx, table, []byte{0}, family); errors.Is(err, store.ErrTableNotFound) {
		return fmt.Errorf("table %q does not exist: run `promhbase create-tables` (it leaves existing tables alone) %s", table, alternative)
	}
	return nil
}

// openIndex checks the series index's tables and returns its writer, its
// coverage marked.
func openIndex(ctx context.Context, st store.Store, cfg Config, reg prometheus.Registerer) (*index.Writer, error) {
	for _, t := range []struct{ table, family string }{{cfg.Tables.Meta, mapping.TSMetaFamily}, {cfg.Tables.Index, mapping.IndexFamily}} {
		if err := checkTable(ctx, st, t.table, t.family, "or set --no-storage.index.enabled"); err != nil {
			return nil, fmt.Errorf("series index %w", err)
		}
	}
	w := index.NewWriter(st, index.Options{MetaTable: cfg.Tables.Meta, IndexTable: cfg.Tables.Index, Layout: cfg.Layout,
		CacheBytes: cfg.Index.CacheBytes, SkipTSMeta: cfg.Index.SkipTSMeta}, reg)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The index covers what is written from now on: all of it when the
	// data table is empty, else from tomorrow. An earlier day already
	// recorded stays.
	sc := st.Scan(ctx, store.ScanRequest{Table: cfg.Tables.Data, Family: "t"})
	hasRows := sc.Next()
	err := sc.Err()
	sc.Close()
	if err != nil {
		return nil, fmt.Errorf("look for rows in %s: %w", cfg.Tables.Data, err)
	}
	day := uint32(0)
	if hasRows {
		day = mapping.DayOf(time.Now().UnixMilli()) + 1
	}
	if err := w.MarkCoverage(ctx, day); err != nil {
		return nil, err
	}
	return w, nil
}
