package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
)

type rollupCmd struct{ hourCmd }

func registerRollup(app *kingpin.Application) *rollupCmd {
	c := &rollupCmd{}
	c.register(app, "rollup", "Build (or build again) the rollups of every metric in a time range, as serve does in the background for each hour once it has ended: for data written before rollups were kept, by OpenTSDB, or by a backfill. Hours that ended less than five minutes ago are skipped. Each hour built is recorded as built, and queries read its rollups, unless a write into it came while it was built. Safe while serve runs.",
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
	// the next hour's first millisecond) long enough ago to be recorded.
	last := min(to/1000/hour*hour, time.Now().Add(-rollup.MinBuildAge).Unix()/hour*hour-hour)
	if last < first {
		fmt.Println("no hour in the range has ended")
		return nil
	}
	total := int((last-first)/hour) + 1
	bar := newProgressBar(os.Stderr)
	bar.unit = "hours"
	start := time.Now()
	var stats rollup.BuildStats
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
	}
	bar.finish()
	p, err := rollup.ReadProgress(ctx, st, b.Intervals()[0].Table)
	if err != nil {
		return err
	}
	fmt.Printf("built %d hours (%d recorded built: a write meanwhile leaves an hour to build again): %d series-hours, %d rows, %d cells in %s; hours built: %s\n",
		total, stats.Recorded, stats.Series, stats.Rows, stats.Cells, time.Since(start).Round(time.Millisecond), describeHours(p.Hours()))
	return j.settle()
}

// describeHours writes hours as spans of RFC 3339 times, the first and
// last few when there are many.
func describeHours(hours rollup.Hours) string {
	if len(hours) == 0 {
		return "none"
	}
	const most = 6
	var b strings.Builder
	for i, s := range hours {
		if len(hours) > most && i == most/2 {
			fmt.Fprintf(&b, ", (%d more spans)", len(hours)-most)
		}
		if len(hours) > most && i >= most/2 && i < len(hours)-most/2 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s .. %s", time.Unix(s.From, 0).UTC().Format(time.RFC3339), time.Unix(s.To, 0).UTC().Format(time.RFC3339))
	}
	return b.String()
}
