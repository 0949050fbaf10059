package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/benchdata"
)

// This file checks the hand-written decoders of wire.go, wirev2.go and
// wirehist.go against the gogo decoders of prompb (1.0) and writev2 (2.0)
// on generated requests that use every field: random label sets (long,
// Unicode and empty values included), samples with special values and
// start timestamps, integer, float and custom-bucket histograms with gaps
// and negative spans, exemplars and metadata.

// genSeries is one generated series, protocol-neutral.
type genSeries struct {
	labels    [][2]string
	samples   []writev2.Sample
	hists     []any // *histogram.Histogram or *histogram.FloatHistogram
	histTS    []int64
	histST    []int64
	exemplars []genExemplar
	meta      *genMeta
}

type genExemplar struct {
	labels [][2]string
	v      float64
	t      int64
}

type genMeta struct {
	typ        writev2.Metadata_MetricType
	help, unit string
}

// genString returns a label name or value: mostly short ASCII, sometimes
// long enough for a two-byte length, sometimes Unicode or control bytes.
func genString(r *rand.Rand, prefix string) string {
	switch r.IntN(10) {
	case 0:
		return prefix + strings.Repeat("x", 120+r.IntN(200))
	case 1:
		return prefix + "ü\n🌍 \"q\""
	}
	return fmt.Sprintf("%s%d", prefix, r.IntN(50))
}

// genLabels returns 1..12 labels with distinct names, sorted as senders
// sort them (one set in eight is left unsorted).
func genLabels(r *rand.Rand) [][2]string {
	ls := [][2]string{{"__name__", genString(r, "metric_")}}
	seen := map[string]bool{"__name__": true}
	for n := r.IntN(12); len(ls) <= n; {
		name := genString(r, "l")
		if seen[name] {
			continue
		}
		seen[name] = true
		v := genString(r, "v")
		if r.IntN(10) == 0 {
			v = "" // as absent; encoded without its value field
		}
		ls = append(ls, [2]string{name, v})
	}
	slices.SortFunc(ls, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	if r.IntN(8) == 0 {
		r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	}
	return ls
}

func genFloat(r *rand.Rand) float64 {
	switch r.IntN(12) {
	case 0:
		return math.Float64frombits(value.StaleNaN)
	case 1:
		return math.NaN()
	case 2:
		return math.Inf(1 - 2*r.IntN(2))
	case 3:
		return 0
	}
	return r.NormFloat64() * 1e3
}

// genSpans returns spans over n buckets with gaps; the first offset may be
// negative unless nonNeg.
func genSpans(r *rand.Rand, n int, nonNeg bool) []histogram.Span {
	var spans []histogram.Span
	for n > 0 {
		l := 1 + r.IntN(min(n, 4))
		off := int32(r.IntN(4))
		if len(spans) == 0 {
			off = int32(r.IntN(21) - 10)
			if nonNeg {
				off = int32(r.IntN(2))
			}
		}
		spans = append(spans, histogram.Span{Offset: off, Length: uint32(l)})
		n -= l
	}
	return spans
}

func spanBuckets(spans []histogram.Span) int {
	n := 0
	for _, s := range spans {
		n += int(s.Length)
	}
	return n
}

// genHistogram returns a valid histogram: integer or float, exponential
// (schema -4..8, both signs, zero bucket) or custom buckets (schema -53),
// with a random reset hint. One in ten is made invalid in one way.
func genHistogram(r *rand.Rand) any {
	custom := r.IntN(4) == 0
	schema := int32(r.IntN(13) - 4)
	var pSpans, nSpans []histogram.Span
	var bounds []float64
	zt, zc := 0.0, 0
	if custom {
		schema = histogram.CustomBucketsSchema
		for b, n := 0.0, 1+r.IntN(8); len(bounds) < n; {
			b += 0.01 + r.Float64()*10
			bounds = append(bounds, b)
		}
		// Buckets 0..len(bounds) (the last is +Inf): spans inside them.
		for {
			pSpans = genSpans(r, r.IntN(len(bounds)+2), true)
			end := int32(-1)
			for _, s := range pSpans {
				end += s.Offset + int32(s.Length)
			}
			if int(end) <= len(bounds) {
				break
			}
		}
	} else {
		pSpans = genSpans(r, r.IntN(9), false)
		nSpans = genSpans(r, r.IntN(6), false)
		zt, zc = []float64{0, 1e-128, 0.001}[r.IntN(3)], r.IntN(5)
	}
	hint := histogram.CounterResetHint(r.IntN(4))
	pb, nb := spanBuckets(pSpans), spanBuckets(nSpans)
	var (
		h  *histogram.Histogram
		fh *histogram.FloatHistogram
	)
	if r.IntN(2) == 0 {
		h = &histogram.Histogram{CounterResetHint: hint, Schema: schema, ZeroThreshold: zt, ZeroCount: uint64(zc),
			Sum: genFloat(r), PositiveSpans: pSpans, NegativeSpans: nSpans, CustomValues: bounds}
		total := uint64(zc)
		deltas := func(n int) []int64 {
			var ds []int64
			prev := int64(0)
			for range n {
				c := int64(r.IntN(20))
				ds = append(ds, c-prev)
				prev = c
				total += uint64(c)
			}
			return ds
		}
		h.PositiveBuckets, h.NegativeBuckets = deltas(pb), deltas(nb)
		h.Count = total
	} else {
		fh = &histogram.FloatHistogram{CounterResetHint: hint, Schema: schema, ZeroThreshold: zt, ZeroCount: float64(zc),
			Sum: genFloat(r), PositiveSpans: pSpans, NegativeSpans: nSpans, CustomValues: bounds}
		total := float64(zc)
		counts := func(n int) []float64 {
			var cs []float64
			for range n {
				c := float64(r.IntN(40)) / 2
				cs = append(cs, c)
				total += c
			}
			return cs
		}
		fh.PositiveBuckets, fh.NegativeBuckets = counts(pb), counts(nb)
		fh.Count = total
	}
	if r.IntN(10) == 0 {
		corruptHistogram(r, h, fh)
	}
	if h != nil {
		return h
	}
	return fh
}

// corruptHistogram breaks one rule of Prometheus's validation.
func corruptHistogram(r *rand.Rand, h *histogram.Histogram, fh *histogram.FloatHistogram) {
	switch r.IntN(4) {
	case 0:
		if h != nil {
			h.Schema = 9
		} else {
			fh.Schema = -5
		}
	case 1:
		if h != nil {
			h.Count = 0
			h.ZeroCount = 1000 // more in the zero bucket than in all
		} else {
			fh.Count = -1
		}
	case 2:
		if h != nil {
			h.CustomValues = []float64{2, 1} // not increasing (or on an exponential schema)
		} else {
			fh.CustomValues = []float64{1, 1}
		}
	case 3:
		if h != nil {
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Length: 3}) // more buckets than spans say
		} else {
			fh.PositiveBuckets = append(fh.PositiveBuckets, 1)
		}
	}
}

// genRequest returns 1..40 series: float series, histogram series,
// exemplar-only and metadata-only ones.
func genRequest(r *rand.Rand) []genSeries {
	var out []genSeries
	for range 1 + r.IntN(40) {
		s := genSeries{labels: genLabels(r)}
		switch kind := r.IntN(10); {
		case kind < 6:
			for range 1 + r.IntN(3) {
				st := int64(0)
				if r.IntN(3) == 0 {
					st = r.Int64N(1 << 42)
				}
				s.samples = append(s.samples, writev2.Sample{Value: genFloat(r), Timestamp: r.Int64N(1<<44) - 1<<40, StartTimestamp: st})
			}
		case kind < 9:
			for range 1 + r.IntN(2) {
				s.hists = append(s.hists, genHistogram(r))
				s.histTS = append(s.histTS, r.Int64N(1<<42))
				s.histST = append(s.histST, r.Int64N(1<<42)*int64(r.IntN(2)))
			}
		}
		if r.IntN(3) == 0 || (len(s.samples) == 0 && len(s.hists) == 0 && r.IntN(2) == 0) {
			for range 1 + r.IntN(2) {
				e := genExemplar{v: genFloat(r), t: r.Int64N(1 << 42)}
				for j := range r.IntN(4) {
					e.labels = append(e.labels, [2]string{fmt.Sprintf("ex%d", j), genString(r, "t")})
				}
				s.exemplars = append(s.exemplars, e)
			}
		}
		if r.IntN(2) == 0 || (len(s.samples) == 0 && len(s.hists) == 0 && len(s.exemplars) == 0) {
			m := &genMeta{typ: writev2.Metadata_MetricType(r.IntN(8))}
			if r.IntN(3) > 0 {
				m.help = genString(r, "help ")
			}
			if r.IntN(2) == 0 {
				m.unit = genString(r, "unit")
			}
			if m.typ == 0 && m.help == "" && m.unit == "" {
				m.typ = writev2.Metadata_METRIC_TYPE_GAUGE
			}
			s.meta = m
		}
		out = append(out, s)
	}
	return out
}

// encodeV2 encodes series as Prometheus does (writev2.NewSymbolTable, gogo).
// With symbolsLast the symbols field follows the series, which protobuf
// allows (a concatenation of two messages is their merge).
func encodeV2(t testing.TB, series []genSeries, symbolsLast bool) []byte {
	t.Helper()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	refs := func(ls [][2]string) []uint32 {
		var out []uint32
		for _, l := range ls {
			out = append(out, st.Symbolize(l[0]), st.Symbolize(l[1]))
		}
		return out
	}
	for _, s := range series {
		ts := writev2.TimeSeries{LabelsRefs: refs(s.labels), Samples: s.samples}
		for i, h := range s.hists {
			if ih, ok := h.(*histogram.Histogram); ok {
				ts.Histograms = append(ts.Histograms, writev2.FromIntHistogram(s.histST[i], s.histTS[i], ih))
			} else {
				ts.Histograms = append(ts.Histograms, writev2.FromFloatHistogram(s.histST[i], s.histTS[i], h.(*histogram.FloatHistogram)))
			}
		}
		for _, e := range s.exemplars {
			ts.Exemplars = append(ts.Exemplars, writev2.Exemplar{LabelsRefs: refs(e.labels), Value: e.v, Timestamp: e.t})
		}
		if s.meta != nil {
			ts.Metadata = writev2.Metadata{Type: s.meta.typ, HelpRef: st.Symbolize(s.meta.help), UnitRef: st.Symbolize(s.meta.unit)}
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	if !symbolsLast {
		data, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	series2, err := proto.Marshal(&writev2.Request{Timeseries: req.Timeseries})
	if err != nil {
		t.Fatal(err)
	}
	syms, err := proto.Marshal(&writev2.Request{Symbols: req.Symbols})
	if err != nil {
		t.Fatal(err)
	}
	return append(series2, syms...)
}

// encodeV1 encodes series as a 1.0 WriteRequest; metadata goes to the
// request's metadata field, named after the series.
func encodeV1(t testing.TB, series []genSeries) []byte {
	t.Helper()
	req := &prompb.WriteRequest{}
	for _, s := range series {
		ts := prompb.TimeSeries{Labels: v1Labels(s.labels)}
		for _, smp := range s.samples {
			ts.Samples = append(ts.Samples, prompb.Sample{Value: smp.Value, Timestamp: smp.Timestamp})
		}
		for i, h := range s.hists {
			if ih, ok := h.(*histogram.Histogram); ok {
				ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(s.histTS[i], ih))
			} else {
				ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(s.histTS[i], h.(*histogram.FloatHistogram)))
			}
		}
		for _, e := range s.exemplars {
			ts.Exemplars = append(ts.Exemplars, prompb.Exemplar{Labels: v1Labels(e.labels), Value: e.v, Timestamp: e.t})
		}
		req.Timeseries = append(req.Timeseries, ts)
		if s.meta != nil {
			req.Metadata = append(req.Metadata, prompb.MetricMetadata{Type: prompb.MetricMetadata_MetricType(s.meta.typ),
				MetricFamilyName: s.labels[0][1], Help: s.meta.help, Unit: s.meta.unit})
		}
	}
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func v1Labels(ls [][2]string) []prompb.Label {
	out := make([]prompb.Label, 0, len(ls))
	for _, l := range ls {
		out = append(out, prompb.Label{Name: l[0], Value: l[1]})
	}
	return out
}

// keyLabels renders the labels of s.Key as name=value pairs.
func keyLabels(t testing.TB, s *Series) string {
	t.Helper()
	lbls, err := s.Labels()
	if err != nil {
		t.Fatalf("Key %x: %v", s.Key, err)
	}
	var sb strings.Builder
	for _, l := range lbls {
		fmt.Fprintf(&sb, "%q=%q,", l.Name, l.Value)
	}
	return sb.String()
}

// pairLabels renders labels as keyLabels does.
func pairLabels(ls [][2]string) string {
	var sb strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&sb, "%q=%q,", l[0], l[1])
	}
	return sb.String()
}

// renderLabels renders labels in the order given.
func renderLabels[L mapping.Label | [2]string](ls []L) string {
	var sb strings.Builder
	for _, l := range ls {
		switch l := any(l).(type) {
		case mapping.Label:
			fmt.Fprintf(&sb, "%q=%q ", l.Name, l.Value)
		case [2]string:
			fmt.Fprintf(&sb, "%q=%q ", l[0], l[1])
		}
	}
	return sb.String()
}

// renderHist renders a decoded histogram, floats by bits.
func renderHist(t int64, h any) string {
	switch h := h.(type) {
	case *histogram.Histogram:
		return fmt.Sprintf("t=%d int %+v sum=%x", t, *h, math.Float64bits(h.Sum))
	case *histogram.FloatHistogram:
		return fmt.Sprintf("t=%d float %+v sum=%x count=%x", t, *h, math.Float64bits(h.Sum), math.Float64bits(h.Count))
	}
	return "?"
}

// renderOurs renders what our decoders made of a series: labels, samples,
// histograms (decoded, with whether they validate), exemplars, metadata.
func renderOurs(t testing.TB, s *Series) string {
	t.Helper()
	lbls, err := s.Labels()
	if err != nil {
		t.Fatalf("labels of a valid series: %v", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "labels %s\n", renderLabels(lbls))
	for _, smp := range s.Samples {
		fmt.Fprintf(&sb, "sample %d %x\n", smp.T, math.Float64bits(smp.V))
	}
	var wh Histogram
	for _, m := range s.Hists {
		if err := ParseHistogram(m, &wh); err != nil {
			t.Fatalf("histogram gogo accepts: %v", err)
		}
		var h any = &wh.H
		if wh.IsFloat {
			h = &wh.FH
		}
		fmt.Fprintf(&sb, "hist %s valid=%v\n", renderHist(wh.T, h), wh.Validate() == nil)
	}
	for _, e := range s.Exemplars {
		fmt.Fprintf(&sb, "exemplar %s %d %x\n", renderLabels(s.ExemplarLabels(e)), e.T, math.Float64bits(e.V))
	}
	if s.Meta.Set {
		// An enum is an int32, as gogo types it.
		fmt.Fprintf(&sb, "meta %d %q %q\n", int32(s.Meta.Type), s.Meta.Help, s.Meta.Unit)
	}
	return sb.String()
}

// gogoValid is Prometheus's validation of a decoded histogram.
func gogoValid(h any) bool {
	switch h := h.(type) {
	case *histogram.Histogram:
		return histogram.IsValidSchema(h.Schema) && h.Validate() == nil
	case *histogram.FloatHistogram:
		return histogram.IsValidSchema(h.Schema) && h.Validate() == nil
	}
	return false
}

// gogoSample and gogoHist are what the sample and histogram types of
// both gogo packages (1.0 prompb and 2.0 writev2) answer alike.
type (
	gogoSample interface {
		GetTimestamp() int64
		GetValue() float64
	}
	gogoHist interface {
		GetTimestamp() int64
		IsFloatHistogram() bool
		ToIntHistogram() *histogram.Histogram
		ToFloatHistogram() *histogram.FloatHistogram
	}
)

// writeGogoPoints writes the labels line, then the sample and histogram
// lines of one gogo-decoded series, 1.0 or 2.0, the way renderOurs does.
func writeGogoPoints[S, H any, PS interface {
	*S
	gogoSample
}, PH interface {
	*H
	gogoHist
}](sb *strings.Builder, labels string, samples []S, hists []H) {
	fmt.Fprintf(sb, "labels %s\n", labels)
	for i := range samples {
		smp := PS(&samples[i])
		fmt.Fprintf(sb, "sample %d %x\n", smp.GetTimestamp(), math.Float64bits(smp.GetValue()))
	}
	for i := range hists {
		h := PH(&hists[i])
		var x any = h.ToIntHistogram()
		if h.IsFloatHistogram() {
			x = h.ToFloatHistogram()
		}
		fmt.Fprintf(sb, "hist %s valid=%v\n", renderHist(h.GetTimestamp(), x), gogoValid(x))
	}
}

// renderGogoV2 renders a series gogo decoded the way renderOurs does.
func renderGogoV2(t testing.TB, ts *writev2.TimeSeries, syms []string) string {
	t.Helper()
	var sb strings.Builder
	pairs := func(refs []uint32) string {
		var ls [][2]string
		for i := 0; i+1 < len(refs); i += 2 {
			ls = append(ls, [2]string{syms[refs[i]], syms[refs[i+1]]})
		}
		return renderLabels(ls)
	}
	writeGogoPoints(&sb, pairs(ts.LabelsRefs), ts.Samples, ts.Histograms)
	for _, e := range ts.Exemplars {
		fmt.Fprintf(&sb, "exemplar %s %d %x\n", pairs(e.LabelsRefs), e.Timestamp, math.Float64bits(e.Value))
	}
	if md := ts.Metadata; md.Type != 0 || md.HelpRef != 0 || md.UnitRef != 0 {
		fmt.Fprintf(&sb, "meta %d %q %q\n", md.Type, syms[md.HelpRef], syms[md.UnitRef])
	}
	return sb.String()
}

func renderGogoV1(ts *prompb.TimeSeries) string {
	var sb strings.Builder
	pairs := func(ls []prompb.Label) string {
		var out [][2]string
		for _, l := range ls {
			out = append(out, [2]string{l.Name, l.Value})
		}
		return renderLabels(out)
	}
	writeGogoPoints(&sb, pairs(ts.Labels), ts.Samples, ts.Histograms)
	for _, e := range ts.Exemplars {
		fmt.Fprintf(&sb, "exemplar %s %d %x\n", pairs(e.Labels), e.Timestamp, math.Float64bits(e.Value))
	}
	return sb.String()
}

// TestParseV2MatchesGogo: on generated requests, every field the 2.0
// decoder yields equals what writev2's gogo decoder yields, the labels of
// the series' Key are the labels sent, and the same data sent as 1.0
// decodes to the same series with the same labels.
func TestParseV2MatchesGogo(t *testing.T) {
	st := V2State{names: NewLabelNames()}
	var s, s1 Series
	var metas []Meta
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		series := genRequest(r)
		data := encodeV2(t, series, seed%5 == 4)
		var req writev2.Request
		if err := proto.Unmarshal(data, &req); err != nil {
			t.Fatalf("seed %d: gogo: %v", seed, err)
		}
		var got, keys []string
		err := ParseWriteRequestV2(data, &st, &s, func(s *Series) error {
			if s.Invalid != "" {
				return fmt.Errorf("series %d invalid: %s", len(got), s.Invalid)
			}
			got = append(got, renderOurs(t, s))
			keys = append(keys, keyLabels(t, s))
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(got) != len(req.Timeseries) {
			t.Fatalf("seed %d: %d series, gogo %d", seed, len(got), len(req.Timeseries))
		}
		for i := range req.Timeseries {
			if want := renderGogoV2(t, &req.Timeseries[i], req.Symbols); got[i] != want {
				t.Fatalf("seed %d series %d:\n got %s\nwant %s", seed, i, got[i], want)
			}
			if want := pairLabels(series[i].labels); keys[i] != want {
				t.Fatalf("seed %d series %d: Key labels\n%s, sent\n%s", seed, i, keys[i], want)
			}
		}

		// The same series as 1.0.
		data1 := encodeV1(t, series)
		var req1 prompb.WriteRequest
		if err := proto.Unmarshal(data1, &req1); err != nil {
			t.Fatal(err)
		}
		i := 0
		metas = metas[:0]
		err = ParseWriteRequest(data1, &s1, &metas, func(s *Series) error {
			if want := renderGogoV1(&req1.Timeseries[i]); renderOurs(t, s) != want {
				return fmt.Errorf("1.0 series %d:\n got %s\nwant %s", i, renderOurs(t, s), want)
			}
			if got := keyLabels(t, s); got != keys[i] {
				return fmt.Errorf("1.0 series %d: Key labels %s, 2.0 %s", i, got, keys[i])
			}
			i++
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(metas) != len(req1.Metadata) {
			t.Fatalf("seed %d: %d metadata, gogo %d", seed, len(metas), len(req1.Metadata))
		}
		for j, m := range req1.Metadata {
			if g := metas[j]; uint64(m.Type) != g.Type || string(g.Family) != m.MetricFamilyName || string(g.Help) != m.Help || string(g.Unit) != m.Unit {
				t.Fatalf("seed %d: metadata %d = %d %q %q %q, gogo %+v", seed, j, g.Type, g.Family, g.Help, g.Unit, m)
			}
		}
	}
}

// TestV2Key: the Key of a 2.0 series (keyFormV2) decodes to the labels
// sent, lengths of one and two varint bytes and empty values included,
// with label-name ids and without (a name too long for one, or no table);
// the same labels in another request (another symbol table) give the same
// Key, and other labels another Key.
func TestV2Key(t *testing.T) {
	long := strings.Repeat("n", 127)
	names := NewLabelNames()
	seen := map[string]string{}
	for _, tc := range []struct {
		name   string
		labels [][2]string
	}{
		{"short", [][2]string{{"__name__", "up"}, {"job", "x"}}},
		{"empty value", [][2]string{{"__name__", "up"}, {"a", ""}, {"b", "y"}}},
		{"field of 127 bytes", [][2]string{{"__name__", strings.Repeat("m", 121)}}},
		{"field of 128 bytes", [][2]string{{"__name__", strings.Repeat("m", 122)}}},
		{"name of 127 bytes", [][2]string{{"__name__", "up"}, {long, "v"}}},
		{"value of 128 bytes", [][2]string{{"__name__", "up"}, {"a", long + "v"}}},
		{"value of 16 KiB", [][2]string{{"__name__", "up"}, {"a", strings.Repeat("v", 1<<14)}}},
		{"unicode", [][2]string{{"__name__", "résumé"}, {"region", "🌍"}}},
		{"value is another name", [][2]string{{"__name__", "up"}, {"job", "a"}}},
		{"name is another value", [][2]string{{"__name__", "up"}, {"a", "job"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := pairLabels(tc.labels)
			var keys []string
			for _, v := range []struct {
				tbl *LabelNames
				pad int // label pairs of the first series
			}{{names, 1}, {names, 10000}, {nil, 1}} {
				// A first series shifts the symbol table of the second:
				// by 10 000 pairs, its references take three bytes (the
				// general path), else one or two (the fast path).
				first := [][2]string{{"__name__", "other"}}
				for i := range v.pad {
					first = append(first, [2]string{fmt.Sprintf("x%d_%d", len(keys), i), "y" + fmt.Sprint(i)})
				}
				data := encodeV2(t, []genSeries{
					{labels: first, samples: []writev2.Sample{{Value: 1, Timestamp: 1}}},
					{labels: tc.labels, samples: []writev2.Sample{{Value: 1, Timestamp: 1}}},
				}, false)
				st := V2State{names: v.tbl}
				n := 0
				err := ParseWriteRequestV2(data, &st, &Series{}, func(s *Series) error {
					if n++; n == 2 {
						if got := keyLabels(t, s); got != want {
							t.Errorf("Key %x has labels %s, want %s", s.Key, got, want)
						}
						keys = append(keys, string(s.Key))
					}
					return nil
				})
				if err != nil || n != 2 {
					t.Fatalf("%d series, %v", n, err)
				}
			}
			if keys[0] != keys[1] {
				t.Errorf("same labels, keys %x (short references) and %x (long)", keys[0], keys[1])
			}
			for _, k := range keys[1:] {
				if other, ok := seen[k]; ok {
					t.Errorf("key %x also for %s", k, other)
				}
				seen[k] = tc.name
			}
		})
	}
}

// v2Raw encodes symbols and series with gogo, without a symbol table's
// guarantees.
func v2Raw(t testing.TB, symbols []string, series ...writev2.TimeSeries) []byte {
	t.Helper()
	data, err := proto.Marshal(&writev2.Request{Symbols: symbols, Timeseries: series})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseV2Validation: each rule the decoder checks. Request-level
// problems fail the whole call (errMalformed or errBadRequest, both 400);
// a series-level one sets that series' Invalid (a message the Writer
// prefixes with the series' labels, or with "series N" when they cannot be
// decoded) and the other series still come through.
func TestParseV2Validation(t *testing.T) {
	syms := []string{"", "__name__", "up", "job", "x", "trace_id"}
	smp := []writev2.Sample{{Value: 1, Timestamp: 1000}}
	good := writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: smp}
	hist := writev2.FromIntHistogram(0, 1000, &histogram.Histogram{Count: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}})
	ex := writev2.Exemplar{LabelsRefs: []uint32{5, 4}, Value: 1, Timestamp: 1000}
	for _, tc := range []struct {
		name    string
		data    []byte
		err     error  // request-level; nil when the request parses
		invalid string // substring of the bad series' Invalid; "" when valid
	}{
		{"label ref out of range", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 99}, Samples: smp}), nil, "label reference 99 is out of range (6 symbols)"},
		{"label name ref out of range", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2, 42, 4}, Samples: smp}), nil, "label reference 42 is out of range"},
		{"odd labels_refs", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2, 3}, Samples: smp}), nil, "odd number (3) of label references"},
		{"exemplar ref out of range", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: smp, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{5, 77}}}}), nil, "exemplar label reference 5 or 77 out of range (6 symbols)"},
		{"odd exemplar refs", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: smp, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{5}}}}), nil, "exemplar with an odd number (1)"},
		{"help ref out of range", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: smp, Metadata: writev2.Metadata{HelpRef: 50}}), nil, "metadata reference 50 out of range (6 symbols)"},
		{"unit ref out of range", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: smp, Metadata: writev2.Metadata{UnitRef: 6}}), nil, "metadata reference 6 out of range"},
		{"samples and histograms", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Samples: smp, Histograms: []writev2.Histogram{hist}}), nil, "has both samples and histograms"},
		{"nothing", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}}), nil, "has no samples, histograms, exemplars or metadata"},
		// Valid: exemplars alone (rc.5), metadata alone, labels out
		// of order, histograms alone, an empty value.
		{"exemplar only", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Exemplars: []writev2.Exemplar{ex}}), nil, ""},
		{"metadata only", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER}}), nil, ""},
		{"unsorted labels", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{3, 4, 1, 2}, Samples: smp}), nil, ""},
		{"histogram only", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2}, Histograms: []writev2.Histogram{hist}}), nil, ""},
		{"empty value", v2Raw(t, syms, good, writev2.TimeSeries{LabelsRefs: []uint32{1, 2, 3, 0}, Samples: smp}), nil, ""},
		// Request-level.
		{"first symbol not empty", v2Raw(t, []string{"x", "__name__", "up"}, good), ErrMalformed, ""},
		{"no symbols", v2Raw(t, nil, good), ErrMalformed, ""},
		{"truncated", v2Raw(t, syms, good)[:20], ErrMalformed, ""},
		{"bad tag", []byte{0x00, 0x01}, ErrMalformed, ""},
		{"length past the end", []byte{0x2A, 0x10, 0x08}, ErrMalformed, ""},
		{"labels_refs over uint32", append(v2Raw(t, syms), 0x2A, 0x07, 0x0A, 0x05, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F), ErrMalformed, ""},
		{"empty request", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st V2State
			var verdicts []string
			err := ParseWriteRequestV2(tc.data, &st, &Series{}, func(s *Series) error {
				verdicts = append(verdicts, s.Invalid)
				return nil
			})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.data == nil {
				return
			}
			if len(verdicts) != 2 || verdicts[0] != "" {
				t.Fatalf("verdicts %q, want the good series valid and one more", verdicts)
			}
			if tc.invalid == "" && verdicts[1] != "" || !strings.Contains(verdicts[1], tc.invalid) {
				t.Errorf("Invalid %q, want %q", verdicts[1], tc.invalid)
			}
		})
	}
}

// TestParseV2Encodings: what protobuf allows and encoders other than
// Prometheus's may send decodes like the usual form: labels_refs unpacked,
// split over several fields or after the samples, symbols after the
// series, Metadata sent twice (merged, as protobuf merges a message field
// given twice), unknown fields.
func TestParseV2Encodings(t *testing.T) {
	syms := v2Raw(t, []string{"", "__name__", "up", "job", "x", "help"})
	// TimeSeries fields by hand: refs (1) packed or not, a sample (2),
	// metadata (5).
	sample := []byte{0x12, 0x0B, 0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x10, 0x02} // value 1, timestamp 2
	series := func(fields ...[]byte) []byte {
		msg := slices.Concat(fields...)
		return append([]byte{0x2A, byte(len(msg))}, msg...)
	}
	want := `labels "__name__"="up" "job"="x" ` + "\nsample 2 3ff0000000000000\n"
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"packed", slices.Concat(syms, series([]byte{0x0A, 4, 1, 2, 3, 4}, sample)), want},
		{"unpacked", slices.Concat(syms, series([]byte{0x08, 1, 0x08, 2, 0x08, 3, 0x08, 4}, sample)), want},
		{"packed twice", slices.Concat(syms, series([]byte{0x0A, 2, 1, 2, 0x0A, 2, 3, 4}, sample)), want},
		{"packed then unpacked", slices.Concat(syms, series([]byte{0x0A, 2, 1, 2, 0x08, 3, 0x08, 4}, sample)), want},
		{"refs after the sample", slices.Concat(syms, series(sample, []byte{0x0A, 4, 1, 2, 3, 4})), want},
		{"symbols last", slices.Concat(series([]byte{0x0A, 4, 1, 2, 3, 4}, sample), syms), want},
		{"unknown fields", slices.Concat(syms, []byte{0x08, 0x01, 0x1A, 0x01, 0x00}, series([]byte{0x30, 0x05, 0x0A, 4, 1, 2, 3, 4}, sample)), want},
		{"metadata twice", slices.Concat(syms, series([]byte{0x0A, 4, 1, 2, 3, 4}, sample, []byte{0x2A, 0x02, 0x08, 0x01}, []byte{0x2A, 0x02, 0x18, 0x05})),
			want + `meta 1 "help" ""` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req writev2.Request
			if err := proto.Unmarshal(tc.data, &req); err != nil || len(req.Timeseries) != 1 {
				t.Fatalf("gogo: %v, %d series", err, len(req.Timeseries))
			}
			if g := renderGogoV2(t, &req.Timeseries[0], req.Symbols); g != tc.want {
				t.Fatalf("test data: gogo decodes\n%s", g)
			}
			var st V2State
			var got []string
			err := ParseWriteRequestV2(tc.data, &st, &Series{}, func(s *Series) error {
				if s.Invalid != "" {
					return errors.New(s.Invalid)
				}
				got = append(got, renderOurs(t, s))
				return nil
			})
			if err != nil || len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestHistogramValidation: each rule Prometheus's receiver applies to a
// native histogram, through parseHistogram and Validate.
func TestHistogramValidation(t *testing.T) {
	spans := []histogram.Span{{Offset: 0, Length: 2}}
	for _, tc := range []struct {
		name string
		h    any
		err  string // "" when valid
	}{
		{"valid int", &histogram.Histogram{Schema: 8, Count: 3, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}, ""},
		{"valid float", &histogram.FloatHistogram{Schema: -4, Count: 3, PositiveSpans: spans, PositiveBuckets: []float64{1, 2}}, ""},
		{"valid custom", &histogram.Histogram{Schema: -53, Count: 3, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}, CustomValues: []float64{1, 2}}, ""},
		{"valid custom +Inf bucket", &histogram.FloatHistogram{Schema: -53, Count: 1, PositiveSpans: []histogram.Span{{Offset: 2, Length: 1}}, PositiveBuckets: []float64{1}, CustomValues: []float64{1, 2}}, ""},
		{"valid empty", &histogram.Histogram{}, ""},
		{"valid NaN sum, count over the buckets", &histogram.Histogram{Count: 5, Sum: math.NaN(), PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}, ""},
		{"schema 9", &histogram.Histogram{Schema: 9}, "schema 9 is not one of -4..8 or -53"},
		{"schema -5", &histogram.FloatHistogram{Schema: -5}, "schema -5"},
		{"schema -52", &histogram.Histogram{Schema: -52}, "schema -52"},
		{"count below the buckets", &histogram.Histogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}, "count"},
		{"count above the buckets", &histogram.Histogram{Count: 9, Sum: 1, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}, "count"},
		// Prometheus checks a float histogram's count only for sign.
		{"valid float count below the buckets", &histogram.FloatHistogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []float64{1, 1}}, ""},
		{"negative float count", &histogram.FloatHistogram{Count: -1}, "observation count"},
		{"negative float zero count", &histogram.FloatHistogram{ZeroCount: -1}, "zero bucket"},
		{"negative bucket count", &histogram.Histogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{2, -3}}, "negative"},
		{"negative float bucket", &histogram.FloatHistogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []float64{2, -1}}, "negative"},
		{"fewer buckets than spans", &histogram.Histogram{Count: 1, PositiveSpans: spans, PositiveBuckets: []int64{1}}, "spans need 2 buckets, have 1"},
		{"more buckets than spans", &histogram.Histogram{Count: 3, PositiveSpans: spans, PositiveBuckets: []int64{1, 0, 0}}, "spans need 2 buckets, have 3"},
		{"negative span offset after the first", &histogram.Histogram{Count: 2, PositiveSpans: []histogram.Span{{Length: 1}, {Offset: -1, Length: 1}}, PositiveBuckets: []int64{1, 0}}, "span number 2 with offset -1"},
		{"custom values on an exponential schema", &histogram.Histogram{Schema: 3, CustomValues: []float64{1}}, "custom"},
		{"valid custom schema, only the +Inf bucket", &histogram.Histogram{Schema: -53, Count: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}}, ""},
		{"custom schema without custom values", &histogram.Histogram{Schema: -53, Count: 2, PositiveSpans: []histogram.Span{{Length: 2}}, PositiveBuckets: []int64{1, 0}}, "custom bounds"},
		{"custom value NaN", &histogram.Histogram{Schema: -53, CustomValues: []float64{1, math.NaN()}}, "NaN"},
		{"custom value +Inf", &histogram.Histogram{Schema: -53, CustomValues: []float64{1, math.Inf(1)}}, "+Inf"},
		{"custom schema with a zero threshold", &histogram.Histogram{Schema: -53, ZeroThreshold: 0.1, CustomValues: []float64{1}}, "zero threshold"},
		{"custom schema with a zero count", &histogram.FloatHistogram{Schema: -53, Count: 1, ZeroCount: 1, CustomValues: []float64{1}}, "zero"},
		{"custom values not increasing", &histogram.Histogram{Schema: -53, CustomValues: []float64{2, 2}}, "custom"},
		{"custom schema with negative buckets", &histogram.Histogram{Schema: -53, Count: 1, CustomValues: []float64{1}, NegativeSpans: []histogram.Span{{Length: 1}}, NegativeBuckets: []int64{1}}, "negative"},
		{"custom buckets past +Inf", &histogram.Histogram{Schema: -53, Count: 1, CustomValues: []float64{1}, PositiveSpans: []histogram.Span{{Offset: 2, Length: 1}}, PositiveBuckets: []int64{1}}, "custom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p writev2.Histogram
			if ih, ok := tc.h.(*histogram.Histogram); ok {
				p = writev2.FromIntHistogram(0, 5, ih)
			} else {
				p = writev2.FromFloatHistogram(0, 5, tc.h.(*histogram.FloatHistogram))
			}
			msg, err := proto.Marshal(&p)
			if err != nil {
				t.Fatal(err)
			}
			var w Histogram
			if err := ParseHistogram(msg, &w); err != nil {
				t.Fatal(err)
			}
			err = w.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("invalid: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one mentioning %q", err, tc.err)
			}
			if (err == nil) != gogoValid(tc.h) {
				t.Errorf("valid %v, Prometheus says %v", err == nil, gogoValid(tc.h))
			}
		})
	}
}

// TestHistogramEncodings: deltas and counts unpacked, spans and numbers
// split over several fields, and the last of a oneof winning, as gogo
// decodes them.
func TestHistogramEncodings(t *testing.T) {
	f64 := func(f float64) []byte {
		b := make([]byte, 8)
		u := math.Float64bits(f)
		for i := range 8 {
			b[i] = byte(u >> (8 * i))
		}
		return b
	}
	span := []byte{0x5A, 0x04, 0x08, 0x02, 0x10, 0x02} // positive span offset 1, length 2
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"deltas unpacked", slices.Concat([]byte{0x08, 3}, span, []byte{0x60, 0x02, 0x60, 0x00})},
		{"deltas split", slices.Concat([]byte{0x08, 3}, span, []byte{0x62, 0x01, 0x02, 0x62, 0x01, 0x00})},
		{"counts unpacked", slices.Concat([]byte{0x11}, f64(3), span, []byte{0x69}, f64(1), []byte{0x69}, f64(2))},
		{"custom values unpacked", slices.Concat([]byte{0x08, 3, 0x20, 105}, span, []byte{0x62, 0x02, 0x02, 0x00, 0x81, 0x01}, f64(1), []byte{0x81, 0x01}, f64(2))},
		{"count_float then count_int", slices.Concat([]byte{0x11}, f64(9), []byte{0x08, 3}, span, []byte{0x62, 0x02, 0x02, 0x00})},
		{"count_int then count_float", slices.Concat([]byte{0x08, 3, 0x11}, f64(3), span, []byte{0x6A, 0x10}, f64(1), f64(2))},
		{"zero_count_int then zero_count_float", slices.Concat([]byte{0x08, 3, 0x30, 0x05, 0x39}, f64(1), span, []byte{0x62, 0x02, 0x02, 0x00})},
		{"timestamp, hint, schema negative", slices.Concat([]byte{0x08, 3, 0x20, 0x07, 0x70, 0x03, 0x78, 0x2A}, span, []byte{0x62, 0x02, 0x02, 0x00})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p writev2.Histogram
			if err := proto.Unmarshal(tc.msg, &p); err != nil {
				t.Fatalf("test data: gogo: %v", err)
			}
			var want any = p.ToIntHistogram()
			if p.IsFloatHistogram() {
				want = p.ToFloatHistogram()
			}
			var w Histogram
			if err := ParseHistogram(tc.msg, &w); err != nil {
				t.Fatal(err)
			}
			var got any = &w.H
			if w.IsFloat {
				got = &w.FH
			}
			if g, wt := renderHist(w.T, got), renderHist(p.Timestamp, want); g != wt {
				t.Errorf("got  %s\nwant %s", g, wt)
			}
		})
	}
}

// TestParseV2NoAllocs: in steady state (buffers grown by a first request)
// decoding a request allocates nothing, histograms, exemplars and metadata
// included.
func TestParseV2NoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var series []genSeries
	for len(series) < 200 {
		for _, s := range genRequest(r) {
			s.labels = [][2]string{{"__name__", "m"}, {"i", fmt.Sprint(len(series))}}
			// Only valid histograms: an invalid one costs its error.
			if !slices.ContainsFunc(s.hists, func(h any) bool { return !gogoValid(h) }) {
				series = append(series, s)
			}
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"bench request", benchdata.V2(t)},
		{"every field", encodeV2(t, series, false)},
		{"symbols last", encodeV2(t, series, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st V2State
			var s Series
			var wh Histogram
			n := 0
			fn := func(s *Series) error {
				for _, m := range s.Hists {
					if ParseHistogram(m, &wh) == nil {
						_ = wh.Validate()
					}
				}
				n += len(s.Samples) + len(s.Hists) + len(s.Exemplars)
				return nil
			}
			parse := func() {
				if err := ParseWriteRequestV2(tc.data, &st, &s, fn); err != nil {
					t.Fatal(err)
				}
			}
			parse()
			if allocs := testing.AllocsPerRun(20, parse); allocs != 0 {
				t.Errorf("%.1f allocations per request of %d elements, want 0", allocs, n/21)
			}
		})
	}
}

// BenchmarkParse: the decoders alone on BenchmarkWritePath's data, 2000
// series × 1 sample × 10 labels, as 1.0 and as 2.0 with the symbol table
// built as Prometheus builds it.
//
//	go test -run '^$' -bench Parse -benchtime 2s -count 6 ./adapter
func BenchmarkParse(b *testing.B) {
	v1 := writeBodyRaw(b, benchdata.Series())
	v2 := benchdata.V2(b)
	b.Run("v1", func(b *testing.B) {
		var s Series
		fn := func(*Series) error { return nil }
		benchParse(b, len(v1), func() error { return ParseWriteRequest(v1, &s, nil, fn) })
	})
	b.Run("v2", func(b *testing.B) {
		var st V2State
		var s Series
		fn := func(*Series) error { return nil }
		benchParse(b, len(v2), func() error { return ParseWriteRequestV2(v2, &st, &s, fn) })
	})
	// With the labels decoded, as the Writer does for a series its cache
	// does not hold.
	b.Run("v2+labels", func(b *testing.B) {
		var st V2State
		var s Series
		fn := func(s *Series) error { _, err := s.Labels(); return err }
		benchParse(b, len(v2), func() error { return ParseWriteRequestV2(v2, &st, &s, fn) })
	})
}

func benchParse(b *testing.B, size int, parse func() error) {
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		if err := parse(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/sample")
}

func writeBodyRaw(t testing.TB, series []prompb.TimeSeries) []byte {
	t.Helper()
	data, err := proto.Marshal(&prompb.WriteRequest{Timeseries: series})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzParseV2MatchesGogo: the 2.0 decoder never panics; where both it and
// writev2's gogo decoder accept the bytes, they yield the same series, and
// a series the decoder calls valid has references gogo can resolve.
func FuzzParseV2MatchesGogo(f *testing.F) {
	// Small seeds: the fuzzer minimizes each new interesting input, which
	// is slow for large ones.
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 11))
		series := genRequest(r)
		f.Add(encodeV2(f, series[:min(len(series), 3)], seed%2 == 1))
	}
	names := NewLabelNames()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		st := V2State{names: names} // label-name ids: keys take the fast path
		var got []string
		var invalid []bool
		var prevNext []byte // the NextKey of the series before, copied
		seen := 0
		err := ParseWriteRequestV2(data, &st, &Series{}, func(s *Series) error {
			if seen > 0 && !bytes.Equal(prevNext, s.Key) {
				t.Fatalf("series %d: key %x, the NextKey before it %x", seen, s.Key, prevNext)
			}
			prevNext = append(prevNext[:0], s.NextKey...)
			seen++
			invalid = append(invalid, s.Invalid != "")
			if s.Invalid != "" {
				got = append(got, "")
				return nil
			}
			if _, err := s.Labels(); err != nil {
				t.Fatalf("valid series with a Key that does not parse: %v", err)
			}
			var wh Histogram
			for _, m := range s.Hists {
				if ParseHistogram(m, &wh) != nil {
					// Stricter than gogo (e.g. a schema beyond int32):
					// nothing to compare for this series.
					got = append(got, "")
					return nil //nolint:nilerr // the error only means there is nothing to compare
				}
			}
			got = append(got, renderOurs(t, s))
			return nil
		})
		var req writev2.Request
		if err != nil || proto.Unmarshal(data, &req) != nil {
			return
		}
		if len(got) != len(req.Timeseries) {
			t.Fatalf("%d series, gogo %d", len(got), len(req.Timeseries))
		}
		for i := range req.Timeseries {
			if invalid[i] || got[i] == "" {
				continue
			}
			ts := &req.Timeseries[i]
			for _, refs := range append([][]uint32{ts.LabelsRefs}, exemplarRefs(ts)...) {
				for _, ref := range refs {
					if int(ref) >= len(req.Symbols) {
						t.Fatalf("series %d valid with reference %d of %d symbols", i, ref, len(req.Symbols))
					}
				}
			}
			md := ts.Metadata
			if int(md.HelpRef) >= len(req.Symbols) || int(md.UnitRef) >= len(req.Symbols) {
				t.Fatalf("series %d valid with metadata %+v, %d symbols", i, md, len(req.Symbols))
			}
			if want := renderGogoV2(t, ts, req.Symbols); got[i] != want {
				t.Fatalf("series %d:\n got %s\nwant %s", i, got[i], want)
			}
		}
	})
}

func exemplarRefs(ts *writev2.TimeSeries) [][]uint32 {
	var out [][]uint32
	for _, e := range ts.Exemplars {
		out = append(out, e.LabelsRefs)
	}
	return out
}
