package main

import (
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/rollup"
)

type rollupCmd struct{ hourCmd }

func registerRollup(app *kingpin.Application) *rollupCmd {
	c := &rollupCmd{}
	c.register(app, "rollup", "Build (or build again) the rollups of every metric in a time range, as serve does in the background for each hour once it has ended: for data written before rollups were kept, by OpenTSDB, or by a backfill. Hours that have not ended are skipped. The hours built join the span queries read rollups from when they meet it. Safe while serve runs.",
		"built (the hour before, when it falls on an hour's first instant: a window is (S, S+W], so that hour's last window holds it)", "Metric and salt-bucket scans run at once.", "2")
	return c
}

func registerRollupConfig(app *kingpin.Application) *kingpin.CmdClause {
	return app.Command("rollup-config", "Print the rollup configuration in use (--rollup.config-file, or the built-in default) as the JSON OpenTSDB's tsd.rollups.config takes: hand the same file to a TSD (with tsd.rollups.enable=true) and it reads promhbase's rollups.")
}

func runRollupConfig(cfg *config) error {
	rc, err := cfg.rollups()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(rc.AppendJSON(nil))
	return err
}

func (c *rollupCmd) run(cfg *config) error {
	rc, err := cfg.rollups()
	if err != nil {
		return err
	}
	from, to, j, err := c.openJob(cfg, false, 0)
	if err != nil {
		return err
	}
	defer j.close()
	ctx, st := j.ctx, j.st
	b, err := rollup.NewBuilder(st, rollup.Options{Config: rc, DataTable: cfg.dataTable, UIDTable: cfg.uidTable, Layout: cfg.layout, Concurrency: c.concurrency})
	if err != nil {
		return err
	}
	if len(b.Intervals()) == 0 {
		return fmt.Errorf("the rollup configuration has no interval that divides an hour: nothing to build")
	}
	const hour = mapping.MaxTimespan
	// The hour whose windows hold --start: a window is (S, S+W], so a
	// start on an hour's first instant is in the last window of the
	// hour before.
	first := max(from-1, 0) / 1000 / hour * hour
	// The last hour whose next hour has started (its last window holds
	// the next hour's first millisecond).
	last := min(to/1000/hour*hour, time.Now().Unix()/hour*hour-hour)
	if last < first {
		fmt.Println("no hour in the range has ended")
		return nil
	}
	total := int((last-first)/hour) + 1
	bar := newProgressBar(os.Stderr)
	bar.unit = "hours"
	start := time.Now()
	var stats rollup.BuildStats
	table := b.Intervals()[0].Table
	done := 0
	for h := first; h <= last; h += hour {
		s, err := b.BuildHour(ctx, h)
		stats.Add(s)
		if err != nil {
			bar.finish()
			return err
		}
		done++
		bar.update(done, total)
		// Record as it goes, so that an interrupted run keeps what it
		// built.
		if _, _, err := rollup.RecordProgress(ctx, st, table, first, h+hour); err != nil {
			bar.finish()
			return err
		}
	}
	bar.finish()
	f, n, _, err := rollup.ReadProgress(ctx, st, table)
	if err != nil {
		return err
	}
	fmt.Printf("built %d hours: %d series-hours, %d rows, %d cells in %s; rollups span %s .. %s\n", total, stats.Series, stats.Rows, stats.Cells,
		time.Since(start).Round(time.Millisecond), time.Unix(f, 0).UTC().Format(time.RFC3339), time.Unix(n, 0).UTC().Format(time.RFC3339))
	return j.settle()
}
