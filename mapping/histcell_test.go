package mapping

import (
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"

	"github.com/promhbase/promhbase/test/testkit/fixture"
)

// goldenHistograms are the histograms of testdata/histograms.txt, by name.
func goldenHistograms() map[string]any {
	return map[string]any{
		"int-exponential": &histogram.Histogram{
			CounterResetHint: histogram.NotCounterReset, Schema: 3, ZeroThreshold: 0.001,
			Count: 12, ZeroCount: 2, Sum: 18.5,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 3, Length: 1}},
			PositiveBuckets: []int64{3, -1, 2},
			NegativeSpans:   []histogram.Span{{Offset: -2, Length: 1}},
			NegativeBuckets: []int64{3},
		},
		"float": &histogram.FloatHistogram{
			CounterResetHint: histogram.CounterReset, Schema: -1, ZeroThreshold: 0,
			Count: 3.5, ZeroCount: 0.5, Sum: -2.25,
			PositiveSpans:   []histogram.Span{{Offset: 1, Length: 1}},
			PositiveBuckets: []float64{3},
		},
		"custom-buckets": &histogram.Histogram{
			Schema: histogram.CustomBucketsSchema, Count: 5, Sum: 1.5,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 3}},
			PositiveBuckets: []int64{1, 1, 0},
			CustomValues:    []float64{0.1, 0.5, 1},
		},
		"gauge": &histogram.FloatHistogram{
			CounterResetHint: histogram.GaugeType, Schema: 0, Count: 1, Sum: 4,
			PositiveSpans: []histogram.Span{{Offset: 2, Length: 1}}, PositiveBuckets: []float64{1},
		},
		"stale": &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN)},
	}
}

// sameHistogram compares field by field, floats by their bits, nil and
// empty slices alike.
func sameHistogram(a, b any) bool {
	norm := func(x any) any {
		switch h := x.(type) {
		case *histogram.Histogram:
			c := *h
			return [6]any{c.CounterResetHint, c.Schema, math.Float64bits(c.ZeroThreshold), [3]any{c.Count, c.ZeroCount, math.Float64bits(c.Sum)},
				[2]any{spansOrNil(c.PositiveSpans), spansOrNil(c.NegativeSpans)}, [3]any{int64sOrNil(c.PositiveBuckets), int64sOrNil(c.NegativeBuckets), bitsOf(c.CustomValues)}}
		case *histogram.FloatHistogram:
			c := *h
			return [6]any{c.CounterResetHint, c.Schema, math.Float64bits(c.ZeroThreshold), [3]any{math.Float64bits(c.Count), math.Float64bits(c.ZeroCount), math.Float64bits(c.Sum)},
				[2]any{spansOrNil(c.PositiveSpans), spansOrNil(c.NegativeSpans)}, [3]any{bitsOf(c.PositiveBuckets), bitsOf(c.NegativeBuckets), bitsOf(c.CustomValues)}}
		}
		return nil
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func spansOrNil(s []histogram.Span) []histogram.Span {
	if len(s) == 0 {
		return nil
	}
	return s
}

func int64sOrNil(s []int64) []int64 {
	if len(s) == 0 {
		return nil
	}
	return s
}

func bitsOf(fs []float64) []uint64 {
	if len(fs) == 0 {
		return nil
	}
	out := make([]uint64, len(fs))
	for i, f := range fs {
		out[i] = math.Float64bits(f)
	}
	return out
}

func encodeAny(h any) []byte {
	if ih, ok := h.(*histogram.Histogram); ok {
		return AppendHistogramValue(nil, ih, nil)
	}
	return AppendHistogramValue(nil, nil, h.(*histogram.FloatHistogram))
}

func decodeAny(t testing.TB, b []byte) any {
	t.Helper()
	var h histogram.Histogram
	var fh histogram.FloatHistogram
	isFloat, err := DecodeHistogramValue(b, &h, &fh)
	if err != nil {
		t.Fatalf("decode %X: %v", b, err)
	}
	if isFloat {
		return &fh
	}
	return &h
}

// TestHistogramGolden pins the histogram cell's value bytes: each entry of
// testdata/histograms.txt is `name | hex`, with a comment per field.
func TestHistogramGolden(t *testing.T) {
	want := goldenHistograms()
	seen := 0
	for _, l := range fixture.Lines(t, "histograms.txt") {
		name, hx, ok := strings.Cut(l.Text, "|")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(hx), " ", ""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) {
			h, ok := want[name]
			if !ok {
				t.Fatalf("no histogram %q", name)
			}
			if got := encodeAny(h); string(got) != string(b) {
				t.Errorf("encoded %X, want %X", got, b)
			}
			if back := decodeAny(t, b); !sameHistogram(back, h) {
				t.Errorf("decoded %+v, want %+v", back, h)
			}
		})
		seen++
	}
	if seen != len(want) {
		t.Errorf("%d entries, want %d", seen, len(want))
	}
}

func TestHistogramQualifier(t *testing.T) {
	for _, tc := range []struct {
		q  string
		ms uint32
	}{{"060001E240", 123456}, {"0600000000", 0}, {"06007B", 123000}} {
		q, _ := hex.DecodeString(tc.q)
		if ms, ok := ParseHistogramQualifier(q); !ok || ms != tc.ms {
			t.Errorf("ParseHistogramQualifier(%s) = %d %v, want %d", tc.q, ms, ok, tc.ms)
		}
		if len(q) == 5 && hex.EncodeToString(AppendHistogramQualifier(nil, tc.ms)) != strings.ToLower(tc.q) {
			t.Errorf("AppendHistogramQualifier(%d) = %X", tc.ms, AppendHistogramQualifier(nil, tc.ms))
		}
	}
	for _, q := range []string{"06", "0600", "060000", "07007B", "F0000000", "06000000"} {
		b, _ := hex.DecodeString(q)
		if _, ok := ParseHistogramQualifier(b); ok != (q == "060000") {
			t.Errorf("ParseHistogramQualifier(%s) ok = %v", q, ok)
		}
	}
}

func TestHistogramDecodeErrors(t *testing.T) {
	good := encodeAny(goldenHistograms()["int-exponential"])
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other codec", append([]byte{0x00}, good[1:]...)},
		{"unknown version", append([]byte{good[0], 0x10}, good[2:]...)},
		{"cut", good[:len(good)-1]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"huge list", []byte{0x50, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F}},
		// Well-formed payloads of histograms Prometheus's chunks cannot
		// hold (its receiver refuses them, and so does promhbase's).
		{"buckets the spans do not cover", encodeAny(&histogram.Histogram{Schema: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1, 1}})},
		{"float buckets the spans do not cover", encodeAny(&histogram.FloatHistogram{Schema: 1, NegativeSpans: []histogram.Span{{Length: 3}}, NegativeBuckets: []float64{1}})},
		{"schema 9", encodeAny(&histogram.Histogram{Schema: 9})},
		{"schema -52", encodeAny(&histogram.FloatHistogram{Schema: -52})},
		{"custom bounds, negative buckets", encodeAny(&histogram.Histogram{Schema: -53, CustomValues: []float64{1}, NegativeSpans: []histogram.Span{{Length: 1}}, NegativeBuckets: []int64{1}})},
		{"a span going back", encodeAny(&histogram.Histogram{Schema: 0, PositiveSpans: []histogram.Span{{Offset: 2, Length: 1}, {Offset: -1, Length: 1}}, PositiveBuckets: []int64{1, 0}})},
	} {
		var h histogram.Histogram
		var fh histogram.FloatHistogram
		if _, err := DecodeHistogramValue(tc.b, &h, &fh); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: err = %v, want ErrMalformedCell", tc.name, err)
		}
	}
}

func TestHistogramDecodeNoAlloc(t *testing.T) {
	b := encodeAny(goldenHistograms()["int-exponential"])
	var h histogram.Histogram
	var fh histogram.FloatHistogram
	if _, err := DecodeHistogramValue(b, &h, &fh); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeHistogramValue(b, &h, &fh) }); n != 0 && !raceEnabled {
		t.Errorf("%v allocations per decode into a reused histogram", n)
	}
}

func FuzzDecodeHistogramValue(f *testing.F) {
	for _, h := range goldenHistograms() {
		f.Add(encodeAny(h))
	}
	f.Add([]byte{0x50})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h histogram.Histogram
		var fh histogram.FloatHistogram
		isFloat, err := DecodeHistogramValue(b, &h, &fh)
		if err != nil {
			if !errors.Is(err, ErrMalformedCell) {
				t.Fatalf("error %v does not wrap ErrMalformedCell", err)
			}
			return
		}
		var again []byte
		if isFloat {
			again = AppendHistogramValue(nil, nil, &fh)
		} else {
			again = AppendHistogramValue(nil, &h, nil)
		}
		// Varints may be written longer than needed; the histogram must
		// still come back the same, and its canonical form is stable.
		back := decodeAny(t, again)
		var first any = &h
		if isFloat {
			first = &fh
		}
		if !sameHistogram(back, first) {
			t.Fatalf("%X decodes to %+v, re-encoded %X decodes to %+v", b, first, again, back)
		}
		if string(encodeAny(back)) != string(again) {
			t.Fatalf("canonical form %X not stable", again)
		}
	})
}

// bench20 is an integer histogram of 20 populated buckets in two spans.
func bench20() *histogram.Histogram {
	h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128, Count: 400, ZeroCount: 3, Sum: 1234.5,
		PositiveSpans: []histogram.Span{{Offset: 5, Length: 12}, {Offset: 4, Length: 8}}}
	for i := range 20 {
		h.PositiveBuckets = append(h.PositiveBuckets, int64(i%5)-2)
	}
	return h
}

func BenchmarkAppendHistogramValue(b *testing.B) {
	h := bench20()
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendHistogramValue(buf[:0], h, nil)
	}
	b.ReportMetric(float64(len(buf)), "bytes/histogram")
}

func BenchmarkDecodeHistogramValue(b *testing.B) {
	v := AppendHistogramValue(nil, bench20(), nil)
	var h histogram.Histogram
	var fh histogram.FloatHistogram
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeHistogramValue(v, &h, &fh); err != nil {
			b.Fatal(err)
		}
	}
}
