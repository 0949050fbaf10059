package series

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/test/testkit/testuid"
)

// BenchmarkResolveBatchNew resolves what a remote-write request of 2000
// series new to the process becomes: ten labels each, one value of its
// own per series (so a new tag value UID each), the others shared, on the
// embedded store without fsync, its sole writer as serve is. Each
// iteration's series are new.
func BenchmarkResolveBatchNew(b *testing.B) {
	layout := mapping.DefaultLayout()
	u, err := uid.NewUIDs(testuid.Store(b), layout, uid.UIDOptions{Registerer: prometheus.NewRegistry(), SoleWriter: true})
	if err != nil {
		b.Fatal(err)
	}
	m := NewMapper(u, layout, 0)
	ctx := context.Background()
	const n = 2000
	items := make([]ResolveItem, n)
	next := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := range items {
			id := next
			next++
			lbls := []mapping.Label{{Name: []byte("__name__"), Value: fmt.Appendf(nil, "metric_%d", id%100)}}
			for j, name := range []string{"cpu", "datacenter", "device", "env", "instance", "job", "mode", "rack"} {
				lbls = append(lbls, mapping.Label{Name: []byte(name), Value: fmt.Appendf(nil, "v%d", (id/(j+1))%(16<<j))})
			}
			lbls = append(lbls, mapping.Label{Name: []byte("series"), Value: fmt.Appendf(nil, "%d", id)})
			items[i] = ResolveItem{Key: fmt.Appendf(nil, "key-%d", id), Labels: lbls}
		}
		b.StartTimer()
		m.ResolveBatch(ctx, items)
		for i := range items {
			if items[i].Err != nil {
				b.Fatal(items[i].Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
}
