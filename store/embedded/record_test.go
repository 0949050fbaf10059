package embedded

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"os"
	"path/filepath"
	"testing"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/wlog"
	"github.com/promhbase/promhbase/test/testkit/fixture"
)

// readHexFixture reads testdata/name: hex bytes, '#' comments, and @crc
// for the crc32c of segment 1's number and the payload whose length the 4
// bytes before it give.
func readHexFixture(t *testing.T, name string) []byte {
	t.Helper()
	var crcs []int
	out := fixture.Hex(t, name, func(out []byte, tok string) ([]byte, bool) {
		if tok != "@crc" {
			return out, false
		}
		crcs = append(crcs, len(out))
		return append(out, 0, 0, 0, 0), true
	})
	for _, p := range crcs {
		n := int(binary.LittleEndian.Uint32(out[p-4:]))
		if p+4+n > len(out) {
			t.Fatalf("%s: payload at %d runs past the end", name, p+4)
		}
		binary.LittleEndian.PutUint32(out[p:], wlog.CRC(1, out[p+4:p+4+n]))
	}
	return out
}

// TestWALGolden pins the log's byte layout: a put and a delete, as the
// store writes them, against testdata/rowwal.hex.
func TestWALGolden(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{NoSync: true, Tables: []string{"tsdb"}, BufferTables: []string{"tsdb"}})
	row := []byte{0, 0, 1, 0x5f, 0x5e, 0x10, 0, 0, 0, 1, 0, 0, 2}
	put := store.Put{Row: row, Cells: []store.Cell{
		{Family: []byte("t"), Qualifier: []byte{0, 0}, Value: []byte{42}, Timestamp: 1000},
		{Family: []byte("t"), Qualifier: []byte{0, 0xf0}, Value: []byte{43}, Timestamp: 1000},
	}}
	if err := s.Put(t.Context(), "tsdb", []store.Put{put}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "tsdb", row, []store.Column{{Family: []byte("t"), Qualifier: []byte{0, 0xf0}}}); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	got, err := os.ReadFile(filepath.Join(dir, rowBufferDir, wlog.SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if want := readHexFixture(t, "rowwal.hex"); !bytes.Equal(got, want) {
		t.Errorf("log segment:\n got %x\nwant %x", got, want)
	}
}

// TestWALDeleteRowsRecord pins the layout of a DeleteRows record:
// 0x03 ‖ table ‖ start ‖ stop.
func TestWALDeleteRowsRecord(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{NoSync: true, Tables: []string{"tsdb"}, BufferTables: []string{"tsdb"}})
	if err := s.DeleteRows(t.Context(), "tsdb", []byte{0, 1}, nil); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	got, err := os.ReadFile(filepath.Join(dir, rowBufferDir, wlog.SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte{walOpDeleteRows, 4, 't', 's', 'd', 'b', 2, 0, 1, 0}
	if want := wlog.AppendRecord(nil, 1, payload); !bytes.Equal(got, want) {
		t.Errorf("log segment:\n got %x\nwant %x", got, want)
	}
}

// FuzzWALReplay: any segment file replays to an error or a buffer, never
// a panic, and what a replay accepts reads back.
func FuzzWALReplay(f *testing.F) {
	seg := func(payloads ...[]byte) []byte {
		var out []byte
		for _, p := range payloads {
			out = wlog.AppendRecord(out, 1, p)
		}
		return out
	}
	put := []byte{walOpPut, 1, 'd', 1, 2, 0, 1, 1, 1, 't', 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 42}
	del := []byte{walOpDelete, 1, 'd', 2, 0, 1, 1, 1, 't', 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	f.Add(seg(put))
	f.Add(seg(put, del))
	f.Add(seg(put, []byte{walOpDeleteRows, 1, 'd', 1, 0, 0}, put))
	f.Add(seg(del, put)[:30])
	f.Add(seg([]byte{walOpPut, 1, 'd', 1, 2, 0, 1, 1, 0, 0, 0}))
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rb := &rowBuffer{tables: map[string]bool{"d": true}, seed: maphash.MakeSeed()}
		rb.setActive(rb.fresh())
		if _, err := wlog.Replay(data, 1, rb.replay); err != nil {
			return
		}
		m := rb.active["d"]
		srt := m.Sorted()
		for _, i := range srt.Order {
			_ = srt.Key(i)
			m.RLock()
			cells, _ := m.RowCells(nil, int(i))
			for _, c := range cells {
				if len(c.Family) == 0 || bytes.IndexByte(c.Family, 0) >= 0 {
					t.Fatalf("replayed a cell with family %q", c.Family)
				}
			}
			m.RUnlock()
		}
	})
}
