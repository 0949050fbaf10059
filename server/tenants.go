package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/adapter/opentsdb"
	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/query/federation"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web"
	"github.com/promhbase/promhbase/web/promapi"
)

// TenantsConfig configures a multi-tenant server (NewTenants).
type TenantsConfig struct {
	// Federation answers reads that name several tenants (a|b) over
	// all of them (package federation); off, such reads get 400.
	Federation bool
	// MaxFederated bounds the tenants one federated read may name (0:
	// no bound), as Mimir's -tenant-federation.max-tenants.
	MaxFederated int
	// AutoCreate provisions a tenant at its first write; off, a write
	// of a tenant not created gets 400 naming it.
	AutoCreate bool
	// Provision makes the tables of a tenant's namespace (HBase: the
	// namespace and its tables; the embedded store: the namespace);
	// AutoCreate needs it.
	Provision func(ctx context.Context, ns string) error
	// NewMapper returns a tenant's series mapper over its view of the
	// store, its metrics registered on reg.
	NewMapper func(st store.Store, reg prometheus.Registerer) (*series.Mapper, error)
	// Runtime holds the per-tenant limits and the logins' tenants.
	Runtime *overrides.Runtime
	// BasicAuth says that the logins of requests were checked (the web
	// configuration's basic_auth_users): a login's tenants (Runtime, or
	// the login itself when the file does not map it) are then the only
	// ones its requests may name.
	BasicAuth bool
	// Gatherer serves /metrics.
	Gatherer prometheus.Gatherer
}

// Tenants serves every tenant from one process: each has its own Server
// over its namespace of the store (store.Namespaced, tenant.Namespace),
// opened at its first request and kept. Health, readiness, /metrics,
// pprof and the landing page need no tenant; every other request names
// one (X-Scope-OrgID, or the login), or several for a federated read.
type Tenants struct {
	st     store.Store
	base   Config
	tc     TenantsConfig
	logger *slog.Logger
	root   http.Handler
	// handler is serve with Retry-After on every 503 (web.RetryUnavailable).
	handler http.Handler

	// slots are shared by every tenant's remote endpoints and query
	// API, so that their bounds on memory hold for the process.
	slots, readSlots, querySlots chan struct{}

	ctx    context.Context // the background work's
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	servers map[string]*Server
	opening map[string]*sync.Mutex
	empty   *Server // reads of tenants not created
	fed     map[string]http.Handler
}

// maxFederations bounds the federated query APIs kept (one per set of
// tenants); past it the oldest are built again when asked.
const maxFederations = 64

// NewTenants returns the multi-tenant server over st: base is every
// tenant's Config (Tenant, Mapper, Limits and Registerer are set per
// tenant; its Registerer takes every tenant's metrics with a label
// tenant). Start runs the background work.
func NewTenants(st store.Store, base Config, tc TenantsConfig) (*Tenants, error) {
	if tc.NewMapper == nil || tc.Runtime == nil {
		return nil, errors.New("tenants: NewMapper and Runtime are required")
	}
	if tc.AutoCreate && tc.Provision == nil {
		return nil, errors.New("tenants: creating tenants on first write needs a way to provision them")
	}
	logger := base.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if base.Registerer == nil {
		base.Registerer = prometheus.NewRegistry()
	}
	t := &Tenants{st: st, base: base, tc: tc, logger: logger,
		servers: map[string]*Server{}, opening: map[string]*sync.Mutex{}, fed: map[string]http.Handler{}}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	// The defaults are adapter's and promapi's.
	t.slots = make(chan struct{}, orDefault(base.Adapter.MaxConcurrentRequests, 2*runtime.GOMAXPROCS(0)+8))
	t.readSlots = make(chan struct{}, orDefault(base.Adapter.MaxConcurrentReads, 10))
	t.querySlots = make(chan struct{}, orDefault(base.API.MaxConcurrency, 20))
	t.root = t.rootHandler()
	t.handler = web.RetryUnavailable(http.HandlerFunc(t.serve))
	tc.Runtime.OnChange(t.applyLimits)
	return t, nil
}

// orDefault returns n, or d when n is not positive.
func orDefault(n, d int) int {
	if n > 0 {
		return n
	}
	return d
}

// rootHandler serves what needs no tenant: health, readiness (the store
// answers), /metrics, pprof and the landing page.
func (t *Tenants) rootHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("promhbase is healthy.\n"))
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK")) })
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, r *http.Request) {
		// At once, whatever the store does: a store that has not answered
		// within adapter.ReadyTimeout (a backend that stopped) is reported
		// so.
		ctx, cancel := context.WithTimeout(r.Context(), adapter.ReadyTimeout)
		defer cancel()
		// Any answer of the store will do: a missing table is one.
		if _, err := t.st.Get(ctx, t.base.Tables.UID, []byte{0}, "id"); err != nil && !errors.Is(err, store.ErrTableNotFound) {
			http.Error(w, "promhbase is not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("promhbase is ready.\n"))
	})
	if g := t.tc.Gatherer; g != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	info := t.base.Web
	info.Tenants = true
	rc := t.base.Ruler.ConfigAPI && t.base.Tables.Rules != ""
	return web.New(web.Options{Remote: mux, Pprof: t.base.Pprof, Info: info, Flags: t.base.API.Flags, RuntimeConfig: t.tc.Runtime.Handler(),
		API: promapi.BuildInfo(t.base.API.Build, rc)})
}

// RuntimeConfigPath shows the runtime configuration in force, as
// Mimir's endpoint of this path: an operator's page, which names no
// tenant.
const RuntimeConfigPath = "/runtime_config"

// tenantFree reports whether path is served without a tenant: buildinfo
// too, as Grafana Mimir serves it (Grafana asks it to tell what the data
// source is, with or without the data source's X-Scope-OrgID), and the
// web UI's pages and files (web.UIPath; their API requests name the
// tenant picked).
func tenantFree(path string) bool {
	switch path {
	case "/", "/-/healthy", "/-/ready", "/metrics", "/health", RuntimeConfigPath,
		"/api/v1/status/buildinfo", "/prometheus/api/v1/status/buildinfo":
		return true
	}
	return strings.HasPrefix(path, "/debug/pprof/") || web.UIPath(path)
}

// writePath reports whether a request to path writes (or deletes): it
// names exactly one tenant. A change of the ruler's configuration is one.
func writePath(r *http.Request) bool {
	path := r.URL.Path
	if rulerConfigPath(path) {
		return r.Method != http.MethodGet && r.Method != http.MethodHead
	}
	return path == "/api/v1/write" || path == adapter.OpenTSDBPutPath || path == "/api/v1/import" || path == "/api/v1/import/prometheus" || path == "/api/v1/import/chunks" ||
		slices.Contains(adapter.OTLPPaths, path) || strings.HasPrefix(path, "/api/v1/admin/")
}

// rulerConfigPath reports whether path is the ruler's configuration
// API's.
func rulerConfigPath(path string) bool {
	for _, p := range []string{"/config/v1/rules", "/prometheus/config/v1/rules"} {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// Errors of naming tenants; identify's callers map them to statuses.
var (
	errForbidden   = errors.New("forbidden")
	errMultiple    = errors.New("multiple org IDs present")
	errNotCreated  = errors.New("tenant not created")
	errUnavailable = errors.New("tenant unavailable")
)

// statusOf is the status code of an error of naming a tenant, as Mimir
// answers: 401 without one, 400 for an invalid one or several where one
// is needed, 403 for a tenant the login may not use.
func statusOf(err error) int {
	switch {
	case errors.Is(err, tenant.ErrNoID):
		return http.StatusUnauthorized
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadRequest
	}
}

// identify returns the tenants a request names: those of X-Scope-OrgID,
// which its login (when logins are checked) must allow, or the login's
// one tenant.
func (t *Tenants) identify(r *http.Request) ([]string, error) {
	hdrs := r.Header.Values(tenant.Header)
	if len(hdrs) > 1 {
		return nil, fmt.Errorf("%w: %d %s headers; send one", tenant.ErrInvalidID, len(hdrs), tenant.Header)
	}
	hdr := ""
	if len(hdrs) == 1 {
		hdr = hdrs[0]
	}
	var allowed []string
	login, _, hasLogin := r.BasicAuth()
	if t.tc.BasicAuth && hasLogin {
		var mapped bool
		if allowed, mapped = t.tc.Runtime.Tenants(login); !mapped && tenant.ValidateID(login) == nil {
			allowed = []string{login}
		}
		if hdr == "" {
			if len(allowed) == 1 {
				return allowed, nil
			}
			return nil, fmt.Errorf("%w: login %q may use %d tenants; name one in %s", tenant.ErrNoID, login, len(allowed), tenant.Header)
		}
	}
	ids, err := tenant.ParseOrgID(hdr)
	if err != nil {
		return nil, err
	}
	if t.tc.BasicAuth && hasLogin {
		for _, id := range ids {
			if !slices.Contains(allowed, id) {
				return nil, fmt.Errorf("%w: login %q may not use tenant %q", errForbidden, login, id)
			}
		}
	}
	return ids, nil
}

// ServeHTTP serves a request: tenant-free paths at once; others by the
// server of the tenant they name, or a federated query API. Every 503
// carries Retry-After, its own (a tenant that cannot be opened) as its
// servers'.
func (t *Tenants) ServeHTTP(w http.ResponseWriter, r *http.Request) { t.handler.ServeHTTP(w, r) }

func (t *Tenants) serve(w http.ResponseWriter, r *http.Request) {
	if tenantFree(r.URL.Path) {
		t.root.ServeHTTP(w, r)
		return
	}
	ids, err := t.identify(r)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	write := writePath(r)
	if len(ids) > 1 {
		if write || !t.tc.Federation || !strings.HasPrefix(r.URL.Path, "/api/v1/") || r.URL.Path == "/api/v1/read" {
			http.Error(w, fmt.Sprintf("%v: %s names %d tenants; %s", errMultiple, tenant.Header, len(ids), t.multipleHint(write)), http.StatusBadRequest)
			return
		}
		if m := t.tc.MaxFederated; m > 0 && len(ids) > m {
			http.Error(w, fmt.Sprintf("%v: %s names %d tenants, more than --tenant-federation.max-tenants=%d", errMultiple, tenant.Header, len(ids), m), http.StatusBadRequest)
			return
		}
		h, err := t.federated(r.Context(), ids)
		if err != nil {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
		h.ServeHTTP(w, r)
		return
	}
	// Only a remote write (or a rule group posted) creates a tenant; a
	// delete of one not created is refused as its write would be.
	create := write && t.tc.AutoCreate && !strings.HasPrefix(r.URL.Path, "/api/v1/admin/") && r.Method != http.MethodDelete
	s, err := t.server(r.Context(), ids[0], create)
	switch {
	case errors.Is(err, errNotCreated) && !write:
		s, err = t.emptyServer()
	case errors.Is(err, errNotCreated):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	s.Handler().ServeHTTP(w, r)
}

// multipleHint says why a request may not name several tenants.
func (t *Tenants) multipleHint(write bool) string {
	switch {
	case write:
		return "a write or delete names exactly one"
	case !t.tc.Federation:
		return "reading several at once needs --tenant-federation.enabled"
	default:
		return "only the query API reads several at once"
	}
}

// Server returns the server of tenant id, opening it at its first use:
// a tenant not created is errNotCreated unless create, which provisions
// it. ctx bounds the opening.
func (t *Tenants) server(ctx context.Context, id string, create bool) (*Server, error) {
	t.mu.RLock()
	s := t.servers[id]
	t.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	// One opening at a time per tenant, under its mutex in opening,
	// which the opener removes (so that asking for tenants that do not
	// exist leaves nothing behind); a waiter that finds its mutex
	// removed takes the current one.
	var m *sync.Mutex
	for {
		t.mu.Lock()
		if m = t.opening[id]; m == nil {
			m = &sync.Mutex{}
			t.opening[id] = m
		}
		t.mu.Unlock()
		m.Lock()
		t.mu.RLock()
		s, cur := t.servers[id], t.opening[id]
		t.mu.RUnlock()
		if s != nil {
			m.Unlock()
			return s, nil
		}
		if cur == m {
			break
		}
		m.Unlock()
	}
	defer func() {
		t.mu.Lock()
		if t.opening[id] == m {
			delete(t.opening, id)
		}
		t.mu.Unlock()
		m.Unlock()
	}()
	ns := tenant.Namespace(id)
	view := store.Namespaced(t.st, ns)
	octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	exists, err := t.exists(octx, view)
	if err != nil {
		return nil, err
	}
	if !exists {
		if !create {
			return nil, fmt.Errorf("%w: tenant %q has no tables (namespace %s): create them with `promhbase create-tables --tenant %s`, or let writes create them with --tenant.create-on-first-write", errNotCreated, id, ns, id)
		}
		if err := t.tc.Provision(octx, ns); err != nil {
			return nil, fmt.Errorf("%w: create tenant %q (namespace %s): %w", errUnavailable, id, ns, err)
		}
		t.logger.Info("tenant created", "tenant", id, "namespace", ns)
	}
	s, err = t.open(octx, id, view)
	if err != nil {
		return nil, fmt.Errorf("%w: open tenant %q (namespace %s): %w", errUnavailable, id, ns, err)
	}
	t.mu.Lock()
	t.servers[id] = s
	t.mu.Unlock()
	t.wg.Go(func() { s.Run(t.ctx) })
	return s, nil
}

// exists reports whether a tenant's tables exist: its UID table answers.
func (t *Tenants) exists(ctx context.Context, view store.Store) (bool, error) {
	_, err := view.Get(ctx, t.base.Tables.UID, []byte{0}, "id")
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return true, nil
}

// open wires the server of tenant id over its view of the store.
func (t *Tenants) open(ctx context.Context, id string, view store.Store) (*Server, error) {
	cfg := t.base
	cfg.Tenant = id
	// An opening that fails takes its metrics back, so that the next
	// one (the store answers again) can register them.
	reg := &undoRegisterer{Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"tenant": id}, t.base.Registerer)}
	cfg.Registerer = reg
	cfg.SharedRegisterer = t.base.Registerer
	cfg.Logger = t.logger.With("tenant", id)
	s, err := t.openWith(ctx, cfg, view)
	if err != nil {
		reg.undo()
	}
	return s, err
}

// openWith opens a tenant's server with cfg, its mapper made here.
func (t *Tenants) openWith(ctx context.Context, cfg Config, view store.Store) (*Server, error) {
	id := cfg.Tenant
	m, err := t.tc.NewMapper(view, cfg.Registerer)
	if err != nil {
		return nil, err
	}
	cfg.Mapper, cfg.ReadMapper = m, nil
	lim := t.tc.Runtime.Limits(id)
	cfg.Limits, cfg.Query.MaxSamples = lim.Write(), lim.MaxSamplesPerQuery
	cfg.Ruler.Limits = func() ruler.Limits {
		l := t.tc.Runtime.Limits(id)
		return ruler.Limits{MaxRuleGroupsPerTenant: l.RulerMaxRuleGroupsPerTenant, MaxRulesPerRuleGroup: l.RulerMaxRulesPerRuleGroup}
	}
	cfg.Adapter.Slots, cfg.Adapter.ReadSlots, cfg.API.Slots = t.slots, t.readSlots, t.querySlots
	base := cfg.Adapter.OTLP
	cfg.Adapter.OTLP = func() otlp.Config {
		b := otlp.DefaultConfig()
		if base != nil {
			b = base()
		}
		return t.tc.Runtime.Limits(id).OTel.Config(b)
	}
	cfg.Web.Tenant = id
	s, err := New(ctx, view, cfg)
	if err != nil {
		return nil, err
	}
	if err := applyOverrides(s, lim); err != nil {
		return nil, fmt.Errorf("tenant %q: %w", id, err)
	}
	return s, nil
}

// undoRegisterer remembers what it registered, to unregister it all.
type undoRegisterer struct {
	prometheus.Registerer
	mu   sync.Mutex
	done []prometheus.Collector
}

func (r *undoRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.done = append(r.done, c)
	r.mu.Unlock()
	return nil
}

func (r *undoRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// undo unregisters every collector registered through r.
func (r *undoRegisterer) undo() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.done {
		r.Registerer.Unregister(c)
	}
	r.done = nil
}

// emptyServer returns the server that answers the reads of a tenant
// not created: it has no data (an empty store), so that such a tenant
// reads as one created that has nothing yet.
func (t *Tenants) emptyServer() (*Server, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.empty != nil {
		return t.empty, nil
	}
	cfg := t.base
	cfg.Registerer, cfg.Logger = nil, t.logger
	cfg.Index, cfg.Compaction, cfg.Rollup, cfg.HA = IndexConfig{}, CompactionConfig{}, RollupConfig{}, HAConfig{}
	cfg.ExemplarSlots, cfg.Retention, cfg.EnableAdmin = 0, RetentionConfig{}, false
	m, err := t.tc.NewMapper(emptyStore{}, prometheus.NewRegistry())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	cfg.Mapper, cfg.ReadMapper = m, nil
	cfg.Adapter.Slots, cfg.Adapter.ReadSlots, cfg.API.Slots = t.slots, t.readSlots, t.querySlots
	// Its series index is empty: /api/v1/status/tsdb counts no series.
	cfg.API.Cardinality = index.NewReader(emptyStore{}, cfg.Tables.Index, m.UIDs(), cfg.Layout)
	s, err := New(context.Background(), emptyStore{}, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	t.empty = s
	return s, nil
}

// federated returns the query API over the tenants ids (sorted,
// distinct), those not created reading as empty.
func (t *Tenants) federated(ctx context.Context, ids []string) (http.Handler, error) {
	key := strings.Join(ids, tenant.Separator)
	t.mu.RLock()
	h := t.fed[key]
	t.mu.RUnlock()
	if h != nil {
		return h, nil
	}
	ts := make([]federation.Tenant, 0, len(ids))
	for _, id := range ids {
		s, err := t.server(ctx, id, false)
		switch {
		case errors.Is(err, errNotCreated):
			ts = append(ts, federation.Tenant{ID: id})
		case err != nil:
			return nil, err
		default:
			ts = append(ts, federation.Tenant{ID: id, Queryable: s.Queryable()})
		}
	}
	popts := t.base.API
	popts.Queryable = federation.New(ts)
	popts.Logger, popts.Registerer = t.logger, nil
	popts.Slots = t.querySlots
	popts.Retention = retentionString(t.base.Retention)
	api, err := promapi.New(popts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	t.mu.Lock()
	if len(t.fed) >= maxFederations {
		clear(t.fed)
	}
	// A tenant created since reads as created from its next federation.
	if len(ts) == countCreated(ts) {
		t.fed[key] = api
	}
	t.mu.Unlock()
	return api, nil
}

func countCreated(ts []federation.Tenant) int {
	n := 0
	for _, t := range ts {
		if t.Queryable != nil {
			n++
		}
	}
	return n
}

// applyLimits puts every open tenant's limits from the runtime
// configuration in force.
func (t *Tenants) applyLimits() {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for id, s := range t.servers {
		if err := applyOverrides(s, t.tc.Runtime.Limits(id)); err != nil {
			t.logger.Error("tenant limits not changed", "tenant", id, "err", err)
		}
	}
}

// Start runs the background work (the runtime configuration's reloads,
// each open tenant's compaction, rollups, retention) until stop is
// called; stop returns once it has ended.
func (t *Tenants) Start() (stop func()) {
	t.wg.Go(func() { t.tc.Runtime.Run(t.ctx) })
	return func() {
		t.cancel()
		t.wg.Wait()
	}
}

// Open returns the IDs of the tenants opened so far, sorted.
func (t *Tenants) Open() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.servers))
}

// OpenTSDBWriter returns the writer of tenant id's OpenTSDB puts (the
// telnet lines of the OpenTSDB port): each batch goes to the tenant's
// server, opened at its first use, or provisioned as a first write
// provisions it.
func (t *Tenants) OpenTSDBWriter(id string) opentsdb.Writer { return tenantPuts{t: t, id: id} }

// tenantPuts is a tenant's OpenTSDB writer.
type tenantPuts struct {
	t  *Tenants
	id string
}

func (p tenantPuts) PutPoints(ctx context.Context, pts []opentsdb.Point, errs []*opentsdb.PointError) error {
	s, err := p.t.server(ctx, p.id, p.t.tc.AutoCreate)
	if err != nil {
		return fmt.Errorf("tenant %q: %w", p.id, err)
	}
	return s.PutPoints(ctx, pts, errs)
}
