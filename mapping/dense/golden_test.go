package dense

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/store"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt from the code")

// The golden file pins the dense layout: each case is a cell and its dense
// value, one field a line with a comment that names it. A failure means
// the bytes of the layout changed, and values already stored would no
// longer read back: fix the code. An intended change of layout needs a new
// Format byte (and a decoder of the old one for stored data); only then
// regenerate with
//
//	go test ./mapping/dense -run TestGolden -update

type goldenCase struct {
	name string
	cell store.Cell
}

func goldenCases() []goldenCase {
	var cases []goldenCase
	add := func(name string, q, v []byte, ts uint64) {
		cases = append(cases, goldenCase{name, cellOf(q, v, ts)[0]})
	}
	q, v := floatRow([]int64{1234, 16236, 31233, 46237, 61235, 76234}, []float64{100, 103, 103, 110, 111, 111}, true)
	add("promhbase counter: ms qualifiers, 8-byte floats, integer values", q, v, 1700006460000)
	q, v = floatRow([]int64{0, 15000, 30000, 45000, 60000}, []float64{0.25, 0.5, math.Float64frombits(0x7ff0000000000002), 1.25, 0.75}, true)
	add("2-decimal gauge on exact 15 s steps, a stale marker as an exception", q, v, 1700006460000)
	q, v = floatRow([]int64{59999}, []float64{math.Float64frombits(0x7ff0000000000002)}, true)
	add("single-sample cell holding a stale marker (XOR)", q, v, 1700006460000)
	var pts []pt
	for i, x := range []int64{5, 100, 200, 300, 40000, 40010} {
		w := 1
		switch {
		case x != int64(int8(x)) && x == int64(int16(x)):
			w = 2
		case x != int64(int8(x)):
			w = 4
		}
		fl, b := intN(x, w)
		pts = append(pts, secPt(int64(i)*10, fl, b))
	}
	q, v = column(pts, 0)
	add("OpenTSDB seconds: 2-byte qualifiers, integers growing from 1 to 4 bytes (canonical flags)", q, v, 1292148123456)
	fl, b := f32(0.5)
	fl2, b2 := intN(-2, 1)
	fl3, b3 := intN(-2, 2)
	q, v = column([]pt{secPt(1, fl, b), msPt(1500, fl2, b2), secPt(2, fl3, b3)}, 1)
	add("mixed second and millisecond qualifiers (meta 0x01), float32 and ints, one oversized (flag nibbles)", q, v, 1292148123456)
	q, v = floatRow([]int64{0, 1000, 2000}, []float64{math.Pi, math.E, math.Sqrt2}, true)
	add("irrational floats (XOR)", q, v, 5)
	q, v = floatRow([]int64{10, 15010, 30010, 45010, 60010}, []float64{0.25, 1, 0.1, 300.5, 70000}, false)
	add("promhbase's writer: shortest exact encodings, int8, float32, float64, int32 (canonical flags)", q, v, 1700006460000)

	ts := make([]int64, 12)
	vs := make([]float64, 12)
	for i := range ts {
		ts[i] = 7000 + int64(i)*15000
		vs[i] = float64(1000*i + i%3)
	}
	ts[5] += 9 // late scrapes
	ts[9] += 4
	vs[8] = 4 // a counter reset
	vs[9], vs[10], vs[11] = 1004, 2006, 3005
	q, v = floatRow(ts, vs, true)
	add("aligned scrapes, two late (grid), counter of about +1000 with a reset (patched)", q, v, 1700006460000)
	for i := range ts {
		ts[i] = int64(i) * 60000
		vs[i] = 0.5 * float64(i*i)
	}
	q, v = floatRow(ts, vs, true)
	add("minutely, accelerating counter (delta of delta)", q, v, 1700006460000)
	pts = pts[:0]
	for i := range 40 {
		x := int64(100 + 2*i)
		fl, b := intN(x, 2)
		if i < 14 {
			fl, b = f32(float32(x))
		}
		pts = append(pts, secPt(int64(i)*30, fl, b))
	}
	q, v = column(pts, 0)
	add("OpenTSDB seconds every 30 s: integral float32s, then int16s (flag runs)", q, v, 1292148123456)
	return cases
}

// explain renders a dense value one field a line: hex, then a comment.
func explain(v []byte) (string, error) {
	var sb strings.Builder
	e := &explainer{v: v, sb: &sb}
	if err := e.run(); err != nil {
		return "", err
	}
	return sb.String(), nil
}

type explainer struct {
	v   []byte
	pos int
	sb  *strings.Builder
}

func (e *explainer) emit(n int, format string, args ...any) {
	end := min(e.pos+n, len(e.v))
	fmt.Fprintf(e.sb, "%-24X # %s\n", e.v[e.pos:end], fmt.Sprintf(format, args...))
	e.pos = end
}

func (e *explainer) uvarint(what string) uint64 {
	u, n := binary.Uvarint(e.v[e.pos:])
	e.emit(max(n, 1), "%s: uvarint %d", what, u)
	return u
}

func (e *explainer) varint(what string) int64 {
	x, n := binary.Varint(e.v[e.pos:])
	e.emit(max(n, 1), "%s: varint %d", what, x)
	return x
}

func (e *explainer) stream(what string, n int) {
	if n == 0 {
		return
	}
	e.uvarint(what + ", every value a multiple of")
	for i := 0; i < n; i += blockLen {
		cnt := min(blockLen, n-i)
		hdr := e.v[e.pos]
		w := int(hdr & widthMask)
		form := "zigzag"
		if hdr&forBit != 0 {
			form = "frame of reference"
		}
		if hdr&patchedBit != 0 {
			form += ", patched"
		}
		e.emit(1, "%s block of %d: width %d, %s", what, cnt, w, form)
		if hdr&forBit != 0 {
			e.varint("  base")
		}
		if hdr&patchedBit != 0 {
			np := int(e.v[e.pos])
			e.emit(1, "  patches: %d", np)
			for range np {
				idx := e.v[e.pos]
				h, k := binary.Uvarint(e.v[e.pos+1:])
				e.emit(1+k, "  patch: word %d, bits above %d: %d", idx, w, h)
			}
		}
		if nb := (cnt*w + 7) / 8; nb > 0 {
			e.emit(nb, "  %d values of %d bits, LSB first", cnt, w)
		}
	}
}

func (e *explainer) run() error {
	var c Codec
	if _, _, err := c.Decode(nil, nil, nil, e.v); err != nil {
		return err
	}
	e.emit(1, "format")
	shape := e.v[1]
	qk, mk := shape>>qualShift&qualMask, shape>>metaShift&metaMask
	fk, vk := shape>>flagsShift&flagsMask, shape>>valShift&valMask
	e.emit(1, "shape: qualifiers %s, meta %s, flags %s, values %s",
		[]string{"ms", "seconds", "mixed"}[qk], []string{"none", "0x00", "0x01"}[mk],
		[]string{"one", "runs", "nibbles", "canonical"}[fk], []string{"decimal delta", "decimal delta2", "XOR"}[vk])
	e.uvarint("cell timestamp")
	n := int(e.uvarint("samples"))
	if qk == qualMixed {
		e.emit((n+7)/8, "bitmap of millisecond qualifiers, sample 0 in bit 0")
	}
	flags := make([]byte, 0, n)
	switch fk {
	case flagsOne:
		for range n {
			flags = append(flags, e.v[e.pos])
		}
		e.emit(1, "flags of every sample")
	case flagsRuns:
		runs := e.uvarint("flag runs")
		for range runs {
			f := e.v[e.pos]
			e.emit(1, "run flags")
			l := e.uvarint("  run length")
			for range l {
				flags = append(flags, f)
			}
		}
	case flagsNibbles:
		for i := range n {
			flags = append(flags, e.v[e.pos+i/2]>>(4*(i&1))&0xF)
		}
		e.emit((n+1)/2, "flags, a nibble a sample, sample 0 low")
	case flagsCanon:
		// No bytes: the values are 8-byte floats here.
		for range n {
			flags = append(flags, 0xF)
		}
	}
	e.uvarint("first offset")
	if n > 1 {
		e.varint("median step")
		if e.v[e.pos] == timesGrid {
			e.emit(1, "timestamp coding: grid")
			e.stream("offset - next grid point", n-1)
		} else {
			e.emit(1, "timestamp coding: steps")
			e.stream("steps - median", n-1)
		}
	}
	if vk == valXOR {
		for i := range n {
			ctl := e.v[e.pos]
			nb := 8 - int(ctl>>4) - int(ctl&0xF)
			e.emit(1+nb, "sample %d: XOR control %02X (%d leading, %d trailing zero bytes) and %d bytes", i, ctl, ctl>>4, ctl&0xF, nb)
		}
		return nil
	}
	k := e.v[e.pos]
	e.emit(1, "decimal exponent k = %d", k)
	nexc := int(e.uvarint("exceptions"))
	next := 0
	for range nexc {
		gap, gn := binary.Uvarint(e.v[e.pos:])
		i := next + int(gap)
		l := int(flagInfo[flags[i]].n)
		e.emit(gn+l, "exception: index gap %d (sample %d), %d raw bytes", gap, i, l)
		next = i + 1
	}
	nm := n - nexc
	if nm > 0 {
		e.varint("first mantissa")
	}
	if vk == valDelta {
		e.stream("mantissa deltas", nm-1)
	} else if nm > 1 {
		e.varint("first delta")
		e.stream("deltas of deltas", nm-2)
	}
	return nil
}

func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden.txt")
	var c Codec
	var sb strings.Builder
	sb.WriteString(`# Golden dense values (see golden_test.go): a case is
#   case <name>
#   cell <family> <qualifier hex> <value hex> <cell timestamp>
# then the dense value Encode writes for that cell, one field a line
# (hex, # comment), then "end". Every line must stay byte for byte.
`)
	for _, gc := range goldenCases() {
		d, ok := c.Encode(nil, testRow, []store.Cell{gc.cell})
		if !ok {
			t.Fatalf("%s: Encode refused", gc.name)
		}
		ex, err := explain(d)
		if err != nil {
			t.Fatalf("%s: %v", gc.name, err)
		}
		fmt.Fprintf(&sb, "\ncase %s\ncell %s %X %X %d\n%send\n", gc.name, gc.cell.Family, gc.cell.Qualifier, gc.cell.Value, gc.cell.Timestamp, ex)
	}
	if *update {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Read the file on its own terms: every case's hex decodes to its
	// cell, and the cell encodes to that hex.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var name string
	var cell store.Cell
	var want []byte
	cases := 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		switch {
		case strings.HasPrefix(text, "case "):
			name, want = strings.TrimPrefix(text, "case "), nil
		case strings.HasPrefix(text, "cell "):
			fs := strings.Fields(text)
			if len(fs) != 5 {
				t.Fatalf("line %d: %q", line, text)
			}
			q, err1 := hex.DecodeString(fs[2])
			v, err2 := hex.DecodeString(fs[3])
			ts, err3 := strconv.ParseUint(fs[4], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("line %d: %q", line, text)
			}
			cell = store.Cell{Family: []byte(fs[1]), Qualifier: q, Value: v, Timestamp: ts}
		case text == "end":
			cases++
			got, ok := c.Encode(nil, testRow, []store.Cell{cell})
			if !ok || !bytes.Equal(got, want) {
				t.Errorf("%s: Encode gives\n%X\nwant\n%X", name, got, want)
			}
			dec, _, err := c.Decode(nil, nil, testRow, want)
			if err != nil || len(dec) != 1 || !bytes.Equal(dec[0].Qualifier, cell.Qualifier) ||
				!bytes.Equal(dec[0].Value, cell.Value) || dec[0].Timestamp != cell.Timestamp {
				t.Errorf("%s: Decode of the golden bytes: %v", name, err)
			}
		default:
			h, _, _ := strings.Cut(text, "#")
			b, err := hex.DecodeString(strings.TrimSpace(h))
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			want = append(want, b...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases != len(goldenCases()) {
		t.Errorf("%s holds %d cases, the code %d: run with -update after checking why", path, cases, len(goldenCases()))
	}
	// The comments too follow the code.
	if b, err := os.ReadFile(path); err == nil && string(b) != sb.String() {
		t.Errorf("%s differs from what the code writes (bytes or comments); see golden_test.go", path)
	}
}
