package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/test/testkit/benchdata"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// discard is a ResponseWriter that keeps the status.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(c int)           { d.code = c }

// writeOnce posts one remote write 1.0 body as tenant org (empty: none)
// and fails unless it answered 204.
func writeOnce(b *testing.B, h http.Handler, org string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	if org != "" {
		req.Header.Set(tenant.Header, org)
	}
	d := &discard{h: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(d, req)
	if d.code != http.StatusNoContent {
		b.Errorf("write as %q: %d", org, d.code)
	}
}

// BenchmarkTenantsWrite: remote write through the whole server (every
// op the same 2000 series of benchdata, one sample each), with tenants
// off, on with one tenant, and the same series as 100 requests of 20 at
// once: from one tenant, or one request from each of 100 tenants. The
// targets: one tenant within 10 % of tenants off; 100 tenants no dearer
// than one.
func BenchmarkTenantsWrite(b *testing.B) {
	series := benchdata.Series()
	body := func(ss []prompb.TimeSeries) []byte {
		data, err := (&prompb.WriteRequest{Timeseries: ss}).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		return snappy.Encode(nil, data)
	}
	whole := body(series)
	const parts = 100
	per := len(series) / parts
	split := make([][]byte, parts)
	for i := range split {
		split[i] = body(series[i*per : (i+1)*per])
	}
	start := func(b *testing.B, tenants bool) http.Handler {
		st, tb := testbackend.New(b)
		opts := testserver.Options{}
		if tenants {
			opts.Tenants = &testserver.TenantOptions{AutoCreate: true}
		}
		return testserver.New(b, st, tb, mapping.DefaultLayout(), opts).Handler
	}
	run := func(b *testing.B, h http.Handler, org string, bodies [][]byte, orgs func(i int) string) {
		// The first writes create the tenants and their series: not
		// what is measured.
		for i, bd := range bodies {
			writeOnce(b, h, orgs(i), bd)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for i, bd := range bodies {
				wg.Go(func() { writeOnce(b, h, orgs(i), bd) })
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.N*len(series))/b.Elapsed().Seconds(), "samples/s")
		_ = org
	}
	b.Run("off", func(b *testing.B) {
		run(b, start(b, false), "", [][]byte{whole}, func(int) string { return "" })
	})
	b.Run("one-tenant", func(b *testing.B) {
		run(b, start(b, true), "", [][]byte{whole}, func(int) string { return "team-0" })
	})
	b.Run("parts/1-tenant", func(b *testing.B) {
		run(b, start(b, true), "", split, func(int) string { return "team-0" })
	})
	b.Run(fmt.Sprintf("parts/%d-tenants", parts), func(b *testing.B) {
		run(b, start(b, true), "", split, func(i int) string { return fmt.Sprintf("team-%d", i) })
	})
}

// BenchmarkTenantFirstContact: a tenant's first contact, 100 000 series
// it never had, one sample each, in 50 requests of 2000 through the whole
// server: every op a new tenant (opened with the timer stopped), whose
// UIDs are looked up and assigned through its namespace's view of the
// store (store.Namespaced). Reports ns per new series.
func BenchmarkTenantFirstContact(b *testing.B) {
	const total, batch = 100_000, 2000
	bodies := make([][]byte, total/batch)
	for r := range bodies {
		series := make([]prompb.TimeSeries, batch)
		for j := range series {
			i := r*batch + j
			series[j] = prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: fmt.Sprintf("contact_metric_%d", i%100)},
				{Name: "instance", Value: fmt.Sprintf("host-%05d:9100", i/100)},
				{Name: "job", Value: "node"},
				{Name: "series", Value: fmt.Sprint(i)},
			}, Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: float64(i)}}}
		}
		data, err := (&prompb.WriteRequest{Timeseries: series}).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		bodies[r] = snappy.Encode(nil, data)
	}
	opener, err := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}},
		Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 1}}}}}).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	st, tb := testbackend.New(b)
	h := testserver.New(b, st, tb, mapping.DefaultLayout(), testserver.Options{Tenants: &testserver.TenantOptions{AutoCreate: true}}).Handler
	b.ReportAllocs()
	op := 0
	for b.Loop() {
		b.StopTimer()
		org := fmt.Sprintf("contact-%d", op)
		op++
		writeOnce(b, h, org, snappy.Encode(nil, opener))
		b.StartTimer()
		for _, body := range bodies {
			writeOnce(b, h, org, body)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(op*total), "ns/series")
}
