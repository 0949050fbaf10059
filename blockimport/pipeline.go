package blockimport

import (
	"context"
	"sync"

	"github.com/prometheus/prometheus/prompb"
)

// pipeline sends batches on up to n requests at once and reports them
// acknowledged in the order they were made, so that the progress
// recorded (acked) never passes a batch still in flight. The first
// failure cancels the others; wait returns it.
type pipeline struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	s      Sender
	slots  chan struct{}
	acked  func(complete, samples int64) error
	wg     sync.WaitGroup

	mu   sync.Mutex
	seq  int // the next batch's number
	next int // the number of the next batch to report
	done map[int][2]int64
	err  error
}

func newPipeline(ctx context.Context, s Sender, n int, acked func(complete, samples int64) error) *pipeline {
	ctx, cancel := context.WithCancelCause(ctx)
	return &pipeline{ctx: ctx, cancel: cancel, s: s, slots: make(chan struct{}, max(n, 1)), acked: acked, done: map[int][2]int64{}}
}

// send sends req, which it owns from now on; complete is the number of
// series sent whole once it and every batch before it are acknowledged.
func (p *pipeline) send(req *prompb.WriteRequest, complete int64) error {
	select {
	case p.slots <- struct{}{}:
	case <-p.ctx.Done():
		return p.wait()
	}
	var samples int64
	for i := range req.Timeseries {
		samples += int64(len(req.Timeseries[i].Samples) + len(req.Timeseries[i].Histograms))
	}
	seq := p.seq
	p.seq++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.s.Send(p.ctx, req)
		<-p.slots
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.fail(err)
			return
		}
		p.done[seq] = [2]int64{complete, samples}
		for p.err == nil {
			d, ok := p.done[p.next]
			if !ok {
				break
			}
			delete(p.done, p.next)
			p.next++
			if err := p.acked(d[0], d[1]); err != nil {
				p.fail(err)
			}
		}
	}()
	return nil
}

// fail records the first error and cancels what is in flight; p.mu held.
func (p *pipeline) fail(err error) {
	if p.err == nil {
		p.err = err
		p.cancel(err)
	}
}

// wait waits for the batches in flight and returns the first error.
func (p *pipeline) wait() error {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
