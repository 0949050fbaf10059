// Package overrides reads the runtime configuration of a multi-tenant
// promhbase, as Mimir's runtime configuration file: per-tenant limits
// that override the flags' defaults, and the tenants each basic-auth
// login may use. The file is read again every reload period; a change
// takes effect without a restart, and a file that does not load leaves
// the configuration in force unchanged.
//
// Format (YAML; unknown keys are errors):
//
//	overrides:
//	  team-a:                      # a tenant ID (X-Scope-OrgID)
//	    max_active_series: 200000  # any field of Limits; the rest keep the flags' values
//	    ingestion_rate: 50000
//	    ruler_max_rule_groups_per_tenant: 70
//	    otel_translation_strategy: NoUTF8EscapingWithSuffixes
//	    promote_otel_resource_attributes: k8s.pod.name,host.name
//	users:
//	  alice: [team-a]              # login -> the tenants it may name
//	  grafana: [team-a, team-b]
package overrides

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/prometheus/otlptranslator"

	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/server/tenant"
)

// Limits are one tenant's limits: every write limit flag (--limits.*),
// the query sample limit (--query.max-samples) and the ruler's limits
// (--ruler.max-*, Mimir's names). A zero field means no limit, as the
// flags.
type Limits struct {
	MaxLabelNamesPerSeries int     `yaml:"max_label_names_per_series"`
	MaxLabelNameLength     int     `yaml:"max_label_name_length"`
	MaxLabelValueLength    int     `yaml:"max_label_value_length"`
	MaxSeriesPerRequest    int     `yaml:"max_series_per_request"`
	IngestionRate          float64 `yaml:"ingestion_rate"`
	IngestionBurst         int     `yaml:"ingestion_burst_size"`
	NewSeriesRate          float64 `yaml:"new_series_rate"`
	NewSeriesBurst         int     `yaml:"new_series_burst"`
	MaxActiveSeries        int     `yaml:"max_active_series"`
	MaxSamplesPerQuery     int     `yaml:"max_samples_per_query"`
	// RulerMaxRuleGroupsPerTenant and RulerMaxRulesPerRuleGroup bound
	// the rule groups stored through the ruler configuration API, as
	// Mimir's limits of these names: a POST past them gets 400.
	RulerMaxRuleGroupsPerTenant int `yaml:"ruler_max_rule_groups_per_tenant"`
	RulerMaxRulesPerRuleGroup   int `yaml:"ruler_max_rules_per_rule_group"`
	// OTel are the tenant's OTLP translation settings, as Mimir's limits
	// of these names (the defaults: serve's --otlp.* flags).
	OTel OTelLimits `yaml:",inline"`

	// MaxGlobalSeriesPerUser is Mimir's name for max_active_series: set
	// (not 0), it is the tenant's active-series limit.
	MaxGlobalSeriesPerUser int `yaml:"max_global_series_per_user"`
	// MaxGlobalSeriesPerMetric bounds the active series of one metric
	// name (--limits.max-series-per-metric), as Mimir's limit of this
	// name: the series past it are refused (400), other metrics write on.
	MaxGlobalSeriesPerMetric int `yaml:"max_global_series_per_metric"`
	// MetricRelabelConfigs relabel every series written, before it gets
	// a UID (Prometheus's relabel configurations, as Mimir's limit of
	// this name): a series dropped is not stored, one left invalid or
	// empty is refused (400).
	MetricRelabelConfigs []*relabel.Config `yaml:"metric_relabel_configs"`

	// Query guardrails, as Mimir's limits of these names (0: none).
	Query QueryLimits `yaml:",inline"`
	// Retention is the tenant's retention, in Loki's words.
	Retention RetentionLimits `yaml:",inline"`
}

// QueryLimits are a tenant's query guardrails.
type QueryLimits struct {
	// MaxTotalQueryLength bounds end - start of a range query, a remote
	// read, a series or labels request (400 past it).
	MaxTotalQueryLength model.Duration `yaml:"max_total_query_length"`
	// MaxQueryLookback clamps a query's start to now minus it; a query
	// that ends before that answers empty.
	MaxQueryLookback model.Duration `yaml:"max_query_lookback"`
	// MaxFetchedSeriesPerQuery bounds the series one query selects (422
	// past it).
	MaxFetchedSeriesPerQuery int `yaml:"max_fetched_series_per_query"`
	// BlockedQueries are refused (400): a query equal to a pattern, or
	// matching it whole when regex is set.
	BlockedQueries []BlockedQuery `yaml:"blocked_queries"`
}

// BlockedQuery is one entry of blocked_queries.
type BlockedQuery struct {
	Pattern string `yaml:"pattern"`
	Regex   bool   `yaml:"regex"`
}

// RetentionLimits are a tenant's retention, in Loki's words: its
// period, and periods of the series a selector matches.
type RetentionLimits struct {
	// RetentionPeriod is the tenant's retention (0: the flags').
	RetentionPeriod model.Duration `yaml:"retention_period"`
	// RetentionStream keeps the series a selector matches for its period:
	// of the selectors that match a series, the highest priority wins;
	// a series no selector matches keeps RetentionPeriod.
	RetentionStream []StreamRetention `yaml:"retention_stream"`
}

// StreamRetention is one entry of retention_stream.
type StreamRetention struct {
	Selector string         `yaml:"selector"`
	Priority int            `yaml:"priority"`
	Period   model.Duration `yaml:"period"`
}

// OTelLimits are a tenant's OTLP translation settings (otlp.Config).
type OTelLimits struct {
	TranslationStrategy string `yaml:"otel_translation_strategy"`
	// PromoteResourceAttributes is a comma-separated list, as Mimir's
	// promote_otel_resource_attributes; set, it replaces the flags'
	// promotion (a list, or all but the ignored).
	PromoteResourceAttributes            string `yaml:"promote_otel_resource_attributes"`
	KeepIdentifyingResourceAttributes    bool   `yaml:"otel_keep_identifying_resource_attributes"`
	ConvertHistogramsToNHCB              bool   `yaml:"otel_convert_histograms_to_nhcb"`
	PromoteScopeMetadata                 bool   `yaml:"otel_promote_scope_metadata"`
	NativeDeltaIngestion                 bool   `yaml:"otel_native_delta_ingestion"`
	LabelNameUnderscoreSanitization      bool   `yaml:"otel_label_name_underscore_sanitization"`
	LabelNamePreserveMultipleUnderscores bool   `yaml:"otel_label_name_preserve_multiple_underscores"`
}

// OTelLimitsOf returns the OTelLimits that give c.
func OTelLimitsOf(c otlp.Config) OTelLimits {
	return OTelLimits{
		TranslationStrategy:               string(c.TranslationStrategy),
		PromoteResourceAttributes:         strings.Join(c.PromoteResourceAttributes, ","),
		KeepIdentifyingResourceAttributes: c.KeepIdentifyingResourceAttributes, ConvertHistogramsToNHCB: c.ConvertHistogramsToNHCB,
		PromoteScopeMetadata: c.PromoteScopeMetadata, NativeDeltaIngestion: c.NativeDelta,
		LabelNameUnderscoreSanitization:      c.LabelNameUnderscoreSanitization,
		LabelNamePreserveMultipleUnderscores: c.LabelNamePreserveMultipleUnderscores,
	}
}

// Config returns base (serve's flags: what OTelLimits does not hold) with
// o's settings; the zero OTelLimits (no strategy: defaults never set)
// leaves base as it is.
func (o OTelLimits) Config(base otlp.Config) otlp.Config {
	if o.TranslationStrategy == "" {
		return base
	}
	c := base
	c.TranslationStrategy = otlptranslator.TranslationStrategyOption(o.TranslationStrategy)
	if list := otlp.SplitList(o.PromoteResourceAttributes); len(list) > 0 || !c.PromoteAllResourceAttributes {
		c.PromoteResourceAttributes, c.PromoteAllResourceAttributes, c.IgnoreResourceAttributes = list, false, nil
	}
	c.KeepIdentifyingResourceAttributes, c.ConvertHistogramsToNHCB = o.KeepIdentifyingResourceAttributes, o.ConvertHistogramsToNHCB
	c.PromoteScopeMetadata, c.NativeDelta = o.PromoteScopeMetadata, o.NativeDeltaIngestion
	c.LabelNameUnderscoreSanitization, c.LabelNamePreserveMultipleUnderscores = o.LabelNameUnderscoreSanitization, o.LabelNamePreserveMultipleUnderscores
	return c
}

// FromConfig returns the Limits of the write limits c and the query
// sample limit maxSamples.
func FromConfig(c limits.Config, maxSamples int) Limits {
	return Limits{
		MaxLabelNamesPerSeries: c.MaxLabelNamesPerSeries, MaxLabelNameLength: c.MaxLabelNameLength,
		MaxLabelValueLength: c.MaxLabelValueLength, MaxSeriesPerRequest: c.MaxSeriesPerRequest,
		IngestionRate: c.IngestionRate, IngestionBurst: c.IngestionBurst,
		NewSeriesRate: c.NewSeriesRate, NewSeriesBurst: c.NewSeriesBurst,
		MaxActiveSeries: c.MaxActiveSeries, MaxSamplesPerQuery: maxSamples, MaxGlobalSeriesPerMetric: c.MaxSeriesPerMetric,
	}
}

// validateNew checks the relabel configurations, the blocked queries'
// patterns and the retention selectors.
func (l Limits) validateNew() error {
	for i, c := range l.MetricRelabelConfigs {
		if c == nil {
			return fmt.Errorf("metric_relabel_configs[%d] is empty", i)
		}
		if err := c.Validate(model.UTF8Validation); err != nil {
			return fmt.Errorf("metric_relabel_configs[%d]: %w", i, err)
		}
	}
	for i, b := range l.Query.BlockedQueries {
		if b.Pattern == "" {
			return fmt.Errorf("blocked_queries[%d] has no pattern", i)
		}
		if b.Regex {
			if _, err := regexp.Compile("^(?:" + b.Pattern + ")$"); err != nil {
				return fmt.Errorf("blocked_queries[%d]: %w", i, err)
			}
		}
	}
	for i, r := range l.Retention.RetentionStream {
		if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector(r.Selector); err != nil {
			return fmt.Errorf("retention_stream[%d] selector %q: %w", i, r.Selector, err)
		}
		if r.Period <= 0 {
			return fmt.Errorf("retention_stream[%d] (selector %q) has period %s: want a positive one", i, r.Selector, r.Period)
		}
	}
	return nil
}

// Write returns the write limits of l.
func (l Limits) Write() limits.Config {
	active := l.MaxActiveSeries
	if l.MaxGlobalSeriesPerUser > 0 {
		active = l.MaxGlobalSeriesPerUser
	}
	return limits.Config{
		MaxLabelNamesPerSeries: l.MaxLabelNamesPerSeries, MaxLabelNameLength: l.MaxLabelNameLength,
		MaxLabelValueLength: l.MaxLabelValueLength, MaxSeriesPerRequest: l.MaxSeriesPerRequest,
		IngestionRate: l.IngestionRate, IngestionBurst: l.IngestionBurst,
		NewSeriesRate: l.NewSeriesRate, NewSeriesBurst: l.NewSeriesBurst,
		MaxActiveSeries: active, MaxSeriesPerMetric: l.MaxGlobalSeriesPerMetric,
	}
}

// validate checks what limits.New would refuse, and negative limits.
func (l Limits) validate() error {
	for name, v := range map[string]float64{
		"max_label_names_per_series": float64(l.MaxLabelNamesPerSeries), "max_label_name_length": float64(l.MaxLabelNameLength),
		"max_label_value_length": float64(l.MaxLabelValueLength), "max_series_per_request": float64(l.MaxSeriesPerRequest),
		"ingestion_rate": l.IngestionRate, "ingestion_burst_size": float64(l.IngestionBurst),
		"new_series_rate": l.NewSeriesRate, "new_series_burst": float64(l.NewSeriesBurst),
		"max_active_series": float64(l.MaxActiveSeries), "max_samples_per_query": float64(l.MaxSamplesPerQuery),
		"ruler_max_rule_groups_per_tenant": float64(l.RulerMaxRuleGroupsPerTenant),
		"ruler_max_rules_per_rule_group":   float64(l.RulerMaxRulesPerRuleGroup),
		"max_global_series_per_user":       float64(l.MaxGlobalSeriesPerUser),
		"max_global_series_per_metric":     float64(l.MaxGlobalSeriesPerMetric),
		"max_total_query_length":           float64(l.Query.MaxTotalQueryLength),
		"max_query_lookback":               float64(l.Query.MaxQueryLookback),
		"max_fetched_series_per_query":     float64(l.Query.MaxFetchedSeriesPerQuery),
		"retention_period":                 float64(l.Retention.RetentionPeriod),
	} {
		if v < 0 {
			return fmt.Errorf("%s is %g: limits are 0 (none) or positive", name, v)
		}
	}
	if l.NewSeriesRate > 0 && l.NewSeriesBurst == 0 {
		return fmt.Errorf("new_series_rate %g with new_series_burst 0: a rate needs a burst", l.NewSeriesRate)
	}
	if l.IngestionRate > 0 && l.IngestionBurst == 0 {
		return fmt.Errorf("ingestion_rate %g with ingestion_burst_size 0: a rate needs a burst", l.IngestionRate)
	}
	if err := l.validateNew(); err != nil {
		return err
	}
	if l.OTel.TranslationStrategy != "" {
		if err := l.OTel.Config(otlp.DefaultConfig()).Validate(); err != nil {
			return err
		}
	}
	return l.Write().Validate() // what else limits refuses (NaN, infinities)
}

// Config is the runtime configuration: the limits of the tenants that
// have overrides, and the tenants of each login.
type Config struct {
	// Overrides are the tenants' limits, every field set (the defaults
	// where the file names none).
	Overrides map[string]Limits
	// Users maps a basic-auth login to the tenants it may name.
	Users map[string][]string
}

// file is the YAML of the runtime configuration.
type file struct {
	Overrides map[string]yaml.Node `yaml:"overrides"`
	Users     map[string][]string  `yaml:"users"`
}

// Parse parses a runtime configuration; fields a tenant's overrides do
// not name keep defaults'. Tenant IDs are checked by Mimir's rules
// (tenant.ValidateID).
func Parse(b []byte, defaults Limits) (*Config, error) {
	// First strictly, for errors that name the file's lines; then each
	// tenant's overrides over the defaults.
	var strict struct {
		Overrides map[string]Limits   `yaml:"overrides"`
		Users     map[string][]string `yaml:"users"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	strictErr := dec.Decode(&strict)
	if errors.Is(strictErr, io.EOF) { // an empty file: no overrides
		strictErr = nil
	}
	var f file
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	c := &Config{Overrides: make(map[string]Limits, len(f.Overrides)), Users: f.Users}
	for id, node := range f.Overrides {
		if err := tenant.ValidateID(id); err != nil {
			return nil, fmt.Errorf("overrides: %w", err)
		}
		l, err := decodeLimits(&node, defaults)
		if err != nil {
			if strictErr != nil {
				err = strictErr // the same error, with the file's line
			}
			return nil, fmt.Errorf("overrides of tenant %q: %w", id, err)
		}
		if err := l.validate(); err != nil {
			return nil, fmt.Errorf("overrides of tenant %q: %w", id, err)
		}
		c.Overrides[id] = l
	}
	if strictErr != nil {
		return nil, strictErr
	}
	for user, ids := range f.Users {
		if len(ids) == 0 {
			return nil, fmt.Errorf("users: login %q names no tenant", user)
		}
		for _, id := range ids {
			if err := tenant.ValidateID(id); err != nil {
				return nil, fmt.Errorf("users: login %q: %w", user, err)
			}
		}
	}
	return c, nil
}

// decodeLimits decodes a tenant's overrides over defaults, refusing
// keys that name no limit.
func decodeLimits(node *yaml.Node, defaults Limits) (Limits, error) {
	var buf bytes.Buffer
	if err := yaml.NewEncoder(&buf).Encode(node); err != nil {
		return Limits{}, err
	}
	l := defaults
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil && !errors.Is(err, io.EOF) {
		return Limits{}, err
	}
	return l, nil
}

// Runtime holds the runtime configuration in force and reloads its file.
// Its methods are safe for concurrent use.
type Runtime struct {
	path     string
	period   time.Duration
	defaults Limits
	logger   *slog.Logger

	cur  atomic.Pointer[Config]
	hash [32]byte

	mu        sync.Mutex
	listeners []func()

	reloads *prometheus.CounterVec
	success prometheus.Gauge
}

// Options configure a Runtime.
type Options struct {
	// Path is the file; empty: no file, every tenant has Defaults and no
	// login maps to tenants.
	Path string
	// Period is how often the file is read again; 0 means 10s.
	Period time.Duration
	// Defaults are the limits of every tenant without overrides, and of
	// the fields an override does not name: the flags'.
	Defaults   Limits
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// New reads the file once: an error when it does not load, so that a
// bad file stops the server at start, not at its first reload.
func New(opts Options) (*Runtime, error) {
	if err := opts.Defaults.validate(); err != nil {
		return nil, fmt.Errorf("default limits: %w", err)
	}
	if opts.Period <= 0 {
		opts.Period = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{path: opts.Path, period: opts.Period, defaults: opts.Defaults, logger: opts.Logger,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_runtime_config_reloads_total", Help: "Reads of the runtime configuration file (--runtime-config.file), by result (success, failure, unchanged).",
		}, []string{"result"}),
		success: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_runtime_config_last_reload_successful", Help: "1 when the last read of the runtime configuration file loaded, 0 when it failed (the configuration in force is the last that loaded).",
		}),
	}
	r.cur.Store(&Config{Overrides: map[string]Limits{}})
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{r.reloads, r.success} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register runtime configuration metrics: %w", err)
			}
		}
	}
	if r.path != "" {
		if _, err := r.Reload(); err != nil {
			return nil, err
		}
	} else {
		r.success.Set(1)
	}
	return r, nil
}

// Reload reads the file now; changed reports whether the configuration
// in force changed. On error the configuration in force stays.
func (r *Runtime) Reload() (changed bool, err error) {
	if r.path == "" {
		return false, nil
	}
	b, err := os.ReadFile(r.path)
	if err != nil {
		r.failed()
		return false, fmt.Errorf("runtime configuration: %w", err)
	}
	h := sha256.Sum256(b)
	r.mu.Lock()
	same := h == r.hash
	r.mu.Unlock()
	if same {
		r.reloads.WithLabelValues("unchanged").Inc()
		r.success.Set(1)
		return false, nil
	}
	c, err := Parse(b, r.defaults)
	if err != nil {
		r.failed()
		return false, fmt.Errorf("runtime configuration %s: %w", r.path, err)
	}
	r.mu.Lock()
	r.hash = h
	r.cur.Store(c)
	listeners := append([]func(){}, r.listeners...)
	r.mu.Unlock()
	r.reloads.WithLabelValues("success").Inc()
	r.success.Set(1)
	for _, fn := range listeners {
		fn()
	}
	return true, nil
}

func (r *Runtime) failed() {
	r.reloads.WithLabelValues("failure").Inc()
	r.success.Set(0)
}

// Run reloads the file every period until ctx ends, logging a file that
// does not load (once per change of the error).
func (r *Runtime) Run(ctx context.Context) {
	if r.path == "" {
		return
	}
	t := time.NewTicker(r.period)
	defer t.Stop()
	var last string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := r.Reload()
		switch {
		case err != nil && err.Error() != last:
			r.logger.Error("runtime configuration not reloaded; the last one that loaded stays in force", "file", r.path, "err", err)
			last = err.Error()
		case err == nil && changed:
			r.logger.Info("runtime configuration reloaded", "file", r.path, "tenants_with_overrides", len(r.cur.Load().Overrides))
			last = ""
		case err == nil:
			last = ""
		}
	}
}

// OnChange calls fn after every reload that changed the configuration.
func (r *Runtime) OnChange(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, fn)
}

// Limits returns tenant id's limits: its overrides, or the defaults.
func (r *Runtime) Limits(id string) Limits {
	if l, ok := r.cur.Load().Overrides[id]; ok {
		return l
	}
	return r.defaults
}

// Tenants returns the tenants login may name, and whether the file maps
// it at all.
func (r *Runtime) Tenants(login string) ([]string, bool) {
	ids, ok := r.cur.Load().Users[login]
	return ids, ok
}

// view is the YAML of /runtime_config: the configuration in force, every
// field of each tenant's overrides (mode "diff": only those that differ
// from the defaults), and the logins' tenants.
type view struct {
	Defaults  *Limits                   `yaml:"defaults,omitempty"`
	Overrides map[string]map[string]any `yaml:"overrides"`
	Users     map[string][]string       `yaml:"users,omitempty"`
}

// Show writes the runtime configuration in force as YAML, as Mimir's
// /runtime_config shows it: with diff, each tenant's overrides only where
// they differ from the defaults (the flags'); without, the defaults and
// every field of each tenant's limits.
func (r *Runtime) Show(w io.Writer, diff bool) error {
	c := r.cur.Load()
	v := view{Overrides: make(map[string]map[string]any, len(c.Overrides)), Users: c.Users}
	def, err := fields(r.defaults)
	if err != nil {
		return err
	}
	if !diff {
		d := r.defaults
		v.Defaults = &d
	}
	for id, l := range c.Overrides {
		f, err := fields(l)
		if err != nil {
			return fmt.Errorf("tenant %q: %w", id, err)
		}
		if diff {
			for k, val := range f {
				if reflect.DeepEqual(val, def[k]) {
					delete(f, k)
				}
			}
		}
		v.Overrides[id] = f
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("show runtime configuration: %w", err)
	}
	return enc.Close()
}

// fields returns l's YAML keys and values, as decoded from its YAML.
func fields(l Limits) (map[string]any, error) {
	b, err := yaml.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("limits as YAML: %w", err)
	}
	f := map[string]any{}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("limits from YAML: %w", err)
	}
	return f, nil
}

// Handler serves the configuration in force (Show) as Mimir's
// /runtime_config does: every limit, or with ?mode=diff only those that
// differ from the defaults.
func (r *Runtime) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mode := req.URL.Query().Get("mode")
		if mode != "" && mode != "diff" {
			http.Error(w, fmt.Sprintf("unknown mode %q: leave it out for every limit, or mode=diff for those that differ from the defaults", mode), http.StatusBadRequest)
			return
		}
		var buf bytes.Buffer
		if err := r.Show(&buf, mode == "diff"); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	})
}
