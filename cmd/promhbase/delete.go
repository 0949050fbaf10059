package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/jobs/deletion"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/cachelog"
	"github.com/promhbase/promhbase/store"
)

type deleteCmd struct {
	cmd     *kingpin.CmdClause
	matches []string
	timeRange
	reclaim bool
}

func registerDelete(app *kingpin.Application) *deleteCmd {
	c := &deleteCmd{}
	c.cmd = app.Command("delete", "Delete the samples of the series that any --match selects, in [--start, --end] (both inclusive), as the admin API's delete_series does: data, exemplars and the series index. Bounded in memory; safe to interrupt, and running it again finishes the job. With serve running on the same HBase tables, prefer the admin API, which holds compaction off the rows it rewrites.")
	c.cmd.Flag("match", "Series selector, as delete_series's match[] (repeat for several: a series selected by any is deleted).").Required().StringsVar(&c.matches)
	c.flags(c.cmd, "First time deleted: RFC 3339, or Unix seconds or milliseconds. Default: the earliest sample.",
		"Last time deleted (inclusive): RFC 3339, or Unix seconds or milliseconds. Default: the latest sample.", false)
	c.cmd.Flag("reclaim", "Give the space of the deleted data back to the filesystem before exiting (embedded store; HBase does it at its next major compaction).").Default("true").BoolVar(&c.reclaim)
	return c
}

func (c *deleteCmd) run(cfg *config) error {
	start, end := int64(math.MinInt64), int64(math.MaxInt64)
	var err error
	if c.start != "" {
		if start, err = parseTime(c.start, time.Time{}); err != nil {
			return fmt.Errorf("--start: %w", err)
		}
	}
	if c.end != "" {
		if end, err = parseTime(c.end, time.Time{}); err != nil {
			return fmt.Errorf("--end: %w", err)
		}
	}
	if end < start {
		return fmt.Errorf("--end %s is before --start %s", c.end, c.start)
	}
	// Every selector is checked before anything is deleted.
	p := parser.NewParser(parser.Options{})
	sets := make([][]*labels.Matcher, 0, len(c.matches))
	for _, m := range c.matches {
		ms, err := p.ParseMetricSelector(m)
		if err != nil {
			return fmt.Errorf("--match %q: %w", m, err)
		}
		sets = append(sets, ms)
	}
	j, err := cfg.openMappingJob(0)
	if err != nil {
		return err
	}
	defer j.close()
	ctx, st := j.ctx, j.st
	q := query.New(st, j.mapper, query.Options{DataTable: cfg.dataTable, UIDTable: cfg.uidTable, ExemplarTable: cfg.exemplarTable})
	rc, err := cfg.rollups()
	if err != nil {
		return err
	}
	// The rollups of the deleted windows go too (none where the rollup
	// tables do not exist).
	b, err := rollup.NewBuilder(st, rollup.Options{Config: rc, DataTable: cfg.dataTable, UIDTable: cfg.uidTable, Layout: cfg.layout})
	if err != nil {
		return err
	}
	d, err := deletion.New(st, q, deletion.Options{DataTable: cfg.dataTable, ExemplarTable: cfg.exemplarTable, IndexTable: cfg.indexTable,
		Layout: cfg.layout, Logger: j.logger, Rollups: b})
	if err != nil {
		return err
	}
	began := time.Now()
	stats, err := d.DeleteSeries(ctx, sets, start, end)
	fmt.Printf("deleted: %s in %s\n", stats, time.Since(began).Round(time.Millisecond))
	// On HBase, the serve replicas' results caches learn of it from their
	// log; also after a failure, some of the range may be gone.
	if cfg.backend == "hbase" && cfg.indexTable != "" {
		actx, cancel := context.WithTimeout(ctx, cachelog.AppendTimeout)
		lerr := cachelog.New(st, cachelog.Options{Table: cfg.indexTable}).Append(actx, cachelog.Event{Kind: cachelog.Samples, Mint: start, Maxt: end})
		cancel()
		if lerr != nil {
			err = errors.Join(err, fmt.Errorf("the running serve replicas' results caches were not told (they keep answering from before the delete for up to --query.results-cache.max-age): %w", lerr))
		}
	}
	if err != nil {
		return fmt.Errorf("%w (run the same command again to finish)", err)
	}
	if r, ok := store.As[store.Reclaimer](st); ok && c.reclaim {
		if err := r.Reclaim(ctx); err != nil {
			return fmt.Errorf("reclaim the space of the deleted data: %w", err)
		}
	}
	return nil
}
