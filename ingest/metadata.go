package ingest

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// metricTypes are the names of the MetricType enum of both protocols
// (1.0's UNKNOWN is 2.0's METRIC_TYPE_UNSPECIFIED).
var metricTypes = [...]string{"unknown", "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset"}

// noteMetadata records a 2.0 series' metadata for storeMetadata, unless it
// is known to be stored already.
func (w *Writer) noteMetadata(b *writeBatch, s *wire.Series, v2 bool) {
	if w.metas == nil || s.Key == nil {
		return
	}
	md := metadata.Metadata{Help: string(s.Meta.Help), Unit: string(s.Meta.Unit)}
	if s.Meta.Type < uint64(len(metricTypes)) && (s.Meta.Type > 0 || !v2) {
		md.Type = metricTypes[s.Meta.Type]
	}
	lbls, err := s.Labels()
	if err != nil {
		return
	}
	for _, l := range lbls {
		if string(l.Name) == mapping.MetricLabel && len(l.Value) > 0 {
			family := metadata.FamilyName(string(l.Value), md.Type)
			if !w.metas.Known([]byte(family), md) {
				b.pendingMeta = append(b.pendingMeta, pendingMeta{family: family, md: md})
			}
			return
		}
	}
}

// storeMetadata stores the metadata of the request (1.0's metadata field
// and 2.0's per-series metadata) that changed.
func (w *Writer) storeMetadata(ctx context.Context, b *writeBatch) error {
	if w.metas == nil {
		return nil
	}
	for _, m := range b.metas {
		if len(m.Family) == 0 || !utf8.Valid(m.Family) {
			continue
		}
		md := metadata.Metadata{Help: string(m.Help), Unit: string(m.Unit)}
		if m.Type < uint64(len(metricTypes)) {
			md.Type = metricTypes[m.Type]
		}
		if !w.metas.Known(m.Family, md) {
			b.pendingMeta = append(b.pendingMeta, pendingMeta{family: string(m.Family), md: md})
		}
	}
	for i, p := range b.pendingMeta {
		if i > 0 && b.pendingMeta[i-1] == p {
			continue
		}
		if _, err := w.metas.Update(ctx, p.family, p.md); err != nil {
			if errors.Is(err, mapping.ErrInvalidSeries) || errors.Is(err, uid.ErrUIDExhausted) {
				continue // a name that can never be stored: nothing to retry
			}
			return fmt.Errorf("store metadata of %q: %w", p.family, err)
		}
	}
	// Metadata is written with check-and-puts, after the request's data:
	// a store that makes those durable only with a later write is synced
	// before the request is acknowledged.
	if len(b.pendingMeta) > 0 {
		if err := store.Sync(ctx, w.st); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	return nil
}

// pendingMeta is metadata of a request that is not known to be stored.
type pendingMeta struct {
	family string
	md     metadata.Metadata
}
