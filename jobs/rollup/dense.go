package rollup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
)

// DenseFormat is the first byte of a dense rollup run: the form Codec
// packs a run into when every cell of it has its value in its shortest
// exact form, as promhbase writes them:
//
//	u8       DenseFormat
//	uvarint  the first cell's version, the run's
//	per aggregation id, ascending (the qualifier's first byte):
//	  u8       the id byte (at most mapping.MaxRollupAggID)
//	  uvarint  the length of the rest of the group, so that a reader
//	           skips the ids it does not need
//	  uvarint  n, the cells of the id (at least one)
//	  uvarint  the first cell's index
//	  u8       bit 0 clear: the n indexes are consecutive; set: n-1
//	           uvarint gaps follow, each index minus the one before minus
//	           one. Bit 1 set: the cells' versions are not all the run's
//	           and their column ends the group. Other bits clear.
//	  [gaps]
//	  the values, as float columns of n values (dense.Codec.AppendFloats):
//	    IDTimes: two columns, the first sample offsets (the high 32 bits
//	      of each value), then the last (the low 32 bits)
//	    every other id: one column of the values as float64s
//	  [versions] a float column of each cell's version minus the run's
//
// A cell's flags and value bytes are not stored: they are the shortest
// exact form of its value (mapping.AppendRollupCell; for IDTimes the
// shortest integer), which a run is packed this way only if every cell
// has. Nothing follows the last group.
const DenseFormat byte = 0xA2

// bits of a dense group's mode byte.
const (
	denseGaps     byte = 1 // index gaps follow
	denseVersions byte = 2 // a version column ends the group
)

// maxDenseCells bounds n in a dense group: a row has at most
// mapping.RollupIndexLimit windows.
const maxDenseCells = mapping.RollupIndexLimit

// denseScratch is the scratch memory of packing and unpacking dense runs.
type denseScratch struct {
	col   dense.Codec
	words []uint64
	lasts []uint64 // IDTimes's second column
	// versions are the cells' versions minus the run's, as float64s.
	versions []uint64
	indexes  []int32
	spots    []spot
	cells    []store.Cell
	buf      []byte
}

// spot is where a decoded cell's qualifier, value and end are in the
// bytes decodeDense appends, and its version.
type spot struct {
	q, v, end int
	ts        uint64
}

// appendCanonicalInt appends i as an integer value on its fewest bytes
// and returns its flags.
func appendCanonicalInt(dst []byte, i int64) ([]byte, byte) {
	switch {
	case i == int64(int8(i)):
		return append(dst, byte(i)), mapping.FlagsInt8
	case i == int64(int16(i)):
		return binary.BigEndian.AppendUint16(dst, uint16(i)), mapping.FlagsInt16
	case i == int64(int32(i)):
		return binary.BigEndian.AppendUint32(dst, uint32(i)), mapping.FlagsInt32
	default:
		return binary.BigEndian.AppendUint64(dst, uint64(i)), mapping.FlagsInt64
	}
}

// encodeDense appends the dense form of cells (see DenseFormat) to dst,
// or reports false, with dst unchanged, when the run is not one it packs.
// It checks its output by unpacking it.
func (s *denseScratch) encodeDense(dst []byte, cells []store.Cell) ([]byte, bool) {
	if len(cells) == 0 {
		return dst, false
	}
	at := len(dst)
	version := cells[0].Timestamp
	dst = append(dst, DenseFormat)
	dst = binary.AppendUvarint(dst, version)
	for i := 0; i < len(cells); {
		c := cells[i]
		if len(c.Qualifier) != mapping.RollupQualifierBytes || c.Qualifier[0] > mapping.MaxRollupAggID {
			return dst[:at], false
		}
		id := c.Qualifier[0]
		j := i
		for j < len(cells) && len(cells[j].Qualifier) == mapping.RollupQualifierBytes && cells[j].Qualifier[0] == id {
			j++
		}
		group := cells[i:j]
		if len(group) > maxDenseCells {
			return dst[:at], false
		}
		s.indexes, s.words, s.lasts, s.versions = s.indexes[:0], s.words[:0], s.lasts[:0], s.versions[:0]
		consecutive, versions := true, false
		for k, c := range group {
			if string(c.Family) != Family {
				return dst[:at], false
			}
			d := int64(c.Timestamp - version)
			if d <= -1<<53 || d >= 1<<53 {
				return dst[:at], false
			}
			s.versions = append(s.versions, math.Float64bits(float64(d)))
			versions = versions || d != 0
			_, index, flags, _ := mapping.ParseRollupQualifier(c.Qualifier)
			if k > 0 && int(s.indexes[k-1]) >= index {
				return dst[:at], false
			}
			consecutive = consecutive && (k == 0 || int(s.indexes[k-1]) == index-1)
			s.indexes = append(s.indexes, int32(index))
			if id == IDTimes {
				v, err := decodeInt(flags, c.Value)
				if err != nil {
					return dst[:at], false
				}
				s.words = append(s.words, math.Float64bits(float64(uint64(v)>>32)))
				s.lasts = append(s.lasts, math.Float64bits(float64(uint32(v))))
				continue
			}
			f, err := mapping.DecodeValue(flags, c.Value)
			if err != nil {
				return dst[:at], false
			}
			s.words = append(s.words, math.Float64bits(f))
		}
		g := s.buf[:0]
		g = binary.AppendUvarint(g, uint64(len(group)))
		g = binary.AppendUvarint(g, uint64(s.indexes[0]))
		var mode byte
		if !consecutive {
			mode |= denseGaps
		}
		if versions {
			mode |= denseVersions
		}
		g = append(g, mode)
		if !consecutive {
			for k := 1; k < len(s.indexes); k++ {
				g = binary.AppendUvarint(g, uint64(s.indexes[k]-s.indexes[k-1]-1))
			}
		}
		g = s.col.AppendFloats(g, s.words)
		if id == IDTimes {
			g = s.col.AppendFloats(g, s.lasts)
		}
		if versions {
			g = s.col.AppendFloats(g, s.versions)
		}
		s.buf = g
		dst = append(dst, id)
		dst = binary.AppendUvarint(dst, uint64(len(g)))
		dst = append(dst, g...)
		i = j
	}
	// The check: the run unpacks to the very cells.
	got, buf, err := s.decodeDense(s.cells[:0], s.buf[:0], dst[at:])
	s.cells, s.buf = got[:0], buf[:0]
	if err != nil || len(got) != len(cells) {
		return dst[:at], false
	}
	for k := range got {
		a, b := &got[k], &cells[k]
		if a.Timestamp != b.Timestamp || !bytes.Equal(a.Qualifier, b.Qualifier) || !bytes.Equal(a.Value, b.Value) || !bytes.Equal(a.Family, b.Family) {
			return dst[:at], false
		}
	}
	return dst, true
}

// denseGroup is one aggregation id's group of a dense run, parsed.
type denseGroup struct {
	id      byte
	indexes []int32  // the cells' indexes
	words   []uint64 // their values (float64 bits); IDTimes: the firsts, then the lasts
	// versions are the cells' versions minus the run's (float64 bits),
	// nil when they are all the run's.
	versions []uint64
}

// grow returns s resliced to n elements, reallocated when too small.
func grow(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

// readDenseHeader returns the version of a dense run v and the bytes of
// its groups.
func readDenseHeader(v []byte) (uint64, []byte, error) {
	if len(v) < 2 || v[0] != DenseFormat {
		return 0, nil, fmt.Errorf("%w: %d bytes, format %x", errCodec, len(v), v[:min(len(v), 1)])
	}
	version, k := binary.Uvarint(v[1:])
	if k <= 0 || k != mapping.UvarintLen(version) || len(v) == 1+k {
		return 0, nil, fmt.Errorf("%w: version", errCodec)
	}
	return version, v[1+k:], nil
}

// nextDenseGroup splits the group at the start of p (after the groups
// before it, the last of id prev, -1 for none) into its id and bytes, and
// returns the rest of p.
func nextDenseGroup(p []byte, prev int) (id byte, g, rest []byte, err error) {
	id = p[0]
	if int(id) <= prev || id > mapping.MaxRollupAggID {
		return 0, nil, nil, fmt.Errorf("%w: group %#x after %#x", errCodec, id, prev)
	}
	size, k := binary.Uvarint(p[1:])
	if k <= 0 || k != mapping.UvarintLen(size) || size == 0 || size > uint64(len(p)-1-k) {
		return 0, nil, nil, fmt.Errorf("%w: group %#x: length", errCodec, id)
	}
	return id, p[1+k : 1+k+int(size)], p[1+k+int(size):], nil
}

// parseDenseGroup parses the bytes g of group id into s's scratch; with
// versions, the cells' versions too (relative to the run's, into the
// group's versions; nil when they are all the run's), and nothing may
// follow them. Without, the version column is not read.
func (s *denseScratch) parseDenseGroup(id byte, g []byte, versions bool) (denseGroup, error) {
	n, k := binary.Uvarint(g)
	if k <= 0 || k != mapping.UvarintLen(n) || n == 0 || n > maxDenseCells {
		return denseGroup{}, fmt.Errorf("%w: group %#x: count", errCodec, id)
	}
	g = g[k:]
	first, k := binary.Uvarint(g)
	if k <= 0 || k != mapping.UvarintLen(first) || first+n > mapping.RollupIndexLimit || len(g) == k {
		return denseGroup{}, fmt.Errorf("%w: group %#x: first index", errCodec, id)
	}
	mode := g[k]
	g = g[k+1:]
	s.indexes = s.indexes[:0]
	index := int64(first)
	s.indexes = append(s.indexes, int32(index))
	if mode&^(denseGaps|denseVersions) != 0 {
		return denseGroup{}, fmt.Errorf("%w: group %#x: mode %#x", errCodec, id, mode)
	}
	if mode&denseGaps == 0 {
		for range n - 1 {
			index++
			s.indexes = append(s.indexes, int32(index))
		}
	} else {
		gaps := false
		for range n - 1 {
			gap, k := binary.Uvarint(g)
			if k <= 0 || k != mapping.UvarintLen(gap) || gap >= mapping.RollupIndexLimit {
				return denseGroup{}, fmt.Errorf("%w: group %#x: index", errCodec, id)
			}
			gaps = gaps || gap > 0
			g = g[k:]
			index += int64(gap) + 1
			if index >= mapping.RollupIndexLimit {
				return denseGroup{}, fmt.Errorf("%w: group %#x: index %d", errCodec, id, index)
			}
			s.indexes = append(s.indexes, int32(index))
		}
		if !gaps {
			return denseGroup{}, fmt.Errorf("%w: group %#x: consecutive indexes given as gaps", errCodec, id)
		}
	}
	cols := 1
	if id == IDTimes {
		cols = 2
	}
	s.words = grow(s.words, cols*int(n))
	for c := range cols {
		k, err := s.col.DecodeFloats(s.words[c*int(n):(c+1)*int(n)], g)
		if err != nil {
			return denseGroup{}, fmt.Errorf("%w: group %#x: %w", errCodec, id, err)
		}
		g = g[k:]
	}
	grp := denseGroup{id: id, indexes: s.indexes, words: s.words}
	if !versions {
		return grp, nil
	}
	if mode&denseVersions != 0 {
		s.versions = grow(s.versions, int(n))
		k, err := s.col.DecodeFloats(s.versions, g)
		if err != nil {
			return denseGroup{}, fmt.Errorf("%w: group %#x: versions: %w", errCodec, id, err)
		}
		g = g[k:]
		zero := true
		for _, w := range s.versions {
			d := math.Float64frombits(w)
			if d != math.Trunc(d) || math.Abs(d) >= 1<<53 {
				return denseGroup{}, fmt.Errorf("%w: group %#x: version delta %v", errCodec, id, d)
			}
			zero = zero && d == 0
		}
		if zero {
			return denseGroup{}, fmt.Errorf("%w: group %#x: a version column of zeros", errCodec, id)
		}
		grp.versions = s.versions
	}
	if len(g) != 0 {
		return denseGroup{}, fmt.Errorf("%w: group %#x: %d bytes left", errCodec, id, len(g))
	}
	return grp, nil
}

// timesValue returns IDTimes's integer from a group's first and last
// offset words, or false when they are not whole numbers of 32 bits.
func timesValue(first, last uint64) (int64, bool) {
	f, l := math.Float64frombits(first), math.Float64frombits(last)
	if f != math.Trunc(f) || l != math.Trunc(l) || f < 0 || l < 0 || f > math.MaxUint32 || l > math.MaxUint32 {
		return 0, false
	}
	return int64(uint64(f)<<32 | uint64(l)), true
}

// decodeDense appends the cells of the dense run v to dst, their bytes to
// buf (see Codec.Decode).
func (s *denseScratch) decodeDense(dst []store.Cell, buf []byte, v []byte) ([]store.Cell, []byte, error) {
	version, p, err := readDenseHeader(v)
	if err != nil {
		return dst, buf, err
	}
	start := len(dst)
	fam := len(buf)
	buf = append(buf, Family...)
	spots := s.spots[:0]
	prev := -1
	for len(p) > 0 {
		id, g, rest, err := nextDenseGroup(p, prev)
		if err != nil {
			return dst[:start], buf, err
		}
		p, prev = rest, int(id)
		grp, err := s.parseDenseGroup(id, g, true)
		if err != nil {
			return dst[:start], buf, err
		}
		n := len(grp.indexes)
		for k, index := range grp.indexes {
			q := len(buf)
			ts := version
			if grp.versions != nil {
				ts += uint64(int64(math.Float64frombits(grp.versions[k])))
			}
			if id == IDTimes {
				i, ok := timesValue(grp.words[k], grp.words[n+k])
				if !ok {
					return dst[:start], buf, fmt.Errorf("%w: group %#x: times of cell %d", errCodec, id, index)
				}
				var flags byte
				buf, err = mapping.AppendRollupQualifier(buf, id, int(index), 0)
				if err != nil {
					return dst[:start], buf, fmt.Errorf("%w: %w", errCodec, err)
				}
				buf, flags = appendCanonicalInt(buf, i)
				binary.BigEndian.PutUint16(buf[q+1:], uint16(index)<<4|uint16(flags))
				spots = append(spots, spot{q, q + 3, len(buf), ts})
				continue
			}
			buf = slices.Grow(buf, mapping.RollupCellBytes) // the cell goes into buf's room
			qual, val, err := mapping.AppendRollupCell(buf, id, int(index), math.Float64frombits(grp.words[k]))
			if err != nil {
				return dst[:start], buf, fmt.Errorf("%w: %w", errCodec, err)
			}
			buf = buf[:q+len(qual)+len(val)]
			spots = append(spots, spot{q, q + len(qual), len(buf), ts})
		}
	}
	s.spots = spots
	family := buf[fam : fam+len(Family) : fam+len(Family)]
	for _, sp := range spots {
		dst = append(dst, store.Cell{Family: family, Qualifier: buf[sp.q:sp.v:sp.v], Value: buf[sp.v:sp.end:sp.end], Timestamp: sp.ts})
	}
	return dst, buf, nil
}

// decodeDense adds the windows of a dense run v of iv's row with base time
// base to d.out, as decodePacked does with a packed run.
func (d *Decoder) decodeDense(iv Interval, base uint32, v []byte, from, to int64) error {
	_, p, err := readDenseHeader(v)
	if err != nil {
		return err
	}
	width := iv.seconds * 1000
	firstEnd := (int64(base) + iv.seconds) * 1000 // the end of index 0
	prev := -1
	for len(p) > 0 {
		id, g, rest, err := nextDenseGroup(p, prev)
		if err != nil {
			return err
		}
		p, prev = rest, int(id)
		bit := d.bit(id)
		if bit == 0 || (d.Want != 0 && d.Want&bit == 0) {
			continue
		}
		grp, err := d.dense.parseDenseGroup(id, g, false)
		if err != nil {
			return err
		}
		n := len(grp.indexes)
		for k, index := range grp.indexes {
			end := firstEnd + int64(index)*width
			if end <= from || end > to || !d.keep(end) {
				continue
			}
			w := d.window(int(index), end)
			w.Has |= bit
			f := math.Float64frombits(grp.words[k])
			switch bit {
			case HasCount, HasHistograms:
				if f != math.Trunc(f) || math.Abs(f) >= 0x1p63 {
					return fmt.Errorf("%w: group %#x: cell %d: %v is not an integer", errCodec, id, index, f)
				}
				if bit == HasCount {
					w.Count = int64(f)
				} else {
					w.Histograms = int64(f)
				}
			case HasTimes:
				i, ok := timesValue(grp.words[k], grp.words[n+k])
				if !ok {
					return fmt.Errorf("%w: group %#x: times of cell %d", errCodec, id, index)
				}
				start := end - width
				w.FirstT, w.LastT = start+int64(uint64(i)>>32), start+int64(uint32(i))
			default:
				w.setFloat(bit, f)
			}
		}
	}
	return nil
}
