package query

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrTooManyBytes means a request needed to hold more bytes at once than
// its budget allows.
var ErrTooManyBytes = errors.New("query needs too much memory")

// DefaultMaxBytes is the byte budget of a request when Options.MaxBytes is
// 0: 512 MiB.
const DefaultMaxBytes = 512 << 20

// Budget is what one request may take: the samples of all its queries
// together (at most maxSamples) and the bytes it holds at once (at most
// maxBytes): the chunks of the series scanned and not yet handed on, and
// whatever its caller charges with Reserve. One remote-read request (all
// its queries) or one PromQL query (all its selects) has one Budget. It is
// safe for concurrent use.
type Budget struct {
	maxSamples, maxBytes int64

	samples atomic.Int64 // counted without the lock: once a row

	mu   sync.Mutex
	cond sync.Cond
	held int64
}

// NewBudget returns a budget of maxSamples samples in all and maxBytes
// bytes held at once.
func NewBudget(maxSamples, maxBytes int64) *Budget {
	b := &Budget{maxSamples: maxSamples, maxBytes: maxBytes}
	b.cond.L = &b.mu
	return b
}

// NewBudget returns a budget with q's limits (Options.MaxSamples,
// Options.MaxBytes).
func (q *Querier) NewBudget() *Budget {
	return NewBudget(q.maxSamples.Load(), q.opts.MaxBytes)
}

// Held is the number of bytes held now.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// addSamples counts n more samples.
func (b *Budget) addSamples(n int) error {
	if b.samples.Add(int64(n)) > b.maxSamples {
		return fmt.Errorf("%w: more than %d in the request (--query.max-samples)", ErrTooManySamples, b.maxSamples)
	}
	return nil
}

// Reserve charges n more bytes held, or fails with ErrTooManyBytes when
// they do not fit.
func (b *Budget) Reserve(n int64) error { return b.reserve(context.Background(), n, nil) }

// reserve charges n bytes. When they do not fit and ahead reports true
// (the caller works ahead of what is being sent), it waits until they fit
// in half the budget, ahead turns false, or ctx ends; otherwise it fails
// with ErrTooManyBytes. Work ahead thus never takes more than half the
// budget, and what is sent next always has the other half.
func (b *Budget) reserve(ctx context.Context, n int64, ahead func() bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ahead != nil && ahead() && b.held+n > b.maxBytes/2 && ctx.Err() == nil {
		b.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.held+n > b.maxBytes {
		return fmt.Errorf("%w: %d bytes held at once, more than %d (--query.max-bytes-per-query); select fewer series or a shorter range", ErrTooManyBytes, b.held+n, b.maxBytes)
	}
	b.held += n
	return nil
}

// Release gives back n bytes charged before.
func (b *Budget) Release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// wake wakes the reservations that wait, to check their conditions again.
func (b *Budget) wake() {
	b.mu.Lock()
	b.mu.Unlock() //nolint:staticcheck,gocritic // a waiter between its check and Wait sees the change
	b.cond.Broadcast()
}
