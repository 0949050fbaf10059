package adapter

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store/embedded"
)

// harnessLabels returns the labels of series i as promhbase-load sends
// them: ten labels, the last of the series' own.
func harnessLabels(i int) []string {
	return []string{
		"__name__", fmt.Sprintf("load_metric_%d", i%100),
		"cpu", fmt.Sprint(i % 16),
		"datacenter", fmt.Sprintf("dc-%d", i%3),
		"device", fmt.Sprintf("sd%c", 'a'+i%8),
		"env", "production",
		"instance", fmt.Sprintf("host-%05d:9100", i/100),
		"job", "node",
		"mode", []string{"idle", "user", "system", "iowait"}[i%4],
		"rack", fmt.Sprintf("r%02d", i%40),
		"series", fmt.Sprint(i),
	}
}

// firstContactHandler returns a handler into a fresh embedded store as
// serve opens it (the data table in the row buffer, the series index
// with its TSMeta rows, the default limits), without fsync.
func firstContactHandler(b *testing.B) *Handler {
	b.Helper()
	st, err := embedded.Open(b.TempDir(), embedded.Options{NoSync: true,
		Tables:       []string{"tsdb", "tsdb-uid", "tsdb-exemplar", "tsdb-meta", "tsdb-index"},
		BufferTables: []string{"tsdb"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	// The UIDs as serve opens them on the embedded store: their table's
	// sole writer.
	uids, err := uid.NewUIDs(st, mapping.DefaultLayout(), uid.UIDOptions{SoleWriter: true})
	if err != nil {
		b.Fatal(err)
	}
	m := series.NewMapper(uids, mapping.DefaultLayout(), 0)
	lim, err := limits.New(limits.DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	w := ingest.New(m, st, ingest.Options{Table: "tsdb", ExemplarTable: "tsdb-exemplar", ExemplarSlots: ingest.DefaultExemplarSlots,
		Metadata: metadata.NewMetas(m.UIDs(), st, 0), Limits: lim,
		Indexer: index.NewWriter(st, index.Options{MetaTable: "tsdb-meta", IndexTable: "tsdb-index",
			Layout: mapping.DefaultLayout()}, nil)})
	h := newHandler(b, w, query.New(st, m, query.Options{}), Options{MaxRequestBytes: 1 << 20}, prometheus.NewRegistry())
	return h
}

// firstContactBatch is the series of a request, as promhbase-load's.
const firstContactBatch = 2000

// firstContactBody encodes a request of the firstContactBatch new series
// from series first on, one sample each.
func firstContactBody(b *testing.B, proto string, first int) ([]byte, string) {
	b.Helper()
	const ts = 1_700_000_000_000
	if proto == "v1" {
		series := make([]prompb.TimeSeries, firstContactBatch)
		for i := range series {
			l := harnessLabels(first + i)
			for j := 0; j < len(l); j += 2 {
				series[i].Labels = append(series[i].Labels, prompb.Label{Name: l[j], Value: l[j+1]})
			}
			series[i].Samples = []prompb.Sample{{Timestamp: ts, Value: float64(i)}}
		}
		return writeBody(b, series...), "application/x-protobuf"
	}
	series := make([]v2Series, firstContactBatch)
	for i := range series {
		series[i] = v2Series{lbls: harnessLabels(first + i), smps: []writev2.Sample{{Timestamp: ts, Value: float64(i)}}}
	}
	return v2Body(b, series...), ctV2
}

// BenchmarkFirstContact: requests of 2000 series never seen before, one
// sample each, through the handler into the embedded store as serve
// opens it (firstContactHandler): the first round of a promhbase-load
// run. A request at a time, each body encoded with the timer stopped; and
// with 2.0, from 4 senders at once (the harness's concurrency), the
// bodies encoded before the timer starts, where the locks the requests
// share are contended. Reports ns per new series.
func BenchmarkFirstContact(b *testing.B) {
	for _, proto := range []string{"v1", "v2"} {
		b.Run(proto, func(b *testing.B) {
			h := firstContactHandler(b)
			next := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				data, ct := firstContactBody(b, proto, next)
				next += firstContactBatch
				b.StartTimer()
				if rec := postCT(h, ct, data); rec.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/series")
		})
	}
	b.Run("v2-4-senders", func(b *testing.B) {
		h := firstContactHandler(b)
		bodies := make([][]byte, b.N)
		for i := range bodies {
			bodies[i], _ = firstContactBody(b, "v2", i*firstContactBatch)
		}
		const senders = 4
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ReportAllocs()
		b.ResetTimer()
		for range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(bodies) {
						return
					}
					if rec := postCT(h, ctV2, bodies[i]); rec.Code != http.StatusNoContent {
						b.Errorf("status %d: %s", rec.Code, rec.Body)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*firstContactBatch), "ns/series")
	})
}
