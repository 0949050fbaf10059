package blockimport

import (
	"context"
	"fmt"
	"sync"
)

// pipeline sends batches on up to n requests at once and reports them
// acknowledged in the order they were made, so that the progress
// recorded (acked) never passes a batch still in flight. The first
// failure cancels the others; wait returns it.
type pipeline struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	slots  chan struct{}
	acked  func(complete, samples int64) error
	wg     sync.WaitGroup

	mu   sync.Mutex
	seq  int // the next batch's number
	next int // the number of the next batch to report
	done map[int][2]int64
	err  error
}

func newPipeline(ctx context.Context, n int, acked func(complete, samples int64) error) *pipeline {
	ctx, cancel := context.WithCancelCause(ctx)
	return &pipeline{ctx: ctx, cancel: cancel, slots: make(chan struct{}, max(n, 1)), acked: acked, done: map[int][2]int64{}}
}

// send runs do, a batch of samples that owns its memory from now on;
// complete is the number of series sent whole once it and every batch
// before it are acknowledged.
func (p *pipeline) send(do func(ctx context.Context) error, samples, complete int64) error {
	select {
	case p.slots <- struct{}{}:
	case <-p.ctx.Done():
		return p.wait()
	}
	seq := p.seq
	p.seq++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := do(p.ctx)
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

// finish ends a block once its series set is read (err: how reading
// ended): the last batch is flushed through index, and every batch waited
// for.
func (p *pipeline) finish(err error, flush func(index int64) error, index int64) error {
	if err != nil {
		_ = p.wait()
		return fmt.Errorf("read series: %w", err)
	}
	if err := flush(index); err != nil {
		return err
	}
	return p.wait()
}

// abort ends a block on err, once the batches in flight have ended (their
// acknowledgements are recorded before the import returns).
func (p *pipeline) abort(err error) error {
	p.mu.Lock()
	p.fail(err)
	p.mu.Unlock()
	_ = p.wait()
	return err
}
