// Package limits bounds what clients may store, the way Mimir's
// distributor does: per-series limits (label names per series, label name
// and value length, the row key within HBase's bound), series per request,
// the rate of samples (a token bucket, Mimir's ingestion rate), the rate of
// new series (a token bucket) and the number of active series (estimated).
// The write path asks it about the series it has not seen before (those
// missing from the series cache), so series already admitted cost nothing
// but one sketch update each, and about each request's samples once. The
// limits may be changed while they are applied (SetConfig), for overrides
// reloaded without a restart.
package limits

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
)

// Reasons of rejection, the values of the rejection metrics' reason label.
const (
	ReasonLabelNames       = "max_label_names_per_series"
	ReasonLabelNameLength  = "label_name_too_long"
	ReasonLabelValueLength = "label_value_too_long"
	ReasonRowKey           = "row_key_too_long"
	ReasonSeriesPerRequest = "max_series_per_request"
	ReasonIngestionRate    = "ingestion_rate"
	ReasonNewSeriesRate    = "new_series_rate"
	ReasonActiveSeries     = "max_active_series"
	ReasonSeriesPerMetric  = "max_series_per_metric"
)

// Reasons lists every reason, for the metrics' label values.
func Reasons() []string {
	return []string{ReasonLabelNames, ReasonLabelNameLength, ReasonLabelValueLength, ReasonRowKey,
		ReasonSeriesPerRequest, ReasonIngestionRate, ReasonNewSeriesRate, ReasonActiveSeries, ReasonSeriesPerMetric}
}

var (
	// ErrSeriesLimit is wrapped by the errors of CheckSeries and
	// CheckActive: the series breaks a limit and is refused (400), the
	// rest of its request is written.
	ErrSeriesLimit = errors.New("series limit exceeded")
	// ErrTooManySeries is wrapped when a request holds more series than
	// MaxSeriesPerRequest; nothing of it is written (413).
	ErrTooManySeries = errors.New("too many series in one request")
)

// RateLimitError is returned when a token bucket is empty: samples come
// faster than IngestionRate allows (Samples is set), or new series faster
// than NewSeriesRate (NewSeries is set). Nothing of the request was
// written, and it may be sent again after RetryAfter (429).
type RateLimitError struct {
	// NewSeries are the new series of a request refused by the new-series
	// rate; 0 when Samples is set.
	NewSeries int
	// Samples are the samples and histograms of a request refused by the
	// ingestion rate; 0 when NewSeries is set.
	Samples    int
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	if e.Samples > 0 {
		return fmt.Sprintf("%d samples exceed --limits.ingestion-rate (token bucket empty); retry after %s", e.Samples, e.RetryAfter)
	}
	return fmt.Sprintf("%d new series exceed --limits.new-series-rate (token bucket empty); retry after %s", e.NewSeries, e.RetryAfter)
}

// Config holds the limits; a zero field means no limit.
type Config struct {
	// MaxLabelNamesPerSeries bounds the labels of a series, __name__
	// included.
	MaxLabelNamesPerSeries int
	// MaxLabelNameLength and MaxLabelValueLength bound label names and
	// values in bytes (a metric name is the value of __name__).
	MaxLabelNameLength, MaxLabelValueLength int
	// MaxSeriesPerRequest bounds the series of one write request.
	MaxSeriesPerRequest int
	// IngestionRate is the rate (per second) at which samples are
	// admitted, IngestionBurst the bucket's size: Mimir's ingestion_rate
	// and ingestion_burst_size. Float samples and native histogram samples
	// count, one each; exemplars and metadata do not (Mimir counts them
	// too).
	IngestionRate  float64
	IngestionBurst int
	// NewSeriesRate is the rate (per second) at which series this process
	// has not seen recently are admitted, NewSeriesBurst the bucket's
	// size.
	NewSeriesRate  float64
	NewSeriesBurst int
	// MaxActiveSeries bounds the series written in the last
	// ActiveSeriesWindow to 2×ActiveSeriesWindow (estimated).
	MaxActiveSeries int
	// MaxSeriesPerMetric bounds the series of one metric name written in
	// the last ActiveSeriesWindow to 2×ActiveSeriesWindow, counted
	// exactly (Mimir's max_global_series_per_metric).
	MaxSeriesPerMetric int
}

// DefaultConfig returns the default limits: Mimir's for labels (30
// names, 1024-byte names, 2048-byte values); 50 000 series per request
// (Prometheus sends at most 2000 by default); no ingestion rate (its
// bucket, when a rate is set, of Mimir's 200 000 samples); new series at
// 50 000/s with a burst of 2 000 000 and 10 000 000 active series (above
// Mimir's, sized for one tenant of millions of series whose every series
// is new to a restarted process; see docs/limits.md).
func DefaultConfig() Config {
	return Config{
		MaxLabelNamesPerSeries: 30, MaxLabelNameLength: 1024, MaxLabelValueLength: 2048,
		MaxSeriesPerRequest: 50_000, IngestionBurst: 200_000, NewSeriesRate: 50_000, NewSeriesBurst: 2_000_000, MaxActiveSeries: 10_000_000,
	}
}

// Validate reports whether cfg can be applied: each rate 0 (no limit), or
// positive and finite with a positive burst.
func (cfg Config) Validate() error {
	for _, b := range []struct {
		name  string
		rate  float64
		burst int
	}{{"ingestion", cfg.IngestionRate, cfg.IngestionBurst}, {"new-series", cfg.NewSeriesRate, cfg.NewSeriesBurst}} {
		if b.rate < 0 || math.IsNaN(b.rate) || math.IsInf(b.rate, 0) || b.burst < 0 || (b.rate > 0 && b.burst == 0) {
			return fmt.Errorf("%s rate %g/s with burst %d: want both positive, or rate 0 (no limit)", b.name, b.rate, b.burst)
		}
	}
	return nil
}

// Limits applies a Config, which SetConfig may replace. It is safe for
// concurrent use.
type Limits struct {
	cfg    atomic.Pointer[Config]
	layout mapping.Layout
	now    func() time.Time

	mu        sync.Mutex // the buckets, and the config as they last saw it
	samples   bucket
	newSeries bucket

	active    *activeSeries
	perMetric *metricSeries
}

// bucket is a token bucket's state; its rate and size come from the
// Config in force.
type bucket struct {
	tokens float64 // negative: in debt
	last   time.Time
}

// refill adds the tokens of the time since the last refill, up to burst.
func (b *bucket) refill(now time.Time, rate float64, burst int) {
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(float64(burst), b.tokens+el*rate)
		b.last = now
	}
}

// take takes n tokens. The bucket may go into debt, so that n beyond the
// burst still passes once the bucket is full; while it is empty or in
// debt nothing is taken and take returns how long until it holds a token
// again, in whole seconds, at least one.
func (b *bucket) take(now time.Time, rate float64, burst, n int) (retryAfter time.Duration) {
	b.refill(now, rate, burst)
	if b.tokens <= 0 {
		wait := time.Duration((1 - b.tokens) / rate * float64(time.Second))
		return max(wait.Round(time.Second), time.Second)
	}
	b.tokens -= float64(n)
	return 0
}

// reconfigure carries the bucket over from one rate and size to another:
// the tokens of the time until now at the old rate, then at most the new
// burst (debt is kept). A bucket that was off (rate 0) starts full.
func (b *bucket) reconfigure(now time.Time, oldRate float64, oldBurst int, rate float64, burst int) {
	if oldRate <= 0 {
		b.tokens, b.last = float64(burst), now
		return
	}
	b.refill(now, oldRate, oldBurst)
	if rate > 0 {
		b.tokens = math.Min(b.tokens, float64(burst))
	}
}

// New returns the Limits of cfg for series stored with layout. Its gauges
// (the limits in force and the active-series estimate) are registered on
// reg; nil skips them. now is the clock; nil means time.Now.
func New(cfg Config, layout mapping.Layout, reg prometheus.Registerer, now func() time.Time) (*Limits, error) {
	if now == nil {
		now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := now()
	l := &Limits{layout: layout, now: now, active: newActiveSeries(t), perMetric: newMetricSeries(),
		samples: bucket{tokens: float64(cfg.IngestionBurst), last: t}, newSeries: bucket{tokens: float64(cfg.NewSeriesBurst), last: t}}
	l.cfg.Store(&cfg)
	if reg == nil {
		return l, nil
	}
	active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "promhbase_active_series",
		Help: "Estimated series written in the last 10 to 20 minutes (a HyperLogLog sketch, within about 1.5%), what --limits.max-active-series bounds.",
	}, func() float64 { return float64(l.active.estimate(l.now())) })
	for _, c := range []prometheus.Collector{configCollector{l}, active} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register limits metrics: %w", err)
		}
	}
	return l, nil
}

// Config returns the limits in force.
func (l *Limits) Config() Config { return *l.cfg.Load() }

// SetConfig replaces the limits in force by cfg, validated as New
// validates it; on an error the limits are unchanged. It is safe to call
// while the limits are applied: each check sees the old config or the new
// one. The token buckets keep their tokens (or debt), refilled at the old
// rate until now, then cut to a smaller new burst; a bucket whose limit was
// off starts full. The active series are kept.
func (l *Limits) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.cfg.Load()
	l.samples.reconfigure(now, old.IngestionRate, old.IngestionBurst, cfg.IngestionRate, cfg.IngestionBurst)
	l.newSeries.reconfigure(now, old.NewSeriesRate, old.NewSeriesBurst, cfg.NewSeriesRate, cfg.NewSeriesBurst)
	l.cfg.Store(&cfg)
	return nil
}

// configDesc describes promhbase_limits.
var configDesc = prometheus.NewDesc("promhbase_limits", "The write limits in force, by limit (0: none).", []string{"limit"}, nil)

// configCollector exports the limits in force as promhbase_limits, read
// from the current config at each scrape.
type configCollector struct{ l *Limits }

func (c configCollector) Describe(ch chan<- *prometheus.Desc) { ch <- configDesc }

func (c configCollector) Collect(ch chan<- prometheus.Metric) {
	cfg := c.l.cfg.Load()
	for _, v := range []struct {
		limit string
		value float64
	}{
		{"max_label_names_per_series", float64(cfg.MaxLabelNamesPerSeries)},
		{"max_label_name_length", float64(cfg.MaxLabelNameLength)},
		{"max_label_value_length", float64(cfg.MaxLabelValueLength)},
		{"max_series_per_request", float64(cfg.MaxSeriesPerRequest)},
		{"ingestion_rate", cfg.IngestionRate},
		{"ingestion_burst_size", float64(cfg.IngestionBurst)},
		{"new_series_rate", cfg.NewSeriesRate},
		{"new_series_burst", float64(cfg.NewSeriesBurst)},
		{"max_active_series", float64(cfg.MaxActiveSeries)},
		{"max_series_per_metric", float64(cfg.MaxSeriesPerMetric)},
		{"max_row_key_bytes", mapping.MaxRowKeyBytes},
	} {
		ch <- prometheus.MustNewConstMetric(configDesc, prometheus.GaugeValue, v.value, v.limit)
	}
}

// CheckSeries checks a series seen for the first time (a series cache
// miss) against the per-series limits: label count, name and value length
// and the row key's length. It returns "" and nil, or the reason and an
// error wrapping ErrSeriesLimit (or mapping.ErrRowKeyTooLong) that names
// the series and the limit. It only reads lbls and allocates only to
// describe a breach.
func (l *Limits) CheckSeries(lbls []mapping.Label) (reason string, err error) {
	if err := mapping.CheckRowKey(l.layout, lbls); err != nil {
		return ReasonRowKey, err
	}
	cfg := l.cfg.Load()
	if m := cfg.MaxLabelNamesPerSeries; m > 0 && len(lbls) > m {
		return ReasonLabelNames, fmt.Errorf("%w: %s has %d labels, more than --limits.max-label-names-per-series=%d",
			ErrSeriesLimit, describe(lbls), len(lbls), m)
	}
	for _, lb := range lbls {
		if m := cfg.MaxLabelNameLength; m > 0 && len(lb.Name) > m {
			return ReasonLabelNameLength, fmt.Errorf("%w: %s has a label name of %d bytes (%.40q...), more than --limits.max-label-name-length=%d",
				ErrSeriesLimit, describe(lbls), len(lb.Name), lb.Name, m)
		}
		if m := cfg.MaxLabelValueLength; m > 0 && len(lb.Value) > m {
			return ReasonLabelValueLength, fmt.Errorf("%w: %s has a value of %d bytes for label %.40q, more than --limits.max-label-value-length=%d",
				ErrSeriesLimit, describe(lbls), len(lb.Value), lb.Name, m)
		}
	}
	return "", nil
}

// describe names a series in a message, short however many labels it has.
func describe(lbls []mapping.Label) string { return "series " + mapping.FormatLabelsMax(lbls, 10) }

// CheckRequest checks the number of series of one request.
func (l *Limits) CheckRequest(series int) error {
	if m := l.cfg.Load().MaxSeriesPerRequest; m > 0 && series > m {
		return fmt.Errorf("%w: %d series, more than --limits.max-series-per-request=%d; lower max_samples_per_send", ErrTooManySeries, series, m)
	}
	return nil
}

// CheckActive returns an error wrapping ErrSeriesLimit when the estimated
// active series are at MaxActiveSeries: new series are then refused.
func (l *Limits) CheckActive() error {
	m := l.cfg.Load().MaxActiveSeries
	if m <= 0 {
		return nil
	}
	if n := l.active.estimate(l.now()); n >= int64(m) {
		return fmt.Errorf("%w: about %d active series, at --limits.max-active-series=%d; new series are refused", ErrSeriesLimit, n, m)
	}
	return nil
}

// AdmitSamples takes the n samples of a request (float samples and
// native histogram samples, see Config.IngestionRate) from the ingestion
// token bucket, as AdmitNew takes new series: the bucket may go into debt,
// so that a request of more samples than the burst still passes once the
// bucket is full; while it is empty or in debt, requests with samples get
// a *RateLimitError (Samples set) saying when to retry. Call it once per
// request, before anything of it is written.
func (l *Limits) AdmitSamples(n int) error {
	if wait := l.admit(n, &l.samples, func(c *Config) (float64, int) { return c.IngestionRate, c.IngestionBurst }); wait > 0 {
		return &RateLimitError{Samples: n, RetryAfter: wait}
	}
	return nil
}

// admit takes n tokens from b, whose rate and burst limit gives from
// the configuration in force (rate 0: no limit), and returns how long
// to wait when b is empty or in debt; 0 when admitted.
func (l *Limits) admit(n int, b *bucket, limit func(*Config) (float64, int)) time.Duration {
	if rate, _ := limit(l.cfg.Load()); n <= 0 || rate <= 0 {
		return 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	// As the buckets last saw it: SetConfig changes it under l.mu.
	rate, burst := limit(l.cfg.Load())
	if rate <= 0 {
		return 0
	}
	return b.take(now, rate, burst, n)
}

// AdmitNew takes n new series from the token bucket. The bucket may go
// into debt, so that a request of more new series than the burst still
// passes once the bucket is full; while it is empty or in debt, requests
// with new series get a *RateLimitError (NewSeries set) saying when to
// retry.
func (l *Limits) AdmitNew(n int) error {
	if wait := l.admit(n, &l.newSeries, func(c *Config) (float64, int) { return c.NewSeriesRate, c.NewSeriesBurst }); wait > 0 {
		return &RateLimitError{NewSeries: n, RetryAfter: wait}
	}
	return nil
}

// Sketch returns the active-series sketch to mark every series of a
// request in; call it once per request.
func (l *Limits) Sketch() *Sketch { return l.active.current(l.now()) }
