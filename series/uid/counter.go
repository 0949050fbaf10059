package uid

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// counterQueue combines the counter increments of the allocations of one
// kind that run at once: one of them (the leader) takes the counts of
// every allocation waiting at the time, increments the counter row by
// their sum and hands each its own range of the result; the ones that
// came meanwhile wait for the next leader, the first of them.
//
// Why: each increment reads the counter cell and commits the new value
// under the row's lock (on HBase, one RPC to the row's region). With 16
// requests of new series at once, each waited for the 15 before it: the
// counter row was 5.8 % of the write path's time at 2 cores, the largest
// wait (docs/bench/write-scaling.md). The counter cell still holds the
// highest UID assigned, as a TSD reads and increments it; which request
// gets which range of a combined increment is arbitrary, as the order of
// separate increments was.
type counterQueue struct {
	mu      sync.Mutex
	busy    bool // a leader is incrementing
	waiting []*counterClaim
}

// counterClaim is one allocation's count and, once done is closed, its
// range's last UID or the increment's error (leaderCtx: the error came
// from a leader whose context had ended); lead, when set instead, says
// that it is the next leader.
type counterClaim struct {
	n         int64
	top       int64
	err       error
	leaderCtx bool
	lead      bool
	done      chan struct{}
}

// claim increments kind's counter by n, combined with the claims of
// other allocations of kind waiting at the time, and returns the last of
// the n UIDs that are this claim's: top-n+1 to top. A claim that the
// increment of another's (the leader's) failed for, while the leader's
// context had ended, is made again; any other error is the claim's.
func (u *UIDs) claim(ctx context.Context, kind Kind, n int64) (int64, error) {
	for {
		c, err := u.claimOnce(ctx, kind, n)
		if err != nil && c.leaderCtx && ctx.Err() == nil {
			continue
		}
		return c.top, err
	}
}

// claimOnce queues a claim of n and, when no leader is incrementing,
// leads. While it waits, an end of ctx takes the claim out of the queue
// unless a leader has taken it (then the wait is that leader's one store
// call); made the next leader after its ctx ended, it passes the lead on.
func (u *UIDs) claimOnce(ctx context.Context, kind Kind, n int64) (*counterClaim, error) {
	q := &u.counters[kind]
	c := &counterClaim{n: n, done: make(chan struct{})}
	q.mu.Lock()
	q.waiting = append(q.waiting, c)
	if q.busy {
		q.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			q.mu.Lock()
			if i := slices.Index(q.waiting, c); i >= 0 && !c.lead {
				q.waiting = slices.Delete(q.waiting, i, i+1)
				q.mu.Unlock()
				return c, fmt.Errorf("allocate %d uids of kind %s: %w", n, kind, ctx.Err())
			}
			q.mu.Unlock()
			<-c.done
		}
		if !c.lead {
			return c, c.err
		}
		q.mu.Lock()
		if err := ctx.Err(); err != nil {
			// Made the next leader after its context ended: it does not
			// lead (every claim of its batch would fail with it), but
			// leaves and passes the lead on.
			q.waiting = slices.DeleteFunc(q.waiting, func(w *counterClaim) bool { return w == c })
			q.handOffLocked()
			q.mu.Unlock()
			return c, fmt.Errorf("allocate %d uids of kind %s: %w", n, kind, err)
		}
	}
	q.busy = true
	batch := q.waiting
	q.waiting = nil
	q.mu.Unlock()
	u.lead(ctx, q, kind, batch, c)
	return c, c.err
}

// lead increments kind's counter for the claims of batch, of which c is
// the leader's own, sets each claim's range or error and wakes the others,
// then makes the first claim queued meanwhile the next leader, or ends
// q's busy state. The wakes and hand-off are deferred, so that a panic in
// the store does not leave the queue busy for ever.
func (u *UIDs) lead(ctx context.Context, q *counterQueue, kind Kind, batch []*counterClaim, c *counterClaim) {
	var total int64
	for _, b := range batch {
		total += b.n
	}
	handed := false
	defer func() {
		for _, b := range batch {
			if !handed {
				b.err = fmt.Errorf("allocate uids of kind %s: the counter's increment panicked", kind)
			}
			if b != c {
				close(b.done)
			}
		}
		q.mu.Lock()
		q.handOffLocked()
		q.mu.Unlock()
	}()
	top, err := u.st.Increment(ctx, u.table, maxIDRow, FamilyID, kind.Qualifier(), total)
	ended := err != nil && ctx.Err() != nil
	end := top - total
	for _, b := range batch {
		end += b.n
		b.err, b.leaderCtx = err, ended && b != c
		if err == nil {
			b.top = end
		}
	}
	handed = true
}

// handOffLocked makes the first claim queued the next leader, or ends
// q's busy state when none is. The caller holds q.mu and is the leader,
// or the next leader leaving.
func (q *counterQueue) handOffLocked() {
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		next.lead = true
		close(next.done)
	} else {
		q.busy = false
	}
}
