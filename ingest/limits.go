package ingest

import (
	"fmt"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
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
