package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/web/promapi"
)

// TestQueryGuards: the runtime configuration's query limits as the query
// API's guards; a regex entry matches whole queries, a plain one by
// equality.
func TestQueryGuards(t *testing.T) {
	g := queryGuards(overrides.QueryLimits{
		MaxTotalQueryLength: model.Duration(31 * 24 * time.Hour), MaxQueryLookback: model.Duration(7 * 24 * time.Hour),
		MaxFetchedSeriesPerQuery: 1000,
		BlockedQueries:           []overrides.BlockedQuery{{Pattern: `sum\(.*\)`, Regex: true}, {Pattern: `up`}},
	})
	if g.MaxTotalQueryLength != 31*24*time.Hour || g.MaxQueryLookback != 7*24*time.Hour || g.MaxFetchedSeries != 1000 || len(g.BlockedQueries) != 2 {
		t.Fatalf("%+v", g)
	}
	for _, tc := range []struct {
		name  string
		i     int
		query string
		want  bool
	}{
		{"regex whole", 0, "sum(up)", true},
		{"regex anchored", 0, "max(sum(up))", false},
		{"plain", 1, "up", false}, // equality is the API's, not a regex
	} {
		t.Run(tc.name, func(t *testing.T) {
			re := g.BlockedQueries[tc.i].Regex
			if got := re != nil && re.MatchString(tc.query); got != tc.want {
				t.Errorf("%q: %v, want %v", tc.query, got, tc.want)
			}
		})
	}
	if z := queryGuards(overrides.QueryLimits{}); z.MaxTotalQueryLength != 0 || z.MaxQueryLookback != 0 || z.MaxFetchedSeries != 0 || z.BlockedQueries != nil {
		t.Errorf("no limits: %+v", z)
	}
}

// TestSetQueryGuards: guards set on a server reach its query API, the
// single tenant's (built at once) and a tenant's (built at its first
// query, with the guards set before).
func TestSetQueryGuards(t *testing.T) {
	blocked, err := promapi.NewBlockedQuery("vector(1)", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"", "team-a"} {
		t.Run("tenant "+tenant, func(t *testing.T) {
			st, cfg := newConfig(t, "tsdb", "tsdb-uid", "tsdb-exemplar", "tsdb-meta", "tsdb-index")
			cfg.Tenant = tenant
			s, err := New(context.Background(), st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				name   string
				guards promapi.Guards
				want   int
			}{
				{"blocked", promapi.Guards{BlockedQueries: []promapi.BlockedQuery{blocked}}, http.StatusBadRequest},
				{"none", promapi.Guards{}, http.StatusOK},
			} {
				s.SetQueryGuards(step.guards)
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/query?query=vector(1)&time=1700000000", nil))
				if rec.Code != step.want {
					t.Errorf("%s: %d %s, want %d", step.name, rec.Code, rec.Body, step.want)
				}
			}
		})
	}
}
