package chunkenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
)

// errEnd is what reader returns when a field runs past the stream's end.
var errEnd = errors.New("bit stream: read past the end")

// reader reads a stream bit by bit, the slow and obvious way, to check
// what bitWriter wrote through its accumulator. The package has no reader of
// its own: Prometheus's chunk iterators read its streams.
type reader struct {
	buf []byte
	pos uint // bits read
}

// read returns the next n bits (0 ≤ n ≤ 64), most significant first.
func (r *reader) read(n uint) (uint64, error) {
	if n > 64 {
		return 0, fmt.Errorf("read of %d bits: %w", n, errEnd)
	}
	if r.pos+n > uint(len(r.buf))*8 {
		return 0, fmt.Errorf("%d bits at bit %d of %d: %w", n, r.pos, len(r.buf)*8, errEnd)
	}
	var x uint64
	for range n {
		x = x<<1 | uint64(r.buf[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return x, nil
}

// field is one Write: the low n bits of x.
type field struct {
	x uint64
	n uint
}

// mask returns the low n bits of x.
func mask(x uint64, n uint) uint64 {
	if n >= 64 {
		return x
	}
	return x & (1<<n - 1)
}

// writeAll writes fs after prefix and returns the padded stream.
func writeAll(t *testing.T, prefix []byte, fs []field) []byte {
	t.Helper()
	var w bitWriter
	w.Reset(append([]byte(nil), prefix...))
	total := uint(0)
	for _, f := range fs {
		w.Write(f.x, f.n)
		total += f.n
		if want := len(prefix) + int(total+7)/8; w.Len() != want {
			t.Fatalf("after %d bits: Len %d, want %d", total, w.Len(), want)
		}
		if w.Pending() != total%64 || len(w.Buf) != len(prefix)+int(total/64)*8 {
			t.Fatalf("after %d bits: Pending %d with %d bytes in Buf", total, w.Pending(), len(w.Buf))
		}
	}
	b := w.Bytes()
	if len(b) != len(prefix)+int(total+7)/8 || w.Pending() != 0 {
		t.Fatalf("%d bits: %d bytes (%d pending), want %d", total, len(b), w.Pending(), len(prefix)+int(total+7)/8)
	}
	return b
}

// checkFields reads fs back from b after prefix, and then only zero
// padding to the end of the last byte.
func checkFields(t *testing.T, b, prefix []byte, fs []field) {
	t.Helper()
	if !bytes.HasPrefix(b, prefix) {
		t.Fatalf("prefix %x lost: %x", prefix, b)
	}
	r := reader{buf: b[len(prefix):]}
	for i, f := range fs {
		got, err := r.read(f.n)
		if err != nil {
			t.Fatalf("field %d (%d bits): %v", i, f.n, err)
		}
		if want := mask(f.x, f.n); got != want {
			t.Fatalf("field %d (%d bits): %#x, want %#x", i, f.n, got, want)
		}
	}
	pad := uint(len(r.buf))*8 - r.pos
	if pad >= 8 {
		t.Fatalf("%d bits of padding", pad)
	}
	if got, err := r.read(pad); err != nil || got != 0 {
		t.Fatalf("padding %b (%v), want zero bits", got, err)
	}
}

// TestWriteWidths: every width 0..64, alone and after every offset in the
// accumulator 0..63, reads back as written, high bits of x ignored.
func TestWriteWidths(t *testing.T) {
	values := []uint64{0, 1, math.MaxUint64, 0x8000000000000000, 0x5555555555555555, 0xdeadbeefcafef00d}
	for n := uint(0); n <= 64; n++ {
		t.Run(fmt.Sprintf("width%d", n), func(t *testing.T) {
			for _, lead := range []uint{0, 1, 7, 8, 31, 56, 57, 63} {
				for _, x := range values {
					fs := []field{{math.MaxUint64, lead}, {x, n}, {0b101, 3}}
					checkFields(t, writeAll(t, nil, fs), nil, fs)
				}
			}
		})
	}
}

// TestBitWriter: the bitWriter's edge cases, each read back bit by bit.
func TestBitWriter(t *testing.T) {
	cases := []struct {
		name   string
		prefix []byte
		fields []field
		want   []byte // nil: only read back
	}{
		{name: "nothing", want: []byte{}},
		{name: "zero-width writes", fields: []field{{1, 0}, {math.MaxUint64, 0}}, want: []byte{}},
		{name: "one bit pads with zeros", fields: []field{{1, 1}}, want: []byte{0x80}},
		{name: "high bits of x ignored", fields: []field{{0xff, 4}}, want: []byte{0xf0}},
		{name: "exactly 64 bits", fields: []field{{0x0123456789abcdef, 64}}, want: []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}},
		{name: "64 bits after 1", fields: []field{{1, 1}, {0, 64}}, want: []byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0}},
		{name: "accumulator full to the bit", fields: []field{{0, 60}, {0xf, 4}, {1, 1}}, want: []byte{0, 0, 0, 0, 0, 0, 0, 0x0f, 0x80}},
		{name: "after a prefix", prefix: []byte{0xaa, 0xbb}, fields: []field{{0b11, 2}}, want: []byte{0xaa, 0xbb, 0xc0}},
		{name: "many widths", fields: []field{{5, 3}, {1 << 40, 41}, {math.MaxUint64, 64}, {0, 13}, {0x7f, 7}, {3, 64}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := writeAll(t, c.prefix, c.fields)
			if c.want != nil && !bytes.Equal(b, c.want) {
				t.Fatalf("stream %x, want %x", b, c.want)
			}
			checkFields(t, b, c.prefix, c.fields)
		})
	}
}

// TestBytesThenWrite: Bytes pads to a byte; what is written after it,
// and whole bytes appended to Buf in between, start at a byte boundary.
func TestBytesThenWrite(t *testing.T) {
	var w bitWriter
	w.Write(0b1, 1)
	if got := w.Bytes(); !bytes.Equal(got, []byte{0x80}) {
		t.Fatalf("Bytes %x, want 80", got)
	}
	if w.Pending() != 0 {
		t.Fatalf("Pending %d after Bytes", w.Pending())
	}
	w.Buf = append(w.Buf, 0x42)
	w.Write(0b11, 2)
	if got, want := w.Bytes(), []byte{0x80, 0x42, 0xc0}; !bytes.Equal(got, want) {
		t.Fatalf("Bytes %x, want %x", got, want)
	}
	// Reset reuses the buffer it is given and forgets the pending bits.
	w.Write(1, 5)
	w.Reset(w.Buf[:0])
	if w.Len() != 0 || w.Pending() != 0 {
		t.Fatalf("after Reset: Len %d, Pending %d", w.Len(), w.Pending())
	}
}

// TestReaderPastEnd: the test's reader refuses fields past the end, so
// that the other tests would notice a stream shorter than written.
func TestReaderPastEnd(t *testing.T) {
	cases := []struct {
		name  string
		buf   []byte
		reads []uint
	}{
		{"empty stream, one bit", nil, []uint{1}},
		{"9 bits of 8", []byte{0xff}, []uint{9}},
		{"second field past the end", []byte{0xff, 0xff}, []uint{10, 7}},
		{"65 bits", make([]byte, 16), []uint{65}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reader{buf: c.buf}
			var err error
			for _, n := range c.reads {
				if _, err = r.read(n); err != nil {
					break
				}
			}
			if !errors.Is(err, errEnd) {
				t.Fatalf("err %v, want %v", err, errEnd)
			}
		})
	}
}

// readXOR reads what bitWriter.XOR wrote, as Prometheus's XOR chunk iterator
// does (a sig of 0 means 64).
func readXOR(r *reader, leading, trailing *uint8) (uint64, error) {
	ctl, err := r.read(1)
	if err != nil || ctl == 0 {
		return 0, err
	}
	if ctl, err = r.read(1); err != nil {
		return 0, err
	}
	if ctl == 1 {
		lead, err := r.read(5)
		if err != nil {
			return 0, err
		}
		sig, err := r.read(6)
		if err != nil {
			return 0, err
		}
		if sig == 0 {
			sig = 64
		}
		*leading, *trailing = uint8(lead), uint8(64-lead-sig)
	}
	v, err := r.read(uint(64 - *leading - *trailing))
	return v << *trailing, err
}

// TestXOR: deltas in and out of the window, of every width, read back.
func TestXOR(t *testing.T) {
	cases := []struct {
		name   string
		deltas []uint64
	}{
		{"zero", []uint64{0, 0}},
		{"full width", []uint64{math.MaxUint64, 1, 1 << 63}},
		{"window reused", []uint64{0xff00, 0x0f00, 0x1800}},
		{"window grows", []uint64{0x10, 0x1000, 1}},
		{"leading zeros capped at 31", []uint64{1, 1 << 20, 3}},
		{"single bits everywhere", func() []uint64 {
			var ds []uint64
			for i := range 64 {
				ds = append(ds, 1<<i, 1<<(63-i))
			}
			return ds
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w bitWriter
			leading, trailing := uint8(0xff), uint8(0)
			for _, d := range c.deltas {
				w.XOR(d, &leading, &trailing)
			}
			r := reader{buf: w.Bytes()}
			rl, rt := uint8(0xff), uint8(0)
			for i, d := range c.deltas {
				got, err := readXOR(&r, &rl, &rt)
				if err != nil || got != d {
					t.Fatalf("delta %d: %#x (%v), want %#x", i, got, err, d)
				}
			}
		})
	}
}

// TestFitsBits: the range of an n-bit field, −(2^(n−1)−1)..2^(n−1), at its
// edges.
func TestFitsBits(t *testing.T) {
	cases := []struct {
		x    int64
		n    uint
		want bool
	}{
		{0, 1, true}, {1, 1, true}, {-1, 1, false}, {2, 1, false},
		{4, 3, true}, {5, 3, false}, {-3, 3, true}, {-4, 3, false},
		{8192, 14, true}, {8193, 14, false}, {-8191, 14, true}, {-8192, 14, false},
		{1 << 55, 56, true}, {1<<55 + 1, 56, false}, {-(1<<55 - 1), 56, true}, {-(1 << 55), 56, false},
		{math.MaxInt64, 63, false}, {-(1<<62 - 1), 63, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d in %d bits", c.x, c.n), func(t *testing.T) {
			if got := fitsBits(c.x, c.n); got != c.want {
				t.Errorf("fitsBits(%d, %d) = %v, want %v", c.x, c.n, got, c.want)
			}
		})
	}
}

// fieldsFrom turns fuzz bytes into fields: a width byte (mod 65) and 8
// bytes of value each.
func fieldsFrom(data []byte) []field {
	var fs []field
	for len(data) >= 9 && len(fs) < 512 {
		fs = append(fs, field{binary.LittleEndian.Uint64(data[1:9]), uint(data[0]) % 65})
		data = data[9:]
	}
	return fs
}

// FuzzBitWriter: any sequence of fields after any prefix reads back bit by
// bit as written, the prefix kept, the padding zero; the fields as XOR
// deltas read back too.
func FuzzBitWriter(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0xab}, []byte{64, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0xff, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte(nil), bytes.Repeat([]byte{63, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 1, 0, 0, 0, 0, 0, 0, 0}, 5))
	f.Add([]byte{0, 0, 0}, bytes.Repeat([]byte{7, 0x80, 0, 0, 0, 0, 0, 0, 0x80}, 9))
	f.Fuzz(func(t *testing.T, prefix, data []byte) {
		fs := fieldsFrom(data)
		checkFields(t, writeAll(t, prefix, fs), prefix, fs)

		var w bitWriter
		w.Reset(append([]byte(nil), prefix...))
		leading, trailing := uint8(0xff), uint8(0)
		for _, f := range fs {
			w.XOR(f.x, &leading, &trailing)
		}
		b := w.Bytes()
		if !bytes.HasPrefix(b, prefix) {
			t.Fatalf("prefix %x lost", prefix)
		}
		r := reader{buf: b[len(prefix):]}
		rl, rt := uint8(0xff), uint8(0)
		for i, f := range fs {
			got, err := readXOR(&r, &rl, &rt)
			if err != nil || got != f.x {
				t.Fatalf("delta %d: %#x (%v), want %#x", i, got, err, f.x)
			}
		}
		if rest := uint(len(r.buf))*8 - r.pos; rest >= 8 {
			t.Fatalf("%d bits left after the deltas", rest)
		}
	})
}

// FuzzReadBits: reading arbitrary bytes in arbitrary widths never panics,
// fails only past the end, and the bits read, written again, give the
// bytes back.
func FuzzReadBits(f *testing.F) {
	f.Add([]byte{}, []byte{1})
	f.Add([]byte{0xde, 0xad, 0xbe, 0xef}, []byte{3, 64, 5})
	f.Add(bytes.Repeat([]byte{0x55}, 17), []byte{64, 64, 7, 1, 0})
	f.Fuzz(func(t *testing.T, stream, widths []byte) {
		r := reader{buf: stream}
		var w bitWriter
		for _, wb := range widths {
			n := uint(wb) % 65
			before := r.pos
			x, err := r.read(n)
			if err != nil {
				if before+n <= uint(len(stream))*8 || !errors.Is(err, errEnd) {
					t.Fatalf("%d bits at bit %d of %d: %v", n, before, len(stream)*8, err)
				}
				break
			}
			if n < 64 && x>>n != 0 {
				t.Fatalf("%d bits read as %#x", n, x)
			}
			w.Write(x, n)
		}
		got := w.Bytes()
		whole := int(r.pos / 8)
		if !bytes.Equal(got[:whole], stream[:whole]) {
			t.Fatalf("bytes written back %x, want %x", got[:whole], stream[:whole])
		}
		if r.pos%8 != 0 {
			if keep := byte(0xff) << (8 - r.pos%8); got[whole] != stream[whole]&keep {
				t.Fatalf("last byte %08b, want %08b", got[whole], stream[whole]&keep)
			}
		}
		if len(got) != int(r.pos+7)/8 {
			t.Fatalf("%d bytes written back from %d bits read", len(got), r.pos)
		}
	})
}
