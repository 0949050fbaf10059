package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
)

// ErrHistograms means a float selection (FloatSelection) met a series
// with native histograms: its caller evaluates the query another way.
var ErrHistograms = errors.New("series has native histograms")

// FloatSelection is one PromQL query's reads of float samples for an
// evaluator that works on plain samples (package engine): every select of
// the query shares one Budget of q's limits, as the selects of one
// storage.Querier do.
type FloatSelection struct {
	q      *Querier
	b      *Budget
	behind func() bool
}

// After returns a view of f whose selects' scans work ahead of f's other
// selects (Budget.reserve: they wait for half the budget to be free
// rather than fail) while running reports true: a select run at once
// with another of the query, the other one's memory first.
func (f *FloatSelection) After(running func() bool) *FloatSelection {
	return &FloatSelection{q: f.q, b: f.b, behind: running}
}

// FloatSelection starts the float reads of one query.
func (s *Storage) FloatSelection() *FloatSelection {
	return &FloatSelection{q: s.q, b: s.q.NewBudget()}
}

// RowSeries is one series of a FloatSelection: its labels and its rows as
// the store holds them (a settled row's packed cell, a compacted column:
// the cells' bytes copied; a row of many single cells, not yet compacted:
// its samples already merged), charged to the query's budget until
// Release. A RowDecoder turns them into samples; the rows of a series are
// kept in this compact form, not as samples, so that a query holds about
// the bytes the store holds for what it selects.
type RowSeries struct {
	Labels     labels.Labels
	rows       []rawRow
	start, end int64
	b          *Budget
	bytes      int64
}

// rawRow is one data row of a series: its hour and its cells, or its
// merged samples.
type rawRow struct {
	base    uint32
	cells   []store.Cell
	samples []Sample
}

// rawRowOverhead and cellOverhead are what a kept row and cell cost
// besides their bytes.
const (
	rawRowOverhead = 80
	cellOverhead   = 80
)

// mergedCells is the number of cells from which a row is merged into
// samples at once rather than kept as cells (a cell of one sample costs
// more than its 16-byte sample).
const mergedCells = 3

// Release gives back what s was charged; s's rows are not read after.
func (s *RowSeries) Release() {
	s.b.Release(s.bytes)
	s.rows, s.bytes = nil, 0
}

// Select calls emit with each series that the matchers select, in label
// order, holding its rows with samples in [start, end] (Unix ms,
// inclusive). emit runs in the caller's goroutine; the series is emit's,
// which must Release it (from any goroutine) once decoded. A series with
// native histograms ends the selection with ErrHistograms; a
// DownsampleLabel matcher is not taken here (use the storage.Querier).
func (f *FloatSelection) Select(ctx context.Context, start, end int64, ms []*labels.Matcher, emit func(*RowSeries) error) error {
	for _, m := range ms {
		if m.Name == DownsampleLabel {
			return fmt.Errorf("float selection of a downsampled selector %q", m.Value)
		}
	}
	start, ok := readLimitsOf(ctx).clamp(start, end) // the rows' samples kept from there on
	if !ok {
		return nil
	}
	return f.q.streamRows(ctx, f.b, f.behind, start, end, ms, func(cs *ChunkSeries) error {
		return emit(&RowSeries{Labels: cs.Labels, rows: cs.rows, start: max(start, 0), end: end, b: f.b, bytes: cs.Bytes})
	})
}

// RowDecoder decodes the rows of RowSeries into samples. Its zero value
// is ready; it keeps buffers between calls, and the timestamps sections
// it decoded (dense.TimesCache: the series of a scrape target share
// theirs), and is for one goroutine.
type RowDecoder struct {
	m     cells.Merger
	dense dense.Codec
}

// Reuse readies d, kept, for another query: its times cache, off when the
// last query's sections seldom repeated, is tried again.
func (d *RowDecoder) Reuse() { d.dense.RetryTimes() }

// Decode appends the float samples of s in its range to dst, in time
// order, one per timestamp (of one timestamp in two rows of one hour, a
// label set stored under two row keys, the first row's), counting them
// against the query's sample limit.
func (d *RowDecoder) Decode(dst []Sample, s *RowSeries) ([]Sample, error) {
	rows := s.rows
	if !slices.IsSortedFunc(rows, cmpRawRows) {
		slices.SortStableFunc(rows, cmpRawRows)
	}
	// dst grown once for the rows' samples (at most: a row cut by the
	// range gives fewer).
	total := 0
	for _, r := range rows {
		switch {
		case r.cells == nil:
			total += len(r.samples)
		case len(r.cells) == 1 && r.cells[0].Packed():
			total += dense.Samples(r.cells[0].Value)
		default:
			total += len(r.cells)
		}
	}
	dst = slices.Grow(dst, total)
	n0, counted, sorted := len(dst), 0, true
	for _, r := range rows {
		n := len(dst)
		switch {
		case r.cells == nil:
			dst = append(dst, r.samples...)
			counted += len(r.samples)
		case len(r.cells) == 1 && r.cells[0].Packed():
			// A settled row: decoded straight into dst, kept when its
			// points ascend (else merged as any row is).
			var err error
			if dst, err = d.appendPacked(dst, r, s.start, s.end); err != nil {
				return dst[:n], fmt.Errorf("row of %s at %d: %w", s.Labels, r.base, err)
			}
		default:
			pts, err := d.m.Merge(r.base, r.cells, s.start, s.end)
			if err != nil {
				return dst, fmt.Errorf("row of %s at %d: %w", s.Labels, r.base, err)
			}
			dst = append(dst, pts...)
		}
		if n > n0 && n < len(dst) && dst[n].T <= dst[n-1].T {
			sorted = false
		}
	}
	if !sorted {
		// Rows of one hour under two row keys, or offsets past the hour.
		out := dst[n0:]
		slices.SortStableFunc(out, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
		dst = append(dst[:n0], slices.CompactFunc(out, func(a, b Sample) bool { return a.T == b.T })...)
	}
	if err := s.b.addSamples(len(dst) - n0 - counted); err != nil {
		return dst, err
	}
	return dst, nil
}

// appendPacked appends the points of a row's packed cell in [start, end].
func (d *RowDecoder) appendPacked(dst []Sample, r rawRow, start, end int64) ([]Sample, error) {
	n := len(dst)
	dst, _, asc, err := d.dense.AppendPointsOrdered(dst, r.base, r.cells[0].Value)
	if err != nil {
		return dst[:n], fmt.Errorf("packed cell: %w: %w", mapping.ErrMalformedCell, err)
	}
	// Points not ascending take the merger's rule for the row.
	merge := func() ([]Sample, error) {
		pts, err := d.m.Merge(r.base, r.cells, start, end)
		if err != nil {
			return dst[:n], err
		}
		return append(dst[:n], pts...), nil
	}
	if first := int64(r.base) * 1000; first >= start && first+mapping.MaxOffsetMs-1 <= end {
		// A row inside the range: nothing to cut, its order known.
		if !asc {
			return merge()
		}
		return dst, nil
	}
	k := n
	for i := n; i < len(dst); i++ {
		p := dst[i]
		if p.T < start || p.T > end {
			continue
		}
		if k > n && p.T <= dst[k-1].T {
			return merge()
		}
		dst[k] = p
		k++
	}
	return dst[:k], nil
}

func cmpRawRows(a, b rawRow) int { return cmp.Compare(a.base, b.base) }

// addRawRow keeps a row of ser for a FloatSelection, charging its bytes.
func (s *selection) addRawRow(ctx context.Context, ser *Series, base uint32, row store.Row) error {
	for _, c := range row.Cells {
		if _, ok := mapping.ParseHistogramQualifier(c.Qualifier); ok {
			return fmt.Errorf("%w: row %x", ErrHistograms, row.Key)
		}
	}
	r := rawRow{base: base}
	var n int64
	if len(row.Cells) >= mergedCells {
		pts, err := s.merger.Merge(base, row.Cells, s.start, s.end)
		if err != nil {
			return fmt.Errorf("row %x: %w", row.Key, err)
		}
		if len(pts) == 0 {
			return nil
		}
		if err := s.budget.addSamples(len(pts)); err != nil {
			return err
		}
		r.samples = slices.Clone(pts)
		n = int64(len(pts))*16 + rawRowOverhead
	} else {
		size := 0
		for _, c := range row.Cells {
			size += len(c.Family) + len(c.Qualifier) + len(c.Value)
		}
		if size == 0 {
			return nil
		}
		// Chunks grow with what the scan kept, from 4 KiB: a scan of a
		// few rows keeps little.
		s.rowBytes.ChunkSize = min(rowBytesChunk, max(4<<10, s.rowBytesKept))
		s.rowBytesKept += size
		buf := s.rowBytes.Alloc(size)
		r.cells = s.cellsFor(len(row.Cells))
		for i, c := range row.Cells {
			buf = append(buf, c.Qualifier...)
			q := buf[len(buf)-len(c.Qualifier) : len(buf) : len(buf)]
			buf = append(buf, c.Value...)
			v := buf[len(buf)-len(c.Value) : len(buf) : len(buf)]
			buf = append(buf, c.Family...)
			f := buf[len(buf)-len(c.Family) : len(buf) : len(buf)]
			r.cells[i] = store.Cell{Family: f, Qualifier: q, Value: v, Timestamp: c.Timestamp}
		}
		n = int64(size) + int64(len(row.Cells))*cellOverhead + rawRowOverhead
	}
	if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
		return err
	}
	ser.charged += n
	ser.rows = append(ser.rows, r)
	return nil
}

// cellsFor returns n cells cut from the selection's chunk of cells: the
// rows of a scan are kept with a few allocations a chunk rather than one
// a row (the chunks live as long as a row in them is kept).
func (s *selection) cellsFor(n int) []store.Cell {
	if cap(s.rowCells)-len(s.rowCells) < n {
		s.rowCells = make([]store.Cell, 0, max(n, min(cellChunk, 2*cap(s.rowCells)), 8))
	}
	k := len(s.rowCells)
	s.rowCells = s.rowCells[:k+n]
	return s.rowCells[k : k+n : k+n]
}

// cellChunk is the most cells of a chunk of cellsFor, rowBytesChunk the
// most bytes of a chunk of the rows' cells (chunks double up to them).
const (
	cellChunk     = 256
	rowBytesChunk = 64 << 10
)

// rowSeriesOf is collect's take for a FloatSelection: ser's rows as a
// ChunkSeries; false when it has none.
func rowSeriesOf(ser *Series) (*ChunkSeries, bool) {
	if len(ser.rows) == 0 {
		return nil, false
	}
	return &ChunkSeries{Labels: ser.Labels, rows: ser.rows, Bytes: ser.charged}, true
}

// Wake makes the selects of f and its views that wait for the budget
// check their conditions again (an After's running turned false).
func (f *FloatSelection) Wake() { f.b.wake() }
