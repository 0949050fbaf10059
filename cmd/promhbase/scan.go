package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

type scanCmd struct {
	cmd    *kingpin.CmdClause
	metric string
	timeRange
}

func registerScan(app *kingpin.Application, cfg *config) *scanCmd {
	s := &scanCmd{}
	s.cmd = app.Command("scan", "Print the decoded rows of a metric in a time range, like OpenTSDB's `tsdb scan`.")
	s.cmd.Arg("metric", "Metric name.").Required().StringVar(&s.metric)
	s.flags(s.cmd, "Start: RFC 3339, or Unix seconds or milliseconds.",
		"End (inclusive): RFC 3339, or Unix seconds or milliseconds; default now.", false).Default("0")
	return s
}

func (s *scanCmd) run(cfg *config) error {
	start, end, j, err := s.openJob(cfg, true, cmdTimeout)
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
