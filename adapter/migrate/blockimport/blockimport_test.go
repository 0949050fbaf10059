package blockimport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

func TestHTTPSender(t *testing.T) {
	for _, c := range []struct {
		name     string
		answers  []int // status codes, in turn; the last repeats
		retryFor time.Duration
		tries    int
		err      string // "" for success
		refused  bool
	}{
		{"accepted", []int{204}, time.Minute, 1, "", false},
		{"5xx then accepted", []int{503, 500, 204}, time.Minute, 3, "", false},
		{"429 then accepted", []int{429, 204}, time.Minute, 2, "", false},
		{"refused", []int{400}, time.Minute, 1, "answered 400", true},
		{"gives up", []int{503}, 300 * time.Millisecond, 2, "gave up", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				if r.Header.Get("X-Scope-OrgID") != "team-a" || r.Header.Get("Content-Encoding") != "snappy" {
					t.Errorf("headers %v", r.Header)
				}
				w.WriteHeader(c.answers[min(i, len(c.answers)-1)])
			}))
			defer srv.Close()
			s := &HTTPSender{URL: srv.URL, Tenant: "team-a", RetryFor: c.retryFor}
			err := s.Send(context.Background(), &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "m"}},
				Samples: []prompb.Sample{{Timestamp: 1, Value: 2}}}}})
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || errors.Is(err, ErrRefused) != c.refused):
				t.Fatalf("error %v, want one with %q (refused %v)", err, c.err, c.refused)
			}
			if got := int(n.Load()); got < c.tries || (c.err == "" && got != c.tries) {
				t.Errorf("%d tries, want %d", got, c.tries)
			}
		})
	}
}

func TestBlocksRefuses(t *testing.T) {
	empty := t.TempDir()
	withWAL := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withWAL, "01ABC"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"01ABC/meta.json", "wal/00000000"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(withWAL, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(withWAL, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, path, has string }{
		{"no block", empty, "holds no TSDB block"},
		{"missing", filepath.Join(empty, "nope"), "no such file"},
		{"a head in the WAL", withWAL, "snapshot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Blocks([]string{c.path}); err == nil || !strings.Contains(err.Error(), c.has) {
				t.Errorf("error %v, want one with %q", err, c.has)
			}
		})
	}
}
