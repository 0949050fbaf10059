package index

import (
	"context"
	"fmt"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// ReindexOptions say where the data lives.
type ReindexOptions struct {
	DataTable, UIDTable string
	Layout              mapping.Layout
	// Batch is the number of series-days indexed per write; 0 means 1000.
	Batch int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// ReindexStats count what Reindex did.
type ReindexStats struct {
	Rows, Entries int
}

// Reindex indexes the rows of every metric of the UID table whose hour lies
// in [from, to], written by any process or by OpenTSDB, reading only row
// keys. When the range reaches the day the index covers from (or now, when
// nothing was covered yet), the coverage moves back to the first whole day
// of the range, so that queries from then on use the index; so does the
// coverage of the 'S' rows (the cardinality counts), on its own. Memory does
// not grow with the range. Safe while writers run.
func Reindex(ctx context.Context, st interface {
	readStore
	writeStore
}, w *Writer, opts ReindexOptions, from, to time.Time) (ReindexStats, error) {
	var stats ReindexStats
	if opts.Batch <= 0 {
		opts.Batch = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if to.Before(from) {
		return stats, nil
	}
	metrics, err := uid.MetricUIDs(ctx, st, opts.UIDTable, opts.Layout.MetricWidth)
	if err != nil {
		return stats, err
	}
	var batch []Entry
	last := map[string]uint32{} // TSUID -> last day queued, per metric
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := w.Write(ctx, batch); err != nil {
			return err
		}
		stats.Entries += len(batch)
		batch = batch[:0]
		return nil
	}
	for _, metric := range metrics {
		clear(last)
		for _, r := range opts.Layout.MetricRanges(metric, from.Unix(), to.Unix()) {
			sc := st.Scan(ctx, store.ScanRequest{Table: opts.DataTable, Start: r.Start, Stop: r.Stop, Family: "t"})
			for sc.Next() {
				key := sc.Row().Key
				_, m, base, tags, err := opts.Layout.ParseRowKey(key)
				if err != nil {
					continue // not a data row of this layout
				}
				stats.Rows++
				day := base / mapping.DaySeconds
				s := series.Series{Metric: append([]byte(nil), m...), Tags: append([]byte(nil), tags...)}
				id := string(s.Metric) + string(s.Tags)
				if d, ok := last[id]; ok && d == day {
					continue
				}
				last[id] = day
				batch = append(batch, Entry{Series: s, Day: day})
				if len(batch) >= opts.Batch {
					if err := flush(); err != nil {
						sc.Close()
						return stats, err
					}
				}
			}
			err := sc.Err()
			sc.Close()
			if err != nil {
				return stats, fmt.Errorf("scan rows of metric %x: %w", metric, err)
			}
		}
	}
	if err := flush(); err != nil {
		return stats, err
	}
	// Coverage: the first day whose every hour was reindexed.
	first := mapping.DayOf(from.UnixMilli())
	if from.Unix()%mapping.DaySeconds != 0 {
		first++
	}
	row, err := st.Get(ctx, w.opts.IndexTable, mapping.IndexCoverageKey, mapping.IndexFamily)
	if err != nil {
		return stats, fmt.Errorf("read index coverage: %w", err)
	}
	// Each coverage day apart: the 'S' rows' may be later than the label
	// cells' (an index from before promhbase wrote them).
	var quals []string
	for _, q := range []string{mapping.IndexSinceQual, mapping.IndexSeriesSinceQual} {
		since, ok := coverageOf(row, q)
		reaches := ok && mapping.DayOf(to.UnixMilli()) >= since
		if !ok {
			reaches = !to.Before(opts.Now().Add(-time.Hour))
		}
		if reaches && (!ok || first < since) {
			quals = append(quals, q)
		}
	}
	if err := w.setCoverage(ctx, first, quals...); err != nil {
		return stats, err
	}
	return stats, nil
}
