package promapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web/promapi"
)

// failingQueryable's every Select fails with err.
type failingQueryable struct {
	emptyQueryable
	err error
}

func (q failingQueryable) Querier(int64, int64) (storage.Querier, error) {
	return failingQuerier{Querier: storage.NoopQuerier(), err: q.err}, nil
}

type failingQuerier struct {
	storage.Querier
	err error
}

func (q failingQuerier) Select(context.Context, bool, *storage.SelectHints, ...*labels.Matcher) storage.SeriesSet {
	return storage.ErrSeriesSet(q.err)
}

// TestQueryStoreUnavailable: a query the store cannot answer
// (store.ErrUnavailable: HBase stalled) is answered 503, so that clients
// retry; any other evaluation error stays Prometheus's 422.
func TestQueryStoreUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"store unavailable", fmt.Errorf("scan tsdb: no response for 10s: %w", store.ErrUnavailable), http.StatusServiceUnavailable},
		{"other error", errors.New("corrupt row"), http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, err := promapi.New(promapi.Options{Queryable: failingQueryable{err: tc.err}})
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/api/v1/query?query=up&time=1700000000", "/api/v1/query_range?query=up&start=1700000000&end=1700000600&step=60"} {
				rec := httptest.NewRecorder()
				api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != tc.want {
					t.Errorf("%s: %d %s, want %d", path, rec.Code, rec.Body, tc.want)
				}
			}
		})
	}
}
