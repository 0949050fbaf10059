package mapping

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestExemplarGolden pins the exemplar cell: slot 5 of 720, offset
// 25 123 ms, value 0.25, labels trace_id=abc.
//
//	00              version
//	0000 6223       offset 25 123 ms
//	3FD0000000000000 value 0.25
//	01              one label
//	08 74726163655F6964  "trace_id"
//	03 616263            "abc"
func TestExemplarGolden(t *testing.T) {
	const want = "00000062233FD000000000000001087472616365" + "5F696403616263"
	lbls := []Label{{Name: []byte("trace_id"), Value: []byte("abc")}}
	v := AppendExemplarValue(nil, 25123, 0.25, lbls)
	if got := strings.ToUpper(hex.EncodeToString(v)); got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	if s := ExemplarSlot(25123, 720); s != 5 {
		t.Errorf("slot %d, want 5", s)
	}
	if q := hex.EncodeToString(AppendExemplarQualifier(nil, 5)); q != "0005" {
		t.Errorf("qualifier %s", q)
	}
	off, val, back, err := DecodeExemplarValue(v, nil)
	if err != nil || off != 25123 || val != 0.25 || len(back) != 1 || string(back[0].Name) != "trace_id" || string(back[0].Value) != "abc" {
		t.Errorf("decoded %d %v %v %v", off, val, back, err)
	}
	if ExemplarSlot(MaxOffsetMs-1, 720) != 719 || ExemplarSlot(0, 1) != 0 {
		t.Error("slot bounds")
	}
	for _, bad := range [][]byte{nil, v[:13], append(append([]byte{}, v...), 1), append([]byte{1}, v[1:]...), v[:len(v)-1]} {
		if _, _, _, err := DecodeExemplarValue(bad, nil); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%X: err %v", bad, err)
		}
	}
}

func FuzzDecodeExemplarValue(f *testing.F) {
	f.Add(AppendExemplarValue(nil, 1, math.NaN(), []Label{{Name: []byte("a"), Value: []byte("b")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		off, v, lbls, err := DecodeExemplarValue(b, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformedCell) {
				t.Fatal(err)
			}
			return
		}
		if again := AppendExemplarValue(nil, off, v, lbls); string(again) != string(b) {
			// Only a longer-than-needed varint may differ.
			o2, v2, l2, err := DecodeExemplarValue(again, nil)
			if err != nil || o2 != off || math.Float64bits(v2) != math.Float64bits(v) || len(l2) != len(lbls) {
				t.Fatalf("%X re-encodes as %X", b, again)
			}
		}
	})
}
