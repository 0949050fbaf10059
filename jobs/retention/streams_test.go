package retention

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// TestStreams: a policy of retention_period 6h and {env="dev"} 2h, with
// no Options.Time (no global retention), and {job="keep"} 30h at a higher
// priority than dev's: each series keeps the hours of its own period,
// whole hours, in the data and exemplar tables, and the series index's
// 'S' cells of the days before a series' cutoff go; a policy changed
// applies at the next cycle; a second cycle of the same hour deletes
// nothing more.
func TestStreams(t *testing.T) {
	t.Parallel()
	for _, layout := range []struct {
		name string
		l    mapping.Layout
	}{{"unsalted", mapping.DefaultLayout()}, {"salted", salted()}} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, layout.l)
			var ts []int64 // every hour from t0 to t0+29h, 10 min in
			for h := range int64(30) {
				ts = append(ts, (t0+h*3600+600)*1000)
			}
			g.write(promSeries("m", []string{"env", "dev", "job", "a"}, ts...), promSeries("m", []string{"env", "prod", "job", "a"}, ts...),
				promSeries("n", nil, ts...), promSeries("m", []string{"env", "dev", "job", "keep"}, ts...))
			nowT, now := clock(time.Unix(t0+30*3600+1800, 0)) // in the hour t0+30h
			r := g.retention(Options{Now: now, Labels: g.Mapper.Labels})
			dev := Stream{Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "env", "dev")}, Priority: 1, Period: 2 * time.Hour}
			keep := Stream{Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "keep")}, Priority: 2, Period: 30 * time.Hour}
			if err := r.SetPolicy(Policy{Time: 6 * time.Hour, Streams: []Stream{dev, keep}}); err != nil {
				t.Fatal(err)
			}
			from := func(hours int64) string { // the times kept from hour t0+hours on
				var sb strings.Builder
				for _, x := range ts {
					if x >= (t0+hours*3600)*1000 {
						fmt.Fprintf(&sb, " %d", x)
					}
				}
				return sb.String() + "\n"
			}
			want := `{__name__="m", env="dev", job="a"}:` + from(28) + `{__name__="m", env="dev", job="keep"}:` + from(0) +
				`{__name__="m", env="prod", job="a"}:` + from(24) + `{__name__="n"}:` + from(24)
			cycle(t, r)
			if got := g.samples(); got != want {
				t.Errorf("samples:\n%s\nwant\n%s", got, want)
			}
			if got := g.exemplars(); got != want {
				t.Errorf("exemplars:\n%s\nwant\n%s", got, want)
			}
			// Day 19676 ([t0+1h, t0+25h)) lies before dev's cutoff (t0+28h),
			// not before the others'; day 19675 before every cutoff but keep's.
			if got, want := g.seriesCells(19676), []string{`{__name__="m", env="dev", job="keep"}`, `{__name__="m", env="prod", job="a"}`, `{__name__="n"}`}; !slices.Equal(got, want) {
				t.Errorf("day 19676's series in the index: %q, want %q", got, want)
			}
			if res := cycle(t, r); len(res.Ranges) != 0 {
				t.Errorf("a second cycle in the same hour deleted %v", res.Ranges)
			}
			// A backfill of dev's expired hours goes at the next cycle
			// (the writer tells NoteWritten), not an hour later.
			g.Writer = g.NewWriter(func(o *ingest.Options) { o.CheckedRowNoter = noteRetention{r} })
			g.write(promSeries("m", []string{"env", "dev", "job", "a"}, ts[5]))
			if got := g.samples(); got == want {
				t.Fatal("the backfill was not written")
			}
			cycle(t, r)
			if got := g.samples(); got != want {
				t.Errorf("samples after a backfill and a cycle:\n%s\nwant\n%s", got, want)
			}
			// The dev stream lengthened to 4h, an hour later: nothing of dev
			// comes back, nothing more of it goes; the others lose an hour.
			*nowT = nowT.Add(time.Hour)
			dev.Period = 4 * time.Hour
			if err := r.SetPolicy(Policy{Time: 6 * time.Hour, Streams: []Stream{dev, keep}}); err != nil {
				t.Fatal(err)
			}
			cycle(t, r)
			want = `{__name__="m", env="dev", job="a"}:` + from(28) + `{__name__="m", env="dev", job="keep"}:` + from(1) +
				`{__name__="m", env="prod", job="a"}:` + from(25) + `{__name__="n"}:` + from(25)
			if got := g.samples(); got != want {
				t.Errorf("samples after the change:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// noteRetention tells r of the rows written, as serve's writer does.
type noteRetention struct{ r *Retention }

func (n noteRetention) NoteRowsChecked(_ context.Context, puts []store.Put) error {
	n.r.NoteWritten(puts)
	return nil
}

// seriesCells returns the series of day's 'S' cells of the series
// index, as label strings, sorted.
func (g *rig) seriesCells(day uint32) []string {
	g.T.Helper()
	var out []string
	for _, row := range g.Rows(g.Tables.Index, mapping.IndexFamily) {
		d, mb, ok := mapping.IndexSeriesRowOf(row.Key)
		if !ok || d != day {
			continue
		}
		for _, c := range row.Cells {
			ls, err := g.Mapper.Labels(ctxFor(g.T), mb[:len(mb)-1], c.Qualifier)
			if err != nil {
				g.T.Fatal(err)
			}
			out = append(out, ls.String())
		}
	}
	slices.Sort(out)
	return out
}
