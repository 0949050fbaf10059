package mapping

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks of the hot paths. Compare changes with benchstat:
//
//	go test ./mapping -run '^$' -bench . -count 6 | tee new.txt

func BenchmarkAppendRowKey(b *testing.B) {
	metric := []byte{0, 0, 1}
	tags := []byte{0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0, 8}
	for _, c := range []struct {
		name string
		l    Layout
	}{
		{"unsalted", DefaultLayout()},
		{"salted", Layout{SaltWidth: 1, SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 64)
			for b.Loop() {
				buf = c.l.AppendRowKey(buf[:0], metric, 1292148000, tags)
			}
		})
	}
}

func BenchmarkParseRowKey(b *testing.B) {
	l := DefaultLayout()
	key := l.AppendRowKey(nil, []byte{0, 0, 1}, 1292148000, make([]byte, 4*6))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, err := l.ParseRowKey(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSortTags(b *testing.B) {
	l := DefaultLayout()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{4, 12, 40} {
		orig := make([]byte, n*l.PairLen())
		for i := range orig {
			orig[i] = byte(rng.Uint32())
		}
		tags := make([]byte, len(orig))
		b.Run(string(rune('0'+n/10))+string(rune('0'+n%10))+"tags", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(tags, orig)
				l.SortTags(tags)
			}
		})
	}
}

// BenchmarkAppendSample encodes one sample's cell: qualifier and value.
func BenchmarkAppendSample(b *testing.B) {
	for _, c := range []struct {
		name string
		v    float64
	}{{"int", 42}, {"float32", 0.5}, {"float64", 0.1}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			q := make([]byte, 0, 4)
			v := make([]byte, 0, 8)
			for b.Loop() {
				var flags byte
				v, flags = AppendValue(v[:0], c.v)
				q = AppendMsQualifier(q[:0], 123456, flags)
			}
		})
	}
}

// BenchmarkAppendPointsCompacted decodes a full row: one compacted column of
// 3600 points (one per second, millisecond qualifiers, mixed encodings).
func BenchmarkAppendPointsCompacted(b *testing.B) {
	const n = 3600
	rng := rand.New(rand.NewPCG(2, 2))
	pts := make([]Point, n)
	for i := range pts {
		v := float64(rng.IntN(1000))
		if i%3 == 1 {
			v = rng.Float64()
		}
		pts[i] = Point{T: 1292148000*1000 + int64(i)*1000, V: v}
	}
	q, v := AppendCompacted(nil, nil, 1292148000, pts)
	out := make([]Point, 0, n)
	b.SetBytes(int64(len(q) + len(v)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		out, err = AppendPoints(out[:0], 1292148000, q, v)
		if err != nil || len(out) != n {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkAppendPointsSingle decodes uncompacted cells, one point each.
func BenchmarkAppendPointsSingle(b *testing.B) {
	msQ, msV := msCell(123456, 0.1).q, msCell(123456, 0.1).v
	sQ, sV := secCell(123, 42).q, secCell(123, 42).v
	for _, c := range []struct {
		name string
		q, v []byte
	}{{"ms", msQ, msV}, {"s", sQ, sV}} {
		b.Run(c.name, func(b *testing.B) {
			out := make([]Point, 0, 1)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				out, err = AppendPoints(out[:0], 1292148000, c.q, c.v)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

func BenchmarkAppendCompacted(b *testing.B) {
	pts := randomPoints(rand.New(rand.NewPCG(3, 3)), 1292148000, 3600)
	q := make([]byte, 0, 4*len(pts))
	v := make([]byte, 0, 8*len(pts)+1)
	b.ReportAllocs()
	for b.Loop() {
		q, v = AppendCompacted(q[:0], v[:0], 1292148000, pts)
	}
	b.ReportMetric(float64(b.N)*float64(len(pts))/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkAppendRegexQuoted(b *testing.B) {
	uid := []byte{0x5C, 0x45, 0x45, 0x00, 0x0A, 0xFF}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRegexQuoted(buf[:0], uid)
	}
}
