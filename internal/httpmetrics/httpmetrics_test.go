package httpmetrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRegisterTwice: a second Register on the same registry shares the
// first's metrics; one of the same name with other labels is an error.
func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	a.Observe("write", http.StatusNoContent, time.Millisecond)
	if got := testutil.ToFloat64(b.Requests("write", http.StatusNoContent)); got != 1 {
		t.Errorf("second Register's counter = %v, want the first's 1", got)
	}
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: RequestsName, Help: "x"}, []string{"path"}))
	if _, err := Register(other); err == nil {
		t.Error("Register over a metric of the same name with other labels: no error")
	}
}

// TestHandler: a wrapped handler's requests are counted by the status
// it wrote (200 when it wrote none) and timed.
func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		code int
	}{
		{"no status", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }, http.StatusOK},
		{"503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m.Handler("query", tc.h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			if got := testutil.ToFloat64(m.Requests("query", tc.code)); got != 1 {
				t.Errorf("requests{handler=query,code=%d} = %v, want 1", tc.code, got)
			}
		})
	}
	if got := testutil.CollectAndCount(reg, DurationName); got != 1 {
		t.Errorf("%d duration series, want 1 (handler query)", got)
	}
}
