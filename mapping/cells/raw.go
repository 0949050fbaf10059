package cells

import (
	"fmt"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// RawMerger merges the data points of a row's cells as stored, with the
// rule of [Merger]: one point per timestamp, the newest cell version wins,
// then the later cell, then the later point of a cell. The zero value is
// ready to use; it keeps its buffers between calls and is not safe for
// concurrent use.
type RawMerger struct {
	points []mapping.RawPoint
	merged []versionedRaw
	order  []int32
}

type versionedRaw struct {
	mapping.RawPoint
	version uint64
	cell    int
}

// Merge returns the points of cells (see [AppendRawPoints]) sorted by T with
// one point per T. Values alias the cells' values; the slice is valid until
// the next call. A malformed cell gives an error wrapping [ErrMalformedCell]
// that names its qualifier.
func (m *RawMerger) Merge(baseTime uint32, cells []store.Cell) ([]mapping.RawPoint, error) {
	m.merged = m.merged[:0]
	for i, c := range cells {
		pts, err := mapping.AppendRawPoints(m.points[:0], baseTime, c.Qualifier, c.Value)
		if err != nil {
			return nil, fmt.Errorf("cell %X: %w", c.Qualifier, err)
		}
		m.points = pts
		for _, p := range pts {
			m.merged = append(m.merged, versionedRaw{p, c.Timestamp, i})
		}
	}
	// Ordered by T, then version, then cell, then place: the newest point
	// of a T comes last. A total order, so an unstable sort of the points'
	// indexes gives what a stable sort of the points would, without moving
	// them (each holds slices: every move of one is a write barrier; a
	// stable sort's rotations moved each many times).
	less := func(a, b int32) int {
		pa, pb := &m.merged[a], &m.merged[b]
		switch {
		case pa.T != pb.T:
			return cmpInt64(pa.T, pb.T)
		case pa.version != pb.version:
			if pa.version < pb.version {
				return -1
			}
			return 1
		case pa.cell != pb.cell:
			return pa.cell - pb.cell
		}
		return int(a) - int(b)
	}
	sorted := true
	for i := 1; i < len(m.merged) && sorted; i++ {
		sorted = less(int32(i-1), int32(i)) < 0
	}
	out := m.points[:0]
	if sorted {
		for i := range m.merged {
			if i+1 < len(m.merged) && m.merged[i+1].T == m.merged[i].T {
				continue // a newer version of the same timestamp follows
			}
			out = append(out, m.merged[i].RawPoint)
		}
		m.points = out
		return out, nil
	}
	m.order = m.order[:0]
	for i := range m.merged {
		m.order = append(m.order, int32(i))
	}
	slices.SortFunc(m.order, less)
	for n, i := range m.order {
		if n+1 < len(m.order) && m.merged[m.order[n+1]].T == m.merged[i].T {
			continue
		}
		out = append(out, m.merged[i].RawPoint)
	}
	m.points = out
	return out, nil
}

func cmpInt64(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}
