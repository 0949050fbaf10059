package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/jobs/compact"
)

type compactCmd struct{ hourCmd }

func registerCompact(app *kingpin.Application) *compactCmd {
	c := &compactCmd{}
	c.register(app, "compact", "Rewrite the rows of every metric in a time range into OpenTSDB's compacted column, as serve does in the background for the rows it writes: for rows written by other processes, before a restart, or beyond --storage.compaction.max-rows-per-hour. Only hours that have ended are touched; safe while writers and other compactions run.",
		"compacted", "Rows compacted at once.", "4")
	return c
}

func (c *compactCmd) run(cfg *config) error {
	from, to, j, err := c.openJob(cfg, false, 0)
	if err != nil {
		return err
	}
	defer j.close()
	comp := compact.New(j.st, compact.Options{DataTable: cfg.dataTable, UIDTable: cfg.uidTable, Layout: cfg.layout, Concurrency: c.concurrency})
	bar := newProgressBar(os.Stderr)
	bar.scanning()
	start := time.Now()
	stats, err := comp.CompactRange(j.ctx, time.UnixMilli(from), time.UnixMilli(to), bar.update)
	bar.finish()
	fmt.Printf("compacted %s in %s\n", stats, time.Since(start).Round(time.Millisecond))
	if err != nil {
		return err
	}
	if stats.Errors > 0 {
		return fmt.Errorf("%d rows failed (they stay readable; run the command again): %w", stats.Errors, stats.FirstError)
	}
	return j.settle()
}

// progressBar draws CompactRange's progress on a terminal, redrawing one
// line at most five times a second; on anything else it writes a line every
// ten seconds.
type progressBar struct {
	unit  string // what is counted: "rows" unless set
	w     io.Writer
	tty   bool
	start time.Time // first progress call: the end of the counting scan
	last  time.Time // last line drawn
	drawn bool
}

func newProgressBar(f *os.File) *progressBar {
	fi, err := f.Stat()
	return &progressBar{unit: "rows", w: f, tty: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

// scanning says that the rows are being counted.
func (p *progressBar) scanning() {
	if p.tty {
		fmt.Fprint(p.w, "counting the rows to compact...")
		p.drawn = true
	}
}

// update is CompactRange's progress callback.
func (p *progressBar) update(done, total int) {
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
	}
	every := 10 * time.Second
	if p.tty {
		every = 200 * time.Millisecond
	}
	if done != 0 && done < total && now.Sub(p.last) < every {
		return
	}
	p.last = now
	line := renderProgress(done, total, now.Sub(p.start))
	if p.unit != "rows" {
		line = strings.ReplaceAll(line, " rows", " "+p.unit)
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// finish ends the bar's line.
func (p *progressBar) finish() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// renderProgress renders "[#####.....] done/total rows  pct%  rate rows/s
// ETA d".
func renderProgress(done, total int, elapsed time.Duration) string {
	const width = 30
	frac := 1.0
	if total > 0 {
		frac = float64(min(done, total)) / float64(total)
	}
	n := int(frac * width)
	var sb strings.Builder
	sb.WriteByte('[')
	sb.WriteString(strings.Repeat("#", n))
	sb.WriteString(strings.Repeat(".", width-n))
	fmt.Fprintf(&sb, "] %d/%d rows %5.1f%%", done, total, 100*frac)
	if secs := elapsed.Seconds(); done > 0 && secs > 0 {
		rate := float64(done) / secs
		fmt.Fprintf(&sb, "  %.0f rows/s", rate)
		if done < total {
			eta := time.Duration(float64(total-done) / rate * float64(time.Second))
			fmt.Fprintf(&sb, "  ETA %s", eta.Round(time.Second))
		}
	}
	return sb.String()
}
