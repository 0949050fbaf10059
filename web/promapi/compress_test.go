package promapi

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"", false},
		{"gzip", true},
		{"GZIP", true},
		{"deflate, gzip;q=0.5", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"deflate", false},
		{"br, x-gzip", false},
		{"identity, gzip ; q=1", true},
	} {
		t.Run(c.v, func(t *testing.T) {
			if got := acceptsGzip(c.v); got != c.want {
				t.Errorf("acceptsGzip(%q) = %v, want %v", c.v, got, c.want)
			}
		})
	}
}

// TestQueryAnswerGzip checks that a query answer is gzip-compressed when
// the client accepts gzip (once: the body is valid gzip of the JSON), and
// plain otherwise.
func TestQueryAnswerGzip(t *testing.T) {
	api, err := New(Options{Queryable: noData{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{"gzip", ""} {
		t.Run("accept="+enc, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/query", strings.NewReader(url.Values{"query": {"1+1"}, "time": {"100"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if enc != "" {
				req.Header.Set("Accept-Encoding", enc)
			}
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			body := io.Reader(rec.Body)
			if got := rec.Header().Get("Content-Encoding"); got != enc {
				t.Fatalf("Content-Encoding %q, want %q", got, enc)
			}
			if enc == "gzip" {
				z, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = z
			}
			b, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"result":[100,"2"]`; !strings.Contains(string(b), want) {
				t.Errorf("answer %s, want it to hold %s", b, want)
			}
		})
	}
}
