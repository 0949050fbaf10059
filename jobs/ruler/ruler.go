package ruler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/store"
)

// Defaults of Config.
const (
	// DefaultPollInterval is how often the stored groups are read again
	// (Mimir's -ruler.poll-interval).
	DefaultPollInterval = time.Minute
	// DefaultLeaseDuration is how long a group's lease lasts unless
	// renewed. It is renewed every third of it and at each evaluation,
	// so a replica that stops answering holds its groups back this long
	// at most, plus a poll interval until another replica looks; 30s
	// keeps that under one default evaluation interval (1m) while
	// leaving a store two renewals' worth of slowness before a lease is
	// lost.
	DefaultLeaseDuration = 30 * time.Second
	// DefaultEvaluationInterval is the interval of a group that names
	// none (Mimir's -ruler.evaluation-interval).
	DefaultEvaluationInterval = time.Minute
)

// Tenant is what the ruler evaluates a tenant's rules with: the tenant's
// own query engine and queryable (those of its /api/v1/query), and its
// write path.
type Tenant struct {
	Engine    promql.QueryEngine
	Queryable storage.Queryable
	Write     WriteFunc
}

// Config configures a Ruler.
type Config struct {
	// Tenants lists the tenants that may have rules ("" alone: the one
	// tenant of a server without tenants).
	Tenants func(ctx context.Context) ([]string, error)
	// Rules returns a tenant's rule groups and the store its rules table
	// (Table) is in, for the leases.
	Rules func(id string) (GroupStore, store.Store)
	// Table is the rules table's name (in each tenant's store).
	Table string
	// Tenant returns the evaluation stack of a tenant that has rules.
	Tenant func(ctx context.Context, id string) (Tenant, error)

	PollInterval       time.Duration // 0: DefaultPollInterval
	LeaseDuration      time.Duration // 0: DefaultLeaseDuration
	EvaluationInterval time.Duration // 0: DefaultEvaluationInterval
	// CatchUpWindow is how far back an evaluation makes up the aligned
	// timestamps its group missed (r:last older than one interval: the
	// group moved or its replica stopped); 0: twice the lease duration
	// plus the poll interval, the longest a group waits to be taken over.
	CatchUpWindow time.Duration

	// AlertmanagerURLs are the Alertmanagers alerts are sent to (each
	// with its path prefix; Alertmanager's API v2); none: alerts are
	// evaluated but not sent.
	AlertmanagerURLs []string
	// NotificationQueueCapacity, NotificationTimeout: Prometheus's
	// notifier queue and the timeout of one send (0: 10000, 10s).
	NotificationQueueCapacity int
	NotificationTimeout       time.Duration
	// ExternalURL is the alerts' generator URL prefix and templates'
	// $externalURL; ExternalLabels are added to alerts and in templates.
	ExternalURL    *url.URL
	ExternalLabels labels.Labels
	// ForOutageTolerance, ForGracePeriod, ResendDelay: Prometheus's
	// rules.ManagerOptions (0: 1h, 10m, 1m).
	ForOutageTolerance time.Duration
	ForGracePeriod     time.Duration
	ResendDelay        time.Duration

	// Now is the leases' clock (tests); nil: time.Now.
	Now func() time.Time
	// Registerer takes the ruler's metrics (and the rules managers' and
	// notifiers', with a label tenant); nil: none are registered.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Ruler evaluates the rule groups of every tenant: one rules.Manager a
// tenant, holding the groups whose lease this replica holds. Run does the
// work; Retriever answers the rules and alerts APIs.
type Ruler struct {
	cfg    Config
	token  []byte
	parser parser.Parser
	logger *slog.Logger
	m      metrics

	mu      sync.Mutex
	tenants map[string]*tenantState
	// noRelease stops without handing back leases, as a killed process
	// stops (tests).
	noRelease bool
}

type metrics struct {
	held     *prometheus.GaugeVec
	skipped  *prometheus.CounterVec
	caughtUp prometheus.Counter
	syncErrs prometheus.Counter
}

// New returns a Ruler; Run starts it.
func New(cfg Config) (*Ruler, error) {
	if cfg.Tenants == nil || cfg.Rules == nil || cfg.Tenant == nil {
		return nil, errors.New("ruler: Tenants, Rules and Tenant are required")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.EvaluationInterval <= 0 {
		cfg.EvaluationInterval = DefaultEvaluationInterval
	}
	if cfg.CatchUpWindow <= 0 {
		cfg.CatchUpWindow = 2*cfg.LeaseDuration + cfg.PollInterval
	}
	if cfg.NotificationQueueCapacity <= 0 {
		cfg.NotificationQueueCapacity = 10000
	}
	if cfg.NotificationTimeout <= 0 {
		cfg.NotificationTimeout = 10 * time.Second
	}
	if cfg.ForOutageTolerance <= 0 {
		cfg.ForOutageTolerance = time.Hour
	}
	if cfg.ForGracePeriod <= 0 {
		cfg.ForGracePeriod = 10 * time.Minute
	}
	if cfg.ResendDelay <= 0 {
		cfg.ResendDelay = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ExternalURL == nil {
		cfg.ExternalURL = &url.URL{}
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, u := range cfg.AlertmanagerURLs {
		if _, err := amConfig(u, cfg.NotificationTimeout); err != nil {
			return nil, err
		}
	}
	f := promauto.With(cfg.Registerer)
	r := &Ruler{cfg: cfg, token: newToken(), parser: parser.NewParser(parser.Options{ExperimentalDurationExpr: true}),
		logger: cfg.Logger, tenants: map[string]*tenantState{},
		m: metrics{
			held: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: "promhbase", Subsystem: "ruler", Name: "groups_held",
				Help: "Rule groups whose lease this replica holds, by tenant."}, []string{"tenant"}),
			skipped: f.NewCounterVec(prometheus.CounterOpts{Namespace: "promhbase", Subsystem: "ruler", Name: "evaluations_skipped_total",
				Help: "Group evaluations not made: lease_lost (another replica holds the group), done (r:last says it was evaluated), too_old (missed evaluations past the catch-up window)."}, []string{"reason"}),
			caughtUp: f.NewCounter(prometheus.CounterOpts{Namespace: "promhbase", Subsystem: "ruler", Name: "evaluations_caught_up_total",
				Help: "Missed aligned evaluations made up after a group moved between replicas."}),
			syncErrs: f.NewCounter(prometheus.CounterOpts{Namespace: "promhbase", Subsystem: "ruler", Name: "sync_failures_total",
				Help: "Syncs of a tenant's rule groups that failed (the store, or opening the tenant)."}),
		}}
	// Every reason from the start, so that the first skip of each is an
	// increase that rate and increase see.
	for _, reason := range []string{skippedLeaseLost, skippedDone, skippedTooOld, skippedNoLast} {
		r.m.skipped.WithLabelValues(reason)
	}
	return r, nil
}

// Run evaluates rules until ctx ends: it announces this replica, reads
// every tenant's groups each poll interval, takes the leases of its share
// of the free ones, renews those it holds every third of the lease
// duration and loads the held groups into the tenant's rules manager.
// On return every manager has stopped and every lease is handed back.
func (r *Ruler) Run(ctx context.Context) {
	tick := min(r.cfg.PollInterval, r.cfg.LeaseDuration/3)
	t := time.NewTicker(tick)
	defer t.Stop()
	var lastPoll time.Time
	for {
		poll := lastPoll.IsZero() || time.Since(lastPoll) >= r.cfg.PollInterval-tick/2
		if poll {
			lastPoll = time.Now()
		}
		r.syncAll(ctx, poll)
		select {
		case <-ctx.Done():
			r.stop()
			return
		case <-t.C:
		}
	}
}

// syncAll syncs every tenant: with poll, the groups are read again and
// leases taken or let go; without, held leases are renewed.
func (r *Ruler) syncAll(ctx context.Context, poll bool) {
	ids := r.known()
	if poll {
		var err error
		if ids, err = r.cfg.Tenants(ctx); err != nil {
			r.m.syncErrs.Inc()
			r.logger.Warn("cannot list the tenants", "err", err)
			ids = r.known()
		}
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := r.syncTenant(ctx, id, poll); err != nil && ctx.Err() == nil {
			r.m.syncErrs.Inc()
			r.logger.Warn("cannot sync the rule groups", "tenant", id, "err", err)
		}
	}
}

// known returns the tenants with a manager.
func (r *Ruler) known() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.tenants))
}

// syncTenant renews this replica's member row and held leases; with
// poll, it reads the tenant's groups, lets go of the groups deleted, lost
// or over its share, takes free ones up to its share and reloads the
// tenant's manager.
func (r *Ruler) syncTenant(ctx context.Context, id string, poll bool) error {
	gs, st := r.cfg.Rules(id)
	now := r.cfg.Now()
	if err := announce(ctx, st, r.cfg.Table, r.token, now.Add(r.cfg.LeaseDuration).UnixMilli()); err != nil {
		if errors.Is(err, store.ErrTableNotFound) {
			return nil // a tenant without a rules table has no rules
		}
		return err
	}
	r.mu.Lock()
	ts := r.tenants[id]
	r.mu.Unlock()
	if ts != nil {
		ts.renewAll(ctx)
	}
	if !poll {
		return nil
	}
	all, err := gs.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list the rule groups: %w", err)
	}
	if ts == nil {
		if len(all) == 0 {
			return nil
		}
		if ts, err = r.newTenantState(ctx, id, st); err != nil {
			return err
		}
	}
	members, err := liveMembers(ctx, st, r.cfg.Table, now.UnixMilli())
	if err != nil {
		return err
	}
	return ts.sync(ctx, all, max(members, 1))
}

// stop stops every tenant's manager and notifier and hands back the
// leases and the member rows.
func (r *Ruler) stop() {
	r.mu.Lock()
	tss := make([]*tenantState, 0, len(r.tenants))
	for _, ts := range r.tenants {
		tss = append(tss, ts)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ts := range tss {
		ts.close(ctx, !r.noRelease)
	}
	if r.noRelease {
		return
	}
	for _, id := range r.known() {
		_, st := r.cfg.Rules(id)
		if err := announce(ctx, st, r.cfg.Table, r.token, 0); err != nil {
			r.logger.Warn("cannot hand back the ruler's member row", "tenant", id, "err", err)
		}
	}
}

// RulesRetriever is what Prometheus's API (web/api/v1's
// RulesRetriever) asks of the rules: /api/v1/rules and /api/v1/alerts.
type RulesRetriever interface {
	RuleGroups() []*rules.Group
	AlertingRules() []*rules.AlertingRule
}

// Retriever returns the rule groups and alerting rules of tenant ("":
// the one tenant of a server without tenants) as this replica knows
// them, asked afresh at each call: the groups it evaluates, with their
// state, and the tenant's other groups (held by other replicas) as of
// its last poll, never evaluated here (health unknown, no alerts). Its
// results are empty before the first poll and for a tenant without rules.
func (r *Ruler) Retriever(tenant string) RulesRetriever { return retriever{r: r, id: tenant} }

type retriever struct {
	r  *Ruler
	id string
}

func (rr retriever) state() *tenantState {
	rr.r.mu.Lock()
	defer rr.r.mu.Unlock()
	return rr.r.tenants[rr.id]
}

func (rr retriever) RuleGroups() []*rules.Group {
	ts := rr.state()
	if ts == nil {
		return []*rules.Group{}
	}
	gs := append(ts.mgr.RuleGroups(), ts.others()...)
	slices.SortFunc(gs, func(a, b *rules.Group) int {
		if c := cmpString(a.File(), b.File()); c != 0 {
			return c
		}
		return cmpString(a.Name(), b.Name())
	})
	return gs
}

func (rr retriever) AlertingRules() []*rules.AlertingRule {
	ts := rr.state()
	if ts == nil {
		return []*rules.AlertingRule{}
	}
	out := ts.mgr.AlertingRules()
	for _, g := range ts.others() {
		out = append(out, g.AlertingRules()...)
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// shuffled returns keys in a random order, so that replicas taking free
// groups at once take different ones.
func shuffled(keys []string) []string {
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// groupKeys returns the keys of every group of all, sorted, with the
// group of each.
func groupKeys(all map[string][]rulefmt.RuleGroup) ([]string, map[string]nsGroup) {
	var keys []string
	by := map[string]nsGroup{}
	for ns, gs := range all {
		for _, g := range gs {
			k := rules.GroupKey(ns, g.Name)
			keys = append(keys, k)
			by[k] = nsGroup{ns: ns, g: g}
		}
	}
	slices.Sort(keys)
	return keys, by
}

type nsGroup struct {
	ns string
	g  rulefmt.RuleGroup
}

// Alertmanagers returns the Alertmanagers the alerts of tenant are sent
// to, as Prometheus's notifier knows them (web/api/v1's
// AlertmanagerRetriever: /api/v1/alertmanagers); nil lists before the
// tenant's first poll and without --ruler.alertmanager-url.
func (r *Ruler) Alertmanagers(tenant string) AlertmanagerRetriever {
	return alertmanagers{r: r, id: tenant}
}

// AlertmanagerRetriever is what Prometheus's API asks of the
// Alertmanagers: the ones in use and the ones dropped.
type AlertmanagerRetriever interface {
	Alertmanagers() []*url.URL
	DroppedAlertmanagers() []*url.URL
}

type alertmanagers struct {
	r  *Ruler
	id string
}

func (a alertmanagers) notifier() *notifier.Manager {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if ts := a.r.tenants[a.id]; ts != nil {
		return ts.notif
	}
	return nil
}

func (a alertmanagers) Alertmanagers() []*url.URL {
	if n := a.notifier(); n != nil {
		return n.Alertmanagers()
	}
	return nil
}

func (a alertmanagers) DroppedAlertmanagers() []*url.URL {
	if n := a.notifier(); n != nil {
		return n.DroppedAlertmanagers()
	}
	return nil
}
