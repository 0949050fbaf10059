package migrate

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// benchBody is 100 series of 240 samples each as JSON lines.
func benchBody() []byte {
	var body []byte
	ts, vs := make([]int64, 240), make([]float64, 240)
	for i := range ts {
		ts[i], vs[i] = 1700000000000+int64(i)*15_000, float64(i)*1.25+0.1
	}
	for i := range 100 {
		body = AppendJSONLine(body, labels.FromStrings("__name__", "bench_total", "instance", string(rune('a'+i%26)), "i", string(rune('0'+i%10))), ts, vs)
	}
	return body
}

func BenchmarkParseJSONLines(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var batch Batch
	for b.Loop() {
		batch.Reset()
		if err := batch.ParseJSONLines(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSONLine(b *testing.B) {
	ts, vs := make([]int64, 240), make([]float64, 240)
	for i := range ts {
		ts[i], vs[i] = 1700000000000+int64(i)*15_000, float64(i)*1.25+0.1
	}
	l := labels.FromStrings("__name__", "bench_total", "instance", "a", "job", "node")
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSONLine(buf[:0], l, ts, vs)
	}
	b.SetBytes(int64(len(buf)))
}
