package promapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/promhbase/promhbase/store"
)

// Admin is what the TSDB admin API (delete_series, clean_tombstones)
// acts on: the deletion of series data in the store.
type Admin interface {
	// DeleteSeries removes the samples of the series that ms select with
	// timestamps in [mint, maxt] (both inclusive, Unix ms).
	DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error
	// CleanTombstones gives the space of deleted data back to the
	// filesystem where the store can do that now.
	CleanTombstones(ctx context.Context) error
	// Snapshot makes a consistent copy of the store's tables named name,
	// holding every sample acknowledged before it was called.
	Snapshot(ctx context.Context, name string) error
}

// adminPaths are the admin endpoints promhbase answers, below /api/v1.
var adminPaths = map[string]bool{
	"/admin/tsdb/delete_series":    true,
	"/admin/tsdb/clean_tombstones": true,
	"/admin/tsdb/snapshot":         true,
}

// errNoAdmin is what the admin endpoints promhbase does not serve answer.
var errNoAdmin = errors.New("not supported by promhbase")

// tsdbAdmin gives Prometheus's API handler the TSDBAdminStats it calls
// for delete_series and clean_tombstones, so that their parameters,
// answers and status codes are Prometheus's own.
type tsdbAdmin struct{ admin Admin }

func (t tsdbAdmin) CleanTombstones() error {
	if t.admin == nil {
		return errNoAdmin
	}
	return t.admin.CleanTombstones(context.Background())
}

func (t tsdbAdmin) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	if t.admin == nil {
		return errNoAdmin
	}
	return t.admin.DeleteSeries(ctx, mint, maxt, ms...)
}

// Snapshot is never called: serveSnapshot answers the endpoint, naming the
// snapshot itself (Prometheus's handler makes a directory for it below
// its TSDB's, which promhbase does not have).
func (tsdbAdmin) Snapshot(string, bool) error { return errNoAdmin }

// serveSnapshot answers POST|PUT /api/v1/admin/tsdb/snapshot as
// Prometheus's handler does, {"name": ...} with a name made as it makes
// them (UTC time, '-', 16 hex digits), from Admin.Snapshot. skip_head is
// checked and has no effect: every acknowledged sample is in the store,
// there is no head to leave out.
func (a *API) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	if v := r.FormValue("skip_head"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", fmt.Sprintf("invalid parameter \"skip_head\": unable to parse boolean: %v", err))
			return
		}
	}
	name := store.NewSnapshotName(time.Now(), rand.Uint64())
	if err := a.opts.Admin.Snapshot(r.Context(), name); err != nil {
		status, typ := http.StatusInternalServerError, "internal"
		if errors.Is(err, store.ErrUnavailable) {
			status, typ = http.StatusServiceUnavailable, "unavailable"
		}
		writeError(w, status, typ, fmt.Sprintf("create snapshot: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"name":%q}}`, name)
}

func (tsdbAdmin) Stats(string, int) (*tsdb.Stats, error) { return nil, errNoAdmin }

func (tsdbAdmin) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return tsdb.WALReplayStatus{}, errNoAdmin
}

func (tsdbAdmin) BlockMetas() ([]tsdb.BlockMeta, error) { return nil, errNoAdmin }

// validDeleteSelectors checks every match[] of a delete_series request
// before Prometheus's handler runs, which deletes selector by selector:
// a bad selector after a good one must not leave the good one deleted.
// It answers the error as that handler would and reports false.
func validDeleteSelectors(w http.ResponseWriter, r *http.Request, p parser.Parser) bool {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "bad_data", fmt.Sprintf("error parsing form values: %v", err))
		return false
	}
	for _, s := range r.Form["match[]"] {
		if _, err := p.ParseMetricSelector(s); err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", fmt.Sprintf("invalid parameter %q: %v", "match[]", err))
			return false
		}
	}
	return true
}
