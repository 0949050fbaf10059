package dense

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// testRow is a row key of the default layout (3-byte UIDs, no salt) at
// base time 1700002800 (an hour boundary).
var testRow = []byte{0, 0, 1, 0x65, 0x53, 0xF1, 0xF0, 0, 0, 1, 0, 0, 2}

// pt is one sample of a hand-built column: a 2-byte second qualifier when
// sec, else a 4-byte millisecond one; flags and the value bytes as stored.
type pt struct {
	sec   bool
	off   int64 // seconds when sec, else milliseconds
	flags byte
	val   []byte
}

// column builds the qualifier and value of a column of pts; meta < 0
// leaves the meta byte out, else it is appended.
func column(pts []pt, meta int) (q, v []byte) {
	for _, p := range pts {
		if p.sec {
			q = binary.BigEndian.AppendUint16(q, uint16(p.off)<<4|uint16(p.flags))
		} else {
			q = mapping.AppendMsQualifier(q, uint32(p.off), p.flags)
		}
		v = append(v, p.val...)
	}
	if meta >= 0 {
		v = append(v, byte(meta))
	}
	return q, v
}

// cellOf wraps a column into the one cell of a row.
func cellOf(q, v []byte, ts uint64) []store.Cell {
	return []store.Cell{{Family: []byte("t"), Qualifier: q, Value: v, Timestamp: ts}}
}

// f64 and the others give a sample's value bytes and flags.
func f64(x float64) (byte, []byte) {
	return mapping.FlagsFloat64, binary.BigEndian.AppendUint64(nil, math.Float64bits(x))
}

func f32(x float32) (byte, []byte) {
	return mapping.FlagsFloat32, binary.BigEndian.AppendUint32(nil, math.Float32bits(x))
}

func f32bits(b uint32) (byte, []byte) {
	return mapping.FlagsFloat32, binary.BigEndian.AppendUint32(nil, b)
}

// intN gives an integer on exactly n bytes (1, 2, 4 or 8).
func intN(v int64, n int) (byte, []byte) {
	b := binary.BigEndian.AppendUint64(nil, uint64(v))
	return byte(n - 1), b[8-n:]
}

// msPt and secPt build samples from a value helper's results.
func msPt(off int64, flags byte, val []byte) pt { return pt{off: off, flags: flags, val: val} }
func secPt(off int64, flags byte, val []byte) pt {
	return pt{sec: true, off: off, flags: flags, val: val}
}

// floatRow builds the compacted column promhbase writes for vs at ts (ms
// offsets) through package mapping (which picks the shortest exact value
// encoding), or with every value as an 8-byte float when raw.
func floatRow(ts []int64, vs []float64, raw bool) (q, v []byte) {
	if !raw {
		pts := make([]mapping.Point, len(ts))
		for i := range ts {
			pts[i] = mapping.Point{T: 1700002800000 + ts[i], V: vs[i]}
		}
		return mapping.AppendCompacted(nil, nil, 1700002800, pts)
	}
	for i := range ts {
		q = mapping.AppendMsQualifier(q, uint32(ts[i]), mapping.FlagsFloat64)
		v = binary.BigEndian.AppendUint64(v, math.Float64bits(vs[i]))
	}
	if len(ts) > 1 {
		v = append(v, 0)
	}
	return q, v
}

// roundTrip encodes cells, requires ok == wantOK, and when packed
// decodes and compares; it returns the dense value.
func roundTrip(t testing.TB, c *Codec, cells []store.Cell, wantOK bool) []byte {
	t.Helper()
	prefix := []byte("prefix")
	enc, ok := c.Encode(bytes.Clone(prefix), testRow, cells)
	if ok != wantOK {
		t.Fatalf("Encode ok = %v, want %v", ok, wantOK)
	}
	if !bytes.HasPrefix(enc, prefix) {
		t.Fatalf("Encode lost dst's bytes: %X", enc)
	}
	if !ok {
		if len(enc) != len(prefix) {
			t.Fatalf("Encode refused but appended %X", enc[len(prefix):])
		}
		return nil
	}
	d := enc[len(prefix):]
	if !IsDense(d) {
		t.Fatalf("dense value %X does not start with Format", d)
	}
	before := store.Cell{Family: []byte("x")}
	buf := []byte("buf")
	got, nbuf, err := (&Codec{}).Decode([]store.Cell{before}, buf, testRow, d)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(got) != 2 || string(got[0].Family) != "x" || !bytes.HasPrefix(nbuf, []byte("buf")) {
		t.Fatalf("Decode did not append: %d cells, buf %q...", len(got), nbuf[:min(3, len(nbuf))])
	}
	g, w := got[1], cells[0]
	if !bytes.Equal(g.Family, w.Family) || !bytes.Equal(g.Qualifier, w.Qualifier) ||
		!bytes.Equal(g.Value, w.Value) || g.Timestamp != w.Timestamp {
		t.Fatalf("round trip:\n got %s %X %X @%d\nwant %s %X %X @%d",
			g.Family, g.Qualifier, g.Value, g.Timestamp, w.Family, w.Qualifier, w.Value, w.Timestamp)
	}
	checkPoints(t, d, g)
	return d
}

// checkPoints requires AppendPoints of d to give, after dst's own points,
// exactly the points mapping.AppendPoints reads from cell (the cell Decode
// gives for d; times equal, values bit for bit) and cell's version.
func checkPoints(t testing.TB, d []byte, cell store.Cell) {
	t.Helper()
	checkFused(t, d)
	const base = 1700002800
	want, err := mapping.AppendPoints(nil, base, cell.Qualifier, cell.Value)
	if err != nil {
		t.Fatalf("mapping.AppendPoints of the decoded cell: %v", err)
	}
	mark := mapping.Point{T: -1, V: 42}
	got, ts, err := (&Codec{}).AppendPoints([]mapping.Point{mark}, base, d)
	if err != nil {
		t.Fatalf("AppendPoints: %v", err)
	}
	if ts != cell.Timestamp {
		t.Fatalf("AppendPoints version %d, want %d", ts, cell.Timestamp)
	}
	if len(got) != len(want)+1 || got[0] != mark {
		t.Fatalf("AppendPoints gave %d points after dst's, want %d", len(got)-1, len(want))
	}
	if n := Samples(d); n != len(want) {
		t.Fatalf("Samples says %d, the value holds %d", n, len(want))
	}
	for i, w := range want {
		g := got[i+1]
		if g.T != w.T || math.Float64bits(g.V) != math.Float64bits(w.V) {
			t.Fatalf("point %d: got %d %x, want %d %x", i, g.T, math.Float64bits(g.V), w.T, math.Float64bits(w.V))
		}
	}
}

// checkFused checks that when the one-pass decoder takes d, the general
// path (unpack) takes it too and gives the same points and version, bit
// for bit.
func checkFused(t testing.TB, d []byte) {
	t.Helper()
	const base = 1700002800
	mark := mapping.Point{T: -1, V: 42}
	got, ts, asc, ok := (&Codec{}).appendFused([]mapping.Point{mark}, base, d)
	if !ok {
		if len(got) != 1 || got[0] != mark {
			t.Fatalf("appendFused refused and changed dst")
		}
		return
	}
	want, wts, err := (&Codec{}).appendUnpacked([]mapping.Point{mark}, base, d)
	if err != nil {
		t.Fatalf("appendFused took a value the general path refuses: %v", err)
	}
	if ts != wts || len(got) != len(want) {
		t.Fatalf("appendFused: %d points at version %d, general path %d at %d", len(got), ts, len(want), wts)
	}
	wantAsc := true
	for i, w := range want {
		if g := got[i]; g.T != w.T || math.Float64bits(g.V) != math.Float64bits(w.V) {
			t.Fatalf("appendFused point %d: %d %x, general path %d %x", i, g.T, math.Float64bits(g.V), w.T, math.Float64bits(w.V))
		}
		if i > 1 && w.T <= want[i-1].T {
			wantAsc = false
		}
	}
	if asc != wantAsc {
		t.Fatalf("appendFused: ascending %v, want %v", asc, wantAsc)
	}
}
