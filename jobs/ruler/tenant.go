package ruler

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/rules"

	"github.com/promhbase/promhbase/store"
)

// tenantState is one tenant's rules manager and the leases of the groups
// it holds.
type tenantState struct {
	r      *Ruler
	id     string
	st     store.Store
	mgr    *rules.Manager
	notif  *notifier.Manager // nil: no Alertmanager
	loader *loader
	logger *slog.Logger
	done   chan struct{} // closed when mgr.Run and the notifier have returned

	mu     sync.Mutex
	leases map[string]*groupLease // held (or being let go), by group key
	// letGo are the groups unloaded while they still exist: another
	// replica evaluates them on, so their stale markers are not written.
	letGo map[string]bool
	// other are the groups held by other replicas, unevaluated here, as
	// of the last poll (for Retriever).
	other []*rules.Group
}

// newTenantState starts a tenant's rules manager (and notifier).
func (r *Ruler) newTenantState(ctx context.Context, id string, st store.Store) (*tenantState, error) {
	t, err := r.cfg.Tenant(ctx, id)
	if err != nil {
		return nil, err
	}
	logger := r.logger.With("tenant", id)
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"tenant": id}, r.cfg.Registerer)
	ts := &tenantState{r: r, id: id, st: st, logger: logger, done: make(chan struct{}),
		leases: map[string]*groupLease{}, letGo: map[string]bool{},
		loader: &loader{parser: r.parser}}
	notify := func(context.Context, string, ...*rules.Alert) {}
	if len(r.cfg.AlertmanagerURLs) > 0 {
		if ts.notif, err = newNotifier(r.cfg, id, reg, logger); err != nil {
			return nil, err
		}
		notify = rules.SendAlerts(ts.notif, r.cfg.ExternalURL.String())
	}
	ts.mgr = rules.NewManager(&rules.ManagerOptions{
		ExternalURL: r.cfg.ExternalURL,
		QueryFunc:   rules.EngineQueryFunc(t.Engine, t.Queryable),
		NotifyFunc:  notify,
		Context:     context.WithoutCancel(ctx),
		Appendable:  appendable{write: t.Write, drop: ts.dropStale},
		Queryable:   t.Queryable,
		Logger:      logger.With("component", "rules"),
		Registerer:  reg,
		// `for` state is restored from ALERTS_FOR_STATE also for the
		// groups taken over from another replica.
		RestoreNewRuleGroups: true,
		OutageTolerance:      r.cfg.ForOutageTolerance,
		ForGracePeriod:       r.cfg.ForGracePeriod,
		ResendDelay:          r.cfg.ResendDelay,
		GroupLoader:          ts.loader,
		Parser:               r.parser,
	})
	var wg sync.WaitGroup
	wg.Go(ts.mgr.Run)
	if ts.notif != nil {
		wg.Go(func() { runNotifier(ts.notif, r.cfg.AlertmanagerURLs) })
	}
	go func() {
		wg.Wait()
		close(ts.done)
	}()
	r.mu.Lock()
	r.tenants[id] = ts
	r.mu.Unlock()
	return ts, nil
}

// lease returns the lease of a held group (nil: not held).
func (ts *tenantState) lease(key string) *groupLease {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.leases[key]
}

// dropStale reports whether the appends of ctx are of a group let go.
func (ts *tenantState) dropStale(ctx context.Context) bool {
	file, name, ok := groupOf(ctx)
	if !ok {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.letGo[rules.GroupKey(file, name)]
}

// others returns the groups other replicas hold.
func (ts *tenantState) others() []*rules.Group {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.other)
}

// renewAll renews every held lease; one lost is let go at the next poll
// (its evaluations stop at once: see evalIteration).
func (ts *tenantState) renewAll(ctx context.Context) {
	ts.mu.Lock()
	ls := make(map[string]*groupLease, len(ts.leases))
	for k, l := range ts.leases {
		ls[k] = l
	}
	ts.mu.Unlock()
	for k, l := range ls {
		if held, err := l.renew(ctx); err != nil {
			ts.logger.Warn("cannot renew a rule group's lease", "group", k, "err", err)
		} else if !held {
			ts.logger.Info("rule group lease lost to another replica", "group", k)
		}
	}
	ts.r.m.held.WithLabelValues(ts.id).Set(float64(len(ls)))
}

// sync brings the held groups in line with all (the tenant's groups) and
// members (the live replicas): deleted and lost groups are let go, held
// ones past this replica's share (all over members, rounded up) are
// handed back for the others to take, free ones are taken up to the
// share; then the manager is loaded with the held groups.
func (ts *tenantState) sync(ctx context.Context, all map[string][]rulefmt.RuleGroup, members int) error {
	keys, by := groupKeys(all)
	share := (len(keys) + members - 1) / members
	ts.mu.Lock()
	held := make(map[string]*groupLease, len(ts.leases))
	for k, l := range ts.leases {
		held[k] = l
	}
	ts.mu.Unlock()
	var drop []string
	// surplus are handed back once the manager has stopped them, so
	// that their last evaluation is recorded before another replica
	// reads r:last.
	var surplus []*groupLease
	for k, l := range held {
		if _, ok := by[k]; !ok || !l.valid() {
			drop = append(drop, k)
		}
	}
	for _, k := range drop {
		delete(held, k)
	}
	if n := len(held) - share; n > 0 {
		hk := make([]string, 0, len(held))
		for k := range held {
			hk = append(hk, k)
		}
		for _, k := range shuffled(hk)[:n] {
			surplus = append(surplus, held[k])
			delete(held, k)
			drop = append(drop, k)
		}
	}
	for _, k := range shuffled(slices.Clone(keys)) {
		if len(held) >= share {
			break
		}
		if held[k] != nil {
			continue
		}
		g := by[k]
		if err := parses(ts.r.parser, g.g); err != nil {
			ts.logger.Warn("rule group not evaluated: an expression does not parse", "group", k, "err", err)
			continue
		}
		l := newGroupLease(ts.st, ts.r.cfg.Table, g.ns, g.g.Name, ts.r.token, ts.r.cfg.LeaseDuration, ts.r.cfg.Now)
		ok, err := l.tryAcquire(ctx)
		if err != nil {
			return err
		}
		if ok {
			held[k] = l
			ts.logger.Info("rule group taken", "group", k)
		}
	}
	loaded := map[string][]rulefmt.RuleGroup{}
	for k := range held {
		g := by[k]
		loaded[g.ns] = append(loaded[g.ns], g.g)
	}
	files := make([]string, 0, len(loaded))
	for ns, gs := range loaded {
		slices.SortFunc(gs, func(a, b rulefmt.RuleGroup) int { return cmpString(a.Name, b.Name) })
		files = append(files, ns)
	}
	slices.Sort(files)
	ts.mu.Lock()
	for _, k := range drop {
		if _, exists := by[k]; exists {
			ts.letGo[k] = true
		}
	}
	for k := range held {
		delete(ts.letGo, k)
	}
	// A let-go group's stale markers are written two intervals after it
	// stops; remembering it longer than the group exists is harmless.
	for k := range ts.letGo {
		if _, exists := by[k]; !exists {
			delete(ts.letGo, k)
		}
	}
	ts.leases = held
	ts.other = ts.otherGroups(keys, by, held)
	ts.mu.Unlock()
	ts.loader.groups = loaded
	ts.r.m.held.WithLabelValues(ts.id).Set(float64(len(held)))
	r := ts.r
	err := ts.mgr.Update(r.cfg.EvaluationInterval, files, r.cfg.ExternalLabels, r.cfg.ExternalURL.String(), ts.evalIteration)
	for _, l := range surplus {
		if rerr := l.release(ctx); rerr != nil {
			ts.logger.Warn("cannot hand back a rule group's lease", "group", string(l.row), "err", rerr)
		}
	}
	return err
}

// otherGroups builds the groups of keys not held, unevaluated, for
// Retriever.
func (ts *tenantState) otherGroups(keys []string, by map[string]nsGroup, held map[string]*groupLease) []*rules.Group {
	var out []*rules.Group
	opts := &rules.ManagerOptions{Metrics: noMetrics(), Parser: ts.r.parser}
	for _, k := range keys {
		if held[k] != nil {
			continue
		}
		g := by[k]
		iv := ts.r.cfg.EvaluationInterval
		if g.g.Interval != 0 {
			iv = time.Duration(g.g.Interval)
		}
		var rs []rules.Rule
		for _, rule := range g.g.Rules {
			expr, err := ts.r.parser.ParseExpr(rule.Expr)
			if err != nil {
				rs = nil
				break
			}
			lbls := rules.FromMaps(g.g.Labels, rule.Labels)
			if rule.Alert != "" {
				rs = append(rs, rules.NewAlertingRule(rule.Alert, expr, time.Duration(rule.For), time.Duration(rule.KeepFiringFor), lbls,
					labels.FromMap(rule.Annotations), ts.r.cfg.ExternalLabels, ts.r.cfg.ExternalURL.String(), true, ts.logger))
				continue
			}
			rs = append(rs, rules.NewRecordingRule(rule.Record, expr, lbls))
		}
		out = append(out, rules.NewGroup(rules.GroupOptions{Name: g.g.Name, File: g.ns, Interval: iv, Limit: g.g.Limit, Rules: rs,
			Opts: opts, QueryOffset: (*time.Duration)(g.g.QueryOffset)}))
	}
	return out
}

// noMetrics returns rules metrics registered nowhere.
func noMetrics() *rules.Metrics { return rules.NewGroupMetrics(nil) }

// close stops the manager and the notifier and, with release, hands back
// the leases.
func (ts *tenantState) close(ctx context.Context, release bool) {
	ts.mgr.Stop()
	if ts.notif != nil {
		ts.notif.Stop()
	}
	<-ts.done
	ts.mu.Lock()
	ls := ts.leases
	ts.leases = map[string]*groupLease{}
	ts.mu.Unlock()
	if !release {
		return
	}
	for k, l := range ls {
		if err := l.release(ctx); err != nil {
			ts.logger.Warn("cannot hand back a rule group's lease", "group", k, "err", err)
		}
	}
}
