package cells

import (
	"fmt"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
)

// PackedFormat is the format of the packed cells Merger reads: a scan
// whose rows go to Merge may ask for them (store.ScanRequest.Packed).
const PackedFormat = dense.Format

// Merger merges the data points of a row's cells the way a reader of the
// row must: a row may hold single cells, compacted columns and the append
// column side by side, and the same timestamp in several of them. It is
// the one place that rule lives; the read path and the compactor both use
// it. The zero value is ready to use. A Merger keeps its buffers between
// calls and is not safe for concurrent use.
type Merger struct {
	points []mapping.Point
	merged []versionedPoint
	dense  dense.Codec
}

// versionedPoint is a point with the cell version and cell index it came
// from.
type versionedPoint struct {
	mapping.Point
	version uint64
	cell    int
}

// Merge decodes the cells of one row whose base time is baseTime (see
// [AppendPoints]; cells that hold no data point, such as annotations, add
// nothing), keeps the points with from <= T <= to, and returns them sorted
// by T with one point per T. Of the points that share a T the one from the
// cell with the newest version (Cell.Timestamp) wins; between equal
// versions the later cell in cells wins, and within one cell the later
// point (the append column's last-appended-wins rule). This is what
// OpenTSDB does with tsd.storage.fix_duplicates=true.
//
// A packed cell (store.Cell.Packed, from a scan with store.ScanRequest.Packed
// set to dense.Format) is decoded straight into its points, with the
// version it holds.
//
// A malformed cell gives an error wrapping [ErrMalformedCell] that names
// its qualifier. The returned slice is valid until the next call.
func (m *Merger) Merge(baseTime uint32, cells []store.Cell, from, to int64) ([]mapping.Point, error) {
	// The common row, single cells written in time order, has its points
	// in strictly ascending time already: nothing to sort or to drop.
	out := m.points[:0]
	ascending := true
	for _, c := range cells {
		n := len(out)
		pts, _, err := m.appendPoints(out, baseTime, c)
		if err != nil {
			return nil, err
		}
		k := n
		for _, p := range pts[n:] {
			if p.T < from || p.T > to {
				continue
			}
			if k > 0 && p.T <= pts[k-1].T {
				ascending = false
				break
			}
			pts[k] = p
			k++
		}
		out = pts[:k]
		if !ascending {
			break
		}
	}
	m.points = out
	if ascending {
		return out, nil
	}
	return m.mergeVersions(baseTime, cells, from, to)
}

// mergeVersions is Merge for any row: every point with its cell's version,
// sorted, and the newest of each timestamp kept.
func (m *Merger) mergeVersions(baseTime uint32, cells []store.Cell, from, to int64) ([]mapping.Point, error) {
	m.merged = m.merged[:0]
	for i, c := range cells {
		pts, version, err := m.appendPoints(m.points[:0], baseTime, c)
		if err != nil {
			return nil, err
		}
		m.points = pts
		for _, p := range pts {
			if p.T >= from && p.T <= to {
				m.merged = append(m.merged, versionedPoint{p, version, i})
			}
		}
	}
	if !slices.IsSortedFunc(m.merged, cmpVersioned) {
		slices.SortStableFunc(m.merged, cmpVersioned)
	}
	out := m.points[:0]
	for i, p := range m.merged {
		if i+1 < len(m.merged) && m.merged[i+1].T == p.T {
			continue // a newer version of the same timestamp follows
		}
		out = append(out, p.Point)
	}
	m.points = out
	return out, nil
}

// appendPoints appends the points of cell c to dst and returns them with
// the cell's version: a packed cell's from its packed form.
func (m *Merger) appendPoints(dst []mapping.Point, baseTime uint32, c store.Cell) ([]mapping.Point, uint64, error) {
	if c.Packed() {
		pts, version, err := m.dense.AppendPoints(dst, baseTime, c.Value)
		if err != nil {
			return dst, 0, fmt.Errorf("packed cell: %w: %w", mapping.ErrMalformedCell, err)
		}
		return pts, version, nil
	}
	pts, err := mapping.AppendPoints(dst, baseTime, c.Qualifier, c.Value)
	if err != nil {
		return dst, 0, fmt.Errorf("cell %X: %w", c.Qualifier, err)
	}
	return pts, c.Timestamp, nil
}

// cmpVersioned orders by timestamp, then by version and cell order, so
// that the last of a run of equal timestamps is the one to keep.
func cmpVersioned(a, b versionedPoint) int {
	if a.T != b.T {
		if a.T < b.T {
			return -1
		}
		return 1
	}
	if a.version != b.version {
		if a.version < b.version {
			return -1
		}
		return 1
	}
	return a.cell - b.cell
}
