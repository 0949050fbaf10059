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

// parseChunks is ChunksToWriteRequests's requests decoded by Prometheus's
// generated code, the series of every request in order.
func parseChunks(body []byte, maxSamples, batch int) ([]prompb.TimeSeries, error) {
	reqs, n, err := ChunksToWriteRequests(body, maxSamples, batch)
	if err != nil {
		return nil, err
	}
	var out []prompb.TimeSeries
	got := 0
	for _, b := range reqs {
		var req prompb.WriteRequest
		if err := req.Unmarshal(b); err != nil {
			return nil, fmt.Errorf("a request does not decode: %w", err)
		}
		for _, ts := range req.Timeseries {
			got += len(ts.Samples) + len(ts.Histograms)
		}
		out = append(out, req.Timeseries...)
	}
	if got != n {
		return nil, fmt.Errorf("%d samples counted, %d in the requests", n, got)
	}
	return out, nil
}

func TestChunksToWriteRequests(t *testing.T) {
	lbls := []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "i", Value: "1"}}
	good := chunkBody(t, &prompb.ChunkedSeries{Labels: lbls, Chunks: []prompb.Chunk{xorChunk(t, 1000, 2000, 3000), xorChunk(t, 4000, 5500)}},
		&prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "g"}}, Chunks: []prompb.Chunk{xorChunk(t, 1000, 2000)}})
	tss, err := parseChunks(good, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(tss) != 2 || len(tss[0].Samples) != 5 || len(tss[1].Samples) != 2 {
		t.Fatalf("parsed %v", tss)
	}
	// In requests of 2 samples: the first series in three parts, the
	// second in two (its first sample shares a request with 5500).
	parts, err := parseChunks(good, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 5 || len(parts[2].Samples) != 1 || parts[2].Samples[0].Timestamp != 5500 || len(parts[3].Samples) != 1 || len(parts[4].Samples) != 1 {
		t.Fatalf("in requests of 2 samples: %v", parts)
	}
	// The same bytes as Prometheus's generated code.
	reqs, _, _ := ChunksToWriteRequests(good, 100, 100)
	want, _ := (&prompb.WriteRequest{Timeseries: tss}).Marshal()
	if len(reqs) != 1 || !bytes.Equal(reqs[0], want) {
		t.Errorf("request\n%x\nPrometheus's encoding\n%x", reqs[0], want)
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
			_, _, err := ChunksToWriteRequests(tc.body, tc.max, 1000)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMalformed naming %q", err, tc.want)
			}
		})
	}
}

func FuzzChunksToWriteRequests(f *testing.F) {
	f.Add(chunkBody(f, &prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}},
		Chunks: []prompb.Chunk{xorChunk(f, 1000, 2000, 3000), histChunk(f, 5000, 6000)}}))
	f.Add(chunkBody(f, &prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}},
		Chunks: []prompb.Chunk{xorChunk(f, 1000, 2000, 3000), xorChunk(f, 5000, 6000)}}))
	f.Fuzz(func(t *testing.T, body []byte) {
		tss, err := parseChunks(body, 10_000, 1000)
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
