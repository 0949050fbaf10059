package ingest

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
)

// checkRequestLimits applies the limits that concern the request as a
// whole, after pass 1 and before anything is written (UIDs included):
// series per request (not for a translated body, see WriteTranslated),
// then the active-series limit (each new series
// refused), the ingestion rate (the samples and histograms left to write)
// and the new-series rate. An error means nothing is to be written; reason
// says why. Tokens taken by a request a later check refuses are not given
// back, as in Mimir, where the distributor's ingestion rate is taken
// before the ingesters' limits.
func (w *Writer) checkRequestLimits(b *writeBatch, series int) (reason string, err error) {
	if !b.translated {
		if err := w.limits.CheckRequest(series); err != nil {
			return limits.ReasonSeriesPerRequest, err
		}
	}
	if len(b.missed) > 0 {
		if err := w.limits.CheckActive(); err != nil {
			for i := range b.missed {
				m := &b.missed[i]
				b.rejectSeries(limits.ReasonActiveSeries, m.samples, fmt.Sprintf("%s: %v", mapping.FormatLabelsMax(m.labels, 10), err))
			}
			b.missed = b.missed[:0]
		}
	}
	n := b.samples + b.histograms
	for i := range b.missed {
		n += b.missed[i].samples
	}
	if err := w.limits.AdmitSamples(n); err != nil {
		return limits.ReasonIngestionRate, err
	}
	if len(b.missed) == 0 {
		return "", nil
	}
	if err := w.limits.AdmitNew(len(b.missed)); err != nil {
		return limits.ReasonNewSeriesRate, err
	}
	return "", nil
}

// rejectAll is the result of a request refused as a whole: all its samples
// and histograms are counted as rejected, those rejected per series for
// their own reasons, the others for reason.
func (b *writeBatch) rejectAll(reason string) Result {
	res := Result{Rejected: make(map[string]int, len(b.reject)+1)}
	for k, v := range b.reject {
		res.Rejected[k] = v
	}
	n := b.samples + b.histograms
	for _, m := range b.missed {
		n += m.samples
	}
	res.Rejected[reason] += n
	return res
}

// admitPerMetric applies the per-metric series limit to the new series
// (b.missed), after the request's limits: the UIDs of their metric names
// are looked up (made for a metric not seen before, which has no series
// to refuse), then each series is admitted or refused (400, the rest
// written). A store error fails the request.
func (w *Writer) admitPerMetric(ctx context.Context, b *writeBatch) error {
	if !b.perMetric || len(b.missed) == 0 {
		return nil
	}
	reqs := make([]uid.UIDRequest, 0, 4)
	byName := make(map[string]int, 4)
	which := make([]int, len(b.missed)) // each series' request; -1: no name
	for i := range b.missed {
		which[i] = -1
		name := metricNameOf(b.missed[i].labels)
		if name == nil {
			continue // refused at its resolution
		}
		j, ok := byName[string(name)]
		if !ok {
			j = len(reqs)
			byName[string(name)] = j
			reqs = append(reqs, uid.UIDRequest{Kind: uid.KindMetric, Name: name})
		}
		which[i] = j
	}
	w.mapper.UIDs().GetOrCreateBatch(ctx, reqs)
	kept := b.missed[:0]
	for i := range b.missed {
		m := b.missed[i]
		if j := which[i]; j >= 0 {
			switch r := &reqs[j]; {
			case errors.Is(r.Err, uid.ErrUIDExhausted):
				// refused at its resolution
			case r.Err != nil:
				return fmt.Errorf("metric %q: %w", r.Name, r.Err)
			default:
				if err := w.limits.AdmitMetricSeries(r.UID, maphash.Bytes(w.keySeed, m.key), m.labels); err != nil {
					b.rejectSeries(limits.ReasonSeriesPerMetric, m.samples, err.Error())
					continue
				}
			}
		}
		kept = append(kept, m)
	}
	clear(b.missed[len(kept):])
	b.missed = kept
	return nil
}

// metricNameOf returns the value of lbls' metric name label; nil when it
// has none.
func metricNameOf(lbls []mapping.Label) []byte {
	for _, l := range lbls {
		if string(l.Name) == mapping.MetricLabel {
			return l.Value
		}
	}
	return nil
}
