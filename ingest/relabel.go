package ingest

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/promhbase/promhbase/ingest/relabelmemo"
	"github.com/promhbase/promhbase/mapping"
)

// reasonRelabelDrop counts the samples of series metric relabeling
// dropped: not stored, and not an error (their request is answered as
// written), as a Prometheus drops them at its scrape.
const reasonRelabelDrop = "relabel_drop"

// relabelState is the metric relabeling in force, and the series cache's
// epoch from which the cache holds its results: a request resolves its
// new series with the state it started with and caches them only if the
// cache was not reset since (series.Mapper.ResolveMissedAt).
type relabelState struct {
	cfgs  []*relabel.Config
	rules *relabelmemo.Rules // cfgs, each rule's outcomes remembered
	epoch uint64
}

// SetRelabel puts cfgs (Prometheus's relabel configurations, validated)
// in force for the requests that start from now on: each series not in
// the series cache is relabeled before it is resolved (before any UID
// is assigned to its names). The series cache, which maps a series as
// sent to the series it became, is emptied when cfgs differ from the
// configurations in force. Safe to call while writes run.
func (w *Writer) SetRelabel(cfgs []*relabel.Config) {
	w.relabelMu.Lock()
	defer w.relabelMu.Unlock()
	if cur := w.relabel.Load(); len(cur.cfgs) == 0 && len(cfgs) == 0 || reflect.DeepEqual(cur.cfgs, cfgs) {
		return
	}
	epoch := w.mapper.ResetSeriesCache()
	w.relabel.Store(&relabelState{cfgs: cfgs, rules: relabelmemo.New(cfgs), epoch: epoch})
}

// relabelMissed applies the metric relabeling the request started with
// (none: lbls as they are) to lbls, the labels of a series not in the
// cache, of samples samples: keep is false for a series dropped (counted
// as relabel_drop, no error) or left without labels or a name (refused,
// invalid_labels).
func (b *writeBatch) relabelMissed(lbls []mapping.Label, samples int) (out []mapping.Label, keep bool) {
	rs := b.relabel
	if len(rs.cfgs) == 0 {
		return lbls, true
	}
	out, keep, err := b.relabelSeries(lbls, rs.rules)
	switch {
	case !keep:
		b.reject[reasonRelabelDrop] += samples
		return nil, false
	case err != nil:
		b.rejectSeries(reasonInvalidLabels, samples, err.Error())
		return nil, false
	}
	return out, true
}

// relabelSeries applies the rules to lbls, the labels of a series not
// in the cache (package relabelmemo: Prometheus's relabeling, each rule
// run once per distinct input). keep is false for a series dropped; err names a series left
// without labels or without a metric name. The labels returned live in
// the batch's arena.
func (b *writeBatch) relabelSeries(lbls []mapping.Label, rules *relabelmemo.Rules) (out []mapping.Label, keep bool, err error) {
	// The labels as one labels.Labels, written over the last series'
	// (one copy of the bytes, no string each), the builder over them.
	sb := &b.relabelSB
	sb.Reset()
	for _, l := range lbls {
		sb.Add(unsafe.String(unsafe.SliceData(l.Name), len(l.Name)), unsafe.String(unsafe.SliceData(l.Value), len(l.Value)))
	}
	sb.Sort() // as a labels.Labels must be; a sender's are already
	sb.Overwrite(&b.relabelIn)
	if b.relabelB == nil {
		b.relabelB = labels.NewBuilder(labels.EmptyLabels())
	}
	lb := b.relabelB
	lb.Reset(b.relabelIn)
	if !rules.Process(lb, &b.relabelKey) {
		return nil, false, nil
	}
	// The result, sorted by name, into the arena: no labels.Labels made.
	out = b.relabeled[:0]
	named := false
	lb.Range(func(l labels.Label) {
		named = named || l.Name == mapping.MetricLabel
		out = append(out, mapping.Label{Name: b.copyString(l.Name), Value: b.copyString(l.Value)})
	})
	slices.SortFunc(out, func(x, y mapping.Label) int { return bytes.Compare(x.Name, y.Name) })
	b.relabeled = out
	switch {
	case len(out) == 0:
		return nil, true, fmt.Errorf("series %s: metric_relabel_configs left it no label", mapping.FormatLabelsMax(lbls, 10))
	case !named:
		return nil, true, fmt.Errorf("series %s: metric_relabel_configs left it no metric name (it became %s)", mapping.FormatLabelsMax(lbls, 10), mapping.FormatLabelsMax(out, 10))
	}
	return out, true, nil
}

// copyString copies s into the batch's arena.
func (b *writeBatch) copyString(s string) []byte {
	return append(b.arena.Alloc(len(s)), s...)
}
