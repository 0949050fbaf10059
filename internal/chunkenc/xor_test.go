package chunkenc

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

type xorSample struct {
	t int64
	v float64
}

// histReference encodes ss with Prometheus's own appender.
func xorReference(t *testing.T, ss []xorSample) []byte {
	t.Helper()
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		app.Append(0, s.t, s.v)
	}
	return c.Bytes()
}

func build(ss []xorSample) []byte {
	var b XORBuilder
	b.Reset(nil)
	for _, s := range ss {
		b.Append(s.t, s.v)
	}
	return b.Bytes()
}

// checkXOR compares the XORBuilder's chunk with Prometheus's, and decodes it.
func checkXOR(t *testing.T, ss []xorSample) {
	t.Helper()
	got, want := build(ss), xorReference(t, ss)
	if !bytes.Equal(got, want) {
		t.Fatalf("%d samples: chunk\n%x\nwant (chunkenc)\n%x", len(ss), got, want)
	}
	c, err := chunkenc.FromData(chunkenc.EncXOR, got)
	if err != nil {
		t.Fatal(err)
	}
	it := c.Iterator(nil)
	for i, s := range ss {
		if it.Next() != chunkenc.ValFloat {
			t.Fatalf("xorSample %d missing: %v", i, it.Err())
		}
		ts, v := it.At()
		if ts != s.t || math.Float64bits(v) != math.Float64bits(s.v) {
			t.Fatalf("xorSample %d: (%d, %v), want (%d, %v)", i, ts, v, s.t, s.v)
		}
	}
	if it.Next() != chunkenc.ValNone {
		t.Fatal("more samples than appended")
	}
}

// TestXORSameBytes: the chunks of typical and edge-case series are the
// bytes Prometheus's appender writes.
func TestXORSameBytes(t *testing.T) {
	series := func(n int, ts func(i int) int64, vs func(i int) float64) []xorSample {
		ss := make([]xorSample, n)
		for i := range ss {
			ss[i] = xorSample{ts(i), vs(i)}
		}
		return ss
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		ss   []xorSample
	}{
		{"empty", nil},
		{"one", []xorSample{{1_700_000_000_000, 1.5}}},
		{"two", []xorSample{{-5, 0}, {10, math.Inf(1)}}},
		{"counter every 15 s", series(120, func(i int) int64 { return 1_700_000_000_000 + 15_000*int64(i) }, func(i int) float64 { return float64(i * 7) })},
		{"gauge with jitter", series(120, func(i int) int64 { return 1_700_000_000_000 + 15_000*int64(i) + r.Int64N(50) }, func(i int) float64 { return r.Float64() * 100 })},
		{"constant", series(50, func(i int) int64 { return int64(i) * 1000 }, func(int) float64 { return 42 })},
		{"dod in every bucket", series(12, func(i int) int64 {
			return []int64{0, 1, 2, 8200, 16400, 90_000, 160_000, 800_000, 1_600_000, 1 << 40, 1<<40 + 1, 1<<41 + 7}[i]
		}, func(i int) float64 { return float64(i) })},
		{"dod at the bucket edges", func() []xorSample {
			ss := []xorSample{{0, 1}, {10_000_000, 2}}
			delta := int64(10_000_000)
			for i, dod := range []int64{8192, -8191, -8192, 8193, 65536, -65535, -65536, 65537, 524288, -524287, -524288, 524289, 0, -1, 1} {
				delta += dod
				ss = append(ss, xorSample{ss[len(ss)-1].t + delta, float64(i)})
			}
			return ss
		}()},
		{"special values", series(8, func(i int) int64 { return int64(i) }, func(i int) float64 {
			return []float64{math.NaN(), math.Float64frombits(0x7ff0000000000002), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64, -1}[i]
		})},
		{"full width xor", series(4, func(i int) int64 { return int64(i) }, func(i int) float64 {
			return math.Float64frombits([]uint64{0, 0x8000000000000001, 0x1, 0xFFFFFFFFFFFFFFFF}[i])
		})},
		{"max samples", series(65535, func(i int) int64 { return int64(i) * 10 }, func(i int) float64 { return float64(i % 17) })},
	} {
		t.Run(tc.name, func(t *testing.T) { checkXOR(t, tc.ss) })
	}
}

// FuzzXORSameBytes: any series of increasing timestamps encodes as
// Prometheus's appender encodes it.
func FuzzXORSameBytes(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, int64(1_700_000_000_000))
	f.Add(bytes.Repeat([]byte{0xff, 0, 0x80}, 40), int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, t0 int64) {
		// Each sample: a 3-byte time step and an 8-byte value.
		var ss []xorSample
		ts := t0
		for len(data) >= 11 && len(ss) < 2000 {
			step := int64(data[0])<<16 | int64(data[1])<<8 | int64(data[2])
			if data[0]&0x80 != 0 {
				step <<= 20 // large gaps too
			}
			if step == 0 {
				step = 1
			}
			if ts > math.MaxInt64-step {
				break
			}
			ts += step
			ss = append(ss, xorSample{ts, math.Float64frombits(binary.LittleEndian.Uint64(data[3:11]))})
			data = data[11:]
		}
		checkXOR(t, ss)
	})
}

func BenchmarkXORAppend(b *testing.B) {
	ss := make([]xorSample, 120)
	for i := range ss {
		ss[i] = xorSample{1_700_000_000_000 + 15_000*int64(i) + int64(i%3), float64(i*i) / 7}
	}
	b.Run("promhbase", func(b *testing.B) {
		var bld XORBuilder
		buf := make([]byte, 0, 256)
		b.ReportAllocs()
		for b.Loop() {
			bld.Reset(buf)
			for _, s := range ss {
				bld.Append(s.t, s.v)
			}
			buf = bld.Bytes()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/xorSample")
	})
	b.Run("chunkenc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := chunkenc.NewXORChunk()
			app, _ := c.Appender()
			for _, s := range ss {
				app.Append(0, s.t, s.v)
			}
			_ = c.Bytes()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/xorSample")
	})
}
