package main

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// TestServeNewStoreSmallVolume: a new embedded store on a volume with less
// free space than the watermark (64 MiB against the default 512 MB)
// starts as a store with data does: read-only, /-/ready saying so, writes
// answered 503 with Retry-After; once the volume grows, a write succeeds
// without a restart and reads back.
func TestServeNewStoreSmallVolume(t *testing.T) {
	if testbackend.Name() != "embedded" {
		t.Skip("the embedded store's volume: the embedded run (PROMHBASE_TEST_BACKEND unset) runs this test")
	}
	t.Parallel()
	disk := smallDisk(t, 64<<20)
	_, base := startServe(t, promhbaseBinary(t), "--storage.embedded.path="+filepath.Join(disk, "data"),
		"--storage.embedded.ballast-bytes=8MB", "--query.results-cache.max-bytes=0")

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/-/ready"); code != http.StatusOK || !strings.Contains(body, "read-only") ||
		!strings.Contains(body, "--storage.min-free-disk-space-bytes") {
		t.Errorf("/-/ready: %d %q, want 200 saying read-only and why", code, body)
	}
	ts := time.Now().Add(-time.Minute).UnixMilli()
	body := promremote.WriteBody(t, prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "__name__", Value: "small_volume"}, {Name: "job", Value: "a"}},
		Samples: []prompb.Sample{{Timestamp: ts, Value: 42}},
	})
	write := func() (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/api/v1/write", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if code, retry := write(); code != http.StatusServiceUnavailable || retry == "" {
		t.Fatalf("write on the small volume: %d, Retry-After %q; want 503 with Retry-After", code, retry)
	}

	growDisk(t, disk, 1<<30)
	poll.Until(t, time.Minute, 200*time.Millisecond, "a write taken after the volume grew", func() (bool, string) {
		code, _ := write()
		return code == http.StatusNoContent, http.StatusText(code)
	})
	if code, body := get("/api/v1/query?query=small_volume"); code != http.StatusOK || !strings.Contains(body, `"42"`) {
		t.Errorf("query after the write: %d %s", code, body)
	}
	if code, body := get("/-/ready"); code != http.StatusOK || strings.Contains(body, "read-only") {
		t.Errorf("/-/ready after the volume grew: %d %q", code, body)
	}
}
