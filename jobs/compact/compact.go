// Package compact rewrites rows of the data table into OpenTSDB's compacted
// column, as OpenTSDB's TSDs do once a row's hour has ended: the row's data
// points, one cell each as the write path stores them, become one cell whose
// qualifier is the points' qualifiers concatenated and whose value is their
// values concatenated plus a meta byte (see mapping.AppendCompacted). Reads
// return the same samples before and after; the row takes one cell instead of
// hundreds, which saves HBase's per-cell overhead on disk and in every scan.
//
// Compacting a row: read the row's `t` family; merge every data-point cell
// (single and already-compacted columns) with the reader's rule
// (cells.RawMerger: the newest cell version wins a repeated timestamp),
// carrying each point's qualifier and value bytes unchanged, as OpenTSDB's
// own compaction does, so that a row OpenTSDB wrote keeps every bit (long
// integers, second qualifiers, float widths); put
// the compacted cell; then delete exactly the cells it replaces, each
// bounded by the version that was read (store.Column.Timestamp). A sample
// written into the row after the read is a newer version of its column, so
// the delete leaves it, and the compacted cell is written with the newest
// version it merged (not the current time), so that such a sample also
// stays newer than the compacted cell and wins the read. Several compactors
// may work on the same rows at once, and the write path may keep writing:
// nothing is lost, and reads never see a sample twice. Interrupted between
// the put and the delete, a row holds both; reads are unchanged and the
// next compaction finishes the job.
//
// A deletion (package deletion) that ran between a compaction's read and
// its put would be undone by the put, which carries the samples read
// before. Hold keeps CompactRow off the rows a deletion rewrites, in this
// process: see fence.go.
//
// Left alone: rows with OpenTSDB's append column (qualifier 0x050000), as
// OpenTSDB leaves them; annotations and other odd-length cells, which stay
// as they are beside the compacted cell; rows that already hold at most one
// data-point cell; rows of more than MaxPoints points.
//
// Rows are compacted by `promhbase compact` over a range, and by the
// background Scheduler, which the write path tells of each row it writes
// (NoteRows), once the row's hour and a grace have passed.
package compact

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/store"
)

// rowStore is the part of store.Store the compactor uses.
type rowStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	Put(ctx context.Context, table string, puts []store.Put) error
	Delete(ctx context.Context, table string, row []byte, columns []store.Column) error
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// family is the data table's column family.
const family = "t"

// Options configure a Compactor.
type Options struct {
	// DataTable and UIDTable name the tables; "tsdb" and "tsdb-uid" by
	// default.
	DataTable, UIDTable string
	// Layout is the row-key layout every writer of the table uses.
	Layout mapping.Layout
	// Concurrency is how many rows CompactRange compacts at once; 0 means
	// 4.
	Concurrency int
	// Now is the clock that decides which hours have ended; nil means
	// time.Now.
	Now func() time.Time
}

// Compactor compacts rows of the data table. It is safe for concurrent use.
type Compactor struct {
	st   rowStore
	opts Options

	// fence keeps compactions off rows under a Hold.
	fence fence

	// Test hooks, called when set: after the row was read, and after the
	// compacted cell was put (before the delete).
	afterRead, afterPut func(row []byte)
}

// New returns a Compactor over st. The layout must be valid.
func New(st rowStore, opts Options) *Compactor {
	if opts.DataTable == "" {
		opts.DataTable = mapping.DefaultDataTable
	}
	if opts.UIDTable == "" {
		opts.UIDTable = mapping.DefaultUIDTable
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Compactor{st: st, opts: opts}
}

// Outcome says what compacting a row did.
type Outcome int

// Outcomes of CompactRow.
const (
	// Unchanged: the row holds at most one data-point cell (a single
	// point, or one compacted column), or is missing; nothing was written.
	Unchanged Outcome = iota
	// Compacted: the compacted cell was written (or an identical one was
	// there) and the cells it replaces were deleted.
	Compacted
	// Skipped: the row cannot or must not be compacted (see Result.Reason);
	// nothing was written.
	Skipped
)

func (o Outcome) String() string {
	switch o {
	case Unchanged:
		return "unchanged"
	case Compacted:
		return "compacted"
	case Skipped:
		return "skipped"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Reasons a row is skipped, the values of Result.Reason.
const (
	// ReasonAppendColumn: the row holds OpenTSDB's append column, which
	// OpenTSDB never compacts either.
	ReasonAppendColumn = "append_column"
	// ReasonMalformed: a data-point cell does not decode.
	ReasonMalformed = "malformed_cell"
	// ReasonOutsideHour: a cell holds a point outside the row's hour
	// (possible with a corrupt 2-byte qualifier), which a compacted column
	// of millisecond qualifiers cannot hold.
	ReasonOutsideHour = "point_outside_hour"
	// ReasonNoVersion: a cell came back without a version, so its delete
	// could not be bounded.
	ReasonNoVersion = "no_cell_version"
	// ReasonNotDataRow: the key is not a row key of the layout.
	ReasonNotDataRow = "not_a_data_row"
	// ReasonTooManyPoints: the row holds more than MaxPoints points. A
	// compacted qualifier is part of the cell's key, and keys of hundreds
	// of kilobytes bloat HBase's block indexes (OpenTSDB issue #490).
	ReasonTooManyPoints = "too_many_points"
)

// MaxPoints is the most points a compacted column gets: 16,384 points make
// a 64 KiB qualifier (one sample every 220 ms for an hour).
const MaxPoints = 16384

// reasons lists every Result.Reason.
func reasons() []string {
	return []string{ReasonAppendColumn, ReasonMalformed, ReasonOutsideHour, ReasonNoVersion, ReasonNotDataRow, ReasonTooManyPoints}
}

// Result says what CompactRow did to one row.
type Result struct {
	Outcome Outcome
	// Reason says why a row was Skipped: one of the Reason constants.
	Reason string
	// Points is the number of data points of the compacted cell.
	Points int
	// Put reports whether the compacted cell was written; it is not when
	// an identical cell was already there.
	Put bool
	// CellsDeleted is the number of cells the compacted cell replaced.
	CellsDeleted int
}

// plan is what compacting one row takes: the cell to put (if any) and the
// columns to delete, each bounded by the version read.
type plan struct {
	row     []byte
	put     *store.Cell
	deletes []store.Column
	points  int
}

// CompactRow compacts one row of the data table now, whatever its hour:
// callers pick rows whose hour has ended (a row still being written is
// compacted correctly, but again and again). A missing row is Unchanged.
// An error means the store failed; the row may then hold the compacted cell
// beside the cells it replaces, which reads merge to the same samples. A
// panic while compacting (a defect on a row the decoders let through) is an
// error too: the scheduler's workers run in goroutines of their own, where
// nothing else would recover it. A row under a Hold is compacted once the
// hold is released.
func (c *Compactor) CompactRow(ctx context.Context, rowKey []byte) (res Result, err error) {
	leave, err := c.fence.enter(ctx, rowKey)
	if err != nil {
		return Result{}, err
	}
	defer leave()
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("compact row %x: internal error: %v", rowKey, r)
		}
	}()
	p, res, err := c.readPlan(ctx, rowKey)
	if p == nil || err != nil {
		return res, err
	}
	return c.apply(ctx, p)
}

// readPlan reads the row rowKey and plans its compaction: a nil plan when
// there is nothing to write (res says why).
func (c *Compactor) readPlan(ctx context.Context, rowKey []byte) (*plan, Result, error) {
	row, err := c.st.Get(ctx, c.opts.DataTable, rowKey, family)
	if err != nil {
		return nil, Result{}, fmt.Errorf("compact row %x: read: %w", rowKey, err)
	}
	if c.afterRead != nil {
		c.afterRead(rowKey)
	}
	var m cells.RawMerger
	p, res := c.plan(&m, row)
	return p, res, nil
}

// CompactRows is CompactRow of each of keys, their writes made durable
// together: every row's compacted cell put in one store.Write (durable),
// then the replaced cells deleted (store.DeleteDeferred) and one
// store.Sync. A row's delete is thus issued only once its put is durable,
// as CompactRow's: on the embedded store two fsyncs a batch instead of two
// a row, on HBase one multi-row put. results[i] and errs[i] (both
// len(keys)) are keys[i]'s; a failure fails every row it touched, and one
// between the puts and the deletes leaves those rows with both, as
// CompactRow's.
func (c *Compactor) CompactRows(ctx context.Context, keys [][]byte, results []Result, errs []error) {
	plans := c.planRows(ctx, keys, results, errs)
	defer func() {
		for _, p := range plans {
			if p.leave != nil {
				p.leave()
			}
		}
	}()
	// A panic (a defect, or the tests' stop between the puts and the
	// deletes) fails every row not yet failed, as CompactRow's does its
	// row: the scheduler's workers have nothing else to recover it.
	defer func() {
		if r := recover(); r != nil {
			for i, k := range keys {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("compact row %x: internal error: %v", k, r)
				}
			}
		}
	}()
	c.putDurably(ctx, plans, results, errs)
	c.deleteDurably(ctx, plans, results, errs)
}

// batchPlan is one row of CompactRows: its plan (nil: nothing to write,
// or failed) and the release of its fence.
type batchPlan struct {
	p     *plan
	leave func()
}

// planRows enters each row's fence and reads and plans it, recording the
// rows with nothing to write or that failed in results and errs.
func (c *Compactor) planRows(ctx context.Context, keys [][]byte, results []Result, errs []error) []batchPlan {
	plans := make([]batchPlan, len(keys))
	for i, k := range keys {
		leave, err := c.fence.enter(ctx, k)
		if err != nil {
			errs[i] = err
			continue
		}
		plans[i].leave = leave
		func() {
			defer func() {
				if r := recover(); r != nil {
					plans[i].p, errs[i] = nil, fmt.Errorf("compact row %x: internal error: %v", k, r)
				}
			}()
			plans[i].p, results[i], errs[i] = c.readPlan(ctx, k)
		}()
	}
	return plans
}

// putDurably puts the compacted cells of plans and syncs; a row whose put
// or sync failed is recorded failed and dropped from plans.
func (c *Compactor) putDurably(ctx context.Context, plans []batchPlan, results []Result, errs []error) {
	var puts []store.Put
	for _, bp := range plans {
		if bp.p != nil && bp.p.put != nil {
			puts = append(puts, store.Put{Row: bp.p.row, Cells: []store.Cell{*bp.p.put}})
		}
	}
	var err error
	if len(puts) > 0 {
		var b store.Batch
		b.Put(c.opts.DataTable, puts)
		err = store.Write(ctx, c.st, &b)
	}
	for i, bp := range plans {
		if bp.p == nil {
			continue
		}
		results[i] = Result{Outcome: Compacted, Points: bp.p.points}
		if bp.p.put == nil {
			continue
		}
		if err != nil {
			errs[i], plans[i].p = fmt.Errorf("compact row %x: put the compacted cell of %d points: %w", bp.p.row, bp.p.points, err), nil
			continue
		}
		results[i].Put = true
		if c.afterPut != nil {
			c.afterPut(bp.p.row)
		}
	}
}

// deleteDurably deletes the cells plans replace and syncs; a row whose
// delete or the sync failed is recorded failed.
func (c *Compactor) deleteDurably(ctx context.Context, plans []batchPlan, results []Result, errs []error) {
	deleted := false
	for i, bp := range plans {
		if bp.p == nil || len(bp.p.deletes) == 0 {
			continue
		}
		if err := store.DeleteDeferred(ctx, c.st, c.opts.DataTable, bp.p.row, bp.p.deletes); err != nil {
			errs[i], plans[i].p = fmt.Errorf("compact row %x: delete %d replaced cells: %w", bp.p.row, len(bp.p.deletes), err), nil
			continue
		}
		deleted = true
		results[i].CellsDeleted = len(bp.p.deletes)
	}
	if !deleted {
		return
	}
	if err := store.Sync(ctx, c.st); err != nil {
		for i, bp := range plans {
			if bp.p != nil && len(bp.p.deletes) > 0 {
				errs[i] = fmt.Errorf("compact row %x: delete %d replaced cells: %w", bp.p.row, len(bp.p.deletes), err)
			}
		}
	}
}

// plan decides what compacting row takes. It returns a nil plan and the
// Result when there is nothing to write. The plan copies what it keeps of
// row, so row's memory may be reused afterwards.
func (c *Compactor) plan(m *cells.RawMerger, row store.Row) (*plan, Result) {
	_, _, base, _, err := c.opts.Layout.ParseRowKey(row.Key)
	if err != nil {
		return nil, Result{Outcome: Skipped, Reason: ReasonNotDataRow}
	}
	data := make([]store.Cell, 0, len(row.Cells))
	for _, cell := range row.Cells {
		if string(cell.Family) != family {
			continue
		}
		switch q := cell.Qualifier; {
		case mapping.IsAppendQualifier(q):
			return nil, Result{Outcome: Skipped, Reason: ReasonAppendColumn}
		case len(q)%2 == 1:
			continue // annotation, histogram, other: kept as is
		case cell.Timestamp == 0:
			return nil, Result{Outcome: Skipped, Reason: ReasonNoVersion}
		}
		data = append(data, cell)
	}
	if len(data) <= 1 {
		return nil, Result{Outcome: Unchanged}
	}
	pts, err := m.Merge(base, data)
	if err != nil {
		return nil, Result{Outcome: Skipped, Reason: ReasonMalformed}
	}
	if len(pts) == 0 {
		return nil, Result{Outcome: Unchanged}
	}
	lo := int64(base) * 1000
	if pts[0].T < lo || pts[len(pts)-1].T >= lo+mapping.MaxOffsetMs {
		return nil, Result{Outcome: Skipped, Reason: ReasonOutsideHour}
	}
	if len(pts) > MaxPoints {
		return nil, Result{Outcome: Skipped, Reason: ReasonTooManyPoints}
	}
	qual, val := mapping.AppendCompactedRaw(nil, nil, pts)
	p := &plan{row: bytes.Clone(row.Key), points: len(pts)}
	var version uint64
	put := true
	// The deleted columns' family shared, their qualifiers copied into one
	// buffer: two allocations a row, not two a cell.
	fam := []byte(family)
	n := 0
	for _, cell := range data {
		n += len(cell.Qualifier)
	}
	quals := make([]byte, 0, n)
	p.deletes = make([]store.Column, 0, len(data))
	for _, cell := range data {
		version = max(version, cell.Timestamp)
		if bytes.Equal(cell.Qualifier, qual) {
			// OpenTSDB's rule: the cell that already has the compacted
			// qualifier is overwritten, not deleted, and left alone when
			// it holds the same value.
			put = put && !bytes.Equal(cell.Value, val)
			continue
		}
		at := len(quals)
		quals = append(quals, cell.Qualifier...)
		p.deletes = append(p.deletes, store.Column{
			Family: fam, Qualifier: quals[at:len(quals):len(quals)], Timestamp: cell.Timestamp,
		})
	}
	if put {
		// The newest version merged, not the current time: a sample
		// written after the read stays newer than the compacted cell.
		p.put = &store.Cell{Family: fam, Qualifier: qual, Value: val, Timestamp: version}
	}
	if p.put == nil && len(p.deletes) == 0 {
		return nil, Result{Outcome: Unchanged}
	}
	return p, Result{}
}

// apply writes the compacted cell, then deletes the cells it replaces.
func (c *Compactor) apply(ctx context.Context, p *plan) (Result, error) {
	res := Result{Outcome: Compacted, Points: p.points}
	if p.put != nil {
		if err := c.st.Put(ctx, c.opts.DataTable, []store.Put{{Row: p.row, Cells: []store.Cell{*p.put}}}); err != nil {
			return Result{}, fmt.Errorf("compact row %x: put the compacted cell of %d points: %w", p.row, p.points, err)
		}
		res.Put = true
	}
	if c.afterPut != nil {
		c.afterPut(p.row)
	}
	if len(p.deletes) > 0 {
		if err := c.st.Delete(ctx, c.opts.DataTable, p.row, p.deletes); err != nil {
			return Result{}, fmt.Errorf("compact row %x: delete %d replaced cells: %w", p.row, len(p.deletes), err)
		}
		res.CellsDeleted = len(p.deletes)
	}
	return res, nil
}

// Stats adds up the outcomes of many rows.
type Stats struct {
	Rows         int            // rows looked at
	Compacted    int            // rows compacted
	Unchanged    int            // rows with nothing to do
	Skipped      int            // rows skipped, see SkippedBy
	SkippedBy    map[string]int // skipped rows by reason
	CellsDeleted int            // cells replaced by compacted cells
	Errors       int            // rows that failed
	FirstError   error          // the first failure, if any
}

// Add counts the outcome of one row.
func (s *Stats) Add(r Result, err error) {
	s.Rows++
	if err != nil {
		s.Errors++
		if s.FirstError == nil {
			s.FirstError = err
		}
		return
	}
	switch r.Outcome {
	case Compacted:
		s.Compacted++
		s.CellsDeleted += r.CellsDeleted
	case Unchanged:
		s.Unchanged++
	case Skipped:
		s.Skipped++
		if s.SkippedBy == nil {
			s.SkippedBy = map[string]int{}
		}
		s.SkippedBy[r.Reason]++
	}
}

// String renders the counts on one line.
func (s Stats) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d rows: %d compacted (%d cells deleted), %d unchanged, %d skipped", s.Rows, s.Compacted, s.CellsDeleted, s.Unchanged, s.Skipped)
	if len(s.SkippedBy) > 0 {
		reasons := make([]string, 0, len(s.SkippedBy))
		for r, n := range s.SkippedBy {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(reasons)
		fmt.Fprintf(&sb, " (%s)", strings.Join(reasons, ", "))
	}
	fmt.Fprintf(&sb, ", %d errors", s.Errors)
	if s.FirstError != nil {
		fmt.Fprintf(&sb, " (first: %v)", s.FirstError)
	}
	return sb.String()
}
