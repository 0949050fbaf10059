package mapping

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
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

// BenchmarkResolveBatchNew resolves what a remote-write request of 2000
// series new to the process becomes: ten labels each, one value of its
// own per series (so a new tag value UID each), the others shared, on the
// embedded store without fsync, its sole writer as serve is. Each
// iteration's series are new.
func BenchmarkResolveBatchNew(b *testing.B) {
	layout := DefaultLayout()
	u, err := NewUIDs(openUIDStore(b), layout, UIDOptions{Registerer: prometheus.NewRegistry(), SoleWriter: true})
	if err != nil {
		b.Fatal(err)
	}
	m := NewMapper(u, layout, 0)
	ctx := context.Background()
	const n = 2000
	items := make([]ResolveItem, n)
	next := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := range items {
			id := next
			next++
			lbls := []Label{{Name: []byte("__name__"), Value: fmt.Appendf(nil, "metric_%d", id%100)}}
			for j, name := range []string{"cpu", "datacenter", "device", "env", "instance", "job", "mode", "rack"} {
				lbls = append(lbls, Label{Name: []byte(name), Value: fmt.Appendf(nil, "v%d", (id/(j+1))%(16<<j))})
			}
			lbls = append(lbls, Label{Name: []byte("series"), Value: fmt.Appendf(nil, "%d", id)})
			items[i] = ResolveItem{Key: fmt.Appendf(nil, "key-%d", id), Labels: lbls}
		}
		b.StartTimer()
		m.ResolveBatch(ctx, items)
		for i := range items {
			if items[i].Err != nil {
				b.Fatal(items[i].Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
}

// BenchmarkMerge: one row of 360 single millisecond cells (a sample every
// 10 s for an hour), in time order (Merge's shortcut) and with one
// timestamp written twice (the general merge of versions).
func BenchmarkMerge(b *testing.B) {
	const base = 1292148000
	var inOrder []store.Cell
	for i := range 360 {
		c := msCell(uint32(i)*10_000, float64(i)*0.5)
		inOrder = append(inOrder, store.Cell{Family: []byte("t"), Qualifier: c.q, Value: c.v, Timestamp: 1})
	}
	rewritten := append(slices.Clone(inOrder), inOrder[100])
	for _, c := range []struct {
		name  string
		cells []store.Cell
	}{{"in_order", inOrder}, {"rewritten", rewritten}} {
		b.Run(c.name, func(b *testing.B) {
			var m Merger
			b.ReportAllocs()
			for b.Loop() {
				pts, err := m.Merge(base, c.cells, 0, math.MaxInt64)
				if err != nil || len(pts) != 360 {
					b.Fatalf("%d points, %v", len(pts), err)
				}
			}
			b.ReportMetric(float64(b.N)*360/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
