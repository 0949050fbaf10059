package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

// toyCodec is a RowCodec for tests: it packs rows of at most toyMaxCells
// cells of one family, as
//
//	crc32(row) u32 ‖ uvarint len(family) ‖ family ‖ per cell:
//	uvarint len(qualifier) ‖ qualifier ‖ ts u64 ‖ uvarint len(value) ‖ value
//
// with every byte of qualifiers and values inverted, so that Decode must
// build them in buf (the cells alias buf, never v), and it refuses a v
// whose crc is not the row's (a read that passes the wrong row fails).
type toyCodec struct{}

const toyMaxCells = 4

func (toyCodec) Encode(dst, row []byte, cells []store.Cell) ([]byte, bool) {
	if len(cells) == 0 || len(cells) > toyMaxCells {
		return dst, false
	}
	for _, c := range cells[1:] {
		if !bytes.Equal(c.Family, cells[0].Family) {
			return dst, false
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(row))
	dst = appendBytes(dst, cells[0].Family)
	inverted := func(dst, b []byte) []byte {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		for _, x := range b {
			dst = append(dst, ^x)
		}
		return dst
	}
	for _, c := range cells {
		dst = inverted(dst, c.Qualifier)
		dst = binary.BigEndian.AppendUint64(dst, c.Timestamp)
		dst = inverted(dst, c.Value)
	}
	return dst, true
}

func (toyCodec) Family(v []byte) string {
	if len(v) < 4 {
		return ""
	}
	r := walReader{b: v[4:]}
	f := r.bytes()
	if r.err != nil {
		return ""
	}
	return string(f)
}

func (toyCodec) Decode(dst []store.Cell, buf, row, v []byte) ([]store.Cell, []byte, error) {
	if len(v) < 4 || binary.LittleEndian.Uint32(v) != crc32.ChecksumIEEE(row) {
		return dst, buf, errors.New("toy codec: not this row's")
	}
	r := walReader{b: v[4:]}
	family := r.bytes()
	// Every cell's bytes are built in buf first, the cells made from it
	// once it stops moving.
	type at struct{ q, v, end int }
	var spans []at
	var ts []uint64
	for r.err == nil && len(r.b) > 0 {
		var s at
		s.q = len(buf)
		for _, x := range r.bytes() {
			buf = append(buf, ^x)
		}
		s.v = len(buf)
		if len(r.b) < 8 {
			return dst, buf, errors.New("toy codec: short timestamp")
		}
		ts = append(ts, binary.BigEndian.Uint64(r.b))
		r.b = r.b[8:]
		for _, x := range r.bytes() {
			buf = append(buf, ^x)
		}
		s.end = len(buf)
		spans = append(spans, s)
	}
	if r.err != nil {
		return dst, buf, fmt.Errorf("toy codec: %w", r.err)
	}
	for i, s := range spans {
		dst = append(dst, store.Cell{Family: family, Qualifier: buf[s.q:s.v:s.v], Value: buf[s.v:s.end:s.end], Timestamp: ts[i]})
	}
	return dst, buf, nil
}

// runFormats returns how many runs of each format table holds in Pebble.
func runFormats(t *testing.T, s *Store, table string) map[byte]int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(table + "\x00"), UpperBound: []byte(table + "\x01")})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := map[byte]int{}
	for ok := it.First(); ok; ok = it.Next() {
		_, n, err := splitRow(it.Key()[len(table)+1:], nil)
		if err != nil {
			t.Fatal(err)
		}
		if isRunColumn(it.Key()[len(table)+1+n:]) {
			got[it.Value()[0]]++
		}
	}
	return got
}

// TestRowCodecRuns: a flush packs the rows the table's codec takes (format
// 2) and writes the others as before (format 1); scans, Get, GetCell(s)
// and deletes read both; a column delete packs what is left again; the
// runs read back after a reopen with the codec, and not without it.
func TestRowCodecRuns(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	opts := Options{NoSync: true, Tables: []string{"d"}, BufferTables: []string{"d"}, RowCodecs: map[string]RowCodec{"d": toyCodec{}}}
	s := mustOpen(t, dir, opts)
	cell := func(f string, q, v byte) store.Cell {
		return store.Cell{Family: []byte(f), Qualifier: []byte{q, 0}, Value: []byte{v, 0xFF, v}, Timestamp: 1000 + uint64(q)}
	}
	puts := []store.Put{
		{Row: []byte("a\x00"), Cells: []store.Cell{cell("t", 1, 1), cell("t", 2, 2)}},                                                // packed
		{Row: []byte("b"), Cells: []store.Cell{cell("t", 1, 1), cell("x", 2, 2)}},                                                    // two families: format 1
		{Row: []byte("c"), Cells: []store.Cell{cell("t", 1, 1), cell("t", 2, 2), cell("t", 3, 3), cell("t", 4, 4), cell("t", 5, 5)}}, // too many: format 1
		{Row: []byte("d"), Cells: []store.Cell{cell("t", 9, 9)}},                                                                     // packed
	}
	if err := s.Put(ctx, "d", puts); err != nil {
		t.Fatal(err)
	}
	want := dump(t, s, "d")
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	if got := runFormats(t, s, "d"); got[runFormat] != 2 || got[runFormatCodec] != 2 {
		t.Fatalf("runs by format %v, want 2 of each", got)
	}
	// Format 2: the format byte, then the codec's bytes.
	packed, _ := toyCodec{}.Encode(nil, puts[3].Row, puts[3].Cells)
	if v, closer, err := s.db.Get(appendRunKey(nil, "d", puts[3].Row, 1)); err != nil || !bytes.Equal(v, append([]byte{runFormatCodec}, packed...)) {
		t.Errorf("run of row d = %x, %v; want 02 ‖ %x", v, err, packed)
	} else {
		closer.Close()
	}
	// A second flush over the same rows: runs of both formats laid over
	// each other.
	if err := s.Put(ctx, "d", []store.Put{{Row: []byte("a\x00"), Cells: []store.Cell{cell("t", 2, 7), cell("t", 3, 3)}}}); err != nil {
		t.Fatal(err)
	}
	want2 := dump(t, s, "d")
	if err := s.rb.flush(); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s, "d"); got != want2 || got == want {
		t.Fatalf("after the flushes:\n%s\nwant:\n%s", got, want2)
	}
	// One family of a row packed, of one in format 1.
	for _, row := range []string{"a\x00", "b"} {
		r, err := s.Get(ctx, "d", []byte(row), "t")
		if err != nil || len(r.Cells) == 0 {
			t.Fatalf("get %q family t: %v %v", row, cellString(r.Cells), err)
		}
		for _, c := range r.Cells {
			if string(c.Family) != "t" {
				t.Errorf("get %q family t: cell of family %s", row, c.Family)
			}
		}
	}
	if v, ok, err := s.GetCell(ctx, "d", []byte("a\x00"), "t", "\x02\x00"); err != nil || !ok || !bytes.Equal(v, []byte{7, 0xFF, 7}) {
		t.Errorf("GetCell of a packed run = %x %v %v", v, ok, err)
	}
	vals, found := make([][]byte, 2), make([]bool, 2)
	if err := s.GetCells(ctx, "d", [][]byte{[]byte("d"), []byte("zz")}, "t", "\x09\x00", vals, found); err != nil || !found[0] || found[1] || !bytes.Equal(vals[0], []byte{9, 0xFF, 9}) {
		t.Errorf("GetCells = %x %v %v", vals, found, err)
	}
	// A column of a packed run deleted: the run is packed again.
	if err := s.Delete(ctx, "d", []byte("d"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "d", []byte("a\x00"), []store.Column{{Family: []byte("t"), Qualifier: []byte{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	if got := runFormats(t, s, "d"); got[runFormatCodec] != 2 {
		t.Errorf("runs by format %v after the deletes, want 2 packed (row a's two)", got)
	}
	want3 := dump(t, s, "d")
	if want3 != fmt.Sprintf("%x: t:0200=07ff07@1002 t:0300=03ff03@1003\n%x: t:0100=01ff01@1001 x:0200=02ff02@1002\n%x: t:0100=01ff01@1001 t:0200=02ff02@1002 t:0300=03ff03@1003 t:0400=04ff04@1004 t:0500=05ff05@1005\n",
		"a\x00", "b", "c") {
		t.Errorf("after the deletes:\n%s", want3)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, opts)
	if got := dump(t, s, "d"); got != want3 {
		t.Errorf("after reopening:\n%s\nwant:\n%s", got, want3)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Without the codec the packed runs cannot be read: an error, not
	// cells.
	opts.RowCodecs = nil
	s = mustOpen(t, dir, opts)
	defer s.Close()
	sc := s.Scan(ctx, store.ScanRequest{Table: "d"})
	for sc.Next() {
	}
	if err := sc.Err(); !errors.Is(err, errCorruptRun) {
		t.Errorf("scan without the codec: %v, want %v", err, errCorruptRun)
	}
	sc.Close()
}

// TestContractRowCodec runs the contract on a buffered table with the toy
// codec, flushing after every put, so that its reads and deletes meet
// packed runs.
func TestContractRowCodec(t *testing.T) {
	opts := Options{NoSync: true, Tables: []string{"contract"}, BufferTables: []string{"contract"}, BufferBytes: 1,
		RowCodecs: map[string]RowCodec{"contract": toyCodec{}}}
	storetest.Run(t, contractStore(opts), storetest.Options{LargeScanRows: 20_000})
}
