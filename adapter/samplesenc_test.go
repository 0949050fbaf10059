package adapter

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/query"
)

// floatChunks cuts samples into XOR chunks of at most per samples each.
func floatChunks(t *testing.T, samples []prompb.Sample, per int) []query.Chunk {
	t.Helper()
	var out []query.Chunk
	for len(samples) > 0 {
		n := min(per, len(samples))
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples[:n] {
			app.Append(0, s.Timestamp, s.Value)
		}
		out = append(out, query.Chunk{MinT: samples[0].Timestamp, MaxT: samples[n-1].Timestamp, Enc: chunkenc.EncXOR, Data: c.Bytes()})
		samples = samples[n:]
	}
	return out
}

// TestAppendFloatSeries: the bytes appendFloatSeries writes are those of
// the generated marshaller of the same prompb.TimeSeries behind the same
// field tag and length, zero values, negative timestamps, NaNs, empty label
// values and lengths of every varint size included, within the bound
// maxFloatSeriesBytes gives.
func TestAppendFloatSeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	long := string(bytes.Repeat([]byte{'x'}, 300))
	cases := []struct {
		name    string
		lbls    labels.Labels
		samples []prompb.Sample
	}{
		{"zero values and timestamps", labels.FromStrings("__name__", "m", "a", ""),
			[]prompb.Sample{{Timestamp: 0, Value: 0}, {Timestamp: 1, Value: math.Copysign(0, -1)}, {Timestamp: 2, Value: 1.5}}},
		{"negative timestamps", labels.FromStrings("__name__", "m"),
			[]prompb.Sample{{Timestamp: -5_000, Value: -1}, {Timestamp: -1, Value: math.Inf(1)}, {Timestamp: 0, Value: math.NaN()}, {Timestamp: 7, Value: math.Float64frombits(value.StaleNaN)}}},
		{"no samples", labels.FromStrings("__name__", "m", "job", "j"), nil},
		{"long label", labels.FromStrings("__name__", "m", "long", long), []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 3}}},
	}
	var many []prompb.Sample
	ts := int64(1_700_000_000_000)
	for i := range 1000 {
		ts += int64(rng.IntN(30_000))
		v := float64(rng.IntN(5)) // zeros among them
		if i%7 == 0 {
			v = rng.NormFloat64() * 1e9
		}
		many = append(many, prompb.Sample{Timestamp: ts, Value: v})
	}
	cases = append(cases, struct {
		name    string
		lbls    labels.Labels
		samples []prompb.Sample
	}{"many chunks", labels.FromStrings("__name__", "m", "instance", "host:9100", "job", "node"), many})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := &query.ChunkSeries{Labels: tc.lbls, Chunks: floatChunks(t, tc.samples, 120), Samples: len(tc.samples)}
			if !floatOnly(cs) {
				t.Fatal("a series of XOR chunks is not float-only")
			}
			prefix := []byte("before")
			got, _, err := appendFloatSeries(bytes.Clone(prefix), cs, nil)
			if err != nil {
				t.Fatal(err)
			}
			ref := prompb.TimeSeries{Samples: tc.samples}
			tc.lbls.Range(func(l labels.Label) { ref.Labels = append(ref.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			body, err := ref.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			want := append(binary.AppendUvarint(append(bytes.Clone(prefix), 0x0a), uint64(len(body))), body...)
			if !bytes.Equal(got, want) {
				t.Fatalf("appendFloatSeries:\n got %x\nwant %x", got, want)
			}
			if n, bound := len(got)-len(prefix), maxFloatSeriesBytes(cs); n > bound {
				t.Errorf("appended %d bytes, more than the bound %d", n, bound)
			}
		})
	}
	t.Run("histogram chunk is not float-only", func(t *testing.T) {
		cs := &query.ChunkSeries{Chunks: []query.Chunk{{Enc: chunkenc.EncXOR}, {Enc: chunkenc.EncHistogram}}}
		if floatOnly(cs) {
			t.Error("floatOnly of a series with a histogram chunk")
		}
	})
}
