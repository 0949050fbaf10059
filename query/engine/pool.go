package engine

import (
	"context"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/query"
)

// ownQueue is how many series worker 0 (the caller) keeps waiting while
// it reads: one, so that the caller hands the next series to another
// worker before it evaluates its own, and holds no more than one charged
// to the budget while the scans of the selector's next metric run.
// Each other worker's channel holds chanQueue, to even out series of
// different sizes. Waiting series hold their rows as stored, a few bytes
// a sample.
const (
	ownQueue  = 1
	chanQueue = 16
)

// seriesPool decodes and evaluates the series of one selector on its
// workers. Series go to the workers in turn (series i to worker i mod
// workers), so that what a worker folds, and so the order of sums, does
// not change from one run to the next. Workers 1 and up are goroutines
// fed by channels; worker 0 is the caller's goroutine, which keeps its
// series until ownQueue of them wait, then evaluates the oldest between
// two reads, and the rest once the reads end (finish): a query of few
// series wakes one goroutine fewer (waking a goroutine on an idle core
// took 0.1-0.4 ms on the 2-core machine, a fifth of a 2-series query),
// and on one core none.
type seriesPool struct {
	ctx    context.Context
	cancel context.CancelFunc
	fn     func(w, idx int, ls labels.Labels, samples []query.Sample) error
	jobs   []chan job // workers 1 and up; jobs[0] is nil
	own    []job      // worker 0's series not evaluated yet
	mem0   *workerMem
	keep0  func()
	next   int  // the index of the next series
	closed bool // the channels are closed (finish or abandon)
	wg     sync.WaitGroup

	errMu    sync.Mutex
	firstErr error
}

// newSeriesPool starts workers-1 worker goroutines, each with memory from
// mem, evaluating with fn.
func newSeriesPool(ctx context.Context, cancel context.CancelFunc, workers int, mem func() (*workerMem, func()), fn func(w, idx int, ls labels.Labels, samples []query.Sample) error) *seriesPool {
	p := &seriesPool{ctx: ctx, cancel: cancel, fn: fn, jobs: make([]chan job, max(workers, 1))}
	p.mem0, p.keep0 = mem()
	for w := 1; w < len(p.jobs); w++ {
		p.jobs[w] = make(chan job, chanQueue)
		p.wg.Go(func() {
			wm, keep := mem()
			defer keep()
			for j := range p.jobs[w] {
				p.run(w, wm, j)
			}
		})
	}
	return p
}

// send hands j to its worker, next in turn.
func (p *seriesPool) send(j job) error {
	j.idx = p.next
	w := p.next % len(p.jobs)
	if w == 0 {
		if err := p.ctx.Err(); err != nil {
			if j.rows != nil {
				j.rows.Release()
			}
			return err
		}
		p.next++
		p.own = append(p.own, j)
		if len(p.own) > ownQueue {
			first := p.own[0]
			p.own[0] = job{} // not kept alive by the queue's array
			p.own = p.own[1:]
			p.run(0, p.mem0, first)
		}
		return nil
	}
	select {
	case p.jobs[w] <- j:
		p.next++
		return nil
	case <-p.ctx.Done():
		if j.rows != nil {
			j.rows.Release()
		}
		return p.ctx.Err()
	}
}

// finish evaluates worker 0's waiting series, waits for the other
// workers, and returns the first error of a worker.
func (p *seriesPool) finish() error {
	p.closeJobs()
	for _, j := range p.own {
		p.run(0, p.mem0, j)
	}
	p.own = nil
	p.keep0()
	p.wg.Wait()
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.firstErr
}

// closeJobs closes the other workers' channels, once.
func (p *seriesPool) closeJobs() {
	if p.closed {
		return
	}
	p.closed = true
	for w := 1; w < len(p.jobs); w++ {
		close(p.jobs[w])
	}
}

// abandon ends the pool when finish was not reached (a panic in the
// caller's evaluation): the other workers release what they were given
// and stop, worker 0's waiting series are released, and it returns
// once every worker has.
func (p *seriesPool) abandon() {
	if p.closed {
		return
	}
	p.cancel()
	p.closeJobs()
	for _, j := range p.own {
		if j.rows != nil {
			j.rows.Release()
		}
	}
	p.own = nil
	p.wg.Wait()
}

// run decodes j's rows, if any, into wm's buffer and evaluates it on
// worker w; after a failure it only releases the rows.
func (p *seriesPool) run(w int, wm *workerMem, j job) {
	if p.ctx.Err() != nil {
		if j.rows != nil {
			j.rows.Release()
		}
		return
	}
	samples, ls := j.samples, j.labels
	if j.rows != nil {
		var err error
		wm.buf, err = wm.dec.Decode(wm.buf[:0], j.rows)
		j.rows.Release()
		if err != nil {
			p.fail(handOver("storage", "%v", err))
			return
		}
		samples, ls = wm.buf, j.rows.Labels
	}
	if err := p.fn(w, j.idx, ls, samples); err != nil {
		p.fail(err)
	}
}

// fail keeps err when it is the first and ends the selection.
func (p *seriesPool) fail(err error) {
	p.errMu.Lock()
	if p.firstErr == nil {
		p.firstErr = err
	}
	p.errMu.Unlock()
	p.cancel()
}
