package embedded

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
)

// compacted returns an OpenTSDB compacted column of n float64 samples a
// second apart (4-byte millisecond qualifiers, meta byte 0x00), family t.
func compacted(n int, ts uint64) store.Cell {
	var q, v []byte
	for i := range n {
		q = binary.BigEndian.AppendUint32(q, 0xF0000000|uint32(i*1000)<<6|0xF)
		v = binary.BigEndian.AppendUint64(v, math.Float64bits(float64(i)+0.5))
	}
	return store.Cell{Family: []byte("t"), Qualifier: q, Value: append(v, 0), Timestamp: ts}
}

// TestScanPacked: a scan that takes packed cells (ScanRequest.Packed)
// gets a row that is one packed run, and nothing else, as one packed cell
// holding the run's bytes, which decode to the row's cell; rows with
// anything else (cells the row buffer holds, a generic run, cell keys)
// come as cells; the family filter holds; other scans see cells only.
func TestScanPacked(t *testing.T) {
	ctx := t.Context()
	codec := &dense.Pool{}
	s, err := Open(t.TempDir(), Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"},
		RowCodecs: map[string]RowCodec{"d": codec}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	col := compacted(5, 77)
	x := store.Cell{Family: []byte("x"), Qualifier: []byte{1}, Value: []byte{2}, Timestamp: 9}
	puts := []store.Put{
		{Row: []byte("r1"), Cells: []store.Cell{col}},    // packed
		{Row: []byte("r2"), Cells: []store.Cell{col, x}}, // two columns: generic run
		{Row: []byte("r4"), Cells: []store.Cell{col}},    // packed, then a newer cell in the buffer
	}
	if err := s.Put(ctx, "d", puts); err != nil {
		t.Fatal(err)
	}
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	late := compacted(1, 99)
	late.Qualifier = []byte{0xF0, 0x3E, 0x80, 0x0F} // 64 s
	if err := s.Put(ctx, "d", []store.Put{{Row: []byte("r4"), Cells: []store.Cell{late}}}); err != nil {
		t.Fatal(err)
	}
	want := dump(t, s, "d")

	scan := func(req store.ScanRequest) map[string][]store.Cell {
		t.Helper()
		sc := s.Scan(ctx, req)
		defer sc.Close()
		got := map[string][]store.Cell{}
		for sc.Next() {
			r := sc.Row()
			for _, c := range r.Cells {
				got[string(r.Key)] = append(got[string(r.Key)], store.Cell{Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier), Value: bytes.Clone(c.Value), Timestamp: c.Timestamp})
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, family := range []string{"", "t"} {
		got := scan(store.ScanRequest{Table: "d", Family: family, Packed: dense.Format})
		r1 := got["r1"]
		if len(r1) != 1 || !r1[0].Packed() || r1[0].Timestamp != 0 {
			t.Fatalf("family %q: row r1 = %s, want one packed cell", family, cellString(r1))
		}
		dec, _, err := codec.Decode(nil, nil, []byte("r1"), r1[0].Value)
		if err != nil || len(dec) != 1 || !bytes.Equal(dec[0].Qualifier, col.Qualifier) || !bytes.Equal(dec[0].Value, col.Value) || dec[0].Timestamp != col.Timestamp {
			t.Fatalf("family %q: packed cell decodes to %s, %v", family, cellString(dec), err)
		}
		for _, row := range []string{"r2", "r4"} {
			for _, c := range got[row] {
				if c.Packed() {
					t.Errorf("family %q: row %s came packed: %s", family, row, cellString(got[row]))
				}
			}
		}
		if n := len(got["r4"]); n != 2 {
			t.Errorf("family %q: row r4 has %d cells, want the column and the buffered cell", family, n)
		}
	}
	if got := scan(store.ScanRequest{Table: "d", Family: "x", Packed: dense.Format}); len(got) != 1 || len(got["r2"]) != 1 {
		t.Errorf("family x, packed: rows %v, want r2's cell only", got)
	}
	if got := scan(store.ScanRequest{Table: "d", Packed: 0x01}); len(got["r1"]) != 1 || got["r1"][0].Packed() {
		t.Errorf("another packed format: row r1 = %s, want its cell", cellString(got["r1"]))
	}
	if got := dump(t, s, "d"); got != want {
		t.Errorf("plain scan changed:\n%s\nwant:\n%s", got, want)
	}
}
