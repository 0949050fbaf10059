package rollup_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// startAuto starts an in-process server over st and tb that builds the
// rollups of tb's config and downsamples queries automatically, its
// scheduler checking every check with its clock at now; admin turns the
// admin API on.
func startAuto(t testing.TB, st store.Store, tb testbackend.Tables, now time.Time, check time.Duration, admin bool) *testserver.Server {
	t.Helper()
	return testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{EnableAdmin: admin, Rollup: &server.RollupConfig{
		Enabled: true, AutoDownsampling: true, Config: tb.RollupConfig(), CheckInterval: check, Now: func() time.Time { return now }}})
}

// post posts form to url and returns the answer's body and header,
// failing t unless its status is want.
func post(t testing.TB, url string, form url.Values, want int) ([]byte, http.Header) {
	t.Helper()
	resp, err := http.PostForm(url, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %v: status %d, want %d: %s", url, form, resp.StatusCode, want, body)
	}
	return body, resp.Header
}

// promResult is a query API answer: series by their labels, each a map
// from time (ms) to value.
type promResult map[string]map[int64]float64

func queryRange(t testing.TB, base, q string, start, end, step int64, res string) (promResult, string) {
	t.Helper()
	v := url.Values{"query": {q}, "start": {strconv.FormatInt(start/1000, 10)}, "end": {strconv.FormatInt(end/1000, 10)},
		"step": {strconv.FormatInt(step/1000, 10)}}
	if res != "" {
		v.Set("max_source_resolution", res)
	}
	body, header := post(t, base+"/api/v1/query_range", v, http.StatusOK)
	r, err := promjson.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out := promResult{}
	for _, s := range r.Data.Result {
		ps, err := s.Points()
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]float64{}
		for _, p := range ps {
			m[p.T] = p.V
		}
		out[fmt.Sprint(s.Metric)] = m
	}
	return out, header.Get("X-Promhbase-Resolution")
}
