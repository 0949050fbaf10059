package adapter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/migrate"
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
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	if _, err := zw.Write(lines); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	body := zb.Bytes()
	st := openEmbedded(b)
	lim, err := limits.New(limits.DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	put := &swapPutter{st}
	h := newTestHandlerPut(b, st, put, lim)
	post := func(w http.ResponseWriter, rd *bytes.Reader) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/import", io.NopCloser(rd))
		req.Header.Set("Content-Encoding", "gzip")
		req.ContentLength = int64(len(body))
		h.ServeHTTP(w, req)
	}
	warm := httptest.NewRecorder()
	post(warm, bytes.NewReader(body))
	if warm.Code != http.StatusNoContent {
		b.Fatalf("warm-up: %d %s", warm.Code, warm.Body)
	}
	np := &nopPutter{}
	put.Putter = np
	rd := bytes.NewReader(body)
	rec := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rd.Reset(body)
		rec.code = 0
		post(rec, rd)
		if rec.code != http.StatusNoContent {
			b.Fatalf("status %d", rec.code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*series*samples), "ns/sample")
	b.ReportMetric(float64(series*samples*b.N)/b.Elapsed().Seconds(), "samples/s")
	if np.cells != b.N*series*samples {
		b.Fatalf("%d cells put, want %d", np.cells, b.N*series*samples)
	}
}
