package main

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/series/index"
)

type reindexCmd struct {
	cmd *kingpin.CmdClause
	timeRange
}

func registerReindex(app *kingpin.Application) *reindexCmd {
	c := &reindexCmd{}
	c.cmd = app.Command("reindex", "Build the series index (TSMeta rows and label lookups) for the rows of every metric in a time range: data written before the index was kept, or by OpenTSDB. Reads only row keys; safe while writers run. When the range reaches the day the index already covers, queries use the index from the first whole day of the range on.")
	c.hourFlags(c.cmd, "indexed", false)
	return c
}

// reindexCacheBytes is reindex's budget for remembering written index
// keys: about 2 M keys.
const reindexCacheBytes = 64 << 20

func (c *reindexCmd) run(cfg *config) error {
	from, to, j, err := c.openJob(cfg, false, 0)
	if err != nil {
		return err
	}
	defer j.close()
	// Reindexed series carry no mark of the series cache, so every one asks
	// the written-keys set; a batch job can afford more of it than serve's
	// default.
	w := index.NewWriter(j.st, index.Options{MetaTable: cfg.metaTable, IndexTable: cfg.indexTable, Layout: cfg.layout,
		CacheBytes: reindexCacheBytes}, j.reg)
	start := time.Now()
	stats, err := index.Reindex(j.ctx, j.st, w, index.ReindexOptions{DataTable: cfg.dataTable, UIDTable: cfg.uidTable, Layout: cfg.layout},
		time.UnixMilli(from), time.UnixMilli(to))
	fmt.Printf("reindexed %d rows (%d series-days) in %s\n", stats.Rows, stats.Entries, time.Since(start).Round(time.Millisecond))
	return err
}
