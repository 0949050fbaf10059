package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web/promapi"
)

// RulerConfig is what a server serves of the ruler (package ruler): its
// configuration API over the server's rules table, and the rule groups and
// alerts of /api/v1/rules and /api/v1/alerts. The ruler itself, which
// evaluates the groups of every tenant, runs beside the servers.
type RulerConfig struct {
	// ConfigAPI serves Mimir's ruler configuration API
	// (/config/v1/rules, /prometheus/config/v1/rules) over Tables.Rules,
	// and makes /api/v1/status/buildinfo answer as Grafana Mimir's, so
	// that Grafana's data-source-managed rule editor edits rules here.
	ConfigAPI bool
	// Limits returns the configuration API's limits of the server's
	// tenant as they are now (the runtime configuration's); nil: none.
	Limits func() ruler.Limits
	// Rules returns the rule groups and alerting rules of tenant ("":
	// the one of a server without tenants) that /api/v1/rules and
	// /api/v1/alerts list (ruler.Ruler.Retriever); nil: both answer
	// empty lists.
	Rules func(tenant string) ruler.RulesRetriever
	// Alertmanagers returns the Alertmanagers the alerts of tenant are
	// sent to, listed by /api/v1/alertmanagers
	// (ruler.Ruler.Alertmanagers); nil: none.
	Alertmanagers func(tenant string) ruler.AlertmanagerRetriever
	// MaxBodyBytes bounds a rule group posted to the configuration API
	// (0: ruler.DefaultMaxRuleGroupBytes).
	MaxBodyBytes int64
}

// rulerConfigAPI returns the handler of the ruler's configuration API
// over st's rules table, or nil when it is not served.
func rulerConfigAPI(st store.Store, cfg Config, logger *slog.Logger) http.Handler {
	rc := cfg.Ruler
	if !rc.ConfigAPI || cfg.Tables.Rules == "" {
		return nil
	}
	gs := ruler.NewRuleStore(st, ruler.RuleStoreOptions{Table: cfg.Tables.Rules})
	return ruler.NewConfigAPI(func(*http.Request) (ruler.GroupStore, ruler.Limits, error) {
		var lim ruler.Limits
		if rc.Limits != nil {
			lim = rc.Limits()
		}
		return gs, lim, nil
	}, ruler.ConfigAPIOptions{MaxBodyBytes: rc.MaxBodyBytes, Logger: logger.With("component", "ruler config api")})
}

// rulerAPIOptions sets what the query API answers of the ruler.
func rulerAPIOptions(popts *promapi.Options, cfg Config) {
	rc, id := cfg.Ruler, cfg.Tenant
	popts.RulerConfigAPI = rc.ConfigAPI && cfg.Tables.Rules != ""
	if rc.Rules != nil {
		// A nil answer (the ruler not started yet) stays nil: promapi
		// answers empty lists.
		popts.Rules = func(context.Context) v1.RulesRetriever { return rc.Rules(id) }
	}
	if rc.Alertmanagers != nil {
		popts.Alertmanagers = func(context.Context) v1.AlertmanagerRetriever { return rc.Alertmanagers(id) }
	}
}

// RulerTenant returns what the ruler evaluates the server's rules with:
// the engine and queryable of its /api/v1/query (building its query API
// when not built yet) and its write path, each sample written as a remote
// write 1.0 request would be (limits, HA deduplication aside: rule
// results carry no HA labels). A write that rejects any series is an
// error.
func (s *Server) RulerTenant() (ruler.Tenant, error) {
	api, err := s.api()
	if err != nil {
		return ruler.Tenant{}, fmt.Errorf("query API: %w", err)
	}
	w := s.writer
	return ruler.Tenant{
		Engine:    api.Engine(),
		Queryable: s.q.Storage(),
		Write: func(ctx context.Context, body []byte) error {
			_, err := w.Write(ctx, body, false)
			return err
		},
	}, nil
}

// RulerTenant returns the ruler's view of tenant id (Server.RulerTenant),
// opening its server at the first use; a tenant not created is an error.
func (t *Tenants) RulerTenant(ctx context.Context, id string) (ruler.Tenant, error) {
	s, err := t.server(ctx, id, false)
	if err != nil {
		return ruler.Tenant{}, err
	}
	return s.RulerTenant()
}
