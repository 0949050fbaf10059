package promapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/internal/httpmetrics"
)

// otherHandler is the handler label of the paths below /api/v1 that
// promhbase does not serve (404).
const otherHandler = "other"

// handlerNames are the handler labels of the query API's requests in
// promhbase_http_requests_total and _duration_seconds: each served path
// below /api/v1 without its leading slash, its other slashes as
// underscores; label values as one ("label_values"), and every other path
// as otherHandler.
var handlerNames = func() []string {
	names := []string{"metadata", "query", "query_range", "status_tsdb", "label_values", otherHandler}
	for p := range exposed {
		names = append(names, handlerName(p))
	}
	for p := range adminPaths {
		names = append(names, handlerName(p))
	}
	return names
}()

// handlerName returns the handler label of path p (below /api/v1) when
// promhbase serves it; handlerOf maps any path to a label.
func handlerName(p string) string {
	return strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_")
}

// handlerOf returns the handler label of a request's path: one of
// handlerNames, whatever the path.
func handlerOf(path string) string {
	p, ok := strings.CutPrefix(path, "/api/v1")
	switch {
	case !ok:
		return otherHandler
	case p == "/metadata", p == "/query", p == "/query_range", p == "/status/tsdb", exposed[p], adminPaths[p]:
		return handlerName(p)
	case strings.HasPrefix(p, "/label/") && strings.HasSuffix(p, "/values"):
		return "label_values"
	}
	return otherHandler
}

// instrumented returns a handler per name of handlerNames: serve, counted
// and timed under that name in reg's HTTP request metrics.
func instrumented(reg prometheus.Registerer, serve http.Handler) (map[string]http.Handler, error) {
	m, err := httpmetrics.Register(reg)
	if err != nil {
		return nil, err
	}
	hs := make(map[string]http.Handler, len(handlerNames))
	for _, n := range handlerNames {
		hs[n] = m.Handler(n, serve)
	}
	return hs, nil
}

// slowQueries counts and logs the instant and range queries slower than a
// threshold, as Prometheus's query log and Mimir's
// -query-frontend.log-queries-longer-than do.
type slowQueries struct {
	threshold time.Duration // 0: none is slow
	count     prometheus.Counter
}

// newSlowQueries returns the slow queries' counter over threshold,
// registered on reg.
func newSlowQueries(threshold time.Duration, reg prometheus.Registerer) (*slowQueries, error) {
	s := &slowQueries{threshold: threshold, count: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "promhbase_query_slow_total",
		Help: "Instant and range queries (/api/v1/query, /api/v1/query_range) that took longer than --query.slow-threshold, each also logged once with its query; none when the threshold is 0.",
	})}
	if err := reg.Register(s.count); err != nil {
		return nil, fmt.Errorf("register promhbase_query_slow_total: %w", err)
	}
	return s, nil
}

// serveTimed answers a query by serve and, when it took longer than the
// threshold, counts it and logs it with its parameters (the query as
// the client sent it, before any rewrite for rollups).
func (a *API) serveTimed(w http.ResponseWriter, r *http.Request, handler string, serve func(http.ResponseWriter, *http.Request)) {
	start := time.Now()
	_ = r.ParseForm()
	q, from, to, step, at := r.Form.Get("query"), r.Form.Get("start"), r.Form.Get("end"), r.Form.Get("step"), r.Form.Get("time")
	serve(w, r)
	d := time.Since(start)
	if a.slow.threshold <= 0 || d <= a.slow.threshold {
		return
	}
	a.slow.count.Inc()
	args := []any{"handler", handler, "query", q, "duration", d.Round(time.Millisecond)}
	if handler == "query" {
		args = append(args, "time", at)
	} else {
		args = append(args, "start", from, "end", to, "step", step)
	}
	if a.opts.Tenant != "" {
		args = append(args, "tenant", a.opts.Tenant)
	}
	a.opts.Logger.Warn("slow query", args...)
}
