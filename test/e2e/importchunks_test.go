package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestImportChunks: /api/v1/import/chunks takes a snappy-compressed
// ChunkedReadResponse (promhbase import's format) and stores its samples,
// which /api/v1/export gives back; a body with a chunk that does not
// decode answers 400 naming the series and the chunk, and nothing of it
// is written.
func TestImportChunks(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{})
	end := time.Now().Add(-time.Hour).Truncate(time.Hour).UnixMilli()
	chunk := func(ts ...int64) prompb.Chunk {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ts {
			app.Append(0, x, float64(x-end)/1000+0.25)
		}
		return prompb.Chunk{MinTimeMs: ts[0], MaxTimeMs: ts[len(ts)-1], Type: prompb.Chunk_XOR, Data: c.Bytes()}
	}
	body := func(name string, chunks ...prompb.Chunk) []byte {
		b, err := (&prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: "x"}}, Chunks: chunks}}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return snappy.Encode(nil, b)
	}
	post(t, srv.URL+"/api/v1/import/chunks", body("ic_good", chunk(end-60_000, end-45_000, end-30_000), chunk(end-15_000, end)), "snappy", http.StatusNoContent)
	got := string(get(t, srv.URL+"/api/v1/export?"+url.Values{"match[]": {"ic_good"}}.Encode(), http.StatusOK))
	for _, want := range []string{`"values":[-59.75,-44.75,-29.75,-14.75,0.25]`, `"__name__":"ic_good"`} {
		if !strings.Contains(got, want) {
			t.Errorf("export %s, want it to hold %s", got, want)
		}
	}
	bad := chunk(end-60_000, end-45_000, end-30_000)
	bad.Data = bad.Data[:len(bad.Data)-2]
	msg := post(t, srv.URL+"/api/v1/import/chunks", body("ic_bad", chunk(end-120_000), bad), "snappy", http.StatusBadRequest)
	if !strings.Contains(string(msg), `{__name__="ic_bad", job="x"}, chunk 1`) {
		t.Errorf("answer %q, want it to name the series and chunk 1", msg)
	}
	if got := get(t, srv.URL+"/api/v1/export?"+url.Values{"match[]": {"ic_bad"}}.Encode(), http.StatusOK); len(got) != 0 {
		t.Errorf("a body with a bad chunk wrote %s", got)
	}
}
