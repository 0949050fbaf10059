package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/jobs/deletion"
	"github.com/promhbase/promhbase/jobs/retention"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web"
)

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
		b.retention, // before paths: the writer tells it of backfills
		b.paths,
		b.deletion,
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
	b.s = &Server{uids: cfg.Mapper.UIDs(), logger: b.logger, lim: lim, retentionTime: cfg.Retention.Time}
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
		Registerer: b.reg, Logger: b.logger.With("component", "retention"), Now: r.Now, Deleted: b.s.cacheDeleted(),
		Labels: b.readMapper.Labels}
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
	addNoter(&b.wopts, retentionNoter{r: b.s.ret})
	return nil
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

func (n rollupNoter) NoteRowsChecked(ctx context.Context, puts []store.Put) error {
	return n.s.NoteWritten(ctx, n.l, puts)
}

// retentionNoter tells the retention cycle of the rows written, so that
// a backfill older than a retention stream's period goes at its next
// cycle (retention.NoteWritten); it never fails a write.
type retentionNoter struct{ r *retention.Retention }

func (n retentionNoter) NoteRowsChecked(_ context.Context, puts []store.Put) error {
	n.r.NoteWritten(puts)
	return nil
}

// checkedNoters tells each of its noters.
type checkedNoters []ingest.CheckedRowNoter

// NoteRowsChecked tells every noter, whatever the others answered, and
// returns the first error.
func (ns checkedNoters) NoteRowsChecked(ctx context.Context, puts []store.Put) error {
	var first error
	for _, n := range ns {
		if err := n.NoteRowsChecked(ctx, puts); err != nil && first == nil {
			first = err
		}
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
	if err := w.MarkCoverage(ctx, day); errors.Is(err, store.ErrUnavailable) {
		// A store that refuses writes (a new embedded store on a disk
		// below its free-space watermark) starts read-only, as one with
		// data does: the coverage goes with the first write it takes.
		w.MarkCoverageLater(day)
	} else if err != nil {
		return nil, err
	}
	return w, nil
}
