package rollup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// CodecFormat is the first byte of a packed rollup run (Codec): the
// format a scan of a rollup table asks for (store.ScanRequest.Packed).
const CodecFormat byte = 0xA1

// Codec is the embedded store's row codec of the rollup tables
// (store/embedded.RowCodec): it packs the cells of one run of a rollup row
// (the cells one flush of the row buffer wrote) per aggregation id, and
// unpacks them to OpenTSDB's exact cells:
//
//	u8      CodecFormat
//	u64 BE  the first cell's version
//	per aggregation id, ascending (the qualifier's first byte as stored):
//	  u8       the id byte
//	  uvarint  the length of the rest of the group, so that a reader
//	           skips the ids it does not need
//	  uvarint  n, the cells of the id (at least one)
//	  per cell, by index:
//	    uvarint  the index gap: the first index, then each index minus
//	             the one before minus one
//	    u8       the value's flags (the qualifier's low nibble)
//	    the value, as long as its flags say (mapping.ValueLen)
//	  n × varint  each cell's version minus the first cell's (zero for
//	              the cells of one Put), last, where a query does not
//	              read them
//
// A run whose cells are all of one version and in their shortest exact
// form, as promhbase writes them, is packed densely instead (DenseFormat):
// each aggregate's values a float column. A run it cannot pack either way
// (another family, a qualifier that is not three bytes, two cells of one
// index, a value of another length than its flags say) is left to the
// generic run format. Codec is safe for concurrent use; it must not be
// copied after first use.
type Codec struct{ scratch sync.Pool }

func (c *Codec) get() *denseScratch {
	if s, ok := c.scratch.Get().(*denseScratch); ok {
		return s
	}
	return new(denseScratch)
}

// codecHeader is the format byte and the version.
const codecHeader = 1 + 8

var errCodec = errors.New("rollup: malformed packed run")

// Encode implements the row codec: see Codec.
func (c *Codec) Encode(dst []byte, _ []byte, cells []store.Cell) ([]byte, bool) {
	if len(cells) == 0 {
		return dst, false
	}
	s := c.get()
	out, ok := s.encodeDense(dst, cells)
	c.scratch.Put(s)
	if ok {
		return out, true
	}
	version := cells[0].Timestamp
	dst = append(dst, CodecFormat)
	dst = binary.BigEndian.AppendUint64(dst, version)
	var g []byte // a group's bytes after its id and length
	for i := 0; i < len(cells); {
		id := cells[i].Qualifier
		if len(id) != mapping.RollupQualifierBytes {
			return dst, false
		}
		j := i
		for j < len(cells) && len(cells[j].Qualifier) == mapping.RollupQualifierBytes && cells[j].Qualifier[0] == id[0] {
			j++
		}
		group := cells[i:j]
		g = binary.AppendUvarint(g[:0], uint64(len(group)))
		prev := -1
		for _, c := range group {
			if string(c.Family) != Family {
				return dst, false
			}
			u := binary.BigEndian.Uint16(c.Qualifier[1:])
			index, flags := int(u>>4), byte(u)&mapping.FlagsMask
			if index <= prev {
				return dst, false
			}
			if n := mapping.ValueLen(flags); !validValueLen(flags, n) || len(c.Value) != n {
				return dst, false
			}
			g = binary.AppendUvarint(g, uint64(index-prev-1))
			g = append(g, flags)
			g = append(g, c.Value...)
			prev = index
		}
		for _, c := range group {
			g = binary.AppendVarint(g, int64(c.Timestamp-version))
		}
		dst = append(dst, id[0])
		dst = binary.AppendUvarint(dst, uint64(len(g)))
		dst = append(dst, g...)
		i = j
	}
	return dst, true
}

// validValueLen reports whether n is a length readers accept for a value
// of flags: 1, 2, 4 or 8 bytes for integers, 4 or 8 for floats.
func validValueLen(flags byte, n int) bool {
	if flags&mapping.FlagFloat != 0 {
		return n == 4 || n == 8
	}
	return n == 1 || n == 2 || n == 4 || n == 8
}

// packedCell is one cell of a packed group.
type packedCell struct {
	index int
	flags byte
	value []byte
}

// walkPacked calls cell with each cell of each group of v, a packed run
// (with its format byte), but for the groups of the ids skip reports (nil:
// none); with versions set it also checks the version deltas and calls
// version with each (the cells' order). It returns the first version.
func walkPacked(v []byte, skip func(id byte) bool, cell func(id byte, c packedCell) error, version func(delta int64)) (uint64, error) {
	if len(v) < codecHeader || v[0] != CodecFormat {
		return 0, fmt.Errorf("%w: %d bytes, format %x", errCodec, len(v), v[:min(len(v), 1)])
	}
	first := binary.BigEndian.Uint64(v[1:])
	p := v[codecHeader:]
	if len(p) == 0 {
		return 0, fmt.Errorf("%w: no cell", errCodec)
	}
	lastID := -1
	firstCell := true
	for len(p) > 0 {
		id := p[0]
		if int(id) <= lastID {
			return 0, fmt.Errorf("%w: group %#x after %#x", errCodec, id, lastID)
		}
		lastID = int(id)
		p = p[1:]
		// Each uvarint is the shortest, the only form Encode writes, so
		// that a decoded run packs back to its own bytes.
		size, k := binary.Uvarint(p)
		if k <= 0 || k != mapping.UvarintLen(size) || size == 0 || size > uint64(len(p)-k) {
			return 0, fmt.Errorf("%w: group %#x: length", errCodec, id)
		}
		g, next := p[k:k+int(size)], p[k+int(size):]
		p = next
		if skip != nil && skip(id) {
			firstCell = false
			continue
		}
		n, k := binary.Uvarint(g)
		if k <= 0 || k != mapping.UvarintLen(n) || n == 0 || n > uint64(len(g)) {
			return 0, fmt.Errorf("%w: group %#x: count", errCodec, id)
		}
		g = g[k:]
		index := -1
		for range n {
			gap, k := binary.Uvarint(g)
			if k <= 0 || k != mapping.UvarintLen(gap) || gap >= 1<<12 || len(g) < k+1 {
				return 0, fmt.Errorf("%w: group %#x: index", errCodec, id)
			}
			index += int(gap) + 1
			flags := g[k]
			l := mapping.ValueLen(flags)
			if index >= 1<<12 || flags > mapping.FlagsMask || !validValueLen(flags, l) || len(g) < k+1+l {
				return 0, fmt.Errorf("%w: group %#x: cell %d", errCodec, id, index)
			}
			if err := cell(id, packedCell{index: index, flags: flags, value: g[k+1 : k+1+l : k+1+l]}); err != nil {
				return 0, err
			}
			g = g[k+1+l:]
		}
		if version == nil {
			continue
		}
		for range n {
			d, k := binary.Varint(g)
			if k <= 0 || k != mapping.UvarintLen(uint64(d)<<1^uint64(d>>63)) || (firstCell && d != 0) {
				return 0, fmt.Errorf("%w: group %#x: version", errCodec, id)
			}
			g = g[k:]
			firstCell = false
			version(d)
		}
		if len(g) != 0 {
			return 0, fmt.Errorf("%w: group %#x: %d bytes left", errCodec, id, len(g))
		}
	}
	return first, nil
}

// Decode implements the row codec: the cells Encode packed, byte for
// byte.
func (c *Codec) Decode(dst []store.Cell, buf []byte, _ []byte, v []byte) ([]store.Cell, []byte, error) {
	if len(v) > 0 && v[0] == DenseFormat {
		s := c.get()
		defer c.scratch.Put(s)
		return s.decodeDense(dst, buf, v)
	}
	start := len(dst)
	// The family and the qualifiers go into buf; cells point at them once
	// buf stops growing.
	var spots []int // where each cell's qualifier starts in buf
	var deltas []int64
	fam := len(buf)
	buf = append(buf, Family...)
	version, err := walkPacked(v, nil, func(id byte, c packedCell) error {
		q := len(buf)
		buf = append(buf, id, 0, 0)
		binary.BigEndian.PutUint16(buf[q+1:], uint16(c.index)<<4|uint16(c.flags))
		spots = append(spots, q)
		dst = append(dst, store.Cell{Value: c.value})
		return nil
	}, func(d int64) { deltas = append(deltas, d) })
	if err != nil {
		return dst[:start], buf, err
	}
	family := buf[fam : fam+len(Family) : fam+len(Family)]
	for i, q := range spots {
		c := &dst[start+i]
		c.Family, c.Qualifier, c.Timestamp = family, buf[q:q+3:q+3], version+uint64(deltas[i])
	}
	return dst, buf, nil
}

// Family implements the row codec: every cell of a packed run is of
// Family.
func (*Codec) Family(v []byte) string {
	switch {
	case len(v) >= codecHeader && v[0] == CodecFormat, len(v) >= 2 && v[0] == DenseFormat:
		return Family
	}
	return ""
}

// decodePacked adds the windows of a packed run v (see Codec) of iv's row
// with base time base to d.out, as Decode does with cells: a walk of its
// own, without calls per cell, as queries read every window of a range
// this way. The cells' versions are not read: a run holds one cell a
// column.
func (d *Decoder) decodePacked(iv Interval, base uint32, v []byte, from, to int64) error {
	if len(v) <= codecHeader || v[0] != CodecFormat {
		return fmt.Errorf("%w: %d bytes, format %x", errCodec, len(v), v[:min(len(v), 1)])
	}
	width := iv.seconds * 1000
	firstEnd := (int64(base) + iv.seconds) * 1000 // the end of index 0
	p := v[codecHeader:]
	for len(p) > 0 {
		id := p[0]
		size, k := binary.Uvarint(p[1:])
		if k <= 0 || size > uint64(len(p)-1-k) {
			return fmt.Errorf("%w: group %#x: length", errCodec, id)
		}
		g := p[1+k : 1+k+int(size)]
		p = p[1+k+int(size):]
		bit := d.bit(id & mapping.RollupAggIDMask)
		if bit == 0 || (d.Want != 0 && d.Want&bit == 0) {
			continue
		}
		n, k := binary.Uvarint(g)
		if k <= 0 || n > uint64(len(g)) {
			return fmt.Errorf("%w: group %#x: count", errCodec, id)
		}
		g = g[k:]
		index := -1
		for range n {
			var gap uint64
			if len(g) > 0 && g[0] < 0x80 {
				gap, k = uint64(g[0]), 1
			} else if gap, k = binary.Uvarint(g); k <= 0 {
				return fmt.Errorf("%w: group %#x: index", errCodec, id)
			}
			if gap >= 1<<12 || len(g) < k+1 {
				return fmt.Errorf("%w: group %#x: index", errCodec, id)
			}
			index += int(gap) + 1
			flags := g[k]
			l := mapping.ValueLen(flags)
			if index >= 1<<12 || flags > mapping.FlagsMask || !validValueLen(flags, l) || len(g) < k+1+l {
				return fmt.Errorf("%w: group %#x: cell %d", errCodec, id, index)
			}
			val := g[k+1 : k+1+l]
			g = g[k+1+l:]
			end := firstEnd + int64(index)*width
			if end <= from || end > to || !d.keep(end) {
				continue
			}
			if err := d.set(d.window(index, end), bit, flags, val, end, width); err != nil {
				return err
			}
		}
	}
	return nil
}
