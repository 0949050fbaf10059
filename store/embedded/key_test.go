package embedded

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// openTSDBRow is a row key as promhbase writes them: a 3-byte metric UID,
// a 4-byte hour and ten tag pairs of 3-byte UIDs. Small UIDs are mostly
// zero bytes, each of which the key encoding escapes.
func openTSDBRow() []byte {
	row := []byte{0, 0, 7}
	row = binary.BigEndian.AppendUint32(row, 1_700_000_000/3600*3600)
	for i := range 10 {
		row = append(row, 0, 0, byte(i+1), 0, byte(i), byte(200+i))
	}
	return row
}

func TestKeyRoundTrip(t *testing.T) {
	for _, row := range [][]byte{
		openTSDBRow(),
		{0},
		{0, 0, 0},
		{0xFF, 0, 0xFF},
		{1, 2, 3},
		{0, 1, 0, 0xFF, 0, 0},
	} {
		k := appendCellKey(nil, "tsdb", row, []byte("t"), []byte{0x01, 0x02})
		rest, ok := bytes.CutPrefix(k, []byte("tsdb\x00"))
		if !ok {
			t.Fatalf("key %x: no table prefix", k)
		}
		got, fam, qual, err := splitKey(rest, nil)
		if err != nil || !bytes.Equal(got, row) || string(fam) != "t" || !bytes.Equal(qual, []byte{1, 2}) {
			t.Errorf("row %x: key %x decodes to %x %q %x, %v", row, k, got, fam, qual, err)
		}
		if want := escapeSlow(row); !bytes.Equal(appendEscapedPrefix(nil, "", row)[1:], want) {
			t.Errorf("row %x: escaped %x, want %x", row, appendEscapedPrefix(nil, "", row)[1:], want)
		}
	}
}

// escapeSlow is the key encoding's definition: every 0x00 of the row
// followed by 0xFF.
func escapeSlow(row []byte) []byte {
	var out []byte
	for _, c := range row {
		out = append(out, c)
		if c == 0 {
			out = append(out, 0xFF)
		}
	}
	return out
}

func BenchmarkCellKey(b *testing.B) {
	row, fam, qual := openTSDBRow(), []byte("t"), []byte{0x01, 0x02}
	var k []byte
	b.ReportAllocs()
	for b.Loop() {
		k = appendCellKey(k[:0], "tsdb", row, fam, qual)
	}
}

func BenchmarkSplitKey(b *testing.B) {
	k := appendCellKey(nil, "tsdb", openTSDBRow(), []byte("t"), []byte{0x01, 0x02})
	rest := k[len("tsdb\x00"):]
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		row, _, _, err := splitKey(rest, buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = row
	}
}

// FuzzSplitKey: decoding any bytes never panics, and what decodes
// re-encodes to the same bytes; any row escapes as the encoding defines
// it (escapeSlow: the stored keys' format); any row, family (without 0x00)
// and qualifier survive encoding and decoding.
func FuzzSplitKey(f *testing.F) {
	f.Add(appendCellKey(nil, "", openTSDBRow(), []byte("t"), []byte{1, 2})[1:], []byte{0, 0, 1}, []byte("t"), []byte{})
	f.Add([]byte{0, 0xFF, 0, 1, 't', 0}, []byte{0xFF}, []byte("name"), []byte("id"))
	f.Add([]byte{0}, []byte{}, []byte("x"), []byte{0})
	f.Add([]byte{0, 2}, []byte{0, 0}, []byte("t"), []byte{0xFF, 0})
	f.Fuzz(func(t *testing.T, rest, row, family, qualifier []byte) {
		if r, fam, qual, err := splitKey(rest, nil); err == nil {
			if again := appendCellKey(nil, "", r, fam, qual)[1:]; !bytes.Equal(again, rest) {
				t.Errorf("%x decodes to %x %x %x, which encode to %x", rest, r, fam, qual, again)
			}
		}
		if got, want := appendEscapedPrefix(nil, "", row)[1:], escapeSlow(row); !bytes.Equal(got, want) {
			t.Errorf("row %x escapes to %x, want %x", row, got, want)
		}
		if bytes.IndexByte(family, 0) >= 0 {
			return
		}
		k := appendCellKey(nil, "tsdb", row, family, qualifier)
		r, fam, qual, err := splitKey(k[len("tsdb\x00"):], nil)
		if err != nil || !bytes.Equal(r, row) || !bytes.Equal(fam, family) || !bytes.Equal(qual, qualifier) {
			t.Errorf("%x %x %x encode to %x, which decodes to %x %x %x, %v", row, family, qualifier, k, r, fam, qual, err)
		}
	})
}
