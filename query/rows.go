package query

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/store"
)

// Defaults of RowsRequest's bounds.
const (
	DefaultRowsBatch      = 256
	DefaultRowsBatchBytes = 4 << 20
	// maxRowsMemo bounds the series whose match Rows remembers; past it
	// the memo starts over (the series caches of the mapper still answer
	// their labels without a read).
	maxRowsMemo = 1 << 16
)

// RowsRequest asks Querier.Rows for the stored rows of the series that
// Matchers select.
type RowsRequest struct {
	// Start and End bound the time, Unix milliseconds, inclusive: the rows
	// of every hour that overlaps [Start, End] come whole (all their
	// cells, also those outside the range).
	Start, End int64
	// Matchers select the series with Prometheus's semantics (an absent
	// label is ""), as every query does.
	Matchers []*labels.Matcher
	// Exemplars asks for the rows of the exemplar table (same row keys)
	// instead of the data table's; none when the Querier has no exemplar
	// table.
	Exemplars bool
	// BatchRows bounds the rows of a batch (DefaultRowsBatch when 0);
	// BatchBytes the bytes of their keys and cells (DefaultRowsBatchBytes
	// when 0), but for a batch's first row, which comes whatever its size.
	BatchRows  int
	BatchBytes int64
}

// MatchedRow is a stored row of a series the matchers select: its labels
// and a copy of its key and cells (sorted by family, then qualifier).
type MatchedRow struct {
	Labels labels.Labels
	Row    store.Row
}

// Rows calls fn with the rows of the series that req's matchers select
// whose hour overlaps [req.Start, req.End], a batch at a time, planned as
// every query is (metric names, salt buckets, hour range, row-key regex;
// see the package doc) and filtered by the matchers exactly. The scans
// run one after the other: metric names in order, then each name's metric
// UIDs and salt buckets, each scan's rows in key order; a batch holds
// rows of one scan only, so its first and last keys bound a key range
// that holds no other matching row.
//
// No scanner is open while fn runs: each batch is read by a scan of its
// own from the key after the previous batch's last, so fn may delete or
// rewrite the rows it gets (a row it deletes is not met again). Rows
// written behind the scans' position are not met; rows written ahead of
// it may be. Memory is bounded by the batch bounds and a memo of the
// series met (at most 65,536 entries, then started over). The batch and
// its rows are fn's only until fn returns. An error of fn ends Rows and
// is returned.
func (q *Querier) Rows(ctx context.Context, req RowsRequest, fn func(batch []MatchedRow) error) error {
	start, end := req.Start, req.End
	if start > end || end < 0 || start/1000 > math.MaxUint32 {
		return nil
	}
	start = max(start, 0)
	md := modeSamples
	if req.Exemplars {
		if q.opts.ExemplarTable == "" {
			return nil
		}
		md = modeExemplars
	}
	metrics, err := q.metricNames(ctx, start, end, req.Matchers)
	if err != nil || len(metrics) == 0 {
		return err
	}
	sel := &selection{q: q, mode: md, start: start, end: end, matchers: req.Matchers, budget: q.NewBudget()}
	cs, ok, err := sel.constraints(ctx)
	if err != nil || !ok {
		return err
	}
	f := newRowFilter(q.mapper.Layout(), cs)
	r := &rowsRun{q: q, sel: sel, fn: fn, maxRows: req.BatchRows, maxBytes: req.BatchBytes, memo: map[string]bool{}}
	if r.maxRows <= 0 {
		r.maxRows = DefaultRowsBatch
	}
	if r.maxBytes <= 0 {
		r.maxBytes = DefaultRowsBatchBytes
	}
	for _, name := range metrics {
		reqs, err := sel.scans(ctx, []string{name}, f)
		if err != nil {
			return err
		}
		for _, sr := range reqs {
			if err := r.scan(ctx, sr); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowsRun is one call of Rows.
type rowsRun struct {
	q           *Querier
	sel         *selection
	fn          func([]MatchedRow) error
	maxRows     int
	maxBytes    int64
	memo        map[string]bool // series key (metric ‖ tags) -> matches
	batch       []MatchedRow
	pending     []int // indexes in batch of rows whose series' match is unknown
	batchBytes  int64
	keyBuf      []byte
	resolveKeys [][]byte
}

// scan reads the rows of sr a batch at a time, each batch by a scan of
// its own, and hands each on.
func (r *rowsRun) scan(ctx context.Context, sr store.ScanRequest) error {
	layout := r.q.mapper.Layout()
	from := sr.Start
	for {
		sr.Start = from
		sc := r.q.st.Scan(ctx, sr)
		var last []byte
		full := false
		for sc.Next() {
			row := sc.Row()
			last = append(last[:0], row.Key...)
			_, metric, _, tags, err := layout.ParseRowKey(row.Key)
			if err != nil {
				continue // not a data row of this layout
			}
			r.keyBuf = append(append(r.keyBuf[:0], metric...), tags...)
			match, known := r.memo[string(r.keyBuf)]
			if !known {
				lbls, cached, err := r.q.mapper.CachedLabels(ctx, metric, tags)
				if err != nil {
					sc.Close()
					return fmt.Errorf("labels of row %x: %w", row.Key, err)
				}
				if cached {
					match, known = r.sel.matches(lbls), true
					r.remember(r.keyBuf, match)
				}
			}
			if known && !match {
				continue
			}
			r.add(row, !known)
			if len(r.batch) >= r.maxRows || r.batchBytes >= r.maxBytes {
				full = true
				break
			}
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return fmt.Errorf("scan %s [%x, %x): %w", sr.Table, sr.Start, sr.Stop, err)
		}
		if err := r.flush(ctx); err != nil {
			return err
		}
		if !full || last == nil {
			return nil
		}
		last = append(last, 0) // the first key after the last row read
		from = last
	}
}

// remember records whether the series of key matches.
func (r *rowsRun) remember(key []byte, match bool) {
	if len(r.memo) >= maxRowsMemo {
		clear(r.memo)
	}
	r.memo[string(key)] = match
}

// add copies row into the batch; pending when its series' match is not
// known yet.
func (r *rowsRun) add(row store.Row, pending bool) {
	cp := store.Row{Key: bytes.Clone(row.Key), Cells: make([]store.Cell, len(row.Cells))}
	n := int64(len(row.Key))
	for i, c := range row.Cells {
		cp.Cells[i] = store.Cell{Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier), Value: bytes.Clone(c.Value), Timestamp: c.Timestamp}
		n += int64(len(c.Family) + len(c.Qualifier) + len(c.Value) + 8)
	}
	r.batchBytes += n
	if pending {
		r.pending = append(r.pending, len(r.batch))
	}
	r.batch = append(r.batch, MatchedRow{Row: cp})
}

// flush resolves the labels of the batch's series, drops the rows whose
// series do not match, and hands the rest on.
func (r *rowsRun) flush(ctx context.Context) error {
	defer func() {
		clear(r.batch)
		r.batch, r.pending, r.batchBytes = r.batch[:0], r.pending[:0], 0
	}()
	if len(r.batch) == 0 {
		return nil
	}
	layout := r.q.mapper.Layout()
	if len(r.pending) > 0 {
		r.resolveKeys = r.resolveKeys[:0]
		for _, i := range r.pending {
			_, metric, _, tags, _ := layout.ParseRowKey(r.batch[i].Row.Key)
			r.resolveKeys = append(r.resolveKeys, append(append([]byte(nil), metric...), tags...))
		}
		if err := r.q.mapper.LoadNames(ctx, r.resolveKeys); err != nil {
			return fmt.Errorf("labels of %d series: %w", len(r.resolveKeys), err)
		}
	}
	out := r.batch[:0]
	for i := range r.batch {
		mr := r.batch[i]
		_, metric, _, tags, _ := layout.ParseRowKey(mr.Row.Key)
		lbls, err := r.q.mapper.Labels(ctx, metric, tags)
		if err != nil {
			return fmt.Errorf("labels of row %x: %w", mr.Row.Key, err)
		}
		r.keyBuf = append(append(r.keyBuf[:0], metric...), tags...)
		match := r.sel.matches(lbls)
		r.remember(r.keyBuf, match)
		if !match {
			continue
		}
		mr.Labels = lbls
		out = append(out, mr)
	}
	if len(out) == 0 {
		return nil
	}
	return r.fn(out)
}
