package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/internal/testkit/benchdata"
	"github.com/promhbase/promhbase/internal/testkit/testbackend"
	"github.com/promhbase/promhbase/internal/testkit/testserver"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/tenant"
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
