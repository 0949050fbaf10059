package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
)

// rulesCmd is `promhbase rules backfill`.
type rulesCmd struct {
	backfill *kingpin.CmdClause
	timeRange
	tenant, namespace, group string
	evaluationInterval       time.Duration
}

func registerRules(app *kingpin.Application) *rulesCmd {
	c := &rulesCmd{}
	rules := app.Command("rules", "Rule groups of the ruler (the rules table).")
	c.backfill = rules.Command("backfill", "Evaluate the stored recording rules over a past range, at exactly the timestamps the ruler evaluates each group at (its interval, offset by the hash of its name and namespace), by range queries, and write the results through the write path in bounded batches, as `promtool tsdb create-blocks-from rules`. Alerting rules are skipped. Safe while serve runs; run it over a range the ruler has not evaluated, or evaluated the same.")
	c.flags(c.backfill, "Start (inclusive): RFC 3339, or Unix seconds or milliseconds.", "End (inclusive): RFC 3339, or Unix seconds or milliseconds; default now.", true)
	c.backfill.Flag("tenant", "Tenant whose rules are evaluated (--auth.multitenancy-enabled stores); empty: the store without tenants.").Default("").StringVar(&c.tenant)
	c.backfill.Flag("namespace", "Only the groups of this rule namespace.").Default("").StringVar(&c.namespace)
	c.backfill.Flag("group", "Only the groups of this name.").Default("").StringVar(&c.group)
	c.backfill.Flag("ruler.evaluation-interval", "Evaluation interval of a group that names none: serve's --ruler.evaluation-interval.").Default(ruler.DefaultEvaluationInterval.String()).DurationVar(&c.evaluationInterval)
	return c
}

func (c *rulesCmd) run(cfg *config) error {
	from, to, err := c.parse()
	if err != nil {
		return err
	}
	j, err := cfg.openJob(0)
	if err != nil {
		return err
	}
	defer j.close()
	st := j.st
	if c.tenant != "" {
		if err := tenant.ValidateID(c.tenant); err != nil {
			return err
		}
		st = store.Namespaced(st, tenant.Namespace(c.tenant))
	}
	t, err := c.stack(j.ctx, cfg, j, st)
	if err != nil {
		return err
	}
	gs := ruler.NewRuleStore(st, ruler.RuleStoreOptions{Table: cfg.rulesTable})
	start := time.Now()
	stats, err := ruler.Backfill(j.ctx, gs, t, ruler.BackfillOptions{From: time.UnixMilli(from), To: time.UnixMilli(to),
		Namespace: c.namespace, Group: c.group, EvaluationInterval: c.evaluationInterval,
		Progress: func(ns, g, rule string, n int) { fmt.Fprintf(os.Stderr, "%s / %s / %s: %d samples\n", ns, g, rule, n) }})
	if err != nil {
		return err
	}
	fmt.Printf("backfilled %d recording rules of %d groups: %d samples in %s\n", stats.Rules, stats.Groups, stats.Samples, time.Since(start).Round(time.Millisecond))
	return j.settle()
}

// stack wires the write and read path over st as serve does (series
// index on, no background work) and returns the ruler's view of it.
func (c *rulesCmd) stack(ctx context.Context, cfg *config, j *job, st store.Store) (ruler.Tenant, error) {
	m, err := cfg.newMapper(st, j.reg, j.logger)
	if err != nil {
		return ruler.Tenant{}, err
	}
	srv, err := server.New(ctx, st, server.Config{Tenant: c.tenant, Layout: cfg.layout,
		Tables: server.Tables{Data: cfg.dataTable, UID: cfg.uidTable, Meta: cfg.metaTable, Index: cfg.indexTable, HA: cfg.haTable},
		Mapper: m, Index: server.IndexConfig{Enabled: true, Query: true}, Logger: j.logger})
	if err != nil {
		return ruler.Tenant{}, err
	}
	return srv.RulerTenant()
}
