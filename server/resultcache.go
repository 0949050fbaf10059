package server

import (
	"math"
	"time"

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
	c      *resultcache.Cache
	tenant string
	l      mapping.Layout
}

func (n cacheNoter) NoteRows(puts []store.Put) {
	if n.c.DataClock() {
		n.sawNewest(puts)
	}
	horizon := n.c.Horizon()
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
		n.c.Invalidate(n.tenant, mint, maxt)
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
				n.c.Saw(int64(base)*1000 + int64(off))
			}
		}
	}
}

// wireResultsCache tells the results cache of every change of old data
// the server makes: old writes (through the write path's RowNoter),
// deletions, retention cycles and rollup builds.
func (s *Server) wireResultsCache(cfg Config, wopts *ingest.Options) {
	c, tenant := cfg.ResultsCache, cfg.Tenant
	if !c.Enabled() {
		return
	}
	addNoter(wopts, cacheNoter{c: c, tenant: tenant, l: cfg.Layout})
	s.cacheTenant = tenant
	s.cache = c
}

// cacheDeleted is retention's Deleted for the results cache.
func cacheDeleted(c *resultcache.Cache, tenant string) func(time.Time) {
	if !c.Enabled() {
		return nil
	}
	return func(before time.Time) { c.Invalidate(tenant, math.MinInt64, before.UnixMilli()-1) }
}

// cacheBuilt is the rollup scheduler's Built for the results cache.
func cacheBuilt(c *resultcache.Cache, tenant string) func(int64) {
	if !c.Enabled() {
		return nil
	}
	return func(h int64) { c.InvalidateDownsampled(tenant, h*1000, (h+mapping.MaxTimespan)*1000) }
}

// addNoter adds n to the write path's row noters.
func addNoter(wopts *ingest.Options, n ingest.RowNoter) {
	if wopts.RowNoter != nil {
		wopts.RowNoter = noters{wopts.RowNoter, n}
	} else {
		wopts.RowNoter = n
	}
}
