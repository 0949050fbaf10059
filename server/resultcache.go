package server

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query/cachelog"
	"github.com/promhbase/promhbase/query/resultcache"
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

// NoteRowsChecked tells the cache and, with the log, the other replicas;
// an error (the log's append failed) fails the write, which is sent again.
func (n cacheNoter) NoteRowsChecked(ctx context.Context, puts []store.Put) error {
	if n.t.c.DataClock() {
		n.sawNewest(puts)
	}
	horizon := n.t.c.Horizon()
	if n.t.log != nil {
		// Another replica's clock may be ahead: it keeps steps a little
		// newer than this one would.
		horizon += logClockSkew.Milliseconds()
	}
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
		return n.t.changed(ctx, cachelog.Samples, mint, maxt)
	}
	return nil
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
}

// logClockSkew is how far the clocks of two replicas may differ for the
// log to tell every change: a writer logs the samples up to this much
// newer than its offset, and a poll reads this much further back.
const logClockSkew = 30 * time.Second

// logWindow is how far back a poll reads: two poll intervals, the longest
// append (its row's time is taken before its Put), and the clock skew.
func logWindow(poll time.Duration) time.Duration {
	return max(time.Minute, 2*poll+cachelog.AppendTimeout+logClockSkew)
}

// cacheTeller tells the results cache of the changes of old data this
// server makes and, when several processes write to the same tables
// (HBase), appends them to the store's log (package cachelog), whose
// appends by other replicas it applies every poll interval. With the
// cache off it still appends, for the replicas that keep answers.
type cacheTeller struct {
	c      *resultcache.Cache
	tenant string
	log    *cachelog.Log // nil: this process is the only writer
	poll   time.Duration
	logger *slog.Logger
	// appendErrs counts appends that failed (the change was refused, or
	// retention's or a rollup build's changes are seen by the other
	// replicas only after their max-age); polled the events applied.
	appendErrs, pollErrs, polled prometheus.Counter
}

// changed says that samples (or rollup windows) in [mint, maxt] changed.
// It returns once the log, if any, has the change, so that a change is
// acknowledged only after the other replicas can learn of it; an error
// says the log does not have it. It waits at most cachelog.AppendTimeout,
// and no longer than ctx (a write's: what is left of its budget).
func (t *cacheTeller) changed(ctx context.Context, kind cachelog.Kind, mint, maxt int64) error {
	t.apply(cachelog.Event{Kind: kind, Mint: mint, Maxt: maxt})
	if t.log == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cachelog.AppendTimeout)
	defer cancel()
	if err := t.log.Append(ctx, cachelog.Event{Kind: kind, Mint: mint, Maxt: maxt}); err != nil {
		t.appendErrs.Inc()
		t.logger.Warn("the results cache's log does not have a change of old data", "mint", mint, "maxt", maxt, "err", err)
		return fmt.Errorf("tell the other replicas' results caches: %w", err)
	}
	return nil
}

func (t *cacheTeller) apply(ev cachelog.Event) {
	if ev.Kind == cachelog.Rollups {
		t.c.InvalidateDownsampled(t.tenant, ev.Mint, ev.Maxt)
	} else {
		t.c.Invalidate(t.tenant, ev.Mint, ev.Maxt)
	}
}

// run applies the other replicas' changes every poll interval until ctx
// ends. When polls failed for longer than a poll reads back, changes may
// have been missed: every kept answer of the tenant is dropped.
func (t *cacheTeller) run(ctx context.Context) {
	tick := time.NewTicker(t.poll)
	defer tick.Stop()
	window := logWindow(t.poll)
	lastOK := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, window/2)
		evs, skipped, err := t.log.Poll(pctx)
		cancel()
		for _, ev := range evs {
			t.apply(ev)
		}
		t.polled.Add(float64(len(evs)))
		if err != nil || skipped > 0 {
			t.pollErrs.Inc()
			t.logger.Warn("read the results cache's log", "skipped_rows", skipped, "err", err)
		}
		if err == nil {
			if now := time.Now(); now.Sub(lastOK) > window-cachelog.AppendTimeout-logClockSkew-t.poll {
				t.c.Reset(t.tenant) // rows may have left the window unread
			}
			lastOK = time.Now()
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
	c, tenant, lc := cfg.ResultsCache, cfg.Tenant, cfg.ResultsCacheLog
	if c == nil || (!c.Enabled() && !lc.Enabled) {
		return
	}
	if lc.Enabled && cfg.Tables.Index == "" {
		lc.Enabled = false
	}
	if lc.Enabled {
		if err := checkTable(ctx, st, cfg.Tables.Index, mapping.IndexFamily, ""); err != nil {
			logger.Warn("no results cache log: other replicas' changes of old data are seen only after --query.results-cache.max-age", "err", err)
			lc.Enabled = false
		}
	}
	if !c.Enabled() && !lc.Enabled {
		return
	}
	counter := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_query_results_cache_log_" + name, Help: help})
		if reg != nil && lc.Enabled {
			reg.MustRegister(m)
		}
		return m
	}
	t := &cacheTeller{c: c, tenant: tenant, poll: cmp.Or(lc.PollInterval, 5*time.Second), logger: logger,
		appendErrs: counter("append_failures_total", "Changes of old data not appended to the results cache's log in the store: writes and deletions then fail, retention's and rollup builds' changes are seen by other replicas only after their max-age."),
		pollErrs:   counter("poll_failures_total", "Polls of the results cache's log that failed or met rows that do not decode."),
		polled:     counter("polled_total", "Changes of old data by other replicas read from the results cache's log and applied.")}
	if lc.Enabled {
		t.log = cachelog.New(st, cachelog.Options{Table: cfg.Tables.Index, Window: logWindow(t.poll)})
	}
	addNoter(wopts, cacheNoter{t: t, l: cfg.Layout})
	s.cacheTeller = t
}

// cacheDeleted is retention's Deleted for the results cache.
func (s *Server) cacheDeleted() func(time.Time) {
	t := s.cacheTeller
	if t == nil {
		return nil
	}
	return func(before time.Time) {
		_ = t.changed(context.Background(), cachelog.Samples, math.MinInt64, before.UnixMilli()-1)
	}
}

// cacheBuilt is the rollup scheduler's Built for the results cache.
func (s *Server) cacheBuilt() func(int64) {
	t := s.cacheTeller
	if t == nil {
		return nil
	}
	return func(h int64) {
		_ = t.changed(context.Background(), cachelog.Rollups, h*1000, (h+mapping.MaxTimespan)*1000)
	}
}

// addNoter adds n to the write path's checked row noters.
func addNoter(wopts *ingest.Options, n ingest.CheckedRowNoter) {
	var ns checkedNoters
	switch have := wopts.CheckedRowNoter.(type) {
	case nil:
		wopts.CheckedRowNoter = n
		return
	case checkedNoters:
		ns = have
	default:
		ns = checkedNoters{have}
	}
	ns = append(ns, n)
	wopts.CheckedRowNoter = ns
}
