package rollup

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Family is the column family of the rollup tables, as OpenTSDB's.
const Family = "t"

// promhbase's own aggregation ids (FirstReservedID on), beside the
// configuration's sum, count, max and min: the counter aggregate, which
// lets rate and increase be computed exactly across counter resets from
// rollups, and the count of native-histogram samples a window left out.
// A TSD reads only the ids of the aggregators it is asked for (its scans
// filter on the qualifier's first byte), so it never sees these.
const (
	IDFirst      byte = FirstReservedID     // the window's first sample's value
	IDLast       byte = FirstReservedID + 1 // its last sample's value
	IDResets     byte = FirstReservedID + 2 // sum of the values before each drop (Window.Resets)
	IDTimes      byte = FirstReservedID + 3 // first and last sample's time: integer (first << 32) | last, ms after the window's start
	IDHistograms byte = FirstReservedID + 4 // native-histogram samples left out (written only when not zero)
)

// MaxWidth is the longest window promhbase computes rollups of: IDTimes
// holds sample offsets in 32 bits of milliseconds.
const MaxWidth = math.MaxUint32

// errMalformed is wrapped by the errors of DecodeCell.
var errMalformed = errors.New("rollup: malformed cell")

// IDs are the aggregation ids of the four OpenTSDB aggregates in a
// configuration.
type IDs struct{ Sum, Count, Max, Min byte }

// IDs returns the ids of sum, count, max and min, which promhbase needs
// to write and read rollups; an error names the first one missing.
func (c *Config) IDs() (IDs, error) {
	var ids IDs
	for _, a := range []struct {
		name string
		dst  *byte
	}{{"sum", &ids.Sum}, {"count", &ids.Count}, {"max", &ids.Max}, {"min", &ids.Min}} {
		id, ok := c.AggregationID(a.name)
		if !ok {
			return IDs{}, fmt.Errorf("%w: no aggregation id for %q: promhbase writes and reads sum, count, max and min", ErrInvalidConfig, a.name)
		}
		*a.dst = id
	}
	return ids, nil
}

// Locate returns the row base time (Unix s) and index of the cells of the
// window of iv that ends at end (Unix ms, a multiple of the width): the
// window is stamped at its start, as OpenTSDB stamps a rollup point.
func (iv Interval) LocateWindow(end int64) (base uint32, index int, err error) {
	start := end/1000 - iv.seconds
	if start < 0 || start > math.MaxUint32 || end%(iv.seconds*1000) != 0 {
		return 0, 0, fmt.Errorf("%w: window ending at %d ms is not one of interval %s", mapping.ErrInvalidRollup, end, iv.Name)
	}
	return iv.Locate(uint32(start))
}

// WindowEnd is the end (Unix ms) of the window whose cells are at index
// of the row with base time base.
func (iv Interval) WindowEnd(base uint32, index int) int64 {
	return (int64(base) + int64(index+1)*iv.seconds) * 1000
}

// cellBuf hands out room for cells: a chunk at a time, so that the
// cells already built keep pointing at bytes that do not move.
type cellBuf struct{ b []byte }

func (cb *cellBuf) room() []byte {
	if cap(cb.b)-len(cb.b) < mapping.RollupCellBytes {
		cb.b = make([]byte, 0, 64*mapping.RollupCellBytes)
	}
	return cb.b
}

// Cells builds the cells of finished windows; the zero value is ready to
// use. The cells it returns stay valid after later calls.
type Cells struct {
	ids    IDs
	family []byte
	buf    cellBuf
}

// NewCells returns a builder of cells with the aggregation ids ids.
func NewCells(ids IDs) *Cells { return &Cells{ids: ids, family: []byte(Family)} }

// Append appends the cells of w, a finished window (Window.Finish) of
// width ms whose cells go at index of their row, to dst, with version ts (0: the
// store's time). A window without float samples gives only its histogram
// count, one without any sample nothing. Values take their shortest exact
// form (mapping.AppendValue); IDTimes is an integer.
func (c *Cells) Append(dst []store.Cell, index int, width int64, w *Window, ts uint64) ([]store.Cell, error) {
	if w.Count > 0 {
		for _, a := range [...]struct {
			id byte
			v  float64
		}{{c.ids.Sum, w.Sum}, {c.ids.Count, float64(w.Count)}, {c.ids.Max, w.Max}, {c.ids.Min, w.Min},
			{IDFirst, w.First}, {IDLast, w.Last}, {IDResets, w.Resets}} {
			b := c.buf.room()
			q, v, err := mapping.AppendRollupCell(b, a.id, index, a.v)
			if err != nil {
				return dst, err
			}
			c.buf.b = b[:len(b)+len(q)+len(v)]
			dst = append(dst, store.Cell{Family: c.family, Qualifier: q, Value: v, Timestamp: ts})
		}
		first, last := w.FirstT-(w.End-width), w.LastT-(w.End-width)
		if first <= 0 || last < first || last > width || width > MaxWidth {
			return dst, fmt.Errorf("%w: window ending at %d ms with samples at %d and %d ms", mapping.ErrInvalidRollup, w.End, w.FirstT, w.LastT)
		}
		var err error
		if dst, err = c.appendInt(dst, IDTimes, index, first<<32|last, ts); err != nil {
			return dst, err
		}
	}
	if w.Histograms > 0 {
		var err error
		if dst, err = c.appendInt(dst, IDHistograms, index, w.Histograms, ts); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendInt appends a cell holding the integer i in its shortest form.
func (c *Cells) appendInt(dst []store.Cell, id byte, index int, i int64, ts uint64) ([]store.Cell, error) {
	b := c.buf.room()
	at := len(b)
	var flags byte
	switch {
	case i == int64(int8(i)):
		flags = mapping.FlagsInt8
	case i == int64(int16(i)):
		flags = mapping.FlagsInt16
	case i == int64(int32(i)):
		flags = mapping.FlagsInt32
	default:
		flags = mapping.FlagsInt64
	}
	b, err := mapping.AppendRollupQualifier(b, id, index, flags)
	if err != nil {
		return dst, err
	}
	q := len(b)
	switch flags {
	case mapping.FlagsInt8:
		b = append(b, byte(i))
	case mapping.FlagsInt16:
		b = binary.BigEndian.AppendUint16(b, uint16(i))
	case mapping.FlagsInt32:
		b = binary.BigEndian.AppendUint32(b, uint32(i))
	default:
		b = binary.BigEndian.AppendUint64(b, uint64(i))
	}
	c.buf.b = b
	return append(dst, store.Cell{Family: c.family, Qualifier: b[at:q:q], Value: b[q:len(b):len(b)], Timestamp: ts}), nil
}

// Aggregate bits of Window-building from cells: which aggregates a
// decoded window holds.
const (
	HasSum uint16 = 1 << iota
	HasCount
	HasMax
	HasMin
	HasFirst
	HasLast
	HasResets
	HasTimes
	HasHistograms

	// HasAll is every aggregate promhbase writes for a window with float
	// samples.
	HasAll = HasSum | HasCount | HasMax | HasMin | HasFirst | HasLast | HasResets | HasTimes
)

// DecodedWindow is a window read back from a rollup row, with the
// aggregates its row held (Has bits).
type DecodedWindow struct {
	Window
	Has uint16
}

// Decoder reads the windows of rollup rows. It keeps its buffers between
// calls and is not safe for concurrent use.
type Decoder struct {
	ids IDs
	// Want, when not zero, restricts Decode to the aggregates of its Has
	// bits: cells of the others are skipped unread.
	Want uint16
	// Every, when positive, restricts Decode to the windows a query
	// evaluated every Every ms reads: those ending within Span ms before
	// (at most Span-1 ms, at least 0) an evaluation point Last - k×Every.
	// The others are skipped unread: a plain selector at a 1h step reads
	// one 5m window in 12.
	Every, Last, Span int64
	out               []DecodedWindow
	sorted            []DecodedWindow // out in index order, when it was not
	dense             denseScratch
	// at maps a cell's index to its window in out, plus one (0: none
	// yet); reset after each Decode.
	at []int32
}

// NewDecoder returns a Decoder of rollups with the aggregation ids ids.
func NewDecoder(ids IDs) *Decoder { return &Decoder{ids: ids} }

// Decode returns the windows of iv held by the cells of a rollup row whose
// base time is base, sorted by End, keeping those with from < End <= to;
// cells of other aggregation ids (and of other families) are skipped. A
// cell that is not a rollup cell, or whose value does not parse, gives an
// error wrapping mapping.ErrInvalidRollup. The slice is valid until the
// next call.
func (d *Decoder) Decode(iv Interval, base uint32, cells []store.Cell, from, to int64) ([]DecodedWindow, error) {
	d.out = d.out[:0]
	defer func() {
		for i := range d.out {
			if ix := int((d.out[i].End/1000-int64(base))/iv.seconds) - 1; ix >= 0 && ix < len(d.at) {
				d.at[ix] = 0
			}
		}
	}()
	width := iv.seconds * 1000
	for _, c := range cells {
		if c.Packed() {
			decode := d.decodePacked
			if len(c.Value) > 0 && c.Value[0] == DenseFormat {
				decode = d.decodeDense
			}
			if err := decode(iv, base, c.Value, from, to); err != nil {
				return nil, fmt.Errorf("%w: %w", mapping.ErrInvalidRollup, err)
			}
			continue
		}
		if string(c.Family) != Family {
			continue
		}
		id, index, flags, ok := mapping.ParseRollupQualifier(c.Qualifier)
		if !ok {
			return nil, fmt.Errorf("%w: qualifier %x in rollup table %s", mapping.ErrInvalidRollup, c.Qualifier, iv.Table)
		}
		bit := d.bit(id)
		if bit == 0 || (d.Want != 0 && d.Want&bit == 0) {
			continue
		}
		end := iv.WindowEnd(base, index)
		if end <= from || end > to || !d.keep(end) {
			continue
		}
		if err := d.set(d.window(index, end), bit, flags, c.Value, end, width); err != nil {
			return nil, fmt.Errorf("%w: cell %x: %w", mapping.ErrInvalidRollup, c.Qualifier, err)
		}
	}
	if !slices.IsSortedFunc(d.out, func(a, b DecodedWindow) int { return cmp.Compare(a.End, b.End) }) {
		// Runs of a row come newest first: put the windows in index
		// order, which at maps to, without comparing them.
		d.sorted = d.sorted[:0]
		for _, i := range d.at {
			if i > 0 {
				d.sorted = append(d.sorted, d.out[i-1])
			}
		}
		d.out, d.sorted = d.sorted, d.out
	}
	return d.out, nil
}

// keep reports whether Decode reads the window ending at end (Every).
func (d *Decoder) keep(end int64) bool {
	if d.Every <= 0 {
		return true
	}
	gap := (d.Last - end) % d.Every
	if gap < 0 {
		gap += d.Every
	}
	return gap < d.Span
}

// bit returns the Has bit of an aggregation id (0: not one Decode reads).
func (d *Decoder) bit(id byte) uint16 {
	switch id {
	case d.ids.Sum:
		return HasSum
	case d.ids.Count:
		return HasCount
	case d.ids.Max:
		return HasMax
	case d.ids.Min:
		return HasMin
	case IDFirst:
		return HasFirst
	case IDLast:
		return HasLast
	case IDResets:
		return HasResets
	case IDTimes:
		return HasTimes
	case IDHistograms:
		return HasHistograms
	}
	return 0
}

// set stores the value of one aggregate (bit) of window w, which ends at
// end and is width ms wide.
func (d *Decoder) set(w *DecodedWindow, bit uint16, flags byte, v []byte, end, width int64) error {
	w.Has |= bit
	if bit == HasTimes || bit == HasHistograms || bit == HasCount {
		i, err := decodeInt(flags, v)
		if err != nil {
			return err
		}
		switch bit {
		case HasTimes:
			start := end - width
			w.FirstT, w.LastT = start+int64(uint64(i)>>32), start+int64(uint32(i))
		case HasHistograms:
			w.Histograms = i
		case HasCount:
			w.Count = i
		}
		return nil
	}
	f, err := mapping.DecodeValue(flags, v)
	if err != nil {
		return err
	}
	w.setFloat(bit, f)
	return nil
}

// setFloat stores f as the float aggregate bit of w.
func (w *Window) setFloat(bit uint16, f float64) {
	switch bit {
	case HasSum:
		w.Sum = f
	case HasMax:
		w.Max = f
	case HasMin:
		w.Min = f
	case HasFirst:
		w.First = f
	case HasLast:
		w.Last = f
	case HasResets:
		w.Resets = f
	}
}

// window returns the window of the cell index (ending at end), adding it
// the first time.
func (d *Decoder) window(index int, end int64) *DecodedWindow {
	if index >= len(d.at) {
		d.at = append(d.at, make([]int32, index+1-len(d.at))...)
	}
	if i := d.at[index]; i > 0 {
		return &d.out[i-1]
	}
	d.out = append(d.out, DecodedWindow{Window: Window{End: end}})
	d.at[index] = int32(len(d.out))
	return &d.out[len(d.out)-1]
}

// decodeInt decodes an integer cell value (a float is taken when it is
// integral, as a TSD casts a float count).
func decodeInt(flags byte, b []byte) (int64, error) {
	if flags&mapping.FlagFloat != 0 {
		v, err := mapping.DecodeValue(flags, b)
		if err != nil {
			return 0, err
		}
		if v != math.Trunc(v) || math.Abs(v) >= 0x1p63 {
			return 0, fmt.Errorf("%w: %v is not an integer", errMalformed, v)
		}
		return int64(v), nil
	}
	if want := mapping.ValueLen(flags); len(b) != want {
		return 0, fmt.Errorf("%w: flags %#x declare %d bytes, got %d", errMalformed, flags, want, len(b))
	}
	switch len(b) {
	case 1:
		return int64(int8(b[0])), nil
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("%w: %d-byte integer", errMalformed, len(b))
}
