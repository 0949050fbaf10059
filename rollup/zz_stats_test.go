package rollup_test

import (
	"io"
	"net/http"
	"net/url"
	"time"
	"testing"
)

func debugQuery(b testing.TB, base string, v url.Values) {
	v.Set("stats", "all")
	t0 := time.Now()
	resp, err := http.PostForm(base+"/api/v1/query_range", v)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	i := len(body) - 600
	if i < 0 {
		i = 0
	}
	b.Logf("%s %s took %s: %s", v.Get("query"), v.Get("max_source_resolution"), time.Since(t0), body[i:])
	v.Del("stats")
}
