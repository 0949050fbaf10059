// Package deletion deletes the samples of the series that label matchers
// select in a time range, as Prometheus's admin API delete_series does:
// a series matching any of the matcher sets, samples with start <= t <=
// end (Unix ms, both inclusive). Deleted samples are gone from the store,
// not hidden behind a tombstone: they do not come back through a restart,
// through the compaction of samples written later into the same rows, or
// through the exemplars or the series index. Nothing outside the range or
// the matchers is deleted.
//
// The rows are found as a query finds them (query.Querier.Rows: metric
// names, salt buckets, the hours of the range, the row-key regex, then
// every matcher applied exactly), a bounded batch at a time. For each row
// of the data table:
//
//   - a row whose whole hour lies in [start, end] and that holds data
//     points only (samples and native histograms) is deleted whole;
//   - otherwise the row is read again and its cells dealt with. The
//     data-point columns (single samples and compacted columns) of a row
//     a compactor could compact (more than one of them, no append
//     column) are rewritten together: the points outside the range, their
//     qualifier and value bytes exactly as stored, become one compacted
//     column (merged as a reader merges them, the newest version winning
//     a repeated time; the meta byte OpenTSDB's compaction would write),
//     and the columns it replaces are deleted, each bounded by the
//     version read (store.Column.Timestamp), so that a version written
//     since survives. In any other row each cell goes on its own: a
//     single sample, a histogram cell, or a compacted column whose points
//     are all in the range is deleted, bounded by the version read; a
//     compacted column holding points on both sides is replaced by a
//     compacted column of the points outside the range, in their order;
//     OpenTSDB's append column is rewritten with a check-and-put on its
//     value. A column written in place of others takes the version one
//     millisecond after the newest it replaces: on HBase a delete marker
//     (of a compaction, at the compacted cell's version) may sit at that
//     version on the new column's qualifier and would hide it, and a
//     sample written since the read stays newer. New columns are written
//     before the deletes. Annotations and cells of unknown kinds stay. A
//     cell that does not decode stays and is counted in Stats.Malformed.
//
// The exemplar table's rows (the data rows' keys) go the same way: whole
// when their hour lies in the range, else the exemplars in the range.
//
// The series index: a deleted series must not show in label names and
// values answered from the index for the days it no longer has data. After
// the rows of a metric are done, the index cells that only the deleted
// rows supported are removed: the 'V' cell (day, tag pair) -> metric when
// no row of the metric left on that day carries the pair, the 'S' cell
// (day, series) when no row of the series is left that day (so that the
// day's cardinality counts it no more), the 'N' cell day
// -> metric when the metric has no row left that day, and the 'K' cell day
// -> tag name when no 'V' row of the day and tag name is left. The check
// reads the data rows left (keys only) and each cell is deleted bounded by
// the version read before the check, so a cell written again meanwhile
// stays. Only days that ended an hour before the deletion began are pruned:
// the day being written keeps its cells. The 'A' row (every metric ever
// indexed), the coverage row and the TSMeta rows of tsdb-meta stay: like
// UIDs they name series, not samples, and /api/v1/series answers from the
// data rows, where the deleted series no longer are.
//
// Pruning goes a metric at a time, after the metric's rows: a delete
// interrupted part way may leave the cells of the rows it had deleted (a
// re-run no longer meets those rows), so that label names and values
// from the index still show them; the index answers more than there is,
// which its readers allow, never less.
//
// A writer remembers (in its caches, per process) the index cells it
// wrote, and does not write them again. With Options.IndexWriter (the
// index.Writer of this process) the days whose cells a delete removed are
// forgotten (index.Writer.Forget), so that a re-import into them through
// this process writes their cells again. The
// writers of other processes (several servers on one HBase) still
// remember them: when such a process writes new samples of a pruned day
// for the same metric and label before its caches forget the cell, the
// index lacks the cell until `promhbase reindex` runs, and selectors
// without a metric name and label values for that day can miss the
// metric.
//
// Compaction racing a delete: compacting a row reads its cells, puts the
// compacted cell and deletes the cells it replaced; a delete that ran
// between the read and the put would be undone by the put. With
// Options.Fence (the compact.Compactor of this process's scheduler), each
// batch's key range is held against compaction while it is rewritten:
// compactions in flight on those rows finish first, new ones wait. For
// compactors of other processes (HBase with several servers, or
// `promhbase compact`), a row rewritten together also gets a delete of
// the column a compaction of the row as read would write, bounded by the
// newest version read: on HBase the marker hides that compaction's put
// (it carries the newest version it read), and the column of the points
// kept, one millisecond newer, outlives the compaction's bounded deletes,
// so the delete stands and nothing else is lost. A compaction that read
// the row in another state than the delete did (a sample written between
// the reads, or the delete half applied) can still put back what it
// read, never less; a second run of the same delete after a minute
// removes it.
//
// A delete is idempotent: run again, it finds nothing left to delete in
// what it did and goes on with the rest, so an interrupted delete (a
// cancelled context, a store error) completes by running it again.
//
// With Options.Rollups (rollups.go), the rollups of the windows that held
// deleted samples are removed, and those the range cuts are built again,
// the build lease held throughout (no build writes the removed rollups
// again from samples not deleted yet).
package deletion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
)

// dataFamily is the data table's column family.
const dataFamily = "t"

// Fence keeps compaction off rows while they are rewritten: it returns
// once no compaction of a row in [start, stop) is in flight, and none
// starts until release is called (compact.Compactor.Hold).
type Fence interface {
	Hold(ctx context.Context, start, stop []byte) (release func(), err error)
}

// IndexForgetter is the series index writer of this process
// (index.Writer): told the days whose cells a delete removed, it writes
// their cells again when a series is written into those days anew.
type IndexForgetter interface {
	Forget(fromDay, toDay uint32)
}

// Options configure a Deleter.
type Options struct {
	// DataTable is the data table, "tsdb" when empty. ExemplarTable and
	// IndexTable (tsdb-index) are left alone when empty.
	DataTable, ExemplarTable, IndexTable string
	// Layout is the row-key layout of the data and exemplar tables.
	Layout mapping.Layout
	// Fence, when set, is the compactor of this process: the rows being
	// rewritten are held against it.
	Fence Fence
	// IndexWriter, when set, is the series index writer of this process:
	// it forgets having written the cells of the days the delete pruned.
	IndexWriter IndexForgetter
	// Rollups, when set, builds the rollups of the data table: a delete
	// removes the rollups of the windows that held deleted samples and
	// builds again those the range cuts (see rollups.go).
	Rollups *rollup.Builder
	// BatchRows bounds the rows read and rewritten at once;
	// query.DefaultRowsBatch when 0.
	BatchRows int
	// Concurrency is how many rows of a batch are rewritten at once; 8
	// when 0.
	Concurrency int
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger takes one line a delete; nil discards.
	Logger *slog.Logger
	// Now is the clock (which index days have ended); nil means time.Now.
	Now func() time.Time
}

// Deleter deletes series' samples. It is safe for concurrent use.
type Deleter struct {
	st   store.Store
	q    *query.Querier
	opts Options

	rowsDeleted, rowsRewritten *prometheus.CounterVec
	samples, exemplars         prometheus.Counter
	indexCells                 prometheus.Counter
	runs, failures             prometheus.Counter
}

// New returns a Deleter over st that finds rows with q (a Querier over
// the same store and data table; its exemplar table, if any, is
// Options.ExemplarTable). It fails when the layout is not valid.
func New(st store.Store, q *query.Querier, opts Options) (*Deleter, error) {
	if err := opts.Layout.Validate(); err != nil {
		return nil, fmt.Errorf("deletion: %w", err)
	}
	if opts.DataTable == "" {
		opts.DataTable = mapping.DefaultDataTable
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = query.DefaultRowsBatch
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &Deleter{st: st, q: q, opts: opts,
		rowsDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_deletion_rows_deleted_total", Help: "Rows deleted whole by series deletion, by table.",
		}, []string{"table"}),
		rowsRewritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_deletion_rows_rewritten_total", Help: "Rows of which series deletion deleted or rewrote some cells, by table.",
		}, []string{"table"}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_deletion_samples_deleted_total", Help: "Float and histogram samples deleted by series deletion.",
		}),
		exemplars: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_deletion_exemplars_deleted_total", Help: "Exemplars deleted by series deletion.",
		}),
		indexCells: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_deletion_index_cells_deleted_total", Help: "Series index cells removed because no data left supports them.",
		}),
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_deletion_runs_total", Help: "Series deletions run.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_deletion_failures_total", Help: "Series deletions that ended with an error; running them again completes them.",
		}),
	}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{d.rowsDeleted, d.rowsRewritten, d.samples, d.exemplars, d.indexCells, d.runs, d.failures} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register deletion metrics: %w", err)
			}
		}
	}
	return d, nil
}

// Stats says what a delete did.
type Stats struct {
	// Rows are the data rows deleted whole; RowsRewritten those of which
	// some cells were deleted or rewritten.
	Rows, RowsRewritten int64
	// Samples and Histograms are the float and histogram samples in the
	// range that the rows held (as a reader saw them) and that are gone.
	Samples, Histograms int64
	// Exemplars are the exemplars deleted; ExemplarRows the exemplar rows
	// deleted whole.
	Exemplars, ExemplarRows int64
	// IndexCells are the series index cells removed.
	IndexCells int64
	// RollupCells are the rollup cells removed (the windows that held
	// deleted samples).
	RollupCells int64
	// Malformed are the cells left because they do not decode.
	Malformed int64
}

func (s *Stats) add(o Stats) {
	s.Rows += o.Rows
	s.RowsRewritten += o.RowsRewritten
	s.Samples += o.Samples
	s.Histograms += o.Histograms
	s.Exemplars += o.Exemplars
	s.ExemplarRows += o.ExemplarRows
	s.IndexCells += o.IndexCells
	s.RollupCells += o.RollupCells
	s.Malformed += o.Malformed
}

// String renders the counts on one line.
func (s Stats) String() string {
	return fmt.Sprintf("%d samples and %d histograms deleted (%d rows whole, %d rewritten), %d exemplars (%d rows whole), %d index cells, %d rollup cells, %d malformed cells left",
		s.Samples, s.Histograms, s.Rows, s.RowsRewritten, s.Exemplars, s.ExemplarRows, s.IndexCells, s.RollupCells, s.Malformed)
}

// ErrNoMatchers means a delete was asked without matchers.
var ErrNoMatchers = errors.New("no matchers")

// DeleteSeries deletes the samples in [start, end] (Unix ms, inclusive;
// math.MinInt64 and math.MaxInt64 for all time) of every series that
// matches any of the matcher sets, as Prometheus's delete_series does. It
// returns what it did; on error part of it may be done, and running it
// again completes it.
func (d *Deleter) DeleteSeries(ctx context.Context, matcherSets [][]*labels.Matcher, start, end int64) (Stats, error) {
	var total Stats
	if len(matcherSets) == 0 {
		return total, fmt.Errorf("delete series: %w", ErrNoMatchers)
	}
	for _, ms := range matcherSets {
		st, err := d.Delete(ctx, ms, start, end)
		total.add(st)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Delete deletes the samples in [start, end] (Unix ms, inclusive) of the
// series that all of matchers select, their exemplars in the range, and
// the index cells only they supported (see the package doc). It returns
// what it did; on error part of it may be done, and running it again
// completes it. An empty range deletes nothing; matchers must not be
// empty.
func (d *Deleter) Delete(ctx context.Context, matchers []*labels.Matcher, start, end int64) (Stats, error) {
	began, clock := d.opts.Now(), time.Now()
	var st Stats
	if len(matchers) == 0 {
		return st, fmt.Errorf("delete series: %w", ErrNoMatchers)
	}
	err := d.delete(ctx, matchers, start, end, began, &st)
	d.runs.Inc()
	attrs := []any{"matchers", fmt.Sprint(matchers), "start", start, "end", end,
		"samples", st.Samples, "histograms", st.Histograms, "rows", st.Rows, "rows_rewritten", st.RowsRewritten,
		"exemplars", st.Exemplars, "index_cells", st.IndexCells, "rollup_cells", st.RollupCells, "malformed", st.Malformed,
		"took", time.Since(clock).Round(time.Millisecond)}
	if err != nil {
		d.failures.Inc()
		d.opts.Logger.Warn("series deletion failed; run it again to complete it", append(attrs, "err", err)...)
		return st, fmt.Errorf("delete series %v in [%d, %d]: %w", matchers, start, end, err)
	}
	d.opts.Logger.Info("series deleted", attrs...)
	return st, nil
}

func (d *Deleter) delete(ctx context.Context, matchers []*labels.Matcher, start, end int64, began time.Time, st *Stats) error {
	if start > end || end < 0 {
		return nil
	}
	start = max(start, 0)
	if start/1000 > math.MaxUint32 {
		return nil
	}
	// Exemplars first, then data, then the index, each step finding its
	// rows through the ones after it: an interrupted delete leaves what
	// a re-run needs to find the rest.
	if d.opts.ExemplarTable != "" {
		err := d.q.Rows(ctx, query.RowsRequest{Start: start, End: end, Matchers: matchers, Exemplars: true, BatchRows: d.opts.BatchRows},
			func(batch []query.MatchedRow) error { return d.exemplarBatch(ctx, batch, start, end, st) })
		if err != nil && !errors.Is(err, store.ErrTableNotFound) { // no exemplar table: no exemplars
			return fmt.Errorf("exemplars: %w", err)
		}
	}
	if d.opts.Rollups == nil {
		return d.deleteSamples(ctx, matchers, start, end, began, st)
	}
	// No build runs while the rollups of the deleted samples are gone
	// and the samples are not yet: it would write them again.
	err := d.opts.Rollups.Exclusive(ctx, func(ctx context.Context, b *rollup.Builder) error {
		return d.deleteWithRollups(ctx, b, matchers, start, end, began, st)
	})
	if errors.Is(err, store.ErrTableNotFound) { // no rollup table: no rollups
		return d.deleteSamples(ctx, matchers, start, end, began, st)
	}
	return err
}

// deleteWithRollups deletes the rollups of the windows that held the
// samples in [start, end] (the hours of the windows the range cuts marked
// written first: queries read them raw), then the samples, then builds
// those hours again, with b (the build lease held).
func (d *Deleter) deleteWithRollups(ctx context.Context, b *rollup.Builder, matchers []*labels.Matcher, start, end int64, began time.Time, st *Stats) error {
	hours := d.edgeHours(start, end)
	edges, err := b.MarkWritten(ctx, hours)
	if err == nil && !edges {
		edges, err = d.staleEdges(ctx, hours)
	}
	if err != nil {
		return fmt.Errorf("rollups: %w", err)
	}
	err = d.q.Rows(ctx, query.RowsRequest{Start: start, End: end, Matchers: matchers, BatchRows: d.opts.BatchRows},
		func(batch []query.MatchedRow) error { return d.rollupBatch(ctx, batch, start, end, st) })
	if err != nil {
		return fmt.Errorf("rollups: %w", err)
	}
	if err := d.deleteSamples(ctx, matchers, start, end, began, st); err != nil {
		return err
	}
	if edges || st.RollupCells > 0 {
		if err := d.rebuildEdges(ctx, b, start, end); err != nil {
			return fmt.Errorf("rollups: %w", err)
		}
	}
	return nil
}

// deleteSamples deletes the samples in [start, end] of the series matchers
// select, and the index cells only they supported.
func (d *Deleter) deleteSamples(ctx context.Context, matchers []*labels.Matcher, start, end int64, began time.Time, st *Stats) error {
	var pr *pruner
	if d.opts.IndexTable != "" {
		pr = &pruner{d: d, lastDay: lastPrunableDay(began)}
	}
	err := d.q.Rows(ctx, query.RowsRequest{Start: start, End: end, Matchers: matchers, BatchRows: d.opts.BatchRows},
		func(batch []query.MatchedRow) error {
			touched, err := d.dataBatch(ctx, batch, start, end, st)
			if err != nil || pr == nil {
				return err
			}
			for _, key := range touched {
				if err := pr.note(ctx, key, st); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	if pr != nil {
		if err := pr.flush(ctx, st); err != nil {
			return fmt.Errorf("series index: %w", err)
		}
	}
	return nil
}

// lastPrunableDay is the last index day whose cells a delete that began at
// t may remove: the last day that ended an hour before t. -1: none.
func lastPrunableDay(t time.Time) int64 {
	return (t.Unix()-mapping.MaxTimespan)/mapping.DaySeconds - 1
}

// hourBounds returns the first and last millisecond of the hour of base.
func hourBounds(base uint32) (lo, hi int64) {
	lo = int64(base) * 1000
	return lo, lo + mapping.MaxOffsetMs - 1
}

// dataBatch deletes the samples in [start, end] of a batch of data rows
// and returns the keys of the rows it deleted samples from.
func (d *Deleter) dataBatch(ctx context.Context, batch []query.MatchedRow, start, end int64, total *Stats) ([][]byte, error) {
	if d.opts.Fence != nil {
		release, err := d.opts.Fence.Hold(ctx, batch[0].Row.Key, append(bytes.Clone(batch[len(batch)-1].Row.Key), 0))
		if err != nil {
			return nil, err
		}
		defer release()
	}
	stats := make([]Stats, len(batch))
	touched := make([]bool, len(batch))
	err := store.Parallel(ctx, len(batch), d.opts.Concurrency, func(ctx context.Context, i int) error {
		var err error
		touched[i], err = d.dataRow(ctx, batch[i].Row, start, end, &stats[i])
		return err
	})
	var keys [][]byte
	for i := range batch {
		total.add(stats[i])
		if touched[i] {
			keys = append(keys, batch[i].Row.Key)
		}
	}
	return keys, err
}

// dataRow deletes the samples in [start, end] of one data row, as scanned
// (row), and reports whether it deleted any.
func (d *Deleter) dataRow(ctx context.Context, row store.Row, start, end int64, st *Stats) (bool, error) {
	base, ok := d.opts.Layout.BaseTimeOf(row.Key)
	if !ok {
		return false, nil
	}
	table := d.opts.DataTable
	if wholeInRange(row.Cells, base, start, end) {
		var m cells.Merger
		pts, err := m.Merge(base, row.Cells, math.MinInt64, math.MaxInt64)
		if err != nil {
			return false, fmt.Errorf("row %x of %s: %w", row.Key, table, err)
		}
		hists := countHistograms(row.Cells, base, start, end)
		if err := d.st.Delete(ctx, table, row.Key, nil); err != nil {
			return false, fmt.Errorf("delete row %x of %s: %w", row.Key, table, err)
		}
		st.Rows++
		st.Samples += int64(len(pts))
		st.Histograms += int64(hists)
		d.rowsDeleted.WithLabelValues(table).Inc()
		d.samples.Add(float64(len(pts) + hists))
		return true, nil
	}
	// Cut: the row read again, now that no compaction of it is in flight.
	const attempts = 3
	for range attempts {
		fresh, err := d.st.Get(ctx, table, row.Key, dataFamily)
		if err != nil {
			return false, fmt.Errorf("read row %x of %s: %w", row.Key, table, err)
		}
		p := planCut(d.opts.Layout, fresh, base, start, end)
		if p.empty() {
			st.Malformed += p.malformed
			return false, nil
		}
		done, err := d.applyCut(ctx, fresh.Key, p)
		if err != nil {
			return false, err
		}
		if !done {
			continue // the append column changed meanwhile: plan again
		}
		st.RowsRewritten++
		st.Samples += p.samples
		st.Histograms += p.histograms
		st.Malformed += p.malformed
		d.rowsRewritten.WithLabelValues(table).Inc()
		d.samples.Add(float64(p.samples + p.histograms))
		return true, nil
	}
	return false, fmt.Errorf("row %x of %s: its append column kept changing (%d attempts)", row.Key, table, attempts)
}

// exemplarBatch deletes the exemplars in [start, end] of a batch of
// exemplar rows.
func (d *Deleter) exemplarBatch(ctx context.Context, batch []query.MatchedRow, start, end int64, total *Stats) error {
	stats := make([]Stats, len(batch))
	err := store.Parallel(ctx, len(batch), d.opts.Concurrency, func(ctx context.Context, i int) error {
		return d.exemplarRow(ctx, batch[i].Row, start, end, &stats[i])
	})
	for i := range stats {
		total.add(stats[i])
	}
	return err
}

// exemplarRow deletes the exemplars in [start, end] of one exemplar row.
func (d *Deleter) exemplarRow(ctx context.Context, row store.Row, start, end int64, st *Stats) error {
	base, ok := d.opts.Layout.BaseTimeOf(row.Key)
	if !ok {
		return nil
	}
	table := d.opts.ExemplarTable
	lo, hi := hourBounds(base)
	var cols []store.Column
	var scratch [8]mapping.Label
	malformed := int64(0)
	for _, c := range row.Cells {
		if string(c.Family) != mapping.ExemplarFamily {
			continue
		}
		off, _, _, err := mapping.DecodeExemplarValue(c.Value, scratch[:0])
		if err != nil {
			malformed++
			continue
		}
		if t := lo + int64(off); t >= start && t <= end {
			cols = append(cols, store.Column{Family: []byte(mapping.ExemplarFamily), Qualifier: c.Qualifier, Timestamp: c.Timestamp})
		}
	}
	st.Malformed += malformed
	if len(cols) == 0 {
		return nil
	}
	if start <= lo && hi <= end && malformed == 0 && len(cols) == len(row.Cells) {
		if err := d.st.Delete(ctx, table, row.Key, nil); err != nil {
			return fmt.Errorf("delete row %x of %s: %w", row.Key, table, err)
		}
		st.ExemplarRows++
		d.rowsDeleted.WithLabelValues(table).Inc()
	} else {
		if err := d.st.Delete(ctx, table, row.Key, cols); err != nil {
			return fmt.Errorf("delete %d exemplars of row %x of %s: %w", len(cols), row.Key, table, err)
		}
		d.rowsRewritten.WithLabelValues(table).Inc()
	}
	st.Exemplars += int64(len(cols))
	d.exemplars.Add(float64(len(cols)))
	return nil
}
