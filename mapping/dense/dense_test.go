package dense

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// scrapeTimes returns n ms offsets every step ms from first, with a
// deterministic jitter of 0..5 ms.
func scrapeTimes(n int, first, step int64) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = first + int64(i)*step + int64((i*7+3)%6)
	}
	return ts
}

func TestRoundTrip(t *testing.T) {
	ts240 := scrapeTimes(240, 1234, 15000)
	seq := func(f func(i int) float64) []float64 {
		vs := make([]float64, 240)
		for i := range vs {
			vs[i] = f(i)
		}
		return vs
	}
	edge := []float64{
		math.Float64frombits(0x7ff0000000000002), // Prometheus's stale marker
		math.NaN(),
		math.Float64frombits(0xfff8000000000001),
		math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
		0x1p53 + 2, -0x1p63, 0x1p63, 1e300, 0.1, 0.30000000000000004, 1.0 / 3, -7.25,
		123456789.123456, 1e-15, 1.5e-16,
	}
	edgeTs := scrapeTimes(len(edge), 0, 1000)

	type tc struct {
		name  string
		cells []store.Cell
		mode  int // expected value coding, -1 any
	}
	var cases []tc
	add := func(name string, mode int, q, v []byte, cellTs uint64) {
		cases = append(cases, tc{name, cellOf(q, v, cellTs), mode})
	}
	q, v := floatRow(ts240, seq(func(i int) float64 { return float64(1000 + 3*i + i%5) }), true)
	add("counter f64 ms", -1, q, v, 1700006400123)
	q, v = floatRow(ts240, seq(func(i int) float64 { return float64(i * 15) }), true)
	add("steady counter f64 ms", valDelta2, q, v, 1700006400123)
	q, v = floatRow(ts240, seq(func(i int) float64 { return 42.17 + float64(i%7)*0.01 }), true)
	add("2-decimal gauge", -1, q, v, 1)
	q, v = floatRow(ts240, seq(func(int) float64 { return 1 }), true)
	add("constant", valDelta, q, v, 0)
	q, v = floatRow(ts240, seq(func(i int) float64 { return math.Sin(float64(i)) }), true)
	add("noise falls back to XOR", valXOR, q, v, math.MaxUint64)
	q, v = floatRow(ts240, seq(func(i int) float64 {
		if i == 100 || i == 239 {
			return math.Float64frombits(0x7ff0000000000002)
		}
		return float64(i)
	}), true)
	add("stale markers as exceptions", -1, q, v, 5)
	q, v = floatRow(ts240, seq(func(i int) float64 { return float64(i) * 1.5 }), false)
	add("promhbase writer: ints and float32", -1, q, v, 7)
	q, v = floatRow(edgeTs, edge, true)
	add("edge floats", -1, q, v, 9)
	q, v = floatRow(edgeTs, edge, false)
	add("edge floats, shortest encodings", -1, q, v, 9)
	q, v = floatRow(ts240[:1], []float64{3.25}, true)
	add("single ms float cell", -1, q, v, 11)
	q, v = floatRow(ts240[:1], []float64{math.Float64frombits(0x7ff0000000000002)}, true)
	add("single stale marker", valXOR, q, v, 11)

	// Hand-built columns.
	var pts []pt
	for i, w := range []int{1, 2, 4, 8, 1, 1, 2, 8, 4, 4} {
		f, b := intN(int64(-1-i*3), w)
		pts = append(pts, msPt(int64(i)*10000, f, b))
	}
	q, v = column(pts, 0)
	add("ints of every width, oversized too", -1, q, v, 3)
	pts = nil
	for i, x := range []int64{0, 127, 128, -129, 32767, 40000, -1 << 31, 1<<31 - 1, 1 << 40, math.MinInt64, math.MaxInt64} {
		w := 8
		switch {
		case x == int64(int8(x)):
			w = 1
		case x == int64(int16(x)):
			w = 2
		case x == int64(int32(x)):
			w = 4
		}
		fl, bb := intN(x, w)
		pts = append(pts, secPt(int64(i)*15, fl, bb))
	}
	q, v = column(pts, 0)
	add("second qualifiers, minimal ints", -1, q, v, 3)
	pts = nil
	for i, x := range []float32{0.5, 0.1, 1e10, -3.75, float32(math.Inf(1))} {
		f, b := f32(x)
		pts = append(pts, secPt(int64(i)*60, f, b))
	}
	f, b := f32bits(0x7fc00001)
	pts = append(pts, secPt(400, f, b))
	f, b = f32bits(0x80000000)
	pts = append(pts, secPt(401, f, b))
	q, v = column(pts, 0)
	add("float32 second column", -1, q, v, 3)
	f, b = intN(7, 1)
	q, v = column([]pt{secPt(3599, f, b)}, -1)
	add("single second int cell", -1, q, v, 1292148123000)
	f, b = f32(0.5)
	q, v = column([]pt{secPt(123, f, b)}, -1)
	add("single second float32 cell", -1, q, v, 1292148123000)
	pts = nil
	for i := range 20 {
		fl, bb := f64(float64(i))
		if i%3 == 0 {
			pts = append(pts, secPt(int64(i)*10, fl, bb))
		} else {
			pts = append(pts, msPt(int64(i)*10000+int64(i), fl, bb))
		}
	}
	q, v = column(pts, 1)
	add("mixed second and ms, meta 0x01", -1, q, v, 77)
	q, v = column(pts[:2], 1)
	add("mixed pair", -1, q, v, 77)
	q, v = column([]pt{pts[1], pts[2]}, 1)
	add("ms column flagged mixed", -1, q, v, 77)
	pts = nil
	for i := range 40 {
		fl, bb := f64(float64(i))
		pts = append(pts, msPt(int64((i*7919)%40)*1000+int64(i%3), fl, bb))
	}
	q, v = column(pts, 0)
	add("unsorted offsets", -1, q, v, 1)
	q, v = column(append(pts[:3:3], pts[2], pts[1]), 0)
	add("duplicate offsets", -1, q, v, 1)
	fmax, bmax := f64(1)
	q, v = column([]pt{msPt(1<<22-1, fmax, bmax), msPt(0, fmax, bmax), secPt(4095-256, fmax, bmax)}, 1)
	add("offset extremes", -1, q, v, 1)
	pts = nil
	for i := range 70 {
		var fl byte
		var bb []byte
		switch i % 4 {
		case 0:
			fl, bb = intN(int64(i), 1)
		case 1:
			fl, bb = f32(float32(i) / 4)
		case 2:
			fl, bb = f64(float64(i) / 100)
		default:
			fl, bb = intN(int64(i)*1000, 4)
		}
		pts = append(pts, msPt(int64(i)*15000, fl, bb))
	}
	q, v = column(pts, 0)
	add("every kind interleaved (nibble flags)", -1, q, v, 1)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var codec Codec
			d := roundTrip(t, &codec, c.cells, true)
			if c.mode >= 0 {
				if got := int(d[1] >> valShift & valMask); got != c.mode {
					t.Errorf("value coding %d, want %d", got, c.mode)
				}
			}
			// Encoding again with the same Codec gives the same bytes.
			if d2 := roundTrip(t, &codec, c.cells, true); !bytes.Equal(d, d2) {
				t.Errorf("second encoding differs:\n%X\n%X", d, d2)
			}
			// Every cut of the value fails to decode, without panicking.
			for i := range len(d) - 1 {
				if _, _, err := (&Codec{}).Decode(nil, nil, testRow, d[:i]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Decode of %d of %d bytes: err %v", i, len(d), err)
				}
			}
			if _, _, err := (&Codec{}).Decode(nil, nil, testRow, append(bytes.Clone(d), 0)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode with a trailing byte: err %v", err)
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	fl, b := f64(1)
	q, v := column([]pt{msPt(0, fl, b), msPt(1000, fl, b)}, 0)
	good := cellOf(q, v, 1)[0]
	with := func(f func(c *store.Cell)) []store.Cell {
		c := good
		c.Family, c.Qualifier, c.Value = bytes.Clone(c.Family), bytes.Clone(c.Qualifier), bytes.Clone(c.Value)
		f(&c)
		return []store.Cell{c}
	}
	cases := map[string][]store.Cell{
		"no cells":      nil,
		"two cells":     {good, good},
		"other family":  with(func(c *store.Cell) { c.Family = []byte("u") }),
		"long family":   with(func(c *store.Cell) { c.Family = []byte("tt") }),
		"empty":         with(func(c *store.Cell) { c.Qualifier = nil }),
		"histogram":     with(func(c *store.Cell) { c.Qualifier = []byte{6, 0, 0x10} }),
		"histogram ms":  with(func(c *store.Cell) { c.Qualifier = []byte{6, 0, 0, 0x10, 0} }),
		"annotation":    with(func(c *store.Cell) { c.Qualifier = []byte{1, 0, 7}; c.Value = []byte("{}") }),
		"append column": with(func(c *store.Cell) { c.Qualifier = mapping.AppendColumnQualifier() }),
		"meta byte 2":   with(func(c *store.Cell) { c.Value[len(c.Value)-1] = 2 }),
		"no meta byte":  with(func(c *store.Cell) { c.Value = c.Value[:len(c.Value)-1] }),
		"two meta":      with(func(c *store.Cell) { c.Value = append(c.Value, 0) }),
		"one sample with a meta byte": with(func(c *store.Cell) {
			c.Qualifier, c.Value = c.Qualifier[:4], append(c.Value[:8], 0)
		}),
		"cut qualifier": with(func(c *store.Cell) { c.Qualifier = append(c.Qualifier, 0xF0, 0) }),
		"reserved bits": with(func(c *store.Cell) { c.Qualifier[3] |= 0x10 }),
		"3-byte int":    with(func(c *store.Cell) { c.Qualifier[3] = c.Qualifier[3]&0xF0 | 2 }),
		"2-byte float":  with(func(c *store.Cell) { c.Qualifier[3] = c.Qualifier[3]&0xF0 | 9 }),
		"fixed-up float": func() []store.Cell {
			// A 4-byte float stored on 8 bytes behind zeros, as old TSDs
			// did: readers fix it up, so it is not a plain column.
			q, v := column([]pt{secPt(5, mapping.FlagsFloat32, []byte{0, 0, 0, 0, 0x3F, 0, 0, 0})}, -1)
			return cellOf(q, v, 1)
		}(),
	}
	for name, cells := range cases {
		t.Run(name, func(t *testing.T) {
			roundTrip(t, &Codec{}, cells, false)
		})
	}
}

func TestDecodeGarbage(t *testing.T) {
	for name, v := range map[string][]byte{
		"nil":             nil,
		"empty":           {},
		"format only":     {Format},
		"generic run":     {1, 1, 't', 4, 0xF0, 0, 0, 0x0F},
		"bad shape":       {Format, 0xFF, 0, 1, 0x0F, 0, 0, 0, 0},
		"zero samples":    {Format, 0, 0, 0, 0x0F, 0},
		"huge count":      {Format, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0x0F},
		"bad flags":       {Format, 0, 0, 1, 0x02, 0, 0, 0, 0},
		"bad exponent":    {Format, 0, 0, 1, 0x0F, 0, 16, 0, 0},
		"bad XOR control": {Format, 0x80, 0, 1, 0x0F, 0, 0x90},
		"wide block":      {Format, 0, 0, 2, 0x0F, 0, 0, 65},
	} {
		t.Run(name, func(t *testing.T) {
			cells, buf, err := (&Codec{}).Decode([]store.Cell{{}}, []byte("keep"), testRow, v)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			if len(cells) != 1 || string(buf) != "keep" {
				t.Fatalf("dst or buf changed on error")
			}
			if !strings.Contains(err.Error(), "row 0000016553F1F0000001000002") {
				t.Errorf("error %q does not name the row", err)
			}
		})
	}
}

// TestDecodeAppends decodes several values into one buf and checks that
// each cell still holds its bytes after buf grew.
func TestDecodeAppends(t *testing.T) {
	var c Codec
	var want [][]store.Cell
	var encs [][]byte
	for i := range 20 {
		n := 1 + i*13
		ts := scrapeTimes(n, int64(i), 15000)
		vs := make([]float64, n)
		for j := range vs {
			vs[j] = float64(i*1000 + j)
		}
		q, v := floatRow(ts, vs, true)
		cells := cellOf(q, v, uint64(i))
		enc, ok := c.Encode(nil, testRow, cells)
		if !ok {
			t.Fatalf("row %d refused", i)
		}
		want = append(want, cells)
		encs = append(encs, enc)
	}
	var got []store.Cell
	var buf []byte
	for _, e := range encs {
		var err error
		got, buf, err = c.Decode(got, buf, testRow, e)
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range got {
		w := want[i][0]
		if !bytes.Equal(g.Qualifier, w.Qualifier) || !bytes.Equal(g.Value, w.Value) || g.Timestamp != w.Timestamp {
			t.Fatalf("cell %d differs after later decodes", i)
		}
		if cap(g.Value) != len(g.Value) || cap(g.Qualifier) != len(g.Qualifier) {
			t.Fatalf("cell %d not capacity-clipped", i)
		}
	}
	// What mapping reads from the decoded cells is the samples.
	pts, err := mapping.AppendPoints(nil, 1700002800, got[5].Qualifier, got[5].Value)
	if err != nil || len(pts) != 66 || pts[65].V != 5065 {
		t.Fatalf("AppendPoints on a decoded cell: %d points, err %v", len(pts), err)
	}
}

func TestPacked(t *testing.T) {
	for _, vs := range [][]int64{
		{0}, {1, 2, 3}, {-5, 5, -5, 5},
		{math.MinInt64, math.MaxInt64, 0, -1},
		{1 << 62, 1<<62 + 1, 1<<62 + 3},
		make([]int64, 100),
		func() []int64 {
			v := make([]int64, 97)
			for i := range v {
				v[i] = int64(i*i*i*i*i) ^ int64(i)<<(i%64)
			}
			return v
		}(),
	} {
		for _, pad := range []int{0, 1, 20} {
			enc := appendPacked(nil, slices.Clone(vs))
			enc = append(enc, make([]byte, pad)...)
			got := make([]int64, len(vs))
			n, err := readPacked(got, enc, len(vs), new(padBuf))
			if err != nil || n != len(enc)-pad {
				t.Fatalf("readPacked(%v): n %d of %d, err %v", vs, n, len(enc)-pad, err)
			}
			for i := range vs {
				if got[i] != vs[i] {
					t.Fatalf("value %d: got %d want %d (%v)", i, got[i], vs[i], vs)
				}
			}
		}
	}
}

// TestCanonical: canonical picks the encoding mapping.AppendValue writes.
func TestCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 127, 128, -128, -129, 32767, 32768, -32769,
		1<<31 - 1, 1 << 31, -1 << 31, -1<<31 - 1, 0x1p53, 0x1p62, -0x1p63, 0x1p63, 0.5, 0.1, 1e10, 1e20,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff0000000000002), math.MaxFloat32,
		math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat64, math.MaxFloat64}
	for range 10000 {
		xs = append(xs, math.Float64frombits(r.Uint64()), float64(int64(r.Uint64())>>r.IntN(64)),
			float64(float32(r.NormFloat64())), math.Round(r.NormFloat64()*1e4)/100)
	}
	for _, x := range xs {
		want, wf := mapping.AppendValue(nil, x)
		f, w := canonical(math.Float64bits(x))
		got := make([]byte, flagInfo[f].n)
		putWord(got, flagInfo[f].n, w)
		if f != wf || !bytes.Equal(got, want) {
			t.Fatalf("canonical(%v) = %#x %X, AppendValue gives %#x %X", x, f, got, wf, want)
		}
	}
}

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		x float64
		k int
	}{
		{0, 0}, {1, 0}, {-3, 0}, {0.5, 1}, {0.25, 2}, {0.1, 1}, {42.17, 2}, {1e-15, 15},
		{0x1p62, 0}, {-0x1p63, 0}, {0x1p63, -1}, {math.Copysign(0, -1), -1},
		{math.NaN(), -1}, {math.Inf(1), -1}, {1.0 / 3, -1}, {0.30000000000000004, -1},
		{1234567.891, 3}, {1.5e-16, -1},
	} {
		if got := sampleK(kindF64, math.Float64bits(c.x)); got != c.k {
			t.Errorf("sampleK(%v) = %d, want %d", c.x, got, c.k)
		}
	}
	if got := sampleK(kindF32, uint64(math.Float32bits(0.1))); got != 1 {
		t.Errorf("sampleK(float32 0.1) = %d, want 1", got)
	}
}

// TestFusedTaken: the one-pass decoder takes the shapes settled rows
// mostly have (the general path would give the same points, checkFused
// in every round trip), staleness markers among decimals included, and
// leaves mixed qualifiers to the general path.
func TestFusedTaken(t *testing.T) {
	var c Codec
	stale := math.Float64frombits(0x7ff0000000000002)
	ts := scrapeTimes(100, 1234, 15000)
	withStale := make([]float64, len(ts))
	for i := range withStale {
		withStale[i] = float64(i) * 1.5
	}
	withStale[0], withStale[50], withStale[99] = stale, stale, stale
	q, v := floatRow(ts, withStale, false)
	rows := benchRows()
	rows["stale markers"] = cellOf(q, v, 7)
	fl, b := intN(300, 2)
	q, v = column([]pt{secPt(5, fl, b), msPt(7000, fl, b)}, 1)
	mixed := cellOf(q, v, 9)
	for _, tc := range []struct {
		name  string
		cells []store.Cell
		want  bool
	}{
		{"counter", rows["counter"], true},
		{"gauge", rows["gauge"], true},
		{"xor", rows["xor"], true},
		{"counter-shortest", rows["counter-shortest"], true},
		{"gauge-shortest", rows["gauge-shortest"], true},
		{"stale markers", rows["stale markers"], true},
		{"mixed qualifiers", mixed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := roundTrip(t, &c, tc.cells, true)
			if _, _, _, ok := c.appendFused(nil, 1700002800, d); ok != tc.want {
				t.Fatalf("appendFused took it: %v, want %v", ok, tc.want)
			}
			if tc.name == "stale markers" && d[1]>>valShift&valMask == valXOR {
				t.Fatalf("stale markers coded XOR, want decimal with exceptions")
			}
		})
	}
}
