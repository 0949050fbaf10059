package query

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/promhbase/promhbase/store"
)

// mapEntryOverhead is what a scan's map entry costs besides its key (an
// estimate, on the high side).
const mapEntryOverhead = 64

// scanGroup is the scans of one group (of one metric name, or of a whole
// query), each into a selection of its own.
type scanGroup struct {
	subs    []*selection
	claimed []atomic.Bool // scan i is started (by the feeder or the caller)
	left    atomic.Int64  // scans not yet done
	done    chan struct{} // closed when left reaches 0
}

// schedule is the one scheduler of the package's queries. It runs the
// scans of groups, in order, up to ScanConcurrency at once (OpenTSDB scans
// its salt buckets in parallel too), each into a selection of its own: a
// series lives in one metric UID and one salt bucket (the salt hashes the
// metric and tags, not the time), so the scans' series overlap only where
// split cut a scan in parts (collect joins them), and only the budget is
// shared.
//
// handOn gets the selections of each group, in group order and in the
// caller's goroutine, once all the group's scans are done; they are then
// handOn's, to collect (see collect). Scans of later groups run ahead
// meanwhile, within half the budget (see Budget.reserve). run (the
// pipeline of every selection) makes a group of each metric name, in
// name order, for Stream, to hand on series in label order metric by
// metric, and one group of all the scans for the others.
//
// The caller's goroutine does not only wait: it runs the scans of the
// group it waits for that no goroutine has started yet (each scan is
// claimed once, by the feeder that starts goroutines or by the caller),
// so that a query of few scans does not wait for an idle core to wake
// (0.1 ms when it was busy a moment before, 0.6 ms and more after 10 ms
// idle, on the 2-core machine) before its first scan runs. So a query
// runs at most ScanConcurrency scans on goroutines of their own, and one
// on the caller's.
//
// The first error, of a scan or of handOn, cancels the rest. schedule
// returns after every scan has ended, having released what the
// selections of the groups not handed on hold.
func (s *selection) schedule(ctx context.Context, groups [][]store.ScanRequest, handOn func(subs []*selection) error) error {
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
		g := &scanGroup{subs: make([]*selection, len(reqs)), claimed: make([]atomic.Bool, len(reqs)), done: make(chan struct{})}
		g.left.Store(int64(len(reqs)))
		if len(reqs) == 0 {
			close(g.done)
		}
		gs[i] = g
	}
	// run runs scan i of group gi into a selection of its own.
	run := func(gi, i int) {
		g := gs[gi]
		sub := s.sub()
		sub.ahead = func() bool { return head.Load() < int64(gi) || s.behind != nil && s.behind() }
		g.subs[i] = sub
		if err := sub.scan(ctx, groups[gi][i]); err != nil {
			cancel(err)
			return
		}
		if g.left.Add(-1) == 0 {
			close(g.done)
		}
	}
	sem := make(chan struct{}, s.q.opts.ScanConcurrency)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gi, reqs := range groups {
			for i := range reqs {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				if gs[gi].claimed[i].Swap(true) {
					<-sem // the caller runs it
					continue
				}
				wg.Go(func() {
					run(gi, i)
					<-sem
				})
			}
		}
	}()
	err := func() error {
		for gi, g := range gs {
			head.Store(int64(gi))
			s.budget.wake()
			for i := range g.claimed {
				if ctx.Err() == nil && !g.claimed[i].Swap(true) {
					run(gi, i)
				}
			}
			select {
			case <-g.done:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			subs := g.subs
			g.subs = nil
			if err := handOn(subs); err != nil {
				return err
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
// handed on (the query ended early).
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
