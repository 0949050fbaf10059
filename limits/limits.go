// Package limits bounds what clients may store, the way Mimir's
// distributor does: per-series limits (label names per series, label name
// and value length, the row key within HBase's bound), series per request,
// the rate of new series (a token bucket) and the number of active series
// (estimated). The write path asks it about the series it has not seen
// before (those missing from the series cache), so series already admitted
// cost nothing but one sketch update each.
package limits

import (
	"errors"
	"fmt"
	"math"
	"sync"
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
	ReasonNewSeriesRate    = "new_series_rate"
	ReasonActiveSeries     = "max_active_series"
)

// Reasons lists every reason, for the metrics' label values.
func Reasons() []string {
	return []string{ReasonLabelNames, ReasonLabelNameLength, ReasonLabelValueLength, ReasonRowKey,
		ReasonSeriesPerRequest, ReasonNewSeriesRate, ReasonActiveSeries}
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

// RateLimitError is returned when new series come faster than
// NewSeriesRate allows: nothing of the request was written, and it may be
// sent again after RetryAfter (429).
type RateLimitError struct {
	NewSeries  int
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
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
	// NewSeriesRate is the rate (per second) at which series this process
	// has not seen recently are admitted, NewSeriesBurst the bucket's
	// size.
	NewSeriesRate  float64
	NewSeriesBurst int
	// MaxActiveSeries bounds the series written in the last
	// ActiveSeriesWindow to 2×ActiveSeriesWindow (estimated).
	MaxActiveSeries int
}

// DefaultConfig returns the default limits: Mimir's for labels (30
// names, 1024-byte names, 2048-byte values); 50 000 series per request
// (Prometheus sends at most 2000 by default); new series at 10 000/s with
// a burst of 200 000 (Mimir's ingestion rate and burst, counted in new
// series); 1 000 000 active series (as many as one generation of the
// series cache holds by default).
func DefaultConfig() Config {
	return Config{
		MaxLabelNamesPerSeries: 30, MaxLabelNameLength: 1024, MaxLabelValueLength: 2048,
		MaxSeriesPerRequest: 50_000, NewSeriesRate: 50_000, NewSeriesBurst: 2_000_000, MaxActiveSeries: 10_000_000,
	}
}

// Limits applies a Config. It is safe for concurrent use.
type Limits struct {
	cfg    Config
	layout mapping.Layout
	now    func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time

	active *activeSeries
}

// New returns the Limits of cfg for series stored with layout. Its gauges
// (the limits and the active-series estimate) are registered on reg; nil
// skips them. now is the clock; nil means time.Now.
func New(cfg Config, layout mapping.Layout, reg prometheus.Registerer, now func() time.Time) (*Limits, error) {
	if now == nil {
		now = time.Now
	}
	if cfg.NewSeriesRate < 0 || cfg.NewSeriesBurst < 0 || (cfg.NewSeriesRate > 0 && cfg.NewSeriesBurst == 0) {
		return nil, fmt.Errorf("new-series rate %g/s with burst %d: want both positive, or rate 0 (no limit)", cfg.NewSeriesRate, cfg.NewSeriesBurst)
	}
	l := &Limits{cfg: cfg, layout: layout, now: now, tokens: float64(cfg.NewSeriesBurst), last: now(), active: newActiveSeries(now())}
	if reg == nil {
		return l, nil
	}
	limit := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "promhbase_limits", Help: "The write limits in force, by limit (0: none).",
	}, []string{"limit"})
	for name, v := range map[string]float64{
		"max_label_names_per_series": float64(cfg.MaxLabelNamesPerSeries), "max_label_name_length": float64(cfg.MaxLabelNameLength),
		"max_label_value_length": float64(cfg.MaxLabelValueLength), "max_series_per_request": float64(cfg.MaxSeriesPerRequest),
		"new_series_rate": cfg.NewSeriesRate, "new_series_burst": float64(cfg.NewSeriesBurst), "max_active_series": float64(cfg.MaxActiveSeries),
		"max_row_key_bytes": mapping.MaxRowKeyBytes,
	} {
		limit.WithLabelValues(name).Set(v)
	}
	active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "promhbase_active_series",
		Help: "Estimated series written in the last 10 to 20 minutes (a HyperLogLog sketch, within about 1.5%), what --limits.max-active-series bounds.",
	}, func() float64 { return float64(l.active.estimate(l.now())) })
	for _, c := range []prometheus.Collector{limit, active} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register limits metrics: %w", err)
		}
	}
	return l, nil
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
	if m := l.cfg.MaxLabelNamesPerSeries; m > 0 && len(lbls) > m {
		return ReasonLabelNames, fmt.Errorf("%w: %s has %d labels, more than --limits.max-label-names-per-series=%d",
			ErrSeriesLimit, describe(lbls), len(lbls), m)
	}
	for _, lb := range lbls {
		if m := l.cfg.MaxLabelNameLength; m > 0 && len(lb.Name) > m {
			return ReasonLabelNameLength, fmt.Errorf("%w: %s has a label name of %d bytes (%.40q...), more than --limits.max-label-name-length=%d",
				ErrSeriesLimit, describe(lbls), len(lb.Name), lb.Name, m)
		}
		if m := l.cfg.MaxLabelValueLength; m > 0 && len(lb.Value) > m {
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
	if m := l.cfg.MaxSeriesPerRequest; m > 0 && series > m {
		return fmt.Errorf("%w: %d series, more than --limits.max-series-per-request=%d; lower max_samples_per_send", ErrTooManySeries, series, m)
	}
	return nil
}

// CheckActive returns an error wrapping ErrSeriesLimit when the estimated
// active series are at MaxActiveSeries: new series are then refused.
func (l *Limits) CheckActive() error {
	m := l.cfg.MaxActiveSeries
	if m <= 0 {
		return nil
	}
	if n := l.active.estimate(l.now()); n >= int64(m) {
		return fmt.Errorf("%w: about %d active series, at --limits.max-active-series=%d; new series are refused", ErrSeriesLimit, n, m)
	}
	return nil
}

// AdmitNew takes n new series from the token bucket. The bucket may go
// into debt, so that a request of more new series than the burst still
// passes once the bucket is full; while it is empty or in debt, requests
// with new series get a *RateLimitError saying when to retry.
func (l *Limits) AdmitNew(n int) error {
	if l.cfg.NewSeriesRate <= 0 || n == 0 {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if el := now.Sub(l.last).Seconds(); el > 0 {
		l.tokens = math.Min(float64(l.cfg.NewSeriesBurst), l.tokens+el*l.cfg.NewSeriesRate)
		l.last = now
	}
	if l.tokens <= 0 {
		wait := time.Duration((1 - l.tokens) / l.cfg.NewSeriesRate * float64(time.Second))
		return &RateLimitError{NewSeries: n, RetryAfter: max(wait.Round(time.Second), time.Second)}
	}
	l.tokens -= float64(n)
	return nil
}

// Sketch returns the active-series sketch to mark every series of a
// request in; call it once per request.
func (l *Limits) Sketch() *Sketch { return l.active.current(l.now()) }
