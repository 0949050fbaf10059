package promapi

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/jsonutil"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// randomMatrix returns series of random labels (with characters JSON
// escapes, and invalid UTF-8) and points (special floats included), some
// with native histograms.
func randomMatrix(r *rand.Rand, series, points int) promql.Matrix {
	values := []string{"a", `q"uote`, `back\slash`, "<tag>&amp;", "ünï", "\xff\xfe", "tab\there", "line\nbreak"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e-300, 1.7976931348623157e308, 35700833.98108984, 1e21, 123456789012}
	m := make(promql.Matrix, series)
	for i := range m {
		b := labels.NewBuilder(labels.EmptyLabels())
		b.Set("__name__", "metric_"+strconv.Itoa(i))
		b.Set("instance", values[r.IntN(len(values))]+strconv.Itoa(i))
		if r.IntN(2) == 0 {
			b.Set("zz", values[r.IntN(len(values))])
		}
		m[i].Metric = b.Labels()
		n := r.IntN(points + 1)
		for j := range n {
			f := r.NormFloat64() * math.Pow(10, float64(r.IntN(30)-15))
			if r.IntN(3) == 0 {
				f = randomDecimal(r)
			}
			if r.IntN(10) == 0 {
				f = floats[r.IntN(len(floats))]
			}
			t := 1795759488000 + int64(j)*288_000 + int64(r.IntN(3))
			switch r.IntN(50) {
			case 0:
				t = -t
			case 1:
				t = math.MinInt64
			case 2:
				t = int64(r.IntN(2000)) - 1000
			}
			m[i].Floats = append(m[i].Floats, promql.FPoint{T: t, F: f})
		}
		if r.IntN(8) == 0 {
			m[i].Histograms = append(m[i].Histograms, promql.HPoint{T: 1795759488000, H: &histogram.FloatHistogram{Count: 3, Sum: 2.5, ZeroThreshold: 0.001, ZeroCount: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{1, 1}}})
		}
	}
	return m
}

// randomDecimal returns the double nearest a random decimal m/10^k, as
// exporters write gauges and counters: up to 17 significant digits, up
// to 12 places, either sign.
func randomDecimal(r *rand.Rand) float64 {
	m := r.Int64N(int64(math.Pow(10, float64(1+r.IntN(17)))))
	f := float64(m) / math.Pow(10, float64(r.IntN(13)))
	if r.IntN(4) == 0 {
		f = -f
	}
	return f
}

// prometheusFloat is what Prometheus's jsonutil.MarshalFloat writes of
// f, without its quotes.
func prometheusFloat(f float64) string {
	s := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
	defer jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(s)
	jsonutil.MarshalFloat(f, s)
	out := string(s.Buffer())
	return out[1 : len(out)-1]
}

// TestAppendFloat: appendFloat writes what Prometheus's
// jsonutil.MarshalFloat does, on decimals (where the short path writes
// them), on the edges of its forms and of the short path, and on random
// doubles.
func TestAppendFloat(t *testing.T) {
	check := func(t *testing.T, f float64) {
		t.Helper()
		if got, want := string(appendFloat(nil, f)), prometheusFloat(f); got != want {
			t.Fatalf("%v (%#x): %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	edges := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 0.3, 0.1 + 0.2, 1e-6, 9.99999e-7, 1.000001e-6, 1e-9, 123456789.123456,
		999999999999999, 1e15, 1e15 + 1, 999999999999999.9, 99999999999999.99, 0.000123456789, 12345.6789, 1e20, 1e21, 9.999999999999999e20,
		math.MaxInt64, math.MinInt64, 1 << 53, 1<<53 + 1, 4.35, 2.675, 1.005, 100, 1e9, 0.999999999, 0.0000015, 35700833.98108984,
		math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64}
	t.Run("edges", func(t *testing.T) {
		for _, f := range edges {
			check(t, f)
			check(t, -f)
			check(t, math.Nextafter(f, math.Inf(1)))
			check(t, math.Nextafter(f, math.Inf(-1)))
		}
	})
	r := rand.New(rand.NewPCG(7, 8))
	t.Run("decimals", func(t *testing.T) {
		for range 300000 {
			check(t, randomDecimal(r))
		}
	})
	t.Run("doubles", func(t *testing.T) {
		for range 100000 {
			check(t, math.Float64frombits(r.Uint64()))
			check(t, r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)))
		}
	})
}

// FuzzAppendFloat: appendFloat writes what Prometheus's
// jsonutil.MarshalFloat does, on any double.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 0.1, 12345.678, 1e-6, 1e21, -3.5, math.NaN()} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		if got, want := string(appendFloat(nil, v)), prometheusFloat(v); got != want {
			t.Fatalf("%v (%#x): %s, want %s", v, bits, got, want)
		}
	})
}

// BenchmarkAppendFloat: a value of a gauge as exporters write it (the
// short path), and a rate's (strconv's).
func BenchmarkAppendFloat(b *testing.B) {
	bench := func(name string, f float64) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 32)
			for b.Loop() {
				buf = appendFloat(buf[:0], f)
			}
		})
	}
	bench("decimal", 1234.56)
	bench("rate", 0.016666666666666666)
}

// TestParallelJSON: the codec's bytes are Prometheus's JSON codec's, for
// matrices of any size on any number of goroutines, and for answers it
// does not split (warnings, statistics, other types).
func TestParallelJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	matrix := func(m promql.Matrix) *v1.Response {
		return &v1.Response{Status: "success", Data: &v1.QueryData{ResultType: parser.ValueTypeMatrix, Result: m}}
	}
	type tc struct {
		name string
		resp *v1.Response
	}
	var cases []tc
	for _, size := range []struct{ series, points int }{{0, 0}, {1, 5000}, {2, 3000}, {7, 400}, {40, 300}, {300, 20}, {2, 40000}, {100, 600}} {
		for k := range 3 {
			cases = append(cases, tc{strconv.Itoa(size.series) + "x" + strconv.Itoa(size.points) + "/" + strconv.Itoa(k), matrix(randomMatrix(r, size.series, size.points))})
		}
	}
	var warnings annotations.Annotations
	warnings.Add(errors.New("a warning"))
	warn, info := warnings.AsStrings("", 10, 10)
	withWarnings := matrix(randomMatrix(r, 30, 300))
	withWarnings.Warnings, withWarnings.Infos = warn, info
	cases = append(cases,
		tc{"warnings", withWarnings},
		tc{"vector", &v1.Response{Status: "success", Data: &v1.QueryData{ResultType: parser.ValueTypeVector, Result: promql.Vector{{Metric: labels.FromStrings("a", "b"), F: 1, T: 2}}}}},
		tc{"labels", &v1.Response{Status: "success", Data: []string{"a", "b"}}},
	)
	for _, c := range cases {
		want, err := v1.JSONCodec{}.Encode(c.resp)
		if err != nil {
			t.Fatal(err)
		}
		for _, procs := range []int{1, 2, 3, 8} {
			t.Run(c.name+"/procs="+strconv.Itoa(procs), func(t *testing.T) {
				got, err := parallelJSON{procs: procs}.Encode(c.resp)
				if err != nil {
					t.Fatal(err)
				}
				if m, ok := plainMatrix(c.resp); ok && procs > 1 && len(m) > 1 {
					points, most := 0, 0
					for _, s := range m {
						points += len(s.Floats)
						most = max(most, len(s.Floats))
					}
					if points >= minParallelPoints && 2*most <= points && len(cutByPoints(m, procs)) < 2 {
						t.Fatalf("%d points not cut in parts", points)
					}
				}
				if !slices.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Fatalf("differs at byte %d of %d (want %d): got %.80q, want %.80q", i, len(got), len(want), got[i:], want[min(i, len(want)):])
				}
			})
		}
	}
}

// BenchmarkParallelJSON: a range answer of 20 and of 640 series × 300
// points, Prometheus's codec against the parallel one on GOMAXPROCS
// goroutines.
func BenchmarkParallelJSON(b *testing.B) {
	for _, series := range []int{20, 640} {
		r := rand.New(rand.NewPCG(3, 4))
		m := randomMatrix(r, series, 300)
		for i := range m {
			m[i].Histograms = nil
			m[i].Floats = m[i].Floats[:0]
			for j := range 300 {
				m[i].Floats = append(m[i].Floats, promql.FPoint{T: 1795759488000 + int64(j)*288_000, F: r.Float64() * 1e8})
			}
		}
		resp := &v1.Response{Status: "success", Data: &v1.QueryData{ResultType: parser.ValueTypeMatrix, Result: m}}
		for _, codec := range []struct {
			name string
			c    v1.Codec
		}{{"prometheus", v1.JSONCodec{}}, {"parallel", parallelJSON{}}} {
			b.Run("series="+strconv.Itoa(series)+"/"+codec.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := codec.c.Encode(resp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
