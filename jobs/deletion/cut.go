package deletion

// The cut of one row: which of its cells go, which are written in their
// place with the exact bytes of the samples kept, and at which versions
// (see the package doc).

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/store"
)

// wholeInRange reports whether a row whose hour is base may be deleted
// whole for a delete of [start, end]: its hour lies in the range, and its
// cells hold data points only (samples, the append column, histograms),
// every one of which decodes to a time in the range; nothing else that a
// row deleted whole would take along.
func wholeInRange(cs []store.Cell, base uint32, start, end int64) bool {
	if lo, hi := hourBounds(base); start > lo || hi > end {
		return false
	}
	var raw []mapping.RawPoint
	for _, c := range cs {
		if string(c.Family) != dataFamily {
			return false
		}
		q := c.Qualifier
		if len(q)%2 == 1 && !mapping.IsAppendQualifier(q) {
			off, ok := mapping.ParseHistogramQualifier(q)
			if t := int64(base)*1000 + int64(off); !ok || t < start || t > end {
				return false
			}
			continue
		}
		pts, err := mapping.AppendRawPoints(raw[:0], base, q, c.Value)
		if err != nil {
			return false
		}
		raw = pts
		for i := range pts {
			if pts[i].T < start || pts[i].T > end {
				return false // a corrupt offset past the hour
			}
		}
	}
	return true
}

// countHistograms counts the distinct histogram timestamps of cs in
// [start, end].
func countHistograms(cs []store.Cell, base uint32, start, end int64) int {
	lo, _ := hourBounds(base)
	seen := map[int64]struct{}{}
	for _, c := range cs {
		if off, ok := mapping.ParseHistogramQualifier(c.Qualifier); ok {
			if t := lo + int64(off); t >= start && t <= end {
				seen[t] = struct{}{}
			}
		}
	}
	return len(seen)
}

// cut is what deleting the samples of a range from one row takes.
type cut struct {
	puts    []store.Cell   // new columns (versions: see newVersion)
	deletes []store.Column // bounded by the versions read
	// appendCol, when set, is the append column's new value, written
	// only if the column still holds appendOld.
	appendCol  *store.Cell
	appendOld  []byte
	samples    int64
	histograms int64
	malformed  int64
}

func (c *cut) empty() bool { return len(c.puts) == 0 && len(c.deletes) == 0 && c.appendCol == nil }

// maxRowPoints bounds the points of a row rewritten whole into one
// compacted column; compact.MaxPoints, past which a compactor leaves a
// row alone too.
const maxRowPoints = 16384

// newVersion is the version a column written in place of cells read at
// version v (the newest of them) takes: one millisecond after it. Not v:
// on HBase a compaction or an earlier delete may have left a delete
// marker at v on the new column's qualifier (a single point left of a
// compacted column has the qualifier of the single cell compaction
// deleted, at the compacted cell's version), and a marker hides what is
// written later with an explicit version at or before its own. Not the
// current time either: a sample written into the row since the read is
// newer than v+1 and still wins a repeated timestamp, as it did. 0 (no
// version read) leaves the version to the store.
func newVersion(v uint64) uint64 {
	if v == 0 || v == math.MaxUint64 {
		return v
	}
	return v + 1
}

// planCut plans the deletion of the samples in [start, end] from row,
// whose hour is base (see the package doc): the data-point columns of a
// row a compactor could compact are rewritten together (planRowCut),
// the others each on its own.
func planCut(l mapping.Layout, row store.Row, base uint32, start, end int64) *cut {
	p := &cut{}
	fam := []byte(dataFamily)
	lo, _ := hourBounds(base)
	var m cells.Merger
	if pts, err := m.Merge(base, row.Cells, start, end); err == nil {
		p.samples = int64(len(pts))
	}
	p.histograms = int64(countHistograms(row.Cells, base, start, end))
	var cols, data []store.Cell // the data family's cells; of those, the data-point columns
	hasAppend := false
	for _, c := range row.Cells {
		if string(c.Family) != dataFamily {
			continue
		}
		cols = append(cols, c)
		switch q := c.Qualifier; {
		case mapping.IsAppendQualifier(q):
			hasAppend = true
		case len(q)%2 == 0:
			data = append(data, c)
		}
	}
	rowWide := !hasAppend && len(data) > 1 && p.planRowCut(base, data, start, end)
	var raw []mapping.RawPoint
	newQual := map[string]int{} // qualifier of a put -> its index in puts
	for _, c := range cols {
		q := c.Qualifier
		switch {
		case mapping.IsAppendQualifier(q):
			pts, err := mapping.AppendRawPoints(raw[:0], base, q, c.Value)
			raw = pts
			if err != nil {
				p.malformed++
				continue
			}
			var kept []byte
			in := 0
			for i := range pts {
				if pts[i].T >= start && pts[i].T <= end {
					in++
					continue
				}
				kept = append(append(kept, pts[i].Qualifier()...), pts[i].Value...)
			}
			switch {
			case in == 0:
			case in == len(pts):
				p.deletes = append(p.deletes, store.Column{Family: fam, Qualifier: q, Timestamp: c.Timestamp})
			default:
				p.appendCol = &store.Cell{Family: fam, Qualifier: q, Value: kept, Timestamp: c.Timestamp}
				p.appendOld = c.Value
			}
		case len(q)%2 == 1:
			off, ok := mapping.ParseHistogramQualifier(q)
			if !ok {
				continue // an annotation or a kind of cell unknown: not a sample
			}
			if t := lo + int64(off); t >= start && t <= end {
				p.deletes = append(p.deletes, store.Column{Family: fam, Qualifier: q, Timestamp: c.Timestamp})
			}
		case rowWide:
			// Planned by planRowCut.
		default:
			pts, err := mapping.AppendRawPoints(raw[:0], base, q, c.Value)
			raw = pts
			if err != nil {
				p.malformed++
				continue
			}
			in := 0
			for i := range pts {
				if pts[i].T >= start && pts[i].T <= end {
					in++
				}
			}
			if in == 0 {
				continue
			}
			p.deletes = append(p.deletes, store.Column{Family: fam, Qualifier: q, Timestamp: c.Timestamp})
			if in == len(pts) {
				continue
			}
			kept := pts[:0]
			for _, pt := range pts {
				if pt.T < start || pt.T > end {
					kept = append(kept, pt)
				}
			}
			nq, nv := mapping.AppendCompactedRaw(nil, nil, kept)
			cell := store.Cell{Family: fam, Qualifier: nq, Value: nv, Timestamp: newVersion(c.Timestamp)}
			if i, dup := newQual[string(nq)]; dup {
				// Two columns cut down to the same points: the newer
				// version is the one a reader would take.
				if cell.Timestamp >= p.puts[i].Timestamp {
					p.puts[i] = cell
				}
				continue
			}
			newQual[string(nq)] = len(p.puts)
			p.puts = append(p.puts, cell)
		}
	}
	return p
}

// planRowCut plans the cut of the data-point columns of a row that a
// compactor could compact (more than one column, no append column, every
// column decodes, every point in the row's hour, at most maxRowPoints,
// every version known) and reports whether it did; it plans nothing and
// reports true when no point lies in the range, false when the row is not
// such a row.
//
// The points outside the range, merged as a reader merges them (the
// newest version wins a repeated time) with their qualifier and value
// bytes as stored, become one compacted column, written one millisecond
// after the newest version read (newVersion); every other data column is
// deleted, bounded by the version read; and the column that compacting
// the columns as read would write gets a delete bounded by the newest
// version read. A compactor of another process that read the row before
// this delete puts that column with that version, and deletes the columns
// it read bounded by their versions: on HBase the marker hides its put,
// and the compacted column of the points kept is newer than its deletes,
// so the delete stands and nothing else is lost. Where deletes leave no
// marker (the embedded store: one process, whose compactor the Fence
// holds off) the extra delete deletes nothing.
func (p *cut) planRowCut(base uint32, data []store.Cell, start, end int64) bool {
	var version uint64
	for _, c := range data {
		if c.Timestamp == 0 {
			return false
		}
		version = max(version, c.Timestamp)
	}
	var rm cells.RawMerger
	pts, err := rm.Merge(base, data)
	if err != nil || len(pts) == 0 || len(pts) > maxRowPoints {
		return false
	}
	lo, hi := hourBounds(base)
	if pts[0].T < lo || pts[len(pts)-1].T > hi {
		return false
	}
	kept := make([]mapping.RawPoint, 0, len(pts))
	for _, pt := range pts {
		if pt.T < start || pt.T > end {
			kept = append(kept, pt)
		}
	}
	if len(kept) == len(pts) {
		return true // nothing in the range
	}
	fam := []byte(dataFamily)
	var keptQual []byte
	if len(kept) > 0 {
		q, v := mapping.AppendCompactedRaw(nil, nil, kept)
		keptQual = q
		p.puts = append(p.puts, store.Cell{Family: fam, Qualifier: q, Value: v, Timestamp: newVersion(version)})
	}
	for _, c := range data {
		if keptQual != nil && bytes.Equal(c.Qualifier, keptQual) {
			continue // overwritten by the put
		}
		p.deletes = append(p.deletes, store.Column{Family: fam, Qualifier: c.Qualifier, Timestamp: c.Timestamp})
	}
	all, _ := mapping.AppendCompactedRaw(nil, nil, pts)
	p.deletes = append(p.deletes, store.Column{Family: fam, Qualifier: all, Timestamp: version})
	return true
}

// applyCut writes a cut into row: the new columns first, then the
// deletes, so that an interruption leaves both (reads unchanged but for
// what is to go; a re-run finishes). done is false when the append column
// changed since it was read: nothing else was written then.
func (d *Deleter) applyCut(ctx context.Context, row []byte, p *cut) (done bool, err error) {
	table := d.opts.DataTable
	if p.appendCol != nil {
		ok, err := d.st.CheckAndPut(ctx, table, store.Put{Row: row, Cells: []store.Cell{*p.appendCol}}, dataFamily, string(p.appendCol.Qualifier), p.appendOld)
		if err != nil {
			return false, fmt.Errorf("rewrite the append column of row %x of %s: %w", row, table, err)
		}
		if !ok {
			return false, nil
		}
	}
	if len(p.puts) > 0 {
		if err := d.st.Put(ctx, table, []store.Put{{Row: row, Cells: p.puts}}); err != nil {
			return false, fmt.Errorf("write %d cut columns into row %x of %s: %w", len(p.puts), row, table, err)
		}
	}
	if len(p.deletes) > 0 {
		if err := d.st.Delete(ctx, table, row, p.deletes); err != nil {
			return false, fmt.Errorf("delete %d columns of row %x of %s: %w", len(p.deletes), row, table, err)
		}
	}
	return true, nil
}
