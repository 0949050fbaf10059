package adapter

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/store/embedded"
)

// BenchmarkReadFloats: remote read of 1000 series × 720 float samples
// (one every 10 s for two hours, gauge-like values) of one metric from the
// embedded store, SAMPLES and streamed answers. Run with
// `go test -run '^$' -bench Read -count 6 ./adapter | tee` for benchstat.
func BenchmarkReadFloats(b *testing.B) {
	st := openEmbedded(b)
	h := newTestHandler(b, st)
	t0 := int64(1_699_999_200_000)
	const nSeries, nSamples = 1000, 720
	var batch []prompb.TimeSeries
	for i := range nSeries {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "bench_gauge"}, {Name: "instance", Value: fmt.Sprintf("host-%d", i)}, {Name: "job", Value: "node"}}}
		for j := range nSamples {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(j)*10_000, Value: float64((i*7+j*13)%1000) * 0.25})
		}
		batch = append(batch, ts)
		if len(batch) == 50 {
			if rec := post(h, "/api/v1/write", writeBody(b, batch...)); rec.Code != 204 {
				b.Fatalf("write: %d %s", rec.Code, rec.Body)
			}
			batch = batch[:0]
		}
	}
	benchRead(b, h, t0, t0+2*3_600_000, "bench_gauge", nSeries*nSamples, "samples/s")
}

// benchRead reads metric name over [start, end] through h, SAMPLES and
// streamed, reporting n samples per read as unit.
func benchRead(b *testing.B, h http.Handler, start, end int64, name string, n int, unit string) {
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		b.Run(rt.String(), func(b *testing.B) {
			rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: start, EndTimestampMs: end,
				Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name}}}},
				AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt}}
			data, _ := proto.Marshal(rr)
			body := snappy.Encode(nil, data)
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if rec := post(h, "/api/v1/read", body); rec.Code != 200 {
					b.Fatalf("read: %d %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), unit)
			// All cores' CPU (the scans of a read run at once), the
			// garbage collector's included.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkReadOneMetric: the side-by-side harness's read (`promhbase-load
// compare`): one metric of 200 series of 10 labels, 100 samples each in
// the current, uncompacted hour, so a request is small and its fixed costs
// show.
//
// Sub-benchmarks by where the cells are: Pebble's memtable (a store
// without the row buffer), the row buffer (the data table buffered, as
// serve runs), Pebble's tables (the buffer flushed before the reads), and
// split: the first half of each row in Pebble's tables, the second in the
// buffer (a buffer flushed while the hour was being written).
//
// wide is the harness's read at 100 k series: 1000 series × 20 samples
// from the row buffer, where the fixed costs of a series weigh most;
// wide-tables the same from Pebble's tables; wide-100k the same among
// the 99 other metrics of the harness's 100 k series, as the harness
// reads it.
func BenchmarkReadOneMetric(b *testing.B) {
	for _, where := range []string{"memtable", "buffer", "tables", "split", "wide", "wide-tables", "wide-100k"} {
		b.Run(where, func(b *testing.B) {
			opts := embedded.Options{NoSync: true, Tables: []string{"tsdb", "tsdb-uid", "tsdb-exemplar"}}
			if where != "memtable" {
				opts.BufferTables = []string{"tsdb"}
			}
			st, err := embedded.Open(b.TempDir(), opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			nSeries, nSamples, metrics := 200, 100, 1
			switch where {
			case "wide", "wide-tables":
				nSeries, nSamples = 1000, 20
			case "wide-100k":
				nSeries, nSamples, metrics = 100_000, 20, 100
			}
			flushAt := -1 // after that many rounds
			switch where {
			case "tables", "wide-tables":
				flushAt = nSamples
			case "split":
				flushAt = nSamples / 2
			}
			benchReadOneMetric(b, st, flushAt, nSeries, nSamples, metrics)
		})
	}
}

// benchReadOneMetric writes nSamples rounds of nSeries series spread over
// metrics metrics (2000 series a request) and reads load_metric_0.
func benchReadOneMetric(b *testing.B, st *embedded.Store, flushAt, nSeries, nSamples, metrics int) {
	h := newTestHandler(b, st)
	t0 := int64(1_699_999_200_000)
	var batch []prompb.TimeSeries
	for j := range nSamples {
		if j == flushAt {
			if err := st.CompactAll(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		for i := range nSeries {
			batch = append(batch, prompb.TimeSeries{
				Labels: []prompb.Label{{Name: "__name__", Value: fmt.Sprintf("load_metric_%d", i%metrics)}, {Name: "cpu", Value: fmt.Sprint(i % 16)},
					{Name: "datacenter", Value: fmt.Sprintf("dc-%d", i%3)}, {Name: "device", Value: fmt.Sprintf("sd%c", 'a'+i%8)},
					{Name: "env", Value: "production"}, {Name: "instance", Value: fmt.Sprintf("host-%05d:9100", i)}, {Name: "job", Value: "node"},
					{Name: "mode", Value: "idle"}, {Name: "rack", Value: fmt.Sprintf("r%02d", i%40)}, {Name: "series", Value: fmt.Sprint(i)}},
				Samples: []prompb.Sample{{Timestamp: t0 + int64(j)*15_000, Value: float64(i*7 + j)}},
			})
			if len(batch) == 2000 || i == nSeries-1 {
				if rec := post(h, "/api/v1/write", writeBody(b, batch...)); rec.Code != 204 {
					b.Fatalf("write: %d %s", rec.Code, rec.Body)
				}
				batch = batch[:0]
			}
		}
	}
	if flushAt == nSamples {
		if err := st.CompactAll(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	benchRead(b, h, t0-3_600_000, t0+2*3_600_000, "load_metric_0", nSeries/metrics*nSamples, "samples/s")
}
