package rollup_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"testing"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// windowCells returns the cells of two windows (index 3 and 40) of the
// default ids, sorted by qualifier, as a run holds them.
func windowCells(t testing.TB) []store.Cell {
	t.Helper()
	c := rollup.NewCells(rollup.IDs{Sum: 0, Count: 1, Max: 2, Min: 3})
	var cells []store.Cell
	var err error
	for _, w := range []rollup.Window{
		{End: 4 * 300_000, Count: 20, Sum: 12.5, Min: -1, Max: 3.25, FirstT: 3*300_000 + 15_000, LastT: 4 * 300_000, First: 1, Last: 0.5, Resets: 7},
		{End: 41 * 300_000, Count: 1, Sum: math.NaN(), Min: math.NaN(), Max: math.NaN(), FirstT: 41*300_000 - 1, LastT: 41*300_000 - 1, First: math.NaN(), Last: math.NaN(), Histograms: 2},
	} {
		index := int(w.End/300_000) - 1
		if cells, err = c.Append(cells, index, 300_000, &w, 1700000000123); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(cells, func(a, b store.Cell) int { return bytes.Compare(a.Qualifier, b.Qualifier) })
	return cells
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name   string
		mut    func([]store.Cell)
		format byte
	}{
		{"one Put", func([]store.Cell) {}, rollup.DenseFormat},
		{"two Puts", func(c []store.Cell) { c[3].Timestamp-- }, rollup.DenseFormat},
		{"not shortest", func(c []store.Cell) {
			c[0].Qualifier[2] |= mapping.FlagFloat | 0x7
			c[0].Value = binary.BigEndian.AppendUint64(nil, math.Float64bits(12.5))
		}, rollup.CodecFormat},
	} {
		t.Run(c.name, func(t *testing.T) {
			cells := windowCells(t)
			c.mut(cells)
			testCodecRoundTrip(t, cells, c.format)
		})
	}
}

func testCodecRoundTrip(t *testing.T, cells []store.Cell, format byte) {
	t.Helper()
	var codec rollup.Codec
	v, ok := codec.Encode(nil, nil, cells)
	if !ok {
		t.Fatal("Encode refused the cells of two windows")
	}
	if v[0] != format {
		t.Errorf("format %#x, want %#x", v[0], format)
	}
	if codec.Family(v) != rollup.Family {
		t.Errorf("Family %q", codec.Family(v))
	}
	got, _, err := codec.Decode(nil, nil, nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cells) {
		t.Fatalf("%d cells back, want %d", len(got), len(cells))
	}
	for i := range cells {
		if !bytes.Equal(got[i].Family, cells[i].Family) || !bytes.Equal(got[i].Qualifier, cells[i].Qualifier) ||
			!bytes.Equal(got[i].Value, cells[i].Value) || got[i].Timestamp != cells[i].Timestamp {
			t.Errorf("cell %d: %x=%x@%d, want %x=%x@%d", i, got[i].Qualifier, got[i].Value, got[i].Timestamp,
				cells[i].Qualifier, cells[i].Value, cells[i].Timestamp)
		}
	}
	// The packed run decodes to the same windows as its cells.
	iv, _ := rollup.Default().Interval("5m")
	d := rollup.NewDecoder(rollup.IDs{Sum: 0, Count: 1, Max: 2, Min: 3})
	fromCells, err := d.Decode(iv, 0, cells, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(fromCells)
	fromPacked, err := d.Decode(iv, 0, []store.Cell{{Value: v}}, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || len(fromPacked) != 2 {
		t.Fatalf("%d windows from cells, %d packed, want 2", len(want), len(fromPacked))
	}
	for i := range want {
		a, b := want[i], fromPacked[i]
		if a.End != b.End || a.Has != b.Has || a.Count != b.Count || a.FirstT != b.FirstT || a.LastT != b.LastT || a.Histograms != b.Histograms ||
			!sameFloat(a.Sum, b.Sum) || !sameFloat(a.Min, b.Min) || !sameFloat(a.Last, b.Last) || !sameFloat(a.Resets, b.Resets) {
			t.Errorf("window %d: packed %+v, cells %+v", i, b, a)
		}
	}
}

func TestCodecRefuses(t *testing.T) {
	for name, mut := range map[string]func([]store.Cell) []store.Cell{
		"other family":   func(c []store.Cell) []store.Cell { c[0].Family = []byte("x"); return c },
		"long qualifier": func(c []store.Cell) []store.Cell { c[1].Qualifier = append(c[1].Qualifier, 0); return c },
		"value length":   func(c []store.Cell) []store.Cell { c[2].Value = append(c[2].Value, 0); return c },
		"index twice":    func(c []store.Cell) []store.Cell { return append(c[:2:2], c[1]) },
		"no cell":        func([]store.Cell) []store.Cell { return nil },
		"3-byte int value": func(c []store.Cell) []store.Cell {
			c[0].Qualifier[2] = c[0].Qualifier[2]&0xF0 | 0x2
			c[0].Value = []byte{1, 2, 3}
			return c
		},
	} {
		t.Run(name, func(t *testing.T) {
			cells := windowCells(t)
			for i := range cells {
				cells[i].Qualifier = bytes.Clone(cells[i].Qualifier)
			}
			if _, ok := (&rollup.Codec{}).Encode(nil, nil, mut(cells)); ok {
				t.Error("Encode packed it")
			}
		})
	}
}

// TestCodecGolden pins the two packed forms of one cell, value 42 at
// index 26 of aggregation id 0 (sum), version 1700000000123.
//
// Dense (DenseFormat), as promhbase writes the cell (a 1-byte integer):
//
//	a2                  DenseFormat
//	fbd095ffbc31        uvarint version 1700000000123
//	00                  aggregation id 0
//	07                  the group's length after this byte
//	01                  one cell
//	1a                  first index 26
//	00                  indexes consecutive
//	02                  float column mode 2, XOR
//	06 4045             control (no leading, 6 trailing zero bytes), the
//	                    bytes of float64 42 (0x4045000000000000)
//
// Generic (CodecFormat), when the cell is not in its shortest form (42 on
// 4 bytes):
//
//	a1                  CodecFormat
//	0000018bcfe5687b    version 1700000000123
//	00                  aggregation id 0 (sum)
//	08                  the group's length after this byte
//	01                  one cell
//	1a                  index 26
//	03                  flags 3 (4-byte integer)
//	0000002a            value 42
//	00                  version delta 0
func TestCodecGolden(t *testing.T) {
	q, v, err := mapping.AppendRollupCell(nil, 0, 26, 42)
	if err != nil {
		t.Fatal(err)
	}
	long := []byte{q[0], q[1], q[2]&0xF0 | mapping.FlagsInt32}
	for _, c := range []struct {
		name string
		q, v []byte
		want string
	}{
		{"dense", q, v, "a2fbd095ffbc310007011a0002064045"},
		{"generic", long, []byte{0, 0, 0, 42}, "a10000018bcfe5687b0008011a030000002a00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cell := store.Cell{Family: []byte("t"), Qualifier: c.q, Value: c.v, Timestamp: 1700000000123}
			var codec rollup.Codec
			got, ok := codec.Encode(nil, nil, []store.Cell{cell})
			if !ok {
				t.Fatal("refused")
			}
			if hex.EncodeToString(got) != c.want {
				t.Errorf("packed %x, want %s", got, c.want)
			}
			back, _, err := codec.Decode(nil, nil, nil, got)
			if err != nil || len(back) != 1 || !bytes.Equal(back[0].Qualifier, c.q) || !bytes.Equal(back[0].Value, c.v) || back[0].Timestamp != cell.Timestamp {
				t.Errorf("decoded %v, %v; want %x=%x", back, err, c.q, c.v)
			}
		})
	}
}

// FuzzCodecDecode: Decode never panics, and what it decodes packs back
// to the same bytes.
func FuzzCodecDecode(f *testing.F) {
	cells := windowCells(f)
	v, _ := (&rollup.Codec{}).Encode(nil, nil, cells)
	f.Add(v)
	cells[3].Timestamp--
	v, _ = (&rollup.Codec{}).Encode(nil, nil, cells)
	f.Add(v)
	f.Add([]byte{0xa2, 0xfb, 0xd0, 0x95, 0xff, 0xbc, 0x31, 0, 7, 1, 0x1a, 0, 2, 6, 0x40, 0x45})
	f.Add([]byte{0xa1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 5, 1, 0x1a, 0, 42, 0})
	iv, _ := rollup.Default().Interval("1h")
	f.Fuzz(func(t *testing.T, v []byte) {
		var codec rollup.Codec
		got, _, err := codec.Decode(nil, nil, nil, v)
		d := rollup.NewDecoder(rollup.IDs{Sum: 0, Count: 1, Max: 2, Min: 3})
		_, derr := d.Decode(iv, 1700000000/2678400*2678400, []store.Cell{{Value: v}}, math.MinInt64, math.MaxInt64)
		if err != nil {
			return
		}
		if derr != nil && !containsBadValue(got) {
			t.Errorf("cells decode, windows do not: %v", derr)
		}
		// What decodes packs again (densely when it can be), to the same
		// cells.
		again, ok := codec.Encode(nil, nil, got)
		if !ok {
			t.Fatalf("cells of %x do not pack again", v)
		}
		back, _, err := codec.Decode(nil, nil, nil, again)
		if err != nil || len(back) != len(got) {
			t.Fatalf("re-encoded %x: %d cells, %v; want %d", again, len(back), err, len(got))
		}
		for i := range got {
			a, b := got[i], back[i]
			if !bytes.Equal(a.Family, b.Family) || !bytes.Equal(a.Qualifier, b.Qualifier) || !bytes.Equal(a.Value, b.Value) || a.Timestamp != b.Timestamp {
				t.Errorf("cell %d: %x=%x@%d after re-encoding, was %x=%x@%d", i, b.Qualifier, b.Value, b.Timestamp, a.Qualifier, a.Value, a.Timestamp)
			}
		}
	})
}

// containsBadValue reports whether a cell holds what Decoder refuses: a
// float in an integer aggregate.
func containsBadValue(cells []store.Cell) bool {
	for _, c := range cells {
		if c.Qualifier[2]&mapping.FlagFloat != 0 && (c.Qualifier[0] == 1 || c.Qualifier[0] >= 67) {
			return true
		}
	}
	return false
}

// dayRun returns the cells of one day of 5m windows (288) of a counter
// sampled every 15 s, as the builder writes them in one Put each hour.
func dayRun(tb testing.TB) []store.Cell {
	tb.Helper()
	c := rollup.NewCells(rollup.IDs{Sum: 0, Count: 1, Max: 2, Min: 3})
	var cells []store.Cell
	v := 1000.0
	for index := range 288 {
		end := int64(index+1) * 300_000
		w := rollup.Window{End: end}
		for t := end - 300_000 + 15_000; t <= end; t += 15_000 {
			v += float64((t/15_000)%7) * 0.25
			w.Add(t-t/15_000%3, v)
		}
		w.Finish()
		var err error
		if cells, err = c.Append(cells, index, 300_000, &w, 1700000000000+uint64(index/12)*3_600_000); err != nil {
			tb.Fatal(err)
		}
	}
	slices.SortStableFunc(cells, func(a, b store.Cell) int { return bytes.Compare(a.Qualifier[:1], b.Qualifier[:1]) })
	return cells
}

// BenchmarkCodec packs a day of 5m windows (288 × 8 cells) and reads
// them back: as cells (Decode), and as windows the way a rate query reads
// them (Decoder on the packed run), in the dense form and in the generic
// one (a cell's value widened, so that the run is not dense).
func BenchmarkCodec(b *testing.B) {
	iv, _ := rollup.Default().Interval("5m")
	for _, form := range []string{"dense", "generic"} {
		cells := dayRun(b)
		if form == "generic" {
			f := mustValue(b, cells[0])
			cells[0].Qualifier = []byte{cells[0].Qualifier[0], cells[0].Qualifier[1], cells[0].Qualifier[2] | 0xF}
			cells[0].Value = binary.BigEndian.AppendUint64(nil, math.Float64bits(f))
		}
		var codec rollup.Codec
		v, ok := codec.Encode(nil, nil, cells)
		if !ok {
			b.Fatal("refused")
		}
		b.Logf("%s: %d cells in %d bytes", form, len(cells), len(v))
		b.Run(form+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				dst, _ = codec.Encode(dst[:0], nil, cells)
			}
		})
		b.Run(form+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			var dst []store.Cell
			var buf []byte
			for b.Loop() {
				var err error
				if dst, buf, err = codec.Decode(dst[:0], buf[:0], nil, v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(form+"/windows", func(b *testing.B) {
			b.ReportAllocs()
			d := rollup.NewDecoder(rollup.IDs{Sum: 0, Count: 1, Max: 2, Min: 3})
			d.Want = rollup.HasCount | rollup.HasFirst | rollup.HasLast | rollup.HasResets | rollup.HasTimes
			packed := []store.Cell{{Value: v}}
			for b.Loop() {
				ws, err := d.Decode(iv, 0, packed, math.MinInt64, math.MaxInt64)
				if err != nil || len(ws) != 288 {
					b.Fatal(len(ws), err)
				}
			}
		})
	}
}

func mustValue(tb testing.TB, c store.Cell) float64 {
	tb.Helper()
	_, _, flags, _ := mapping.ParseRollupQualifier(c.Qualifier)
	f, err := mapping.DecodeValue(flags, c.Value)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}
