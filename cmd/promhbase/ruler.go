package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
)

// rulerFlags are the --ruler.* flags of serve that configure evaluation
// (Mimir's names).
type rulerFlags struct {
	enabled            bool
	pollInterval       time.Duration
	leaseDuration      time.Duration
	evaluationInterval time.Duration
	alertmanagerURL    string
	externalURL        string
	externalLabels     map[string]string
	queueCapacity      int
	notificationTO     time.Duration
	forOutage          time.Duration
	forGrace           time.Duration
	resendDelay        time.Duration
}

var rulerOpts rulerFlags

// registerRulerFlags adds the ruler's evaluation flags to serve.
func registerRulerFlags(cmd *kingpin.CmdClause, f *rulerFlags) {
	cmd.Flag("ruler.enabled", "Evaluate the recording and alerting rules of the rules table (every tenant's, with --auth.multitenancy-enabled), as Mimir's ruler: recording rules' results and ALERTS/ALERTS_FOR_STATE written through the write path, alerts sent to --ruler.alertmanager-url. With several replicas each group is evaluated by one at a time (a lease per group).").Default("false").BoolVar(&f.enabled)
	cmd.Flag("ruler.poll-interval", "How often the stored rule groups are read again, and free groups taken, as Mimir's flag of this name.").Default(ruler.DefaultPollInterval.String()).DurationVar(&f.pollInterval)
	cmd.Flag("ruler.lease-duration", "How long a replica's lease of a rule group lasts unless renewed (every third of it and at each evaluation): a replica that dies holds its groups back this long plus --ruler.poll-interval at most; the evaluations missed meanwhile are made up by the next holder.").Default(ruler.DefaultLeaseDuration.String()).DurationVar(&f.leaseDuration)
	cmd.Flag("ruler.evaluation-interval", "Evaluation interval of a rule group that names none, as Mimir's flag of this name.").Default(ruler.DefaultEvaluationInterval.String()).DurationVar(&f.evaluationInterval)
	cmd.Flag("ruler.alertmanager-url", "Comma-separated URLs of the Alertmanagers alerts are sent to (API v2, each with its path prefix; user:password@ for basic auth), as Mimir's flag of this name. Empty: alerts are evaluated, not sent.").Default("").StringVar(&f.alertmanagerURL)
	cmd.Flag("ruler.external.url", "URL of the alerts' generator links and of templates' $externalURL, as Mimir's flag of this name; empty: --web.external-url.").Default("").StringVar(&f.externalURL)
	// kingpin's StringMapVar sets entries of the map it is given: a nil
	// one panics at the first --ruler.external.labels.
	f.externalLabels = map[string]string{}
	cmd.Flag("ruler.external.labels", "Label added to every alert and seen by templates as $externalLabels, name=value; repeat it for several.").StringMapVar(&f.externalLabels)
	cmd.Flag("ruler.notification-queue-capacity", "Alerts queued for the Alertmanagers, per tenant, as Mimir's flag of this name.").Default("10000").IntVar(&f.queueCapacity)
	cmd.Flag("ruler.notification-timeout", "Timeout of one send to an Alertmanager, as Mimir's flag of this name.").Default("10s").DurationVar(&f.notificationTO)
	cmd.Flag("ruler.for-outage-tolerance", "Longest outage of the ruler over which an alert's `for` state is restored from ALERTS_FOR_STATE, as Mimir's flag of this name.").Default("1h").DurationVar(&f.forOutage)
	cmd.Flag("ruler.for-grace-period", "Least time an alert whose `for` is longer than this waits after a restore before it fires, as Mimir's flag of this name.").Default("10m").DurationVar(&f.forGrace)
	cmd.Flag("ruler.resend-delay", "Least time between two sends of a firing alert to the Alertmanagers, as Mimir's flag of this name.").Default("1m").DurationVar(&f.resendDelay)
}

// rulerConfig is the ruler's configuration from the flags, without its
// tenants.
func (c *config) rulerConfig(f rulerFlags, webExternalURL string, reg prometheus.Registerer, logger *slog.Logger) (ruler.Config, error) {
	rc := ruler.Config{Table: c.rulesTable, PollInterval: f.pollInterval, LeaseDuration: f.leaseDuration, EvaluationInterval: f.evaluationInterval,
		NotificationQueueCapacity: f.queueCapacity, NotificationTimeout: f.notificationTO,
		ForOutageTolerance: f.forOutage, ForGracePeriod: f.forGrace, ResendDelay: f.resendDelay,
		Registerer: reg, Logger: logger.With("component", "ruler")}
	for _, u := range strings.Split(f.alertmanagerURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			rc.AlertmanagerURLs = append(rc.AlertmanagerURLs, u)
		}
	}
	ext := f.externalURL
	if ext == "" {
		ext = webExternalURL
	}
	u, err := url.Parse(ext)
	if err != nil {
		return rc, fmt.Errorf("--ruler.external.url=%q: %w", ext, err)
	}
	rc.ExternalURL = u
	rc.ExternalLabels = labels.FromMap(f.externalLabels)
	if f.leaseDuration > 0 && f.leaseDuration < 3*time.Second {
		return rc, fmt.Errorf("--ruler.lease-duration=%s: at least 3s (it is renewed every third of it)", f.leaseDuration)
	}
	return rc, nil
}

// startRuler runs the ruler over st: one tenant (srv) without tenants,
// every tenant whose namespace has the rules table with them (ts). stop
// returns once it has stopped and handed back its leases.
func (c *config) startRuler(st store.Store, rc ruler.Config, srv *server.Server, ts *server.Tenants) (r *ruler.Ruler, stop func(), err error) {
	if ts == nil {
		rc.Tenants = func(context.Context) ([]string, error) { return []string{""}, nil }
		rc.Rules = func(string) (ruler.GroupStore, store.Store) {
			return ruler.NewRuleStore(st, ruler.RuleStoreOptions{Table: c.rulesTable}), st
		}
		rc.Tenant = func(context.Context, string) (ruler.Tenant, error) { return srv.RulerTenant() }
	} else {
		rc.Tenants = func(ctx context.Context) ([]string, error) { return c.rulerTenants(ctx, st) }
		rc.Rules = func(id string) (ruler.GroupStore, store.Store) {
			view := store.Namespaced(st, tenant.Namespace(id))
			return ruler.NewRuleStore(view, ruler.RuleStoreOptions{Table: c.rulesTable}), view
		}
		rc.Tenant = ts.RulerTenant
	}
	if r, err = ruler.New(rc); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	return r, func() {
		cancel()
		wg.Wait()
	}, nil
}

// rulerTenants lists the tenants whose namespace holds the rules table
// (on the embedded store, every namespace: its tables are everywhere).
func (c *config) rulerTenants(ctx context.Context, st store.Store) ([]string, error) {
	nss, err := tenantNamespaces(ctx, st, c.rulesTable)
	if errors.Is(err, errNoTenants) {
		return nil, fmt.Errorf("ruler: %w", err)
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, ns := range nss {
		if id, err := tenant.IDFromNamespace(ns); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
