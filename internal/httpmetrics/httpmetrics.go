// Package httpmetrics counts and times HTTP requests by handler and status
// code, in the shape of Prometheus's own prometheus_http_requests_total and
// prometheus_http_request_duration_seconds:
//
//	promhbase_http_requests_total{handler, code}
//	promhbase_http_request_duration_seconds{handler} (a histogram)
//
// Several parts of one server (the remote endpoints, the query API) count
// into the same two metrics of one registry: Register returns the metrics
// already registered there when another part registered them first. A
// handler name is one of a fixed set chosen by its caller (never a path
// taken from the request), so that the labels stay few.
package httpmetrics

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The metrics' names.
const (
	RequestsName = "promhbase_http_requests_total"
	DurationName = "promhbase_http_request_duration_seconds"
)

// Buckets are the duration histogram's upper bounds, in seconds: from a
// millisecond (a cached write) to a minute (a long query, a stalled
// read).
var Buckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics are the request counter and the duration histogram of one
// registry.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// Register returns the metrics of reg: registered now, or those another
// caller registered on reg before. An error is any other registration
// failure (a metric of the same name with other labels or help).
func Register(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RequestsName,
			Help: "HTTP requests answered, by handler (write, read, otlp, import..., query, query_range, series, labels, ...) and status code.",
		}, []string{"handler", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    DurationName,
			Help:    "Seconds from an HTTP request's arrival to the end of its answer, by handler.",
			Buckets: Buckets,
		}, []string{"handler"}),
	}
	var err error
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c on reg and returns it, or returns the collector of
// the same description registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &are):
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register http metrics: %w", err)
}

// Observe counts one request of handler answered with code after d.
func (m *Metrics) Observe(handler string, code int, d time.Duration) {
	m.requests.WithLabelValues(handler, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(handler).Observe(d.Seconds())
}

// Handler returns h counted and timed as handler. The returned handler
// keeps the optional interfaces of the ResponseWriter it is given
// (http.Flusher, ...), as promhttp's instrumentation does; a handler that
// writes no status is counted as 200.
func (m *Metrics) Handler(handler string, h http.Handler) http.Handler {
	labels := prometheus.Labels{"handler": handler}
	return promhttp.InstrumentHandlerDuration(m.duration.MustCurryWith(labels),
		promhttp.InstrumentHandlerCounter(m.requests.MustCurryWith(labels), h))
}

// Requests returns the counter of handler's requests answered with code.
func (m *Metrics) Requests(handler string, code int) prometheus.Counter {
	return m.requests.WithLabelValues(handler, strconv.Itoa(code))
}
