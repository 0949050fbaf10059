package otlp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/config"
	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Config is how requests are translated: Prometheus's OTLP settings, as
// its configuration file's otlp section has them, and its feature flags'.
type Config struct {
	config.OTLPConfig
	// NativeDelta stores delta temporality sums and histograms as they
	// come (Prometheus's otlp-native-delta-ingestion feature): query them
	// with sum_over_time. Without it they are refused.
	NativeDelta bool
	// LookbackDelta is the query lookback, which spaces target_info's
	// samples (every half of it over a request's points).
	LookbackDelta time.Duration
	// MaxAttributes bounds the attributes of a resource, a scope and a
	// data point; more are refused (their series would pass every label
	// limit). Zero means DefaultMaxAttributes.
	MaxAttributes int
	// MaxBodyBytes bounds the remote write body a request translates
	// into (0: no bound): a histogram's series, and target_info's
	// samples, repeat their labels, so that a small request may translate
	// into gigabytes. Past it the translation stops with ErrTooLarge.
	MaxBodyBytes int
}

// ErrTooLarge marks a request whose translation passes
// Config.MaxBodyBytes: it is refused whole (413), to be sent in smaller
// batches.
var ErrTooLarge = errors.New("OTLP request translates into too much")

// DefaultMaxAttributes is Config.MaxAttributes's default: four times the
// 30 label names a series may have by default
// (--limits.max-label-names-per-series), so that a resource whose
// attributes are not all promoted still passes.
const DefaultMaxAttributes = 128

// DefaultConfig is Prometheus 3.15's: UnderscoreEscapingWithSuffixes,
// no resource attribute promoted, underscores sanitized and preserved.
func DefaultConfig() Config {
	return Config{OTLPConfig: config.DefaultOTLPConfig, LookbackDelta: 5 * time.Minute}
}

// Validate reports a Config that Prometheus would refuse: a resource
// attribute both promoted and ignored, an ignore list without
// PromoteAllResourceAttributes, or an unknown translation strategy.
func (c Config) Validate() error {
	if c.PromoteAllResourceAttributes && len(c.PromoteResourceAttributes) > 0 {
		return errors.New("otlp: promote all resource attributes and a list to promote are exclusive")
	}
	if !c.PromoteAllResourceAttributes && len(c.IgnoreResourceAttributes) > 0 {
		return errors.New("otlp: ignored resource attributes need promote all resource attributes")
	}
	switch c.TranslationStrategy {
	case "UnderscoreEscapingWithSuffixes", "UnderscoreEscapingWithoutSuffixes", "NoUTF8EscapingWithSuffixes", "NoTranslation":
	default:
		return fmt.Errorf("otlp: unknown translation strategy %q", c.TranslationStrategy)
	}
	return nil
}

// SplitList splits a comma-separated list of attribute names (a flag's,
// a runtime configuration's), dropping spaces around them and empty ones.
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Converter translates requests; it is safe for concurrent use.
type Converter struct {
	states sync.Pool // *state
	fast   sync.Pool // *fastState
	// fastTaken counts the requests the fast path translated (fast.go).
	fastTaken atomic.Int64
}

// ConvertBody translates an export request body (already decompressed
// and bounded by the caller) under cfg into a remote write 1.0 body
// appended to dst[:0]: a protobuf request of the common shapes along the
// fast path (fast.go), any other through Decode and Convert. An error
// wraps ErrMalformed for a body that does not decode, or is ctx's end.
func (c *Converter) ConvertBody(ctx context.Context, body []byte, f Format, cfg Config, dst []byte) (Result, error) {
	if f == Protobuf && fastConfig(cfg) {
		st, _ := c.fast.Get().(*fastState)
		if st == nil {
			st = &fastState{}
		}
		res, ok := st.convertFast(body, cfg, dst)
		c.fast.Put(st)
		if res.tooLarge {
			return Result{}, tooLarge(cfg)
		}
		if ok {
			c.fastTaken.Add(1)
			res.Fast = true
			return res, nil
		}
	}
	md, err := Decode(body, f)
	if err != nil {
		return Result{}, err
	}
	return c.Convert(ctx, md, cfg, dst)
}

// state is one translation's converter and appender, reused.
type state struct {
	conv *prw.PrometheusConverter
	app  appender
}

// Result is what Convert made of a request.
type Result struct {
	// Body is the remote write 1.0 request of the series (nil: none).
	Body []byte
	// Points is the data points translated; Samples the samples and
	// histograms they made.
	Points, Samples int
	// Rejected is the data points refused, Reason why.
	Rejected int64
	Reason   string
	// Warnings are the converter's (collisions of translated names,
	// histograms with a sum but no count).
	Warnings []string
	// Fast is set when the fast path translated the request (fast.go).
	Fast bool
	// tooLarge is set by the fast path when the translation passed
	// Config.MaxBodyBytes.
	tooLarge bool
}

// Convert translates md under cfg into a remote write 1.0 body appended to
// dst[:0]. md is changed (its refused points taken out). An error is
// returned only for ctx's end: every refusal is in the Result.
func (c *Converter) Convert(ctx context.Context, md pmetric.Metrics, cfg Config, dst []byte) (Result, error) {
	var ref refusals
	maxAttrs := cfg.MaxAttributes
	if maxAttrs <= 0 {
		maxAttrs = DefaultMaxAttributes
	}
	filter(md, cfg.NativeDelta, maxAttrs, &ref)
	st, _ := c.states.Get().(*state)
	if st == nil {
		st = &state{}
		st.conv = prw.NewPrometheusConverter(&st.app)
	}
	defer c.states.Put(st)
	st.app.reset(dst[:0])
	st.app.maxBytes = cfg.MaxBodyBytes
	st.conv.Reset(&st.app)
	annots, err := st.conv.FromMetrics(ctx, md, settings(cfg))
	if cerr := ctx.Err(); cerr != nil {
		return Result{}, fmt.Errorf("translate OTLP metrics: %w", cerr)
	}
	if st.app.over {
		st.app.body = nil // not pooled at its size
		return Result{}, tooLarge(cfg)
	}
	if err != nil {
		// Refusals the filter does not foresee: each error a metric's
		// (or a point's) that was not translated.
		for _, e := range unjoin(err) {
			ref.add(1, e.Error())
		}
	}
	res := Result{Points: md.DataPointCount(), Samples: st.app.samples, Rejected: ref.points, Reason: ref.message()}
	res.Warnings, _ = annots.AsStrings("", 0, 0)
	res.Body = st.app.finish()
	st.app.body = nil // the caller's now
	return res, nil
}

// tooLarge is the error of a translation past cfg.MaxBodyBytes.
func tooLarge(cfg Config) error {
	return fmt.Errorf("%w: more than %d bytes of series; send fewer points a request", ErrTooLarge, cfg.MaxBodyBytes)
}

// settings are the converter's Settings for cfg, as Prometheus's receiver
// makes them from its configuration.
func settings(cfg Config) prw.Settings {
	return prw.Settings{
		AddMetricSuffixes:                    cfg.TranslationStrategy.ShouldAddSuffixes(),
		AllowUTF8:                            !cfg.TranslationStrategy.ShouldEscape(),
		PromoteResourceAttributes:            prw.NewPromoteResourceAttributes(cfg.OTLPConfig),
		KeepIdentifyingResourceAttributes:    cfg.KeepIdentifyingResourceAttributes,
		ConvertHistogramsToNHCB:              cfg.ConvertHistogramsToNHCB,
		PromoteScopeMetadata:                 cfg.PromoteScopeMetadata,
		AllowDeltaTemporality:                cfg.NativeDelta,
		LookbackDelta:                        cfg.LookbackDelta,
		LabelNameUnderscoreSanitization:      cfg.LabelNameUnderscoreSanitization,
		LabelNamePreserveMultipleUnderscores: cfg.LabelNamePreserveMultipleUnderscores,
	}
}

// unjoin returns the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
