package promapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/engine"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// Query-range benchmark: 1000 series × 24 h of samples every 60 s (1.44 M
// samples), the same data in promhbase's embedded store (raw rows as the
// write path leaves them, and compacted rows) and in Prometheus's own TSDB
// (head compacted into blocks), evaluated by the same PromQL engine with
// the same options. The figure is the engine's wall time per query, HTTP
// and JSON excluded on both sides.
const (
	benchSeries = 1000
	benchHours  = 24
	benchStep   = 60 * time.Second
)

var benchStart = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func benchLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "bench_requests_total", "instance", fmt.Sprintf("host-%04d:9100", i), "job", "node", "zone", fmt.Sprintf("z%d", i%4))
}

func benchValue(i, r int) float64 { return float64(r*(i%7+1)) + float64(i%3)*0.5 }

// settle says how far promhbaseQueryable takes the rows: as the write
// path leaves them, compacted (the compacted cells still in the row
// buffer), or compacted and settled (flushed into Pebble and compacted
// there: what a store holds an hour later), with or without the dense
// form of settled rows.
type settle int

const (
	raw settle = iota
	compacted
	settledGeneric
	settledDense
)

// promhbaseQueryable fills an embedded store through the write path and
// returns the queryable, its rows taken as far as s says.
func promhbaseQueryable(b *testing.B, s settle) storage.Queryable {
	b.Helper()
	ctx := context.Background()
	var opts teststack.Options
	if s >= settledGeneric {
		opts.Open = func(t testing.TB) (store.Store, testbackend.Tables) {
			tb := testbackend.Tables{Data: "tsdb", UID: "tsdb-uid"}
			eo := embedded.Options{NoSync: true, Tables: []string{tb.Data, tb.UID}, BufferTables: []string{tb.Data}}
			if s == settledDense {
				eo.RowCodecs = map[string]embedded.RowCodec{tb.Data: &dense.Pool{}}
			}
			es, err := embedded.Open(t.TempDir(), eo)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { es.Close() })
			return es, tb
		}
	}
	stk := teststack.New(b, opts)
	st, tb, layout := stk.Store, stk.Tables, stk.Layout
	rounds := int(benchHours * time.Hour / benchStep)
	// One request per 100 series, each with its whole day: 144 000 samples.
	for lo := 0; lo < benchSeries; lo += 100 {
		var req prompb.WriteRequest
		for i := lo; i < lo+100; i++ {
			ts := prompb.TimeSeries{}
			benchLabels(i).Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			for r := range rounds {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: benchStart.Add(time.Duration(r) * benchStep).UnixMilli(), Value: benchValue(i, r)})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		stk.Write(req.Timeseries...)
	}
	if s >= compacted {
		c := compact.New(st, compact.Options{DataTable: tb.Data, UIDTable: tb.UID, Layout: layout, Concurrency: 2})
		stats, err := c.CompactRange(ctx, benchStart, benchStart.Add(benchHours*time.Hour), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("compaction: %+v", stats)
	}
	if s >= settledGeneric {
		es := st.(*embedded.Store)
		if err := es.Reclaim(ctx); err != nil {
			b.Fatal(err)
		}
		if err := es.CompactAll(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("settled: %d sstable bytes, %.2f bytes per sample", es.SSTableBytes(), float64(es.SSTableBytes())/float64(benchSeries*int(benchHours*time.Hour/benchStep)))
	}
	// The writer's mapper and caches, as one process would have.
	return query.New(st, stk.Mapper, query.Options{DataTable: tb.Data, UIDTable: tb.UID}).Storage()
}

// prometheusQueryable fills a Prometheus TSDB with the same data.
func prometheusQueryable(b *testing.B) storage.Queryable {
	b.Helper()
	db, err := tsdb.Open(b.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	rounds := int(benchHours * time.Hour / benchStep)
	ctx := context.Background()
	for r := range rounds {
		app := db.Appender(ctx)
		t := benchStart.Add(time.Duration(r) * benchStep).UnixMilli()
		for i := range benchSeries {
			if _, err := app.Append(0, benchLabels(i), t, benchValue(i, r)); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	return db
}

func BenchmarkQueryRange(b *testing.B) {
	queries := []struct{ name, expr string }{
		{"sum_rate", `sum by (zone) (rate(bench_requests_total[5m]))`},
		{"one_series", `bench_requests_total{instance="host-0007:9100"}`},
		{"sum_rate_1h", `sum by (zone) (rate(bench_requests_total[1h]))`},
		{"max_over_time", `max_over_time(bench_requests_total[5m])`},
		{"topk", `topk(5, increase(bench_requests_total[10m]))`},
	}
	for _, src := range []struct {
		name string
		q    func(*testing.B) storage.Queryable
	}{
		{"promhbase_raw", func(b *testing.B) storage.Queryable { return promhbaseQueryable(b, raw) }},
		{"promhbase_compacted", func(b *testing.B) storage.Queryable { return promhbaseQueryable(b, compacted) }},
		{"promhbase_settled_generic", func(b *testing.B) storage.Queryable { return promhbaseQueryable(b, settledGeneric) }},
		{"promhbase_settled_dense", func(b *testing.B) storage.Queryable { return promhbaseQueryable(b, settledDense) }},
		{"prometheus_tsdb", prometheusQueryable},
	} {
		b.Run(src.name, func(b *testing.B) {
			q := src.q(b)
			prom := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: 10 * time.Minute, LookbackDelta: 5 * time.Minute, EnableAtModifier: true, EnableNegativeOffset: true})
			engines := []struct {
				name string
				qe   promql.QueryEngine
			}{
				{"prometheus_engine", prom},
				{"promhbase_engine", engine.New(engine.Options{Fallback: prom, Timeout: 10 * time.Minute})},
			}
			for _, qc := range queries {
				for _, eng := range engines {
					b.Run(qc.name+"/"+eng.name, func(b *testing.B) {
						benchQuery(b, eng.qe, q, qc.expr)
					})
				}
			}
		})
	}
}

// benchQuery runs expr over the benchmark's day, one query an iteration.
func benchQuery(b *testing.B, qe promql.QueryEngine, q storage.Queryable, expr string) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		qry, err := qe.NewRangeQuery(ctx, q, nil, expr, benchStart, benchStart.Add(benchHours*time.Hour-time.Minute), benchStep)
		if err != nil {
			b.Fatal(err)
		}
		res := qry.Exec(ctx)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		if m, err := res.Matrix(); err != nil || len(m) == 0 {
			b.Fatalf("empty answer: %v", err)
		}
		qry.Close()
	}
}
