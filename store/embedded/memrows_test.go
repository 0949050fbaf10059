package embedded

import (
	"bytes"
	"testing"
)

// refCmpCol is the order cmpCol must give: family, then qualifier, each
// as unsigned bytes with a prefix first.
func refCmpCol(af, aq, bf, bq []byte) int {
	if c := bytes.Compare(af, bf); c != 0 {
		return c
	}
	return bytes.Compare(aq, bq)
}

func TestCmpCol(t *testing.T) {
	for _, tc := range []struct {
		name           string
		af, aq, bf, bq string
	}{
		{"same", "t", "\x00\x10", "t", "\x00\x10"},
		{"second form before millisecond form", "t", "\xff\xf0", "t", "\xf0\x00\x00\x07"},
		{"prefix first", "t", "\x01", "t", "\x01\x00"},
		{"zero padding is not equality", "t", "\x01\x00", "t", "\x01"},
		{"family first", "f", "\xff\xff", "t", "\x00"},
		{"long families", "family", "\x01", "famil", "\x02"},
		{"empty qualifier", "t", "", "t", "\x00"},
		{"nine bytes", "t", "\x01\x02\x03\x04\x05\x06\x07\x08\x09", "t", "\x01\x02\x03\x04\x05\x06\x07\x08"},
		{"eight bytes", "t", "\xff\x02\x03\x04\x05\x06\x07\x08", "t", "\x01\x02\x03\x04\x05\x06\x07\x09"},
		{"three bytes", "t", "\x06\x01\x02", "t", "\x06\x01\x02\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, swap := range []bool{false, true} {
				af, aq, bf, bq := []byte(tc.af), []byte(tc.aq), []byte(tc.bf), []byte(tc.bq)
				if swap {
					af, aq, bf, bq = bf, bq, af, aq
				}
				if got, want := cmpCol(af, aq, bf, bq), refCmpCol(af, aq, bf, bq); got != want {
					t.Errorf("cmpCol(%q %x, %q %x) = %d, want %d", af, aq, bf, bq, got, want)
				}
			}
		})
	}
}

func FuzzCmpCol(f *testing.F) {
	f.Add([]byte("t"), []byte{0, 1}, []byte("t"), []byte{0, 1, 0})
	f.Add([]byte("t"), []byte{0xf0, 0, 0, 1}, []byte("t"), []byte{0xf0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, af, aq, bf, bq []byte) {
		if got, want := cmpCol(af, aq, bf, bq), refCmpCol(af, aq, bf, bq); got != want {
			t.Fatalf("cmpCol(%x %x, %x %x) = %d, want %d", af, aq, bf, bq, got, want)
		}
	})
}
