// Package promapi serves Prometheus's HTTP query API (/api/v1/query,
// query_range, series, labels, label values, query_exemplars, metadata,
// format_query, parse_query, status/buildinfo, status/flags, rules,
// alerts, alertmanagers) over promhbase's query package, so that Grafana
// and other Prometheus API clients query promhbase directly.
//
// The answers are Prometheus's own: the endpoints are those of the pinned
// Prometheus module's web/api/v1 package, evaluating with its PromQL engine
// (same JSON, result types, warnings, error types and status codes: 400 bad
// data, 422 execution errors, 503 timeouts and cancellations). Only the
// endpoints above are exposed, and the TSDB admin API's delete_series and
// clean_tombstones (admin.go); the ones that need a scraping Prometheus
// (targets, snapshots) answer 404. Rules and alerts are the ruler's,
// empty lists with the ruler off; with its configuration API on,
// buildinfo and flags answer as Grafana Mimir's (rules.go). Metadata is
// promhbase's own handler, from the UID metadata the write path keeps
// (Prometheus answers it from its scrape targets), and so is status/tsdb,
// from the series index (tsdbstatus.go).
//
// The evaluator is package engine's, over the storage.Queryable that
// package server hands it (query's); the metadata handler answers 503 when
// the store fails. max_source_resolution (downsample.go) rewrites the calls
// and selectors that rollups answer into downsampled selections: exact
// answers by default, approximations when asked, the resolution used in
// X-Promhbase-Resolution, a warning past the raw samples kept, and native
// histograms answered again from raw samples.
//
// Query guardrails (guards.go), Grafana Mimir's max_total_query_length,
// max_query_lookback, max_fetched_series_per_query and blocked_queries,
// answer instant, range, series and labels requests as Mimir does; they
// are set in Options and replaced at runtime (API.SetGuards).
package promapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"

	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/query/engine"
	"github.com/promhbase/promhbase/query/resultcache"
	"github.com/promhbase/promhbase/store"
)

// Queryable is what the API evaluates over: samples, chunks (unused by the
// exposed endpoints) and exemplars.
type Queryable interface {
	storage.SampleAndChunkQueryable
	storage.ExemplarQueryable
}

// scanner is the part of store.Store the metadata endpoint reads with.
type scanner interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// Options configure the API. Zero values take Prometheus's defaults.
type Options struct {
	Queryable Queryable
	// Store, UIDTable and MetricWidth locate the UID metadata that
	// /api/v1/metadata lists.
	Store       scanner
	UIDTable    string
	MetricWidth int

	Timeout        time.Duration // --query.timeout: 2m
	MaxSamples     int           // --query.max-samples: 50,000,000
	LookbackDelta  time.Duration // --query.lookback-delta: 5m
	MaxConcurrency int           // --query.max-concurrency: 20
	// Slots, when set, are the query slots instead of MaxConcurrency's
	// own: APIs given the same channel (one per tenant) share its
	// capacity.
	Slots chan struct{}
	// Features are Prometheus's --enable-feature names of PromQL features
	// to turn on (see Features); Prometheus's defaults otherwise.
	Features []string
	// CORSOrigin is the fully anchored regex of the origins allowed
	// cross-origin requests (--web.cors.origin); nil means any, as
	// Prometheus's default ".*".
	CORSOrigin *regexp.Regexp
	// Flags is what /api/v1/status/flags answers.
	Flags map[string]string
	// Build is what /api/v1/status/buildinfo reports: the binary's
	// version, revision, branch, build user and date, and Go version.
	Build  v1.PrometheusVersion
	Logger *slog.Logger
	// Registerer receives the engine's metrics (prometheus_engine_*),
	// the requests' (promhbase_http_requests_total and
	// _duration_seconds, shared with the other handlers registered on it)
	// and promhbase_query_slow_total.
	Registerer prometheus.Registerer
	// SlowQueryThreshold (--query.slow-threshold): an instant or range
	// query that takes longer is counted in promhbase_query_slow_total
	// and logged with its query; 0: none.
	SlowQueryThreshold time.Duration
	// EnableAdmin turns on the TSDB admin endpoints delete_series and
	// clean_tombstones (--web.enable-admin-api), acting on Admin; off,
	// they answer as Prometheus's do when its admin API is off.
	EnableAdmin bool
	Admin       Admin
	// Retention is what /api/v1/status/runtimeinfo reports as the
	// storage retention.
	Retention string
	// Downsampling, when set, lets queries read rollups
	// (max_source_resolution); nil: every query reads raw samples.
	Downsampling *Downsampling
	// Engine is the PromQL evaluator of /api/v1/query and query_range:
	// EnginePromhbase (the default: package engine, with Prometheus's
	// engine for what it does not evaluate) or EnginePrometheus
	// (Prometheus's engine for every query).
	Engine string
	// ResultsCache, when set, answers range queries of Tenant from the
	// steps it keeps (package resultcache); nocache=1 and stats on a
	// request bypass it.
	ResultsCache *resultcache.Cache
	Tenant       string
	// EngineWorkers are the goroutines promhbase's evaluator runs one
	// query on: GOMAXPROCS when 0.
	EngineWorkers int
	// Cardinality answers /api/v1/status/tsdb (tsdbstatus.go); nil: it
	// answers 404 (no series index, or a read of several tenants).
	Cardinality Cardinality
	// Rules gives the rule groups and alerting rules of a request's
	// tenant that /api/v1/rules and /api/v1/alerts list (the ruler's);
	// nil, or a nil answer (a ruler not started yet): both answer empty
	// lists.
	Rules func(context.Context) v1.RulesRetriever
	// Alertmanagers gives the Alertmanagers the ruler sends alerts to,
	// listed by /api/v1/alertmanagers; nil, or a nil answer: none.
	Alertmanagers func(context.Context) v1.AlertmanagerRetriever
	// RulerConfigAPI says that the ruler's configuration API
	// (/config/v1/rules) is served: /api/v1/status/buildinfo then
	// answers as Grafana Mimir's, its ruler_config_api "true", and
	// /api/v1/status/flags 404, so that Grafana edits rules here
	// (rules.go).
	RulerConfigAPI bool
	// Guards are the query guardrails in force from the start
	// (guards.go); API.SetGuards replaces them.
	Guards Guards
	// Now is the guards' clock (max_query_lookback); nil: time.Now.
	Now func() time.Time
}

// The evaluators Options.Engine names (--query.engine).
const (
	EnginePromhbase  = engine.PathPromhbase
	EnginePrometheus = engine.PathPrometheus
)

// Features are the --enable-feature names of Prometheus's PromQL features
// that promhbase takes.
var Features = []string{"promql-experimental-functions", "promql-extended-range-selectors", "promql-binop-fill-modifiers", "promql-delayed-name-removal"}

// exposed are the Prometheus API endpoints promhbase answers, below
// /api/v1 (label values are matched by prefix and suffix).
var exposed = map[string]bool{
	"/query": true, "/query_range": true, "/query_exemplars": true,
	"/format_query": true, "/parse_query": true,
	"/labels": true, "/series": true,
	"/status/buildinfo": true, "/status/flags": true, "/status/runtimeinfo": true,
	"/rules": true, "/alerts": true, "/alertmanagers": true,
}

// API is the HTTP handler of /api/v1/ (remote write and read excepted:
// those are adapter's).
type API struct {
	router  *route.Router
	opts    Options
	tracker *queryGate
	parser  parser.Parser
	gzip    gzipPool
	engine  promql.QueryEngine // /api/v1/query's (Engine)
	// handlers are serve, counted and timed, by handler label
	// (handlerNames).
	handlers map[string]http.Handler
	slow     *slowQueries
	refused  *prometheus.CounterVec // promhbase_query_refused_total
	guards   atomic.Pointer[Guards]
}

// New returns the API over opts.Queryable.
func New(opts Options) (*API, error) {
	if opts.Queryable == nil {
		return nil, fmt.Errorf("promapi: no queryable")
	}
	opts = withDefaults(opts)
	popts, delayedNameRemoval, err := parserOptions(opts.Features)
	if err != nil {
		return nil, err
	}
	promqlParser := parser.NewParser(popts)
	gate := newQueryGate(opts.MaxConcurrency)
	if opts.Slots != nil {
		gate = &queryGate{slots: opts.Slots}
	}
	if opts.Engine, err = engineOf(opts.Engine); err != nil {
		return nil, err
	}
	qengine := newQueryEngine(opts, promqlParser, gate, delayedNameRemoval)
	router := newRouter(opts, qengine, promqlParser)
	a := &API{router: router, opts: opts, tracker: gate, parser: promqlParser, engine: qengine, gzip: gzipPool{procs: opts.EngineWorkers}}
	a.SetGuards(opts.Guards)
	if a.slow, err = newSlowQueries(opts.SlowQueryThreshold, opts.Registerer); err != nil {
		return nil, err
	}
	if a.refused, err = newRefused(opts.Registerer); err != nil {
		return nil, err
	}
	if a.handlers, err = instrumented(opts.Registerer, http.HandlerFunc(a.serve)); err != nil {
		return nil, err
	}
	return a, nil
}

// withDefaults returns opts with the defaults of the fields left zero.
func withDefaults(opts Options) Options {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = 50_000_000
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = 5 * time.Minute
	}
	if opts.MaxConcurrency <= 0 {
		opts.MaxConcurrency = 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CORSOrigin == nil {
		opts.CORSOrigin = regexp.MustCompile("^(?:.*)$")
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	if opts.Retention == "" {
		opts.Retention = "unlimited"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts
}

// parserOptions returns the PromQL parser's options with features (the
// --enable-feature names) on, and whether delayed name removal is on;
// an error for a feature not in Features.
func parserOptions(features []string) (popts parser.Options, delayedNameRemoval bool, err error) {
	// Prometheus 3.15's defaults: duration expressions on, the rest off.
	popts = parser.Options{ExperimentalDurationExpr: true}
	for _, f := range features {
		switch f {
		case "promql-experimental-functions":
			popts.EnableExperimentalFunctions = true
		case "promql-extended-range-selectors":
			popts.EnableExtendedRangeSelectors = true
		case "promql-binop-fill-modifiers":
			popts.EnableBinopFillModifiers = true
		case "promql-delayed-name-removal":
			delayedNameRemoval = true
		default:
			return popts, false, fmt.Errorf("unknown feature %q; promhbase knows %s", f, strings.Join(Features, ", "))
		}
	}
	return popts, delayedNameRemoval, nil
}

// engineOf returns the evaluator name e (Options.Engine), EnginePromhbase
// when empty, or an error for an unknown one.
func engineOf(e string) (string, error) {
	switch e {
	case "":
		return EnginePromhbase, nil
	case EnginePromhbase, EnginePrometheus:
		return e, nil
	default:
		return e, fmt.Errorf("unknown query engine %q; promhbase knows %s and %s", e, EnginePromhbase, EnginePrometheus)
	}
}

// newQueryEngine returns the PromQL engine of /api/v1/query and
// query_range: promhbase's evaluator over Prometheus's engine (which
// answers every query when opts.Engine is EnginePrometheus or delayed
// name removal is on), behind the results cache when it is on.
func newQueryEngine(opts Options, promqlParser parser.Parser, gate *queryGate, delayedNameRemoval bool) promql.QueryEngine {
	promEngine := promql.NewEngine(promql.EngineOpts{
		Logger:             opts.Logger.With("component", "query engine"),
		Reg:                opts.Registerer,
		MaxSamples:         opts.MaxSamples,
		Timeout:            opts.Timeout,
		ActiveQueryTracker: gate,
		LookbackDelta:      opts.LookbackDelta,
		// Prometheus's default evaluation interval, used as the step of
		// subqueries that name none.
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnableDelayedNameRemoval: delayedNameRemoval,
		Parser:                   promqlParser,
	})
	qe := engine.New(engine.Options{
		Fallback: promEngine, Parser: promqlParser, LookbackDelta: opts.LookbackDelta, Timeout: opts.Timeout,
		Tracker: gate, MaxSamples: opts.MaxSamples, Workers: opts.EngineWorkers,
		// Delayed name removal changes where names go: Prometheus's engine
		// answers every query then.
		Disabled: opts.Engine == EnginePrometheus || delayedNameRemoval, Registerer: opts.Registerer,
	})
	if opts.ResultsCache.Enabled() {
		return unavailableEngine{opts.ResultsCache.Engine(opts.Tenant, qe, promqlParser, opts.LookbackDelta)}
	}
	return unavailableEngine{qe}
}

// newRouter returns the router of Prometheus's API handlers below
// /api/v1, over qengine and opts.Queryable, with the runtime information,
// rules and alertmanagers promhbase has.
func newRouter(opts Options, qengine promql.QueryEngine, promqlParser parser.Parser) *route.Router {
	start := time.Now()
	runtimeInfo := func() (v1.RuntimeInfo, error) {
		return v1.RuntimeInfo{
			StartTime: start, ServerTime: time.Now(), GoroutineCount: runtime.NumGoroutine(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), StorageRetention: opts.Retention,
		}, nil
	}
	rulesOf := func(ctx context.Context) v1.RulesRetriever {
		if opts.Rules != nil {
			if r := opts.Rules(ctx); r != nil {
				return r
			}
		}
		return noRules{}
	}
	alertmanagersOf := func(ctx context.Context) v1.AlertmanagerRetriever {
		if opts.Alertmanagers != nil {
			if a := opts.Alertmanagers(ctx); a != nil {
				return a
			}
		}
		return noAlertmanagers{}
	}
	api := v1.NewAPI(qengine, opts.Queryable, nil, nil, opts.Queryable,
		nil, nil, alertmanagersOf,
		func() config.Config { return config.DefaultConfig },
		opts.Flags,
		v1.GlobalURLOptions{},
		func(f http.HandlerFunc) http.HandlerFunc { return f },
		tsdbAdmin{opts.Admin}, "", opts.EnableAdmin, false, 0,
		opts.Logger.With("component", "api"),
		rulesOf, 0, 0, 0, false, opts.CORSOrigin,
		runtimeInfo,
		&opts.Build,
		nil, nil,
		nil, prometheus.NewRegistry(), // the internal remote-read handler's metrics: not exposed
		nil, false, nil, false, false, false, false,
		opts.LookbackDelta, false, false, nil, nil, v1.OpenAPIOptions{}, promqlParser,
	)
	// Prometheus's JSON codec, the answers of range queries encoded on
	// every core.
	api.ClearCodecs()
	api.InstallCodec(parallelJSON{procs: opts.EngineWorkers})
	router := route.New().WithPrefix("/api/v1")
	api.Register(router)
	return router
}

// ServeHTTP answers the exposed endpoints below /api/v1, each request
// counted and timed by its handler label (handlerOf).
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.handlers[handlerOf(r.URL.Path)].ServeHTTP(w, r)
}

// serve answers the exposed endpoints below /api/v1.
func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	p, ok := strings.CutPrefix(r.URL.Path, "/api/v1")
	switch {
	case !ok:
		http.NotFound(w, r)
	case p == "/metadata":
		a.serveMetadata(w, r)
	case p == "/query" || p == "/query_range":
		a.serveTimed(w, r, handlerName(p), func(w http.ResponseWriter, r *http.Request) { a.serveQuery(w, r, p == "/query") })
	case p == "/status/tsdb":
		a.serveTSDBStatus(w, r)
	case p == "/status/buildinfo" && a.opts.RulerConfigAPI && r.Method == http.MethodGet:
		a.serveMimirBuildInfo(w, r)
	case p == "/status/flags" && a.opts.RulerConfigAPI && r.Method == http.MethodGet:
		serveNoFlags(w, r)
	case p == "/series" || p == "/labels" || strings.HasPrefix(p, "/label/") && strings.HasSuffix(p, "/values"):
		if r, ok := a.guardSeries(w, r); ok {
			a.router.ServeHTTP(w, r)
			a.countSeriesLimit(r)
		}
	case exposed[p]:
		a.router.ServeHTTP(w, r)
	case p == "/admin/tsdb/snapshot" && a.opts.EnableAdmin && a.opts.Admin != nil && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		a.serveSnapshot(w, r)
	case adminPaths[p]:
		if a.opts.EnableAdmin && p == "/admin/tsdb/delete_series" && (r.Method == http.MethodPost || r.Method == http.MethodPut) &&
			!validDeleteSelectors(w, r, a.parser) {
			return
		}
		a.router.ServeHTTP(w, r)
	case r.Method == http.MethodOptions:
		a.router.ServeHTTP(w, r) // CORS preflight, as Prometheus answers it
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("promhbase does not serve %s (it has no scrape targets or local TSDB)", r.URL.Path))
	}
}

// serveQuery answers an instant or range query, from rollups where it
// asks for them (see downsample). A downsampled answer is held until it
// is complete: when a downsampled selection met native histograms, which
// rollups do not hold, the query is answered again from raw samples.
func (a *API) serveQuery(w http.ResponseWriter, r *http.Request, instant bool) {
	_ = r.ParseForm()
	r, ok := a.guardQuery(w, r, instant)
	if !ok {
		return
	}
	defer a.countSeriesLimit(r)
	r, mark := withUnavailableMark(r)
	w = unavailableWriter{ResponseWriter: w, mark: mark}
	w, r, done := a.compressQuery(w, r)
	defer done()
	original := r.Form.Get("query")
	if r.Form.Get("nocache") == "1" || r.Form.Get("stats") != "" {
		// As VictoriaMetrics's nocache=1; statistics are the evaluation's.
		r = r.WithContext(resultcache.Bypass(r.Context()))
	}
	res, warnings, err := a.downsample(r, instant)
	switch {
	case errors.Is(err, errLeave):
		res = ""
	case err != nil:
		writeError(w, http.StatusBadRequest, "bad_data", err.Error())
		return
	}
	if res == "" || res == "raw" {
		if res != "" {
			w.Header().Set(ResolutionHeader, res)
		}
		a.router.ServeHTTP(w, r)
		return
	}
	ctx, rep := query.WithDownsampleReport(r.Context())
	rec := &heldResponse{header: http.Header{}}
	rec.header.Set(ResolutionHeader, res)
	a.router.ServeHTTP(rec, r.WithContext(ctx))
	if rep.Raw.Load() {
		r.Form.Set("query", original)
		w.Header().Set(ResolutionHeader, "raw")
		a.router.ServeHTTP(w, r)
		return
	}
	body := rec.body.Bytes()
	if len(warnings) > 0 {
		body = addWarnings(body, warnings)
		rec.header.Del("Content-Length")
	}
	maps.Copy(w.Header(), rec.header)
	w.WriteHeader(cmp.Or(rec.code, http.StatusOK))
	_, _ = w.Write(body)
}

// addWarnings adds warnings to the "warnings" of a query API answer
// (body unchanged when it is not one).
func addWarnings(body []byte, warnings []string) []byte {
	var resp map[string]json.RawMessage
	if json.Unmarshal(body, &resp) != nil {
		return body
	}
	var old []string
	if w, ok := resp["warnings"]; ok && json.Unmarshal(w, &old) != nil {
		return body
	}
	ws, err := json.Marshal(append(old, warnings...))
	if err != nil {
		return body
	}
	resp["warnings"] = ws
	out, err := json.Marshal(resp)
	if err != nil {
		return body
	}
	return out
}

// heldResponse holds a response until it is complete.
type heldResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(code int) {
	if h.code == 0 {
		h.code = code
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.code == 0 {
		h.code = http.StatusOK
	}
	return h.body.Write(b)
}

// serveMetadata answers /api/v1/metadata as Prometheus does (metric,
// limit, limit_per_metric), from the metadata the write path stored: one
// entry per metric family.
func (a *API) serveMetadata(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit")
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_data", "limit must be a number")
		return
	}
	if _, err := intParam(r, "limit_per_metric"); err != nil {
		writeError(w, http.StatusBadRequest, "bad_data", "limit_per_metric must be a number")
		return
	}
	metric := r.FormValue("metric")
	type entry struct {
		Type string `json:"type"`
		Help string `json:"help"`
		Unit string `json:"unit"`
	}
	res := map[string][]entry{}
	if a.opts.Store != nil {
		var names []string
		all := map[string]entry{}
		err := metadata.ListMetadata(r.Context(), a.opts.Store, a.opts.UIDTable, a.opts.MetricWidth, func(name string, md metadata.Metadata) error {
			if metric != "" && name != metric {
				return nil
			}
			typ := md.Type
			if typ == "" {
				typ = "unknown"
			}
			if _, dup := all[name]; !dup {
				names = append(names, name)
			}
			all[name] = entry{Type: typ, Help: md.Help, Unit: md.Unit}
			return nil
		})
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
			return
		}
		sort.Strings(names)
		for _, n := range names {
			if limit >= 0 && len(res) >= limit {
				break
			}
			res[n] = []entry{all[n]}
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Status string             `json:"status"`
		Data   map[string][]entry `json:"data"`
	}{"success", res})
}

// intParam is an integer form value; -1 when absent.
func intParam(r *http.Request, name string) (int, error) {
	s := r.FormValue(name)
	if s == "" {
		return -1, nil
	}
	return strconv.Atoi(s)
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}{"error", typ, msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// queryGate is the engine's QueryTracker: it lets at most max queries
// evaluate at once; the others wait for a slot until their context ends
// (the query timeout), as Prometheus's --query.max-concurrency does.
type queryGate struct{ slots chan struct{} }

func newQueryGate(max int) *queryGate { return &queryGate{slots: make(chan struct{}, max)} }

func (g *queryGate) GetMaxConcurrent() int { return cap(g.slots) }

func (g *queryGate) Insert(ctx context.Context, _ string) (int, error) {
	select {
	case g.slots <- struct{}{}:
		return 0, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (g *queryGate) Delete(int) { <-g.slots }

func (g *queryGate) Close() error { return nil }
