package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/jobs/deletion"
	"github.com/promhbase/promhbase/query/cachelog"
	"github.com/promhbase/promhbase/store"
)

// admin is the promapi.Admin of a server: series deletion, giving
// deleted data's space back on a store that can do it on request, and
// snapshots of its tables.
type admin struct {
	del   *deletion.Deleter
	st    store.Store
	cache *cacheTeller // told of what was deleted; nil: no cache
	// tables are every table the server uses, snapshotted together.
	tables []string
}

// Snapshot makes snapshot name of the server's tables on a store that
// keeps snapshots (store.Snapshotter: the embedded store copies all of
// itself, HBase the server's tables, the tenant's on a tenant's server).
func (a admin) Snapshot(ctx context.Context, name string) error {
	sn, ok := store.As[store.Snapshotter](a.st)
	if !ok {
		return fmt.Errorf("snapshot %q: the store keeps no snapshots", name)
	}
	return sn.CreateSnapshot(ctx, name, a.tables)
}

// snapshotTables returns every table named in t and the rollup tables,
// without repeats, the UID table last (store.Snapshotter).
func snapshotTables(t Tables, rollups []string) []string {
	var out []string
	for _, n := range append(append([]string{t.Data, t.Exemplar, t.Meta, t.Index, t.HA, t.Rules}, rollups...), t.UID) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (a admin) DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	_, err := a.del.Delete(ctx, ms, mint, maxt)
	// Also after a failure: some of the range may be gone.
	if a.cache != nil {
		err = errors.Join(err, a.cache.changed(context.WithoutCancel(ctx), cachelog.Samples, mint, maxt))
	}
	return err
}

func (a admin) CleanTombstones(ctx context.Context) error {
	r, ok := store.As[store.Reclaimer](a.st)
	if !ok {
		return nil // HBase gives the space back at its next major compaction
	}
	if err := r.Reclaim(ctx); err != nil {
		return fmt.Errorf("reclaim the space of deleted data: %w", err)
	}
	return nil
}

// retentionString is the retention /api/v1/status/runtimeinfo reports,
// in Prometheus's words.
func retentionString(r RetentionConfig) string {
	var s string
	if r.Time > 0 {
		s = model.Duration(r.Time).String()
	}
	if r.Size > 0 {
		if s != "" {
			s += " or "
		}
		s += fmt.Sprintf("%d bytes", r.Size)
	}
	if s == "" {
		return "unlimited"
	}
	return s
}
