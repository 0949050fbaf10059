package dense

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// benchRows returns settled 240-sample rows with 4-byte ms qualifiers: a
// counter with small integer increments, a 2-decimal gauge and a noisy
// float (XOR), with 8-byte floats, and the counter and the gauge as
// promhbase's writer stores them, in their shortest exact encodings (the
// counter's integers grow from 2 to 4 bytes, the gauge mixes integers,
// float32s and float64s: canonical flags).
func benchRows() map[string][]store.Cell {
	r := rand.New(rand.NewPCG(1, 2))
	ts := make([]int64, 240)
	for i := range ts {
		ts[i] = 4321 + int64(i)*15000 + int64(r.IntN(6))
	}
	rows := map[string][]store.Cell{}
	for _, kind := range []struct {
		name string
		next func(prev float64) float64
	}{
		{"counter", func(prev float64) float64 { return prev + float64(r.IntN(11)) }},
		{"gauge", func(prev float64) float64 { return math.Round(prev*100+float64(r.IntN(21)-10)) / 100 }},
		{"xor", func(prev float64) float64 { return prev + r.NormFloat64() }},
		{"counter-shortest", func(prev float64) float64 { return prev + float64(r.IntN(300)) }},
		{"gauge-shortest", func(prev float64) float64 { return math.Round(prev*100+float64(r.IntN(21)-10)) / 100 }},
	} {
		name, next := kind.name, kind.next
		vs := make([]float64, 240)
		v := 1000.0
		if name == "counter-shortest" {
			v = 30000
		}
		for i := range vs {
			v = next(v)
			vs[i] = v
		}
		q, val := floatRow(ts, vs, !strings.HasSuffix(name, "-shortest"))
		rows[name] = cellOf(q, val, 1700006412345)
	}
	return rows
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"counter", "gauge", "xor", "counter-shortest", "gauge-shortest"} {
		b.Run(name, func(b *testing.B) {
			var c Codec
			cells := benchRows()[name]
			v, ok := c.Encode(nil, testRow, cells)
			if !ok {
				b.Fatal("refused")
			}
			dst := make([]store.Cell, 0, 1)
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			b.SetBytes(int64(len(cells[0].Qualifier) + len(cells[0].Value)))
			for b.Loop() {
				var err error
				dst, buf, err = c.Decode(dst[:0], buf[:0], testRow, v)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(v))/240, "B/sample")
		})
	}
}

// BenchmarkDecodeFloor writes what Decode writes for a 240-sample row (240
// 4-byte qualifiers and 8-byte floats) from values already at hand: the
// least any decoder does, to read BenchmarkDecode against on a given
// machine.
func BenchmarkDecodeFloor(b *testing.B) {
	out := make([]byte, 1+240*12+1)
	for b.Loop() {
		q, v := out[1:1+240*4], out[1+240*4:]
		m, o := int64(5), uint32(0)
		n := min(240, len(q)/4, len(v)/8)
		for i := 0; i < n; i++ {
			m += int64(i & 7)
			o += 15000
			binary.BigEndian.PutUint32(q[4*i:4*i+4], msFlag|o<<6|0xF)
			binary.BigEndian.PutUint64(v[8*i:8*i+8], math.Float64bits(float64(m)))
		}
	}
}

// BenchmarkDecodePoints decodes a dense value straight into points
// (Codec.AppendPoints), as a query reads settled rows: to read against
// BenchmarkDecode plus BenchmarkMappingPoints, the way it replaces. Three
// ways: the one-pass decoder with its times cache off, with it (the
// value's timestamps seen before, as the rows of one target's series
// are), and the general path (unpack, then points).
func BenchmarkDecodePoints(b *testing.B) {
	for _, way := range []string{"one-pass", "cached-times", "general"} {
		for _, name := range []string{"counter", "gauge", "xor", "counter-shortest", "gauge-shortest"} {
			b.Run(way+"/"+name, func(b *testing.B) {
				var c Codec
				v, ok := c.Encode(nil, testRow, benchRows()[name])
				if !ok {
					b.Fatal("refused")
				}
				c.timesOf().off = way == "one-pass"
				pts := make([]mapping.Point, 0, 240)
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if way == "general" {
						pts, _, err = c.appendUnpacked(pts[:0], 1700002800, v)
					} else {
						pts, _, err = c.AppendPoints(pts[:0], 1700002800, v)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pts)), "ns/sample")
			})
		}
	}
}

// BenchmarkMappingPoints decodes the compacted column itself into points
// with package mapping, as a query does after Decode.
func BenchmarkMappingPoints(b *testing.B) {
	cells := benchRows()["counter"]
	pts := make([]mapping.Point, 0, 240)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		pts, err = mapping.AppendPoints(pts[:0], 1700002800, cells[0].Qualifier, cells[0].Value)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, name := range []string{"counter", "gauge", "xor", "counter-shortest", "gauge-shortest"} {
		b.Run(name, func(b *testing.B) {
			var c Codec
			cells := benchRows()[name]
			dst := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				dst, ok = c.Encode(dst[:0], testRow, cells)
				if !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
