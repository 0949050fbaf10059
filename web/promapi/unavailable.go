package promapi

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/store"
)

// A query the store could not answer (store.ErrUnavailable: HBase
// stalled or gone, a scan's region server silent) is answered 503 with
// Retry-After, as a write is, not 422: Prometheus's API takes every
// evaluation error but a timeout or a cancellation for the query's own.
// The engine marks the request (unavailableEngine), and the writer of
// /api/v1/query and query_range turns the 422 into a 503
// (unavailableWriter).

// unavailableKey is the context key of a request's unavailableMark.
type unavailableKey struct{}

// unavailableMark is set when a query of the request met
// store.ErrUnavailable.
type unavailableMark struct{ hit atomic.Bool }

// withUnavailableMark returns r with a fresh mark in its context, and
// the mark.
func withUnavailableMark(r *http.Request) (*http.Request, *unavailableMark) {
	m := &unavailableMark{}
	return r.WithContext(context.WithValue(r.Context(), unavailableKey{}, m)), m
}

// unavailableEngine marks the request of each query whose evaluation
// failed with store.ErrUnavailable.
type unavailableEngine struct{ promql.QueryEngine }

func (e unavailableEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	qry, err := e.QueryEngine.NewInstantQuery(ctx, q, opts, qs, ts)
	return markedQuery(ctx, qry), err
}

func (e unavailableEngine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	qry, err := e.QueryEngine.NewRangeQuery(ctx, q, opts, qs, start, end, interval)
	return markedQuery(ctx, qry), err
}

// markedQuery wraps qry when ctx carries a mark.
func markedQuery(ctx context.Context, qry promql.Query) promql.Query {
	m, _ := ctx.Value(unavailableKey{}).(*unavailableMark)
	if qry == nil || m == nil {
		return qry
	}
	return unavailableQuery{Query: qry, mark: m}
}

type unavailableQuery struct {
	promql.Query
	mark *unavailableMark
}

func (q unavailableQuery) Exec(ctx context.Context) *promql.Result {
	res := q.Query.Exec(ctx)
	if res != nil && errors.Is(res.Err, store.ErrUnavailable) {
		q.mark.hit.Store(true)
	}
	return res
}

// unavailableWriter answers 503 in place of the 422 of a query marked
// unavailable.
type unavailableWriter struct {
	http.ResponseWriter
	mark *unavailableMark
}

func (w unavailableWriter) WriteHeader(code int) {
	if code == http.StatusUnprocessableEntity && w.mark.hit.Load() {
		code = http.StatusServiceUnavailable
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w unavailableWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
