package metadata

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/promhbase/promhbase/internal/gencache"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// Metadata is a Prometheus metric family's metadata: its type (counter,
// gauge, histogram, gaugehistogram, summary, info, stateset, unknown; empty
// when the sender did not say), help text and unit.
type Metadata struct {
	Type, Help, Unit string
}

// metaQualifier is the cell of a metric's reverse row in tsdb-uid that holds
// OpenTSDB's UIDMeta JSON (family name).
const metaQualifier = "metric_meta"

// metaAttempts bounds the check-and-put retries of one metadata update.
const metaAttempts = 3

// Metas keeps Prometheus metric metadata as OpenTSDB's UID metadata of the
// metric: the name:metric_meta cell of the metric's reverse row in tsdb-uid,
// OpenTSDB's UIDMeta JSON with description = help and custom = {type,
// unit} (see UIDMeta.SetPrometheus), so that OpenTSDB's /api/uid/uidmeta
// shows it. A cell is written only when the metadata changes, merged into
// what is there (an OpenTSDB user's display name, notes and other custom
// keys are kept) with a check-and-put against the bytes read, as OpenTSDB's
// own UIDMeta writes do. What was last written or read is cached (bounded),
// so unchanged metadata costs a map lookup. It is safe for concurrent use.
type Metas struct {
	uids  *uid.UIDs
	st    metaStore
	seen  *gencache.Cache[Metadata] // metric name -> metadata known to be stored
	clock func() time.Time
}

// metaStore is what Metas needs of the store holding uids' table.
type metaStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error)
}

// NewMetas returns the metadata keeper of uids' table in st; cacheSize
// bounds the cache of known metadata.
func NewMetas(uids *uid.UIDs, st metaStore, cacheSize int) *Metas {
	if cacheSize <= 0 {
		cacheSize = 1 << 16
	}
	return &Metas{uids: uids, st: st, seen: gencache.New(cacheSize, func(_ string, md Metadata) int { return len(md.Type) + len(md.Help) + len(md.Unit) }), clock: time.Now}
}

// Known reports whether md is what is stored for metric, from the cache
// only; it does not allocate.
func (m *Metas) Known(metric []byte, md Metadata) bool {
	old, ok := m.seen.Get(metric)
	return ok && old == md
}

// Update stores md as the metadata of metric (a metric family name),
// assigning the metric a UID when it has none. It writes only when the
// stored metadata differs. changed reports whether it wrote.
func (m *Metas) Update(ctx context.Context, metric string, md Metadata) (changed bool, err error) {
	if m.Known([]byte(metric), md) {
		return false, nil
	}
	id, err := m.uids.GetOrCreate(ctx, uid.KindMetric, []byte(metric))
	if err != nil {
		return false, err
	}
	for range metaAttempts {
		row, err := m.st.Get(ctx, m.uids.Table(), id, uid.FamilyName)
		if err != nil {
			return false, fmt.Errorf("read metadata of metric %q: %w", metric, err)
		}
		var stored []byte
		found := false
		for _, c := range row.Cells {
			if string(c.Qualifier) == metaQualifier {
				stored, found = c.Value, true
			}
		}
		meta := mapping.UIDMeta{Type: "METRIC"}
		if found {
			if meta, err = mapping.ParseUIDMeta(stored); err != nil {
				// Not ours to repair: leave a cell OpenTSDB cannot read either.
				return false, fmt.Errorf("metadata of metric %q: %w", metric, err)
			}
		}
		if meta.Created == 0 {
			meta.Created = m.clock().Unix()
		}
		if !meta.SetPrometheus(md.Type, md.Help, md.Unit) && found {
			m.seen.Put(metric, md)
			return false, nil
		}
		val := mapping.AppendUIDMetaJSON(nil, &meta)
		if found && bytes.Equal(val, stored) {
			m.seen.Put(metric, md)
			return false, nil
		}
		var expected []byte
		if found {
			expected = stored
		}
		put := store.Put{Row: id, Cells: []store.Cell{{Family: []byte(uid.FamilyName), Qualifier: []byte(metaQualifier), Value: val}}}
		ok, err := m.st.CheckAndPut(ctx, m.uids.Table(), put, uid.FamilyName, metaQualifier, expected)
		if err != nil {
			return false, fmt.Errorf("write metadata of metric %q: %w", metric, err)
		}
		if ok {
			m.seen.Put(metric, md)
			return true, nil
		}
		// Someone else wrote it meanwhile: merge into theirs.
	}
	return false, fmt.Errorf("write metadata of metric %q: the cell kept changing under %d check-and-puts", metric, metaAttempts)
}

// Get returns the stored metadata of metric; ok is false when it has none.
func (m *Metas) Get(ctx context.Context, metric string) (md Metadata, ok bool, err error) {
	id, err := m.uids.ID(ctx, uid.KindMetric, metric)
	if err != nil {
		return Metadata{}, false, err
	}
	row, err := m.st.Get(ctx, m.uids.Table(), id, uid.FamilyName)
	if err != nil {
		return Metadata{}, false, fmt.Errorf("read metadata of metric %q: %w", metric, err)
	}
	for _, c := range row.Cells {
		if string(c.Qualifier) != metaQualifier {
			continue
		}
		meta, err := mapping.ParseUIDMeta(c.Value)
		if err != nil {
			return Metadata{}, false, fmt.Errorf("metadata of metric %q: %w", metric, err)
		}
		md = Metadata{Type: meta.Custom["type"], Help: meta.Description, Unit: meta.Custom["unit"]}
		return md, true, nil
	}
	return Metadata{}, false, nil
}

// FamilyName returns the metric family a series belongs to, given the
// family's type, as Prometheus's metadata names families: the suffixes of a
// classic histogram's and a summary's series (_bucket, _sum, _count) are
// cut; other names (a counter's _total included) are the family's.
func FamilyName(series, typ string) string {
	var suffixes []string
	switch typ {
	case "histogram", "gaugehistogram":
		suffixes = []string{"_bucket", "_sum", "_count"}
	case "summary":
		suffixes = []string{"_sum", "_count"}
	}
	for _, s := range suffixes {
		if f, ok := strings.CutSuffix(series, s); ok && f != "" {
			return f
		}
	}
	return series
}

// ListMetadata calls fn with every metric of the UID table that has
// Prometheus metadata (a name:metric_meta cell in its reverse row, see
// Metas), in UID order; metricWidth is the layout's metric UID width. A cell
// that does not parse is skipped: it may be OpenTSDB's, and a bad one must
// not hide the others.
func ListMetadata(ctx context.Context, st interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}, table string, metricWidth int, fn func(metric string, md Metadata) error) error {
	sc := st.Scan(ctx, store.ScanRequest{Table: table, Family: uid.FamilyName})
	defer sc.Close()
	width := metricWidth
	for sc.Next() {
		row := sc.Row()
		if len(row.Key) != width {
			continue // another kind's UID, or the counter row
		}
		var name, meta []byte
		for _, c := range row.Cells {
			switch string(c.Qualifier) {
			case "metrics":
				name = c.Value
			case metaQualifier:
				meta = c.Value
			}
		}
		if name == nil || meta == nil {
			continue
		}
		um, err := mapping.ParseUIDMeta(meta)
		if err != nil {
			continue
		}
		if err := fn(mapping.NameFromStored(name), Metadata{Type: um.Custom["type"], Help: um.Description, Unit: um.Custom["unit"]}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("list metric metadata in %s: %w", table, err)
	}
	return nil
}
