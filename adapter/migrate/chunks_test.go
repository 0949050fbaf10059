package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// xorChunk encodes the samples (t, t/1000 + 0.5) at ts as an XOR chunk.
func xorChunk(t testing.TB, ts ...int64) prompb.Chunk {
	t.Helper()
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		app.Append(0, x, float64(x)/1000+0.5)
	}
	return prompb.Chunk{MinTimeMs: ts[0], MaxTimeMs: ts[len(ts)-1], Type: prompb.Chunk_XOR, Data: c.Bytes()}
}

// histChunk encodes an integer histogram a sample at ts.
func histChunk(t testing.TB, ts ...int64) prompb.Chunk {
	t.Helper()
	c := chunkenc.NewHistogramChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range ts {
		h := &histogram.Histogram{Count: uint64(2*i + 2), Sum: float64(i), Schema: 0,
			PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{int64(2*i + 2)}}
		if _, _, app, err = app.AppendHistogram(nil, 0, x, h, false); err != nil {
			t.Fatal(err)
		}
	}
	return prompb.Chunk{MinTimeMs: ts[0], MaxTimeMs: ts[len(ts)-1], Type: prompb.Chunk_HISTOGRAM, Data: c.Bytes()}
}

func chunkBody(t testing.TB, series ...*prompb.ChunkedSeries) []byte {
	t.Helper()
	b, err := (&prompb.ChunkedReadResponse{ChunkedSeries: series}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseChunks is ParseChunks's series as remote-write TimeSeries.
func parseChunks(body []byte, maxSamples int) ([]prompb.TimeSeries, error) {
	var b Batch
	if err := b.ParseChunks(body, maxSamples); err != nil {
		if b.Len() != 0 || b.Samples() != 0 {
			return nil, fmt.Errorf("%w, and %d series and %d samples left in the batch", err, b.Len(), b.Samples())
		}
		return nil, err
	}
	out := make([]prompb.TimeSeries, b.Len())
	for i := range out {
		var err error
		if out[i], err = b.TimeSeries(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func TestParseChunks(t *testing.T) {
	lbls := []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "i", Value: "1"}}
	good := chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{xorChunk(t, 1000, 2000, 3000), xorChunk(t, 4000, 5500)}},
		&prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "g"}}, Chunks: []prompb.Chunk{xorChunk(t, 1000, 2000)}})
	tss, err := parseChunks(good, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(tss) != 2 || len(tss[0].Samples) != 5 || len(tss[1].Samples) != 2 {
		t.Fatalf("parsed %v", tss)
	}
	// The keys are the series' Label fields as Prometheus's generated
	// code encodes them.
	var b Batch
	if err := b.ParseChunks(good, 100); err != nil {
		t.Fatal(err)
	}
	key, _ := b.Series(0)
	want, _ := (&prompb.TimeSeries{Labels: lbls}).Marshal()
	if !bytes.Equal(key, want) {
		t.Errorf("key\n%x\nPrometheus's encoding\n%x", key, want)
	}
	if s := tss[0].Samples[3]; s.Timestamp != 4000 || s.Value != 4.5 {
		t.Errorf("4th sample %v, want 4.5 at 4000", s)
	}

	bad := xorChunk(t, 1000, 2000, 3000)
	truncated := bad
	truncated.Data = bad.Data[:len(bad.Data)-2]
	outside := bad
	outside.MaxTimeMs = 2500
	unknown := bad
	unknown.Type = 9
	disorder := xorChunk(t, 1000, 3000, 2000)
	disorder.MaxTimeMs = 3000
	for _, tc := range []struct {
		name string
		body []byte
		max  int
		want string
	}{
		{"not protobuf", []byte{0xff, 0xff, 0xff}, 100, "chunks"},
		{"too many samples", good, 6, "at most 6"},
		{"a histogram chunk (its buckets go by remote write)", chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{histChunk(t, 1000, 2000)}}), 100, "chunk 0: encoding 2"},
		{"unknown encoding", chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{unknown}}), 100, `{__name__="m", i="1"}, chunk 0: encoding 9`},
		{"a truncated chunk", chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{xorChunk(t, 5), truncated}}), 100, "chunk 1"},
		{"a sample outside its chunk", chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{outside}}), 100, "sample at 3000 outside"},
		{"samples out of order", chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{disorder}}), 100, "sample at 2000 not after the one at 3000"},
		{"an empty chunk", chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{{Type: prompb.Chunk_XOR}}}), 100, "0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseChunks(tc.body, tc.max)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMalformed naming %q", err, tc.want)
			}
		})
	}
}

func FuzzParseChunks(f *testing.F) {
	f.Add(chunkBody(f, &prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}},
		Chunks: []prompb.Chunk{xorChunk(f, 1000, 2000, 3000), histChunk(f, 5000, 6000)}}))
	f.Add(chunkBody(f, &prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}},
		Chunks: []prompb.Chunk{xorChunk(f, 1000, 2000, 3000), xorChunk(f, 5000, 6000)}}))
	f.Fuzz(func(t *testing.T, body []byte) {
		tss, err := parseChunks(body, 10_000)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatal(err)
			}
			return
		}
		n := 0
		for _, ts := range tss {
			n += len(ts.Samples) + len(ts.Histograms)
		}
		if n > 10_000 {
			t.Fatalf("%d samples decoded, at most 10000", n)
		}
	})
}
