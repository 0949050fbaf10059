package hbase

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gohbasePrefix is the prefix of the metrics gohbase registers on
// prometheus.DefaultRegisterer when it is loaded.
const gohbasePrefix = "gohbase_"

// metrics are the store's own metrics, and the bridge that shows gohbase's
// metrics on the registry given to New.
type metrics struct {
	reg        prometheus.Registerer
	registered []prometheus.Collector
	retries    *prometheus.CounterVec
	failures   *prometheus.CounterVec
	casOps     *prometheus.CounterVec
}

// newMetrics registers the metrics on reg, when reg is not nil. A
// collector that another Store registered on reg already is shared; only
// what this call registered is unregistered by unregister.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reg: reg,
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_hbase_retries_total",
			Help: "HBase operations attempted again after a failure that may pass, by operation.",
		}, []string{"op"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_hbase_failures_total",
			Help: "HBase operations that failed after their retries, by operation and kind: unavailable (a region or server that did not answer in time: the caller answers 503 and the sender retries) or other.",
		}, []string{"op", "kind"}),
		casOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_hbase_check_and_puts_total",
			Help: "Check-and-puts of batches answered by the region server, by how: batched (many in one Multi RPC, HBase 2.4+) or single (an RPC each: an older server, or an op a batch left unanswered).",
		}, []string{"how"}),
	}
	if reg == nil {
		return m, nil
	}
	retries, err := m.register(m.retries)
	if err != nil {
		return nil, err
	}
	m.retries = retries.(*prometheus.CounterVec)
	failures, err := m.register(m.failures)
	if err != nil {
		m.unregister()
		return nil, err
	}
	m.failures = failures.(*prometheus.CounterVec)
	casOps, err := m.register(m.casOps)
	if err != nil {
		m.unregister()
		return nil, err
	}
	m.casOps = casOps.(*prometheus.CounterVec)
	if reg != prometheus.DefaultRegisterer {
		if _, err := m.register(newGatheredCollector(prometheus.DefaultGatherer, gohbasePrefix)); err != nil {
			m.unregister()
			return nil, err
		}
	}
	return m, nil
}

// register registers c, or returns the equal collector registered before.
func (m *metrics) register(c prometheus.Collector) (prometheus.Collector, error) {
	err := m.reg.Register(c)
	if err == nil {
		m.registered = append(m.registered, c)
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return are.ExistingCollector, nil
	}
	return nil, err
}

func (m *metrics) unregister() {
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
	m.registered = nil
}

// gatheredCollector re-exports, at collection time, the metric families of
// another gatherer whose names start with prefix.
//
// The families exist only once gathered, so it cannot describe them; it
// describes one placeholder instead, which identifies it to the registry
// (a second one is refused as already registered, and Unregister works).
// A pedantic registry would reject the undescribed metrics.
type gatheredCollector struct {
	gatherer    prometheus.Gatherer
	prefix      string
	placeholder *prometheus.Desc
}

func newGatheredCollector(g prometheus.Gatherer, prefix string) *gatheredCollector {
	return &gatheredCollector{
		gatherer: g,
		prefix:   prefix,
		placeholder: prometheus.NewDesc("promhbase_hbase_gathered_metrics",
			"Placeholder of the collector that shows the metrics "+prefix+"* of the default registry; never exported.",
			nil, prometheus.Labels{"prefix": prefix}),
	}
}

// Describe sends the placeholder.
func (c *gatheredCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.placeholder }

// Collect gathers the source and sends the matching metrics. Errors of
// unrelated collectors of the source are ignored; gathering still returns
// what it could.
func (c *gatheredCollector) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := c.gatherer.Gather()
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), c.prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := make([]string, len(m.GetLabel()))
			for i, l := range m.GetLabel() {
				labels[i] = l.GetName()
			}
			ch <- &gatheredMetric{desc: prometheus.NewDesc(mf.GetName(), mf.GetHelp(), labels, nil), m: m}
		}
	}
}

// gatheredMetric is one metric as another registry gathered it.
type gatheredMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (g *gatheredMetric) Desc() *prometheus.Desc { return g.desc }

// Write copies the gathered metric. The gathered message is fresh for each
// gathering and not written to again, so sharing its parts is safe.
func (g *gatheredMetric) Write(out *dto.Metric) error {
	out.Label = g.m.Label
	out.Counter = g.m.Counter
	out.Gauge = g.m.Gauge
	out.Summary = g.m.Summary
	out.Untyped = g.m.Untyped
	out.Histogram = g.m.Histogram
	out.TimestampMs = g.m.TimestampMs
	return nil
}
