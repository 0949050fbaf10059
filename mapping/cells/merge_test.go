package cells

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
)

func TestMerger(t *testing.T) {
	const base = 1700002800
	ms := func(off uint32, v float64, version uint64) store.Cell {
		val, flags := mapping.AppendValue(nil, v)
		return store.Cell{Qualifier: mapping.AppendMsQualifier(nil, off, flags), Value: val, Timestamp: version}
	}
	compacted := func(version uint64, pts ...mapping.Point) store.Cell {
		q, v := mapping.AppendCompacted(nil, nil, base, pts)
		return store.Cell{Qualifier: q, Value: v, Timestamp: version}
	}
	appendCol := func(version uint64, pairs ...[2]float64) store.Cell {
		var v []byte
		for _, p := range pairs {
			val, flags := mapping.AppendValue(nil, p[1])
			v = mapping.AppendMsQualifier(v, uint32(p[0]), flags)
			v = append(v, val...)
		}
		return store.Cell{Qualifier: mapping.AppendColumnQualifier(), Value: v, Timestamp: version}
	}
	p := func(off int64, v float64) mapping.Point { return mapping.Point{T: base*1000 + off, V: v} }
	// packed is compacted's column in the embedded store's packed form,
	// as a scan with ScanRequest.Packed returns it.
	packed := func(version uint64, pts ...mapping.Point) store.Cell {
		c := compacted(version, pts...)
		c.Family = []byte("t")
		v, ok := new(dense.Codec).Encode(nil, []byte("row"), []store.Cell{c})
		if !ok {
			t.Fatal("dense refused the column")
		}
		return store.Cell{Value: v}
	}
	for _, tc := range []struct {
		name     string
		cells    []store.Cell
		from, to int64
		want     string
	}{
		{"sorted singles", []store.Cell{ms(1, 1, 5), ms(2, 2, 5)}, 0, math.MaxInt64, "[{1700002800001 1} {1700002800002 2}]"},
		{"newest version wins", []store.Cell{ms(1, 10, 9), compacted(5, p(1, 1), p(2, 2))}, 0, math.MaxInt64, "[{1700002800001 10} {1700002800002 2}]"},
		{"older version loses", []store.Cell{ms(1, 10, 4), compacted(5, p(1, 1), p(2, 2))}, 0, math.MaxInt64, "[{1700002800001 1} {1700002800002 2}]"},
		{"equal versions: the later cell wins", []store.Cell{compacted(5, p(1, 1), p(2, 2)), ms(1, 10, 5)}, 0, math.MaxInt64, "[{1700002800001 10} {1700002800002 2}]"},
		{"append column: the last appended wins", []store.Cell{appendCol(5, [2]float64{3, 1}, [2]float64{1, 7}, [2]float64{3, 2})}, 0, math.MaxInt64, "[{1700002800001 7} {1700002800003 2}]"},
		{"annotation adds nothing", []store.Cell{{Qualifier: []byte{1, 0, 1}, Value: []byte("{}"), Timestamp: 9}, ms(1, 1, 5)}, 0, math.MaxInt64, "[{1700002800001 1}]"},
		{"range is inclusive", []store.Cell{ms(1, 1, 5), ms(2, 2, 5), ms(3, 3, 5)}, base*1000 + 2, base*1000 + 3, "[{1700002800002 2} {1700002800003 3}]"},
		{"no cells", nil, 0, math.MaxInt64, "[]"},
		{"range cuts a compacted column", []store.Cell{compacted(5, p(1, 1), p(2, 2), p(3, 3)), ms(4, 4, 5)}, base*1000 + 2, base*1000 + 3, "[{1700002800002 2} {1700002800003 3}]"},
		{"cells out of time order", []store.Cell{ms(3, 3, 5), compacted(5, p(1, 1), p(2, 2))}, 0, math.MaxInt64, "[{1700002800001 1} {1700002800002 2} {1700002800003 3}]"},
		{"packed column", []store.Cell{packed(5, p(1, 1.5), p(2, 2), p(3, -3))}, 0, math.MaxInt64, "[{1700002800001 1.5} {1700002800002 2} {1700002800003 -3}]"},
		{"packed column cut by the range", []store.Cell{packed(5, p(1, 1), p(2, 2), p(3, 3))}, base*1000 + 2, base*1000 + 2, "[{1700002800002 2}]"},
		{"packed: its own version loses to a newer cell", []store.Cell{packed(5, p(1, 1), p(2, 2)), ms(2, 20, 9)}, 0, math.MaxInt64, "[{1700002800001 1} {1700002800002 20}]"},
		{"packed: its own version beats an older later cell", []store.Cell{packed(9, p(1, 1), p(2, 2)), ms(2, 20, 5)}, 0, math.MaxInt64, "[{1700002800001 1} {1700002800002 2}]"},
		{"a repeat outside the range is no repeat", []store.Cell{ms(1, 1, 5), ms(2, 2, 5), ms(1, 9, 9)}, base*1000 + 2, math.MaxInt64, "[{1700002800002 2}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Merger
			got, err := m.Merge(base, tc.cells, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("Merge = %s, want %s", s, tc.want)
			}
		})
	}
	var m Merger
	if _, err := m.Merge(base, []store.Cell{{Qualifier: []byte{0xF0, 0, 0, 7}, Value: []byte{1}}}, 0, math.MaxInt64); !errors.Is(err, mapping.ErrMalformedCell) {
		t.Errorf("malformed cell: err = %v, want ErrMalformedCell", err)
	}
	if _, err := m.Merge(base, []store.Cell{{Value: []byte{dense.Format, 0xFF}}}, 0, math.MaxInt64); !errors.Is(err, mapping.ErrMalformedCell) || !errors.Is(err, dense.ErrCorrupt) {
		t.Errorf("corrupt packed cell: err = %v, want ErrMalformedCell and dense.ErrCorrupt", err)
	}
}

// FuzzMergeFastPath checks that Merge's shortcut for rows already in
// strictly ascending time answers as the general merge of versions does,
// whatever the cells: single cells of both precisions, compacted columns,
// repeated timestamps, versions out of order, a range cutting the row.
func FuzzMergeFastPath(f *testing.F) {
	f.Add([]byte{0, 1, 5, 0, 0, 2, 5, 0}, uint16(0), uint16(0xFFFF))
	f.Add([]byte{0, 2, 5, 0, 0, 1, 5, 1, 2, 1, 9, 2}, uint16(1), uint16(3))
	f.Fuzz(func(t *testing.T, spec []byte, lo, hi uint16) {
		const base = 1700002800
		if len(spec) > 4*64 {
			return
		}
		var cells []store.Cell
		for i := 0; i+4 <= len(spec); i += 4 {
			off, version, kind := uint32(spec[i])<<4|uint32(spec[i+1]&0x0F), uint64(spec[i+2]), spec[i+3]%3
			v := float64(i)
			switch kind {
			case 0: // a millisecond cell
				val, flags := mapping.AppendValue(nil, v)
				cells = append(cells, store.Cell{Qualifier: mapping.AppendMsQualifier(nil, off, flags), Value: val, Timestamp: version})
			case 1: // a second cell
				val, flags := mapping.AppendValue(nil, v)
				q := binary.BigEndian.AppendUint16(nil, uint16(off%3600)<<4|uint16(flags))
				cells = append(cells, store.Cell{Qualifier: q, Value: val, Timestamp: version})
			default: // a compacted column of two points
				pts := []mapping.Point{{T: base*1000 + int64(off), V: v}, {T: base*1000 + int64(off) + 1 + int64(spec[i+1]>>4), V: v + 1}}
				q, val := mapping.AppendCompacted(nil, nil, base, pts)
				cells = append(cells, store.Cell{Qualifier: q, Value: val, Timestamp: version})
			}
		}
		from, to := base*1000+int64(lo)*100, base*1000+int64(hi)*100
		var fast, slow Merger
		got, err1 := fast.Merge(base, cells, from, to)
		want, err2 := slow.mergeVersions(base, cells, from, to)
		if (err1 != nil) != (err2 != nil) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Merge = %v, general merge = %v", got, want)
		}
	})
}
