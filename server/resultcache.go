package server

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/cachelog"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/resultcache"
	"github.com/promhbase/promhbase/store"
)

// cacheNoter tells the results cache of the writes of samples older than
// its offset (a backfill, a slow sender, an import): the kept steps that
// read them are dropped. Writes of newer samples, which no kept step
// reads, cost a look at each row's hour and, for the rows of the hour
// that straddles the offset, at each cell's qualifier.
type cacheNoter struct {
	t *cacheTeller
	l mapping.Layout
}

func (n cacheNoter) NoteRows(puts []store.Put) {
	if n.t.c.DataClock() {
		n.sawNewest(puts)
	}
	horizon := n.t.c.Horizon()
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	for _, p := range puts {
		base, ok := n.l.BaseTimeOf(p.Row)
		if !ok {
			continue
		}
		baseMs := int64(base) * 1000
		if baseMs >= horizon {
			continue
		}
		if end := baseMs + mapping.MaxTimespan*1000 - 1; end < horizon {
			mint, maxt = min(mint, baseMs), max(maxt, end)
			continue
		}
		for _, c := range p.Cells {
			off, _, _, err := mapping.ParseQualifier(c.Qualifier)
			t := baseMs + int64(off)
			if err != nil {
				t = baseMs // not a sample's qualifier: the whole hour
			}
			if t < horizon {
				mint, maxt = min(mint, t), max(maxt, t)
			}
		}
	}
	if mint <= maxt {
		n.t.changed(cachelog.Samples, mint, maxt)
	}
}

// sawNewest tells a DataClock cache of the newest sample of puts.
func (n cacheNoter) sawNewest(puts []store.Put) {
	for _, p := range puts {
		base, ok := n.l.BaseTimeOf(p.Row)
		if !ok {
			continue
		}
		for _, c := range p.Cells {
			if off, _, _, err := mapping.ParseQualifier(c.Qualifier); err == nil {
				n.t.c.Saw(int64(base)*1000 + int64(off))
			}
		}
	}
}

// ResultsCacheLogConfig configures the results cache's log in the store:
// on for a store other processes write to (HBase).
type ResultsCacheLogConfig struct {
	Enabled bool
	// PollInterval is how often the other replicas' changes are read
	// (default 5s): how long a replica may serve steps another changed.
	PollInterval time.Duration
	// Window is how far back each poll reads (cachelog.Options.Window).
	Window time.Duration
}

// cacheTeller tells the results cache of the changes of old data this
// server makes and, when several processes write to the same tables
// (HBase), appends them to the store's log (package cachelog), whose
// appends by other replicas it applies every poll interval.
type cacheTeller struct {
	c      *resultcache.Cache
	tenant string
	log    *cachelog.Log // nil: this process is the only writer
	poll   time.Duration
	logger *slog.Logger
	// appendErrs counts appends that failed (the other replicas then see
	// the change only after their max-age); polled the events applied.
	appendErrs, pollErrs, polled prometheus.Counter
}

// changed says that samples (or rollup windows) in [mint, maxt] changed.
// It returns once the log, if any, has the change, so that a write is
// acknowledged only after the other replicas can learn of it.
func (t *cacheTeller) changed(kind cachelog.Kind, mint, maxt int64) {
	t.apply(cachelog.Event{Kind: kind, Mint: mint, Maxt: maxt})
	if t.log == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), logAppendTimeout)
	defer cancel()
	if err := t.log.Append(ctx, cachelog.Event{Kind: kind, Mint: mint, Maxt: maxt}); err != nil {
		t.appendErrs.Inc()
		t.logger.Warn("other replicas will see this change of old data only after --query.results-cache.max-age", "mint", mint, "maxt", maxt, "err", err)
	}
}

// logAppendTimeout bounds how long a change waits for the log.
const logAppendTimeout = 10 * time.Second

func (t *cacheTeller) apply(ev cachelog.Event) {
	if ev.Kind == cachelog.Rollups {
		t.c.InvalidateDownsampled(t.tenant, ev.Mint, ev.Maxt)
	} else {
		t.c.Invalidate(t.tenant, ev.Mint, ev.Maxt)
	}
}

// run applies the other replicas' changes every poll interval until ctx
// ends.
func (t *cacheTeller) run(ctx context.Context) {
	tick := time.NewTicker(t.poll)
	defer tick.Stop()
	for {
		evs, skipped, err := t.log.Poll(ctx)
		for _, ev := range evs {
			t.apply(ev)
		}
		t.polled.Add(float64(len(evs)))
		if err != nil || skipped > 0 {
			t.pollErrs.Inc()
			t.logger.Warn("read the results cache's log", "skipped_rows", skipped, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// wireResultsCache tells the results cache of every change of old data
// the server makes: old writes (through the write path's RowNoter),
// deletions, retention cycles and rollup builds.
func (s *Server) wireResultsCache(ctx context.Context, st store.Store, cfg Config, wopts *ingest.Options, reg prometheus.Registerer, logger *slog.Logger) {
	c, tenant := cfg.ResultsCache, cfg.Tenant
	if !c.Enabled() {
		return
	}
	counter := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_query_results_cache_log_" + name, Help: help})
		if reg != nil && cfg.ResultsCacheLog.Enabled {
			reg.MustRegister(m)
		}
		return m
	}
	t := &cacheTeller{c: c, tenant: tenant, poll: cfg.ResultsCacheLog.PollInterval, logger: logger,
		appendErrs: counter("append_failures_total", "Changes of old data not appended to the results cache's log in the store (other replicas see them only after their max-age)."),
		pollErrs:   counter("poll_failures_total", "Polls of the results cache's log that failed or met rows that do not decode."),
		polled:     counter("polled_total", "Changes of old data by other replicas read from the results cache's log and applied.")}
	lc := cfg.ResultsCacheLog
	if lc.Enabled && cfg.Tables.Index != "" {
		if err := checkTable(ctx, st, cfg.Tables.Index, mapping.IndexFamily, ""); err != nil {
			logger.Warn("no results cache log: other replicas' changes of old data are seen only after --query.results-cache.max-age", "err", err)
			lc.Enabled = false
		}
	}
	if lc.Enabled && cfg.Tables.Index != "" {
		t.log = cachelog.New(st, cachelog.Options{Table: cfg.Tables.Index, Window: lc.Window})
		if t.poll <= 0 {
			t.poll = 5 * time.Second
		}
	}
	addNoter(wopts, cacheNoter{t: t, l: cfg.Layout})
	s.cacheTenant = tenant
	s.cache = c
	s.cacheTeller = t
}

// cacheDeleted is retention's Deleted for the results cache.
func (s *Server) cacheDeleted() func(time.Time) {
	t := s.cacheTeller
	if t == nil {
		return nil
	}
	return func(before time.Time) { t.changed(cachelog.Samples, math.MinInt64, before.UnixMilli()-1) }
}

// cacheBuilt is the rollup scheduler's Built for the results cache.
func (s *Server) cacheBuilt() func(int64) {
	t := s.cacheTeller
	if t == nil {
		return nil
	}
	return func(h int64) { t.changed(cachelog.Rollups, h*1000, (h+mapping.MaxTimespan)*1000) }
}

// addNoter adds n to the write path's row noters.
func addNoter(wopts *ingest.Options, n ingest.RowNoter) {
	if wopts.RowNoter != nil {
		wopts.RowNoter = noters{wopts.RowNoter, n}
	} else {
		wopts.RowNoter = n
	}
}
