package query

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
)

// ErrHistograms means a float selection (SelectFloats) met a series with
// native histograms: its caller evaluates the query another way.
var ErrHistograms = errors.New("series has native histograms")

// FloatSelection is one PromQL query's reads of float samples for an
// evaluator that works on plain samples (package engine): every select of
// the query shares one Budget of q's limits, as the selects of one
// storage.Querier do.
type FloatSelection struct {
	q *Querier
	b *Budget
}

// FloatSelection starts the float reads of one query.
func (s *Storage) FloatSelection() *FloatSelection {
	return &FloatSelection{q: s.q, b: s.q.NewBudget()}
}

// Select calls emit with each series that the matchers select, in label
// order, with its float samples in [start, end] (Unix ms, inclusive) in
// time order, one per timestamp (staleness markers included): samples
// decoded from the rows straight into the slice, never through chunks.
// emit runs in the caller's goroutine; the samples are emit's, charged to
// the query's budget until it calls release (at most once, from any
// goroutine). A series with native histograms ends the selection with
// ErrHistograms; a DownsampleLabel matcher is not taken here (use the
// storage.Querier).
func (f *FloatSelection) Select(ctx context.Context, start, end int64, ms []*labels.Matcher, emit func(ls labels.Labels, samples []Sample, release func()) error) error {
	for _, m := range ms {
		if m.Name == DownsampleLabel {
			return fmt.Errorf("float selection of a downsampled selector %q", m.Value)
		}
	}
	return f.q.StreamFloats(ctx, f.b, start, end, ms, func(cs *ChunkSeries) error {
		if len(cs.Chunks) > 0 {
			f.b.Release(cs.Bytes)
			return fmt.Errorf("%w: %s", ErrHistograms, cs.Labels)
		}
		n := cs.Bytes
		return emit(cs.Labels, cs.Floats, func() { f.b.Release(n) })
	})
}
