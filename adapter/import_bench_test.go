package adapter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/adapter/migrate"
)

// BenchmarkImportJSONLines measures /api/v1/import from the gzip body of
// JSON lines (as vmctl sends them: 100 series × 1000 samples of 15 s
// scrapes) to the store's Puts, the store excluded, caches warm.
func BenchmarkImportJSONLines(b *testing.B) {
	const series, samples = 100, 1000
	var lines []byte
	ts, vs := make([]int64, samples), make([]float64, samples)
	for i := range series {
		for j := range samples {
			ts[j], vs[j] = 1_700_000_000_000+int64(j)*15_000, float64(i*j)+0.5
		}
		lines = migrate.AppendJSONLine(lines, labels.FromStrings("__name__", "bench_requests_total", "instance", fmt.Sprintf("h%d", i), "job", "node"), ts, vs)
	}
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	if _, err := zw.Write(lines); err != nil || zw.Close() != nil {
		b.Fatalf("gzip: %v", err)
	}
	benchPost(b, "/api/v1/import", http.Header{"Content-Encoding": {"gzip"}}, body.Bytes(), series*samples, "sample")
}

// BenchmarkImportChunks measures /api/v1/import/chunks from the snappy
// body of XOR chunks (as promhbase import sends them: 100 series × 8
// chunks of 120 samples of 15 s scrapes) to the store's Puts, the store
// excluded, caches warm.
func BenchmarkImportChunks(b *testing.B) {
	const series, chunksPer, per = 100, 8, 120
	resp := prompb.ChunkedReadResponse{}
	for i := range series {
		cs := &prompb.ChunkedSeries{Labels: []prompb.Label{{Name: "__name__", Value: "bench_requests_total"}, {Name: "instance", Value: fmt.Sprintf("h%d", i)}, {Name: "job", Value: "node"}}}
		for c := range chunksPer {
			ch := chunkenc.NewXORChunk()
			app, err := ch.Appender()
			if err != nil {
				b.Fatal(err)
			}
			t0 := int64(1_700_000_000_000) + int64(c*per)*15_000
			for j := range per {
				app.Append(0, t0+int64(j)*15_000, float64(i*j)+0.5)
			}
			cs.Chunks = append(cs.Chunks, prompb.Chunk{MinTimeMs: t0, MaxTimeMs: t0 + int64(per-1)*15_000, Type: prompb.Chunk_XOR, Data: ch.Bytes()})
		}
		resp.ChunkedSeries = append(resp.ChunkedSeries, cs)
	}
	data, err := resp.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	benchPost(b, "/api/v1/import/chunks", http.Header{"Content-Encoding": {"snappy"}}, snappy.Encode(nil, data), series*chunksPer*per, "sample")
}
