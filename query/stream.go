package query

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/store"
)

// mapEntryOverhead is what a scan's map entry costs besides its key (an
// estimate, on the high side).
const mapEntryOverhead = 64

// scanGroup is the scans of one metric name: one per metric UID and salt
// bucket, each into a selection of its own.
type scanGroup struct {
	subs []*selection
	left atomic.Int64  // scans not yet done
	done chan struct{} // closed when left reaches 0
}

// stream runs the scans of groups (those of one metric name each, the
// groups in name order) up to ScanConcurrency at once, in order, and hands
// on the series of each group, sorted by labels, once all its scans are
// done. Metric by metric is label order: labels are sorted by name, and
// every stored series has __name__, which sorts before every lower-case
// label name (Stream makes one group of all when a tag name sorts before
// __name__, see earlyTagNames). Scans of later groups run ahead meanwhile, within
// half the budget (see Budget.reserve). The first error cancels the rest;
// stream returns after every scan has ended.
func (s *selection) stream(ctx context.Context, groups [][]store.ScanRequest, emit func(*ChunkSeries) error) error {
	if len(groups) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWake := context.AfterFunc(ctx, s.budget.wake)
	defer stopWake()
	var head atomic.Int64 // the group being handed on
	gs := make([]*scanGroup, len(groups))
	for i, reqs := range groups {
		g := &scanGroup{subs: make([]*selection, len(reqs)), done: make(chan struct{})}
		g.left.Store(int64(len(reqs)))
		gs[i] = g
	}
	sem := make(chan struct{}, s.q.opts.ScanConcurrency)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gi, reqs := range groups {
			g, gi := gs[gi], int64(gi)
			for i, req := range reqs {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				sub := s.sub()
				sub.ahead = func() bool { return head.Load() < gi }
				g.subs[i] = sub
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := sub.scan(ctx, req)
					<-sem
					if err != nil {
						cancel(err)
						return
					}
					if g.left.Add(-1) == 0 {
						close(g.done)
					}
				}()
			}
		}
	}()
	err := func() error {
		for gi, g := range gs {
			head.Store(int64(gi))
			s.budget.wake()
			select {
			case <-g.done:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			series, err := g.collect()
			g.subs = nil
			if err != nil {
				return err
			}
			for i, cs := range series {
				series[i] = nil
				if err := emit(cs); err != nil {
					for _, rest := range series[i+1:] {
						s.budget.Release(rest.Bytes)
					}
					return err
				}
			}
		}
		return nil
	}()
	cancel(err)
	wg.Wait()
	for _, g := range gs {
		g.release()
	}
	return err
}

// release gives back what the group's scans hold, when the group was not
// collected (the stream ended early).
func (g *scanGroup) release() {
	for _, sub := range g.subs {
		if sub == nil {
			continue
		}
		sub.budget.Release(sub.keyBytes)
		for _, ser := range sub.series {
			if ser != nil {
				sub.budget.Release(ser.charged)
			}
		}
	}
	g.subs = nil
}

// collect returns the series of a group's scans that have samples, sorted
// by labels, series of equal labels joined; it releases what the others
// and the scans' maps were charged. The parts of one series that the
// parts of a split scan found (its rows of different hours) are joined
// by row key first, in the parts' order, which is the rows' key order
// and so their time order: the sort then orders each series once.
func (g *scanGroup) collect() ([]*ChunkSeries, error) {
	// The series with their sort keys side by side, so that the sort reads
	// a run of memory and each series' label data, not the series too.
	type entry struct {
		labels labels.Labels
		minT   int64
		cs     *ChunkSeries
	}
	var ents []entry
	var b *Budget
	var seen map[string]int // row key -> index in ents, when split
	if len(g.subs) > 1 {
		seen = map[string]int{}
	}
	for _, sub := range g.subs {
		b = sub.budget
		b.Release(sub.keyBytes)
		for key, ser := range sub.series {
			if ser == nil {
				continue
			}
			if ser.cc == nil || ser.cc.n == 0 {
				b.Release(ser.charged)
				continue
			}
			ser.cc.finish()
			cs := &ChunkSeries{Labels: ser.Labels, Chunks: ser.cc.chunks, Floats: ser.cc.floats, Samples: ser.cc.n, Bytes: ser.charged}
			if seen != nil {
				if i, ok := seen[key]; ok {
					if err := joinInto(ents[i].cs, cs); err != nil {
						return nil, err
					}
					continue
				}
				seen[key] = len(ents)
			}
			minT := int64(0)
			if len(cs.Floats) > 0 {
				minT = cs.Floats[0].T
			} else {
				minT = cs.Chunks[0].MinT
			}
			ents = append(ents, entry{cs.Labels, minT, cs})
		}
		sub.series = nil
	}
	slices.SortFunc(ents, func(a, b entry) int {
		if c := labels.Compare(a.labels, b.labels); c != 0 {
			return c
		}
		return cmpT(a.minT, b.minT) // one label set under two row keys
	})
	out := make([]*ChunkSeries, len(ents))
	for i, e := range ents {
		out[i] = e.cs
	}
	return joinChunkSeries(out)
}
