package e2e

import (
	"fmt"
	"math"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// utf8Labels are the label values of e2e_labels_info: non-ASCII text,
// quotes, backslashes and a newline, which the text exposition format
// escapes and promhbase must store and return byte for byte.
var utf8Labels = []struct{ text, quote, path string }{
	{"ünïcødé ✓", `say "hi"`, `C:\dir\file`},
	{"日本語 🙂", "it's", `\\server\share`},
	{"line\nbreak", `"`, `\`},
}

// synthCollector produces the synthetic metrics of an exporter. Its values
// are a function of the number of scrapes seen so far, so every scrape
// changes them: counters (one that goes back to zero every 25 scrapes),
// gauges with negative and fractional values, a classic histogram, a
// summary, optionally a metric with many label values, and UTF-8 labels.
type synthCollector struct {
	wide int // number of path label values of e2e_http_requests_total

	mu      sync.Mutex
	n       int
	hist    prometheus.Histogram
	summary prometheus.Summary
	// native is a native histogram with positive, negative and zero
	// observations; nativeReset is one that starts over every 20 scrapes
	// (a counter reset).
	native, nativeReset prometheus.Histogram

	events, resetting, temperature, wave, requests, info *prometheus.Desc
}

func newSynthCollector(wide int) *synthCollector {
	return &synthCollector{
		wide: wide,
		hist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "e2e_latency_seconds", Help: "Synthetic latency.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5},
		}),
		native:      newNative("e2e_native_seconds"),
		nativeReset: newNative("e2e_native_resetting_seconds"),
		summary: prometheus.NewSummary(prometheus.SummaryOpts{
			Name: "e2e_rpc_duration_seconds", Help: "Synthetic RPC duration.",
			Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001},
		}),
		events:      prometheus.NewDesc("e2e_events_total", "Monotonic counter.", []string{"kind"}, nil),
		resetting:   prometheus.NewDesc("e2e_resetting_total", "Counter that resets every 25 scrapes.", nil, nil),
		temperature: prometheus.NewDesc("e2e_temperature_celsius", "Negative and fractional gauge.", []string{"sensor"}, nil),
		wave:        prometheus.NewDesc("e2e_wave", "Gauge following a sine.", nil, nil),
		requests:    prometheus.NewDesc("e2e_http_requests_total", "Counter with many label values.", []string{"method", "path"}, nil),
		info:        prometheus.NewDesc("e2e_labels_info", "Gauge with UTF-8 label values.", []string{"text", "quote", "path"}, nil),
	}
}

// newNative returns a native histogram (exponential buckets, factor 1.1,
// schema 3) with no classic buckets.
func newNative(name string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: name, Help: "Synthetic native histogram.",
		NativeHistogramBucketFactor: 1.1, NativeHistogramZeroThreshold: 0.001,
		Buckets: []float64{}, // no classic buckets: native only
	})
}

// Describe implements prometheus.Collector.
func (c *synthCollector) Describe(ch chan<- *prometheus.Desc) {
	c.native.Describe(ch)
	c.nativeReset.Describe(ch)
	c.hist.Describe(ch)
	c.summary.Describe(ch)
	for _, d := range []*prometheus.Desc{c.events, c.resetting, c.temperature, c.wave, c.requests, c.info} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; each call is one scrape.
func (c *synthCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	n := float64(c.n)
	if c.n%20 == 0 {
		c.nativeReset = newNative("e2e_native_resetting_seconds")
	}
	for k := range 3 {
		v := float64((c.n*37+k*11)%100) / 40
		// The classic histogram carries exemplars (a trace id per scrape).
		c.hist.(prometheus.ExemplarObserver).ObserveWithExemplar(v, prometheus.Labels{"trace_id": fmt.Sprintf("%016x", c.n*3+k)})
		c.summary.Observe(v)
		// Negative, zero (within the zero threshold) and positive values,
		// so that both span lists and the zero bucket are used.
		w := float64((c.n*53+k*29)%120)/30 - 1
		if k == 2 {
			w = 0.0005
		}
		c.native.Observe(w)
		c.nativeReset.Observe(w + 1.5)
	}
	c.native.Collect(ch)
	c.nativeReset.Collect(ch)
	c.hist.Collect(ch)
	c.summary.Collect(ch)
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, 3*n, "a")
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, 5*n+0.5, "b")
	ch <- prometheus.MustNewConstMetric(c.resetting, prometheus.CounterValue, float64(c.n%25)*2.5)
	ch <- prometheus.MustNewConstMetric(c.temperature, prometheus.GaugeValue, -12.75+0.25*float64(c.n%40), "north")
	ch <- prometheus.MustNewConstMetric(c.temperature, prometheus.GaugeValue, -0.1*n, "south")
	ch <- prometheus.MustNewConstMetric(c.wave, prometheus.GaugeValue, math.Sin(n/5))
	// Distinct rates for every series, so that topk and bottomk have no ties.
	for i := range c.wide {
		path := fmt.Sprintf("/api/v1/item/%03d", i)
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, n*float64(i+1), "GET", path)
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, n*(0.5*float64(i)+0.75), "POST", path)
	}
	for i, l := range utf8Labels {
		ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, float64(c.n%3+i), l.text, l.quote, l.path)
	}
}

// exporter is a synthetic scrape target on a loopback port.
type exporter struct {
	srv  *httptest.Server
	host string // host:port, Prometheus's instance label
	once sync.Once
}

// startExporter serves a synthCollector on its own registry.
func startExporter(t *testing.T, wide int) *exporter {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newSynthCollector(wide))
	// OpenMetrics or protobuf (chosen by Prometheus's Accept header)
	// carry exemplars; protobuf carries native histograms.
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	e := &exporter{srv: srv, host: u.Host}
	t.Cleanup(e.stop)
	return e
}

// stop closes the exporter's listener: scrapes of it fail from now on.
func (e *exporter) stop() { e.once.Do(e.srv.Close) }
