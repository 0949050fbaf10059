package server

import (
	"time"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/web/promapi"
)

// SetQueryGuards puts query guardrails (Mimir's max_total_query_length,
// max_query_lookback, max_fetched_series_per_query, blocked_queries) in
// force on the server's query API, for the requests that start from now
// on; a tenant's API not built yet (built at its first query) takes them
// when it is, and is not built for it. The tenant's kept answers of the
// results cache go, as with SetLimits: a guard may change an answer.
// Remote read takes the same guards but the blocked queries
// (adapter.ReadGuards).
func (s *Server) SetQueryGuards(g promapi.Guards) {
	s.setGuards(g)
	s.puts.SetReadGuards(readGuards(g))
	if t := s.cacheTeller; t != nil {
		t.c.Reset(t.tenant)
	}
}

// queryGuards returns the query API's guards of a tenant's query limits
// of the runtime configuration. A blocked query's regex that does not
// compile (overrides.Parse refuses those) blocks by equality only.
func queryGuards(q overrides.QueryLimits) promapi.Guards {
	g := promapi.Guards{
		MaxTotalQueryLength: time.Duration(q.MaxTotalQueryLength),
		MaxQueryLookback:    time.Duration(q.MaxQueryLookback),
		MaxFetchedSeries:    q.MaxFetchedSeriesPerQuery,
	}
	for _, b := range q.BlockedQueries {
		bq, err := promapi.NewBlockedQuery(b.Pattern, b.Regex)
		if err != nil {
			bq = promapi.BlockedQuery{Pattern: b.Pattern}
		}
		g.BlockedQueries = append(g.BlockedQueries, bq)
	}
	return g
}

// readGuards returns remote read's guards of the query API's.
func readGuards(g promapi.Guards) adapter.ReadGuards {
	return adapter.ReadGuards{MaxTotalQueryLength: g.MaxTotalQueryLength, MaxQueryLookback: g.MaxQueryLookback, MaxFetchedSeries: g.MaxFetchedSeries}
}
