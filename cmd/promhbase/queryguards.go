package main

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"

	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/web/promapi"
)

// queryGuardFlags are serve's query guardrails, Grafana Mimir's limits of
// these names: every tenant's (and federated reads'), unless
// --runtime-config.file overrides them per tenant.
type queryGuardFlags struct {
	maxTotalLength, maxLookback model.Duration
	maxSeries                   int
}

// registerQueryGuards defines the query guardrail flags of serve.
func registerQueryGuards(cmd *kingpin.CmdClause, f *queryGuardFlags) {
	cmd.Flag("query.max-total-query-length", "Longest range (end - start, after --query.max-query-lookback's clamp) of a range query, or of a series or labels request that names its end: longer ones get 400, as Mimir's -query-frontend.max-total-query-length; per tenant in --runtime-config.file as max_total_query_length. Remote read too. 0 means no limit. Units: ms, s, m, h, d, w, y.").
		Default("0").SetValue(&f.maxTotalLength)
	cmd.Flag("query.max-query-lookback", "How far back from now queries read, as Mimir's -querier.max-query-lookback: a range query's start (and a series or labels request's) moves up to now minus this, one that ends before answers empty, and every query's selectors (instant queries' too) read no sample before it; per tenant in --runtime-config.file as max_query_lookback. Remote read too. 0 means no limit. Units: ms, s, m, h, d, w, y.").
		Default("0").SetValue(&f.maxLookback)
	cmd.Flag("query.max-fetched-series-per-query", "Most distinct series one PromQL query (all its selectors together), series request or remote read may fetch: past it 422, as Mimir's -querier.max-fetched-series-per-query; per tenant in --runtime-config.file as max_fetched_series_per_query. Remote read too. 0 means no limit.").
		Default("0").IntVar(&f.maxSeries)
}

// guards returns the query API's guards of the flags; an error for a
// negative limit.
func (f queryGuardFlags) guards() (promapi.Guards, error) {
	if f.maxSeries < 0 {
		return promapi.Guards{}, fmt.Errorf("--query.max-fetched-series-per-query=%d: 0 (no limit) or positive", f.maxSeries)
	}
	return promapi.Guards{MaxTotalQueryLength: time.Duration(f.maxTotalLength), MaxQueryLookback: time.Duration(f.maxLookback),
		MaxFetchedSeries: f.maxSeries}, nil
}

// queryLimitsOf returns the runtime configuration's query limits of g
// (the flags'), as every tenant's defaults.
func queryLimitsOf(g promapi.Guards) overrides.QueryLimits {
	return overrides.QueryLimits{MaxTotalQueryLength: model.Duration(g.MaxTotalQueryLength), MaxQueryLookback: model.Duration(g.MaxQueryLookback),
		MaxFetchedSeriesPerQuery: g.MaxFetchedSeries}
}
