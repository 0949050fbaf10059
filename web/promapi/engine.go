package promapi

import "github.com/prometheus/prometheus/promql"

// Engine returns the PromQL engine of /api/v1/query and query_range (the
// results cache's over the evaluator, when it is on), with its query
// slots, timeout and limits: the ruler evaluates a tenant's rules with it.
// It is safe for concurrent use.
func (a *API) Engine() promql.QueryEngine { return a.engine }
