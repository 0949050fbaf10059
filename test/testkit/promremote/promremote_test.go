package promremote

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/prompb"
)

// TestWriterSendsBody: what Store sends through a NewWriter client is
// the request, as Body encodes it, posted to /api/v1/write with the
// options' headers; Decode reads it back.
func TestWriterSendsBody(t *testing.T) {
	want := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels: []prompb.Label{{Name: "__name__", Value: "up"}}, Samples: []prompb.Sample{{Timestamp: 1000, Value: 1}},
	}}}
	var got prompb.WriteRequest
	var path, org string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, org = r.URL.Path, r.Header.Get("X-Scope-OrgID")
		b, _ := io.ReadAll(r.Body)
		if err := Decode(b, &got); err != nil {
			t.Errorf("decode the request: %v", err)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	wc, _ := Clients(t, "test", srv.URL, Options{Headers: map[string]string{"X-Scope-OrgID": "a"}})
	if err := Store(t.Context(), wc, want); err != nil {
		t.Fatal(err)
	}
	if path != "/api/v1/write" || org != "a" || got.String() != want.String() {
		t.Errorf("server got %s (org %q): %v, want /api/v1/write (org a): %v", path, org, got.String(), want.String())
	}
	if err := Decode([]byte("not snappy"), &got); err == nil {
		t.Error("Decode of a body that is not snappy: no error")
	}
}
