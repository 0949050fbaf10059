package dense

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Fuzz targets: run each with, for example,
//
//	go test ./mapping/dense -run '^$' -fuzz '^FuzzDecode$' -fuzztime 20s
//
// Without -fuzz, go test runs them over their seed corpus.

// FuzzDecode: Decode never panics, fails with ErrCorrupt leaving dst and
// buf alone, and what it decodes Encode packs back into a value that
// decodes to the same cell.
func FuzzDecode(f *testing.F) {
	var c Codec
	for _, cells := range benchRows() {
		v, _ := c.Encode(nil, testRow, cells)
		f.Add(v)
	}
	for _, x := range []float64{1, 0.25, math.NaN()} {
		fl, b := f64(x)
		q, v := column([]pt{msPt(5, fl, b)}, -1)
		d, _ := c.Encode(nil, testRow, cellOf(q, v, 9))
		f.Add(d)
	}
	fl, b := intN(300, 2)
	q, v := column([]pt{secPt(5, fl, b), msPt(7000, fl, b), secPt(9, 0xB, []byte{1, 2, 3, 4})}, 1)
	d, _ := c.Encode(nil, testRow, cellOf(q, v, 9))
	f.Add(d)
	f.Add([]byte{Format, 0, 0, 2, 0x0F, 0, 0, 1, 0x41})
	f.Fuzz(func(t *testing.T, v []byte) {
		var c Codec
		dst := []store.Cell{{}}
		buf := []byte("keep")
		cells, nbuf, err := c.Decode(dst, buf, testRow, v)
		pts, _, perr := c.AppendPoints([]mapping.Point{{T: 1}}, 1700002800, v)
		checkFused(t, v)
		if (err == nil) != (perr == nil) {
			t.Fatalf("Decode error %v, AppendPoints error %v", err, perr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !errors.Is(perr, ErrCorrupt) {
				t.Fatalf("errors %v, %v do not wrap ErrCorrupt", err, perr)
			}
			if len(pts) != 1 {
				t.Fatalf("failed AppendPoints changed dst")
			}
			if len(cells) != 1 || string(nbuf) != "keep" {
				t.Fatalf("failed Decode changed dst or buf")
			}
			return
		}
		if len(cells) != 2 || !bytes.HasPrefix(nbuf, []byte("keep")) {
			t.Fatalf("Decode appended %d cells", len(cells)-1)
		}
		got := cells[1:]
		checkPoints(t, v, got[0])
		if enc, ok := c.Encode(nil, testRow, got); ok {
			again, _, err := (&Codec{}).Decode(nil, nil, testRow, enc)
			if err != nil || !bytes.Equal(again[0].Qualifier, got[0].Qualifier) || !bytes.Equal(again[0].Value, got[0].Value) {
				t.Fatalf("re-encoded value does not decode to the cell: %v", err)
			}
		}
	})
}

// fuzzReader hands out bytes of a fuzz input, zeros once it is used up.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *fuzzReader) u64() uint64 {
	var x uint64
	for range 8 {
		x = x<<8 | uint64(r.byte())
	}
	return x
}

// FuzzRoundTrip builds a well-formed data column from the input (each
// sample's qualifier form, offset step, flags and value; values either raw
// bits or small decimals), and requires Encode to pack it and Decode to
// give it back byte for byte.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0x10, 0x2F, 1, 0x20, 0x2F, 2}, uint64(1700000000000))
	f.Add([]byte{1, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0, 2}, uint64(0))
	f.Add(bytes.Repeat([]byte{0x41, 0x0F, 0x83, 0x15}, 64), uint64(7))
	f.Add(bytes.Repeat([]byte{0x05, 0x80, 0x21, 0x0B, 0x11, 0x37}, 40), uint64(math.MaxUint64))
	f.Add(append([]byte{200, 1}, bytes.Repeat([]byte{0x81, 0x10, 0x07}, 200)...), uint64(1700006400000))
	f.Add(append([]byte{100, 1}, bytes.Repeat([]byte{0x01, 0x10, 0x40, 0x09, 1, 2, 3, 4, 5, 6, 7}, 100)...), uint64(1))
	f.Fuzz(func(t *testing.T, in []byte, ts uint64) {
		r := &fuzzReader{b: in}
		n := 1 + int(r.byte())%300
		// Half the inputs write as promhbase does: each value in its
		// shortest exact encoding (canonical flags).
		shortest := r.byte()&1 == 1
		validFlags := [...]byte{0x0, 0x1, 0x3, 0x7, 0xB, 0xF}
		var pts []pt
		msOff := int64(r.byte()) * 17
		var mixed bool
		nSec := 0
		decimal := int64(0)
		for range n {
			ctl := r.byte()
			step := int64(r.byte())
			msOff += step * int64(1+ctl&3) * 997 % 50000
			fl := validFlags[int(ctl>>2)%len(validFlags)]
			if ctl&0x40 != 0 {
				fl = 0xF // mostly 8-byte floats, as promhbase writes
			}
			var val []byte
			if ctl&0x80 != 0 {
				// A small decimal: a random walk of cents.
				decimal += int64(int8(r.byte()))
				x := float64(decimal) / 100
				switch fl {
				case 0xF:
					val = binary.BigEndian.AppendUint64(nil, math.Float64bits(x))
				case 0xB:
					val = binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(x)))
				default:
					b := binary.BigEndian.AppendUint64(nil, uint64(decimal))
					val = b[8-int(fl&7+1):]
				}
			} else {
				b := binary.BigEndian.AppendUint64(nil, r.u64())
				val = b[8-int(fl&7+1):]
			}
			if shortest {
				x := math.Float64frombits(r.u64())
				if ctl&0x80 != 0 {
					x = float64(decimal) / 100
				}
				val, fl = mapping.AppendValue(nil, x)
			}
			p := msPt(msOff%(1<<22), fl, val)
			if ctl&0x20 != 0 && ctl&0x40 == 0 {
				p = secPt(msOff/1000%3600, fl, val)
				nSec++
			}
			pts = append(pts, p)
		}
		mixed = nSec > 0 && nSec < n
		meta := -1
		if n > 1 {
			meta = 0
			if mixed || r.byte()&1 == 1 {
				meta = 1
			}
		}
		q, v := column(pts, meta)
		roundTrip(t, &Codec{}, cellOf(q, v, ts), true)
	})
}
