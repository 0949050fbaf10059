package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/uid"
)

type scanCmd struct {
	cmd        *kingpin.CmdClause
	metric     string
	start, end string
}

func registerScan(app *kingpin.Application, cfg *config) *scanCmd {
	s := &scanCmd{}
	s.cmd = app.Command("scan", "Print the decoded rows of a metric in a time range, like OpenTSDB's `tsdb scan`.")
	s.cmd.Arg("metric", "Metric name.").Required().StringVar(&s.metric)
	rangeFlags(s.cmd, &s.start, &s.end, "Start: RFC 3339, or Unix seconds or milliseconds.",
		"End (inclusive): RFC 3339, or Unix seconds or milliseconds; default now.", false).Default("0")
	return s
}

// parseTime reads RFC 3339 or a Unix timestamp in seconds (<= 10 digits)
// or milliseconds, and returns Unix milliseconds.
func parseTime(s string, def time.Time) (int64, error) {
	if s == "" {
		return def.UnixMilli(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if len(s) <= 10 {
			return n * 1000, nil
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("time %q: want RFC 3339 or Unix seconds or milliseconds", s)
	}
	return t.UnixMilli(), nil
}

// rangeFlags defines a command's time range flags into start and end:
// --start and --end, as Prometheus's HTTP API (and its admin API's
// delete_series) and promtool name a range, and as hidden aliases --from
// and --to, the names compact, rollup and reindex took before, so that
// scripts written for them keep working. Each pair writes the same
// variable (kingpin sets the defaults first, then the flags given; of two
// given, the last wins). With required, the command fails at parse time
// without --start or --from (kingpin's Required would refuse --from). It
// returns the --start flag, for a default.
func rangeFlags(cmd *kingpin.CmdClause, start, end *string, startHelp, endHelp string, required bool) *kingpin.FlagClause {
	if required {
		startHelp += " Required."
		cmd.Validate(func(*kingpin.CmdClause) error {
			if *start == "" {
				return errors.New("required flag '--start' not provided")
			}
			return nil
		})
	}
	f := cmd.Flag("start", startHelp)
	f.StringVar(start)
	cmd.Flag("from", "Alias of --start.").Hidden().StringVar(start)
	cmd.Flag("end", endHelp).StringVar(end)
	cmd.Flag("to", "Alias of --end.").Hidden().StringVar(end)
	return f
}

// parseRange parses a --start/--end pair (end defaults to now) and checks
// their order.
func parseRange(from, to string) (int64, int64, error) {
	f, err := parseTime(from, time.Time{})
	if err != nil {
		return 0, 0, err
	}
	t, err := parseTime(to, time.Now())
	if err != nil {
		return 0, 0, err
	}
	if t < f {
		return 0, 0, fmt.Errorf("%s is before %s", to, from)
	}
	return f, t, nil
}

func (s *scanCmd) run(cfg *config) error {
	start, end, err := parseRange(s.start, s.end)
	if err != nil {
		return err
	}
	j, err := cfg.openMappingJob(cmdTimeout)
	if err != nil {
		return err
	}
	defer j.close()
	ctx, st, mapper := j.ctx, j.st, j.mapper
	metric, err := mapper.UIDs().ID(ctx, uid.KindMetric, s.metric)
	if err != nil {
		return err
	}
	layout := cfg.layout
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var pts []mapping.Point
	for _, r := range layout.MetricRanges(metric, start/1000, end/1000) {
		sc := st.Scan(ctx, store.ScanRequest{Table: cfg.dataTable, Start: r.Start, Stop: r.Stop, Family: "t"})
		for sc.Next() {
			row := sc.Row()
			_, m, base, tags, err := layout.ParseRowKey(row.Key)
			if err != nil {
				fmt.Fprintf(out, "%x\t(not a row of this layout: %v)\n", row.Key, err)
				continue
			}
			lbls, err := mapper.Labels(ctx, m, tags)
			if err != nil {
				fmt.Fprintf(out, "%x\t(labels: %v)\n", row.Key, err)
				continue
			}
			fmt.Fprintf(out, "%X %d (%s) %s\n", row.Key, base, time.Unix(int64(base), 0).UTC().Format(time.RFC3339), lbls)
			for _, c := range row.Cells {
				pts, err = mapping.AppendPoints(pts[:0], base, c.Qualifier, c.Value)
				if err != nil {
					fmt.Fprintf(out, "  %X\t%X\t(%v)\n", c.Qualifier, c.Value, err)
					continue
				}
				if len(pts) == 0 {
					fmt.Fprintf(out, "  %X\t%X\t(not a data point)\n", c.Qualifier, c.Value)
					continue
				}
				kind := "cell"
				if len(pts) > 1 {
					kind = fmt.Sprintf("compacted, %d points", len(pts))
				}
				fmt.Fprintf(out, "  %X\t%X\t%s\n", c.Qualifier, c.Value, kind)
				for _, p := range pts {
					fmt.Fprintf(out, "    %d\t%s\t%s\n", p.T, strconv.FormatFloat(p.V, 'g', -1, 64), time.UnixMilli(p.T).UTC().Format("2006-01-02T15:04:05.000Z"))
				}
			}
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
