package rollup

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// CodecFormat is the first byte of a packed rollup run (Codec): the
// format a scan of a rollup table asks for (store.ScanRequest.Packed).
const CodecFormat byte = 0xA1

// Codec is the embedded store's row codec of the rollup tables
// (store/embedded.RowCodec): it packs the cells of one run of a rollup row
// (the cells one flush of the row buffer wrote) column by column, per
// aggregation id, and unpacks them to OpenTSDB's exact cells:
//
//	u8      CodecFormat
//	u64 BE  the first cell's version
//	per aggregation id, ascending (the qualifier's first byte as stored):
//	  u8       the id byte
//	  uvarint  the length of the rest of the group, so that a reader
//	           skips the ids it does not need
//	  uvarint  n, the cells of the id (at least one)
//	  n × uvarint  index gaps, ascending: the first index, then each
//	               index minus the one before minus one
//	  ⌈n/2⌉ bytes the cells' value flags, a nibble each, low nibble first
//	  n × varint   each cell's version minus the first cell's (zero for
//	               the cells of one Put)
//	  the values, each as long as its flags say (mapping.ValueLen)
//
// A run it cannot pack this way (another family, a qualifier that is not
// three bytes, two cells of one index, a value of another length than its
// flags say) is left to the generic run format. Codec is stateless and safe for concurrent use.
type Codec struct{}

// codecHeader is the format byte and the version.
const codecHeader = 1 + 8

var errCodec = errors.New("rollup: malformed packed run")

// Encode implements the row codec: see Codec.
func (Codec) Encode(dst []byte, _ []byte, cells []store.Cell) ([]byte, bool) {
	if len(cells) == 0 {
		return dst, false
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
		dst = append(dst, id[0])
		start := len(dst)
		dst = binary.AppendUvarint(dst, uint64(len(group)))
		prev := -1
		for _, c := range group {
			if string(c.Family) != Family {
				return dst, false
			}
			index := int(binary.BigEndian.Uint16(c.Qualifier[1:]) >> 4)
			if index <= prev {
				return dst, false
			}
			dst = binary.AppendUvarint(dst, uint64(index-prev-1))
			prev = index
		}
		for k := 0; k < len(group); k += 2 {
			b := group[k].Qualifier[2] & mapping.FlagsMask
			if k+1 < len(group) {
				b |= (group[k+1].Qualifier[2] & mapping.FlagsMask) << 4
			}
			dst = append(dst, b)
		}
		for _, c := range group {
			dst = binary.AppendVarint(dst, int64(c.Timestamp-version))
		}
		for _, c := range group {
			if n := mapping.ValueLen(c.Qualifier[2]); !validValueLen(c.Qualifier[2], n) || len(c.Value) != n {
				return dst, false
			}
			dst = append(dst, c.Value...)
		}
		// The group's length in front of it.
		g = append(g[:0], dst[start:]...)
		dst = binary.AppendUvarint(dst[:start], uint64(len(g)))
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

// packedGroup is one aggregation id's cells in a packed run.
type packedGroup struct {
	id       byte
	indexes  []int // scratch of the caller
	flags    []byte
	versions []byte // n varints
	values   []byte
}

// walkPacked calls fn with each group of v, a packed run (with its
// format byte), but for the ids skip reports (nil: none); indexes is
// scratch reused between groups. It returns the version.
func walkPacked(v []byte, indexes []int, skip func(id byte) bool, fn func(g *packedGroup) error) (uint64, []int, error) {
	if len(v) < codecHeader || v[0] != CodecFormat {
		return 0, indexes, fmt.Errorf("%w: %d bytes, format %x", errCodec, len(v), v[:min(len(v), 1)])
	}
	version := binary.BigEndian.Uint64(v[1:])
	p := v[codecHeader:]
	if len(p) == 0 {
		return 0, indexes, fmt.Errorf("%w: no cell", errCodec)
	}
	lastID := -1
	firstCell := true
	for len(p) > 0 {
		g := packedGroup{id: p[0]}
		if int(g.id) <= lastID {
			return 0, indexes, fmt.Errorf("%w: group %#x after %#x", errCodec, g.id, lastID)
		}
		lastID = int(g.id)
		p = p[1:]
		size, k := binary.Uvarint(p)
		if k <= 0 || k != uvarintLen(size) || size == 0 || size > uint64(len(p)-k) {
			return 0, indexes, fmt.Errorf("%w: group %#x: length", errCodec, g.id)
		}
		p = p[k:]
		next := p[size:]
		if skip != nil && skip(g.id) {
			p = next
			firstCell = false
			continue
		}
		p = p[:size]
		n, k := binary.Uvarint(p)
		if k <= 0 || k != uvarintLen(n) || n == 0 || n > uint64(len(p)) {
			return 0, indexes, fmt.Errorf("%w: group %#x: count", errCodec, g.id)
		}
		p = p[k:]
		indexes = indexes[:0]
		prev := -1
		for range n {
			gap, k := binary.Uvarint(p)
			if k <= 0 || k != uvarintLen(gap) || gap >= 1<<12 {
				return 0, indexes, fmt.Errorf("%w: group %#x: index", errCodec, g.id)
			}
			p = p[k:]
			prev += int(gap) + 1
			if prev >= 1<<12 {
				return 0, indexes, fmt.Errorf("%w: group %#x: index %d", errCodec, g.id, prev)
			}
			indexes = append(indexes, prev)
		}
		nf := (int(n) + 1) / 2
		if len(p) < nf {
			return 0, indexes, fmt.Errorf("%w: group %#x: flags", errCodec, g.id)
		}
		g.flags, p = p[:nf], p[nf:]
		if n%2 == 1 && g.flags[nf-1]>>4 != 0 {
			return 0, indexes, fmt.Errorf("%w: group %#x: flags padding", errCodec, g.id)
		}
		vs := p
		for range n {
			d, k := binary.Varint(p)
			if k <= 0 || k != uvarintLen(uint64(d)<<1^uint64(d>>63)) || (firstCell && d != 0) {
				return 0, indexes, fmt.Errorf("%w: group %#x: version", errCodec, g.id)
			}
			p = p[k:]
			firstCell = false
		}
		g.versions = vs[:len(vs)-len(p)]
		total := 0
		for i := range int(n) {
			f := flagAt(g.flags, i)
			l := mapping.ValueLen(f)
			if !validValueLen(f, l) {
				return 0, indexes, fmt.Errorf("%w: group %#x: flags %#x", errCodec, g.id, f)
			}
			total += l
		}
		if len(p) != total {
			return 0, indexes, fmt.Errorf("%w: group %#x: values", errCodec, g.id)
		}
		g.values, p = p, next
		g.indexes = indexes
		if err := fn(&g); err != nil {
			return 0, indexes, err
		}
	}
	return version, indexes, nil
}

// uvarintLen is the length of x's shortest uvarint, the only form Encode
// writes (so a decoded run packs back to its own bytes).
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func flagAt(flags []byte, i int) byte {
	b := flags[i/2]
	if i%2 == 1 {
		b >>= 4
	}
	return b & mapping.FlagsMask
}

// Decode implements the row codec: the cells Encode packed, byte for
// byte.
func (Codec) Decode(dst []store.Cell, buf []byte, _ []byte, v []byte) ([]store.Cell, []byte, error) {
	start := len(dst)
	var indexes [64]int
	// The family and the qualifiers go into buf; cells point at them once
	// buf stops growing.
	var spots []int // where each cell's qualifier starts in buf
	var deltas []int64
	fam := len(buf)
	buf = append(buf, Family...)
	version, _, err := walkPacked(v, indexes[:0], nil, func(g *packedGroup) error {
		off := 0
		vs := g.versions
		for i, index := range g.indexes {
			f := flagAt(g.flags, i)
			l := mapping.ValueLen(f)
			q := len(buf)
			buf = append(buf, g.id, 0, 0)
			binary.BigEndian.PutUint16(buf[q+1:], uint16(index)<<4|uint16(f))
			d, k := binary.Varint(vs)
			vs = vs[k:]
			spots, deltas = append(spots, q), append(deltas, d)
			dst = append(dst, store.Cell{Value: g.values[off : off+l : off+l]})
			off += l
		}
		return nil
	})
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
func (Codec) Family(v []byte) string {
	if len(v) < codecHeader || v[0] != CodecFormat {
		return ""
	}
	return Family
}

// decodePacked adds the windows of a packed run v (see Codec) of iv's row
// with base time base to d.out, as Decode does with cells.
func (d *Decoder) decodePacked(iv Interval, base uint32, v []byte, from, to int64) error {
	width := iv.seconds * 1000
	var err error
	skip := func(id byte) bool {
		bit := d.bit(id & mapping.RollupAggIDMask)
		return bit == 0 || (d.Want != 0 && d.Want&bit == 0)
	}
	_, d.indexes, err = walkPacked(v, d.indexes, skip, func(g *packedGroup) error {
		bit := d.bit(g.id & mapping.RollupAggIDMask)
		off := 0
		for i, index := range g.indexes {
			f := flagAt(g.flags, i)
			l := mapping.ValueLen(f)
			val := g.values[off : off+l]
			off += l
			end := iv.WindowEnd(base, index)
			if end <= from || end > to {
				continue
			}
			if err := d.set(d.window(index, end), bit, f, val, end, width); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}
