package adapter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

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
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	if _, err := zw.Write(lines); err != nil || zw.Close() != nil {
		b.Fatalf("gzip: %v", err)
	}
	benchPost(b, "/api/v1/import", http.Header{"Content-Encoding": {"gzip"}}, body.Bytes(), series*samples, "sample")
}
