package compact

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// CompactRange compacts the rows of every metric named in the UID table
// whose hour lies in [from, to] (the hours from the one holding from to the
// one holding to) and has ended by Options.Now, scanning each salt bucket
// when salting is on. It finds rows written by any process, before a
// restart, or by OpenTSDB.
//
// It scans the range twice. The first scan counts the rows that need work
// (more than one data-point cell, no append column); then progress(0, total)
// is called. The second scan plans each row from the cells it read and
// compacts it with Options.Concurrency workers, calling progress(done,
// total) after each counted row; total grows if rows appeared between the
// scans. progress may be nil; it is called from one goroutine at a time.
// Memory does not grow with the range.
//
// A row that fails is counted in Stats.Errors and the others are still
// compacted. The error is not nil only when the UID table or a scan failed
// or ctx ended; Stats then holds what was done.
func (c *Compactor) CompactRange(ctx context.Context, from, to time.Time, progress func(done, total int)) (Stats, error) {
	scans, err := c.rangeScans(ctx, from, to)
	if err != nil || len(scans) == 0 {
		return Stats{}, err
	}
	total := 0
	for _, req := range scans {
		err := c.scanRows(ctx, req, func(row store.Row) error {
			if needsWork(row) {
				total++
			}
			return nil
		})
		if err != nil {
			return Stats{}, fmt.Errorf("count rows to compact: %w", err)
		}
	}
	r := &rangeRun{total: total, progress: progress}
	r.report(false)

	work := make(chan *plan, 2*c.opts.Concurrency)
	var wg sync.WaitGroup
	for range c.opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				res, err := c.apply(ctx, p)
				r.add(res, err, true)
			}
		}()
	}
	var m cells.RawMerger
	var scanErr error
	for _, req := range scans {
		scanErr = c.scanRows(ctx, req, func(row store.Row) error {
			counted := needsWork(row)
			p, res := c.plan(&m, row)
			if p == nil {
				r.add(res, nil, counted)
				return nil
			}
			select {
			case work <- p:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if scanErr != nil {
			scanErr = fmt.Errorf("compact rows: %w", scanErr)
			break
		}
	}
	close(work)
	wg.Wait()
	return r.stats, scanErr
}

// rangeRun accumulates the results of CompactRange's workers.
type rangeRun struct {
	mu          sync.Mutex
	stats       Stats
	done, total int
	progress    func(done, total int)
}

// add counts one row; counted rows advance the progress.
func (r *rangeRun) add(res Result, err error, counted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Add(res, err)
	if counted {
		r.done++
		r.total = max(r.total, r.done)
		r.report(true)
	}
}

// report calls the progress callback; the caller holds r.mu when locked.
func (r *rangeRun) report(locked bool) {
	if r.progress == nil {
		return
	}
	if !locked {
		r.mu.Lock()
		defer r.mu.Unlock()
	}
	r.progress(r.done, r.total)
}

// needsWork reports whether a row may need compacting: more than one
// data-point cell and no append column.
func needsWork(row store.Row) bool {
	n := 0
	for _, c := range row.Cells {
		if string(c.Family) != family {
			continue
		}
		if mapping.IsAppendQualifier(c.Qualifier) {
			return false
		}
		if len(c.Qualifier)%2 == 0 {
			n++
		}
	}
	return n > 1
}

// rangeScans returns the scans over the rows of every metric (and salt
// bucket) whose hour lies in [from, to] and has ended.
func (c *Compactor) rangeScans(ctx context.Context, from, to time.Time) ([]store.ScanRequest, error) {
	fromHour := max(from.Unix(), 0) / mapping.MaxTimespan * mapping.MaxTimespan
	lastEnded := c.opts.Now().Unix()/mapping.MaxTimespan*mapping.MaxTimespan - mapping.MaxTimespan
	toHour := min(to.Unix()/mapping.MaxTimespan*mapping.MaxTimespan, lastEnded, math.MaxUint32/mapping.MaxTimespan*mapping.MaxTimespan)
	if toHour < fromHour {
		return nil, nil
	}
	metrics, err := c.metricUIDs(ctx)
	if err != nil {
		return nil, err
	}
	var scans []store.ScanRequest
	for _, metric := range metrics {
		for _, r := range c.opts.Layout.MetricRanges(metric, fromHour, toHour) {
			scans = append(scans, store.ScanRequest{Table: c.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: family})
		}
	}
	return scans, nil
}

// metricUIDs lists the metric UIDs of the UID table.
func (c *Compactor) metricUIDs(ctx context.Context) ([][]byte, error) {
	return uid.MetricUIDs(ctx, c.st, c.opts.UIDTable, c.opts.Layout.MetricWidth)
}

// scanRows calls fn with every row of the scan, stopping at fn's first
// error. The row's memory is valid only during the call.
func (c *Compactor) scanRows(ctx context.Context, req store.ScanRequest, fn func(store.Row) error) error {
	sc := c.st.Scan(ctx, req)
	defer sc.Close()
	for sc.Next() {
		if err := fn(sc.Row()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan %s [%x, %x): %w", req.Table, req.Start, req.Stop, err)
	}
	return nil
}
