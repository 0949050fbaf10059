package uid

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// hookedStore counts Increments and runs hook (when set) before each with
// its number (from 1); a hook's error fails the call, which then changes
// nothing.
type hookedStore struct {
	store.Store
	increments atomic.Int64
	hook       func(ctx context.Context, call int64) error
}

func (h *hookedStore) Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	call := h.increments.Add(1)
	if h.hook != nil {
		if err := h.hook(ctx, call); err != nil {
			return 0, err
		}
	}
	return h.Store.Increment(ctx, table, row, family, qualifier, delta)
}

// gateFirst returns UIDs over a hookedStore whose first Increment
// closes entered and waits until release is closed.
func gateFirst(t *testing.T) (*UIDs, *gate, chan struct{}) {
	return gateFirstThen(t, nil)
}

// gateFirstThen is gateFirst whose later Increments run then (when set).
func gateFirstThen(t *testing.T, then func(ctx context.Context, call int64) error) (*UIDs, *gate, chan struct{}) {
	g := &gate{entered: make(chan struct{})}
	release := make(chan struct{})
	g.hookedStore = hookedStore{Store: openUIDStore(t), hook: func(ctx context.Context, call int64) error {
		if call == 1 {
			close(g.entered)
			<-release
			return nil
		}
		if then != nil {
			return then(ctx, call)
		}
		return nil
	}}
	return newTestUIDs(t, &g.hookedStore, mapping.DefaultLayout()), g, release
}

type gate struct {
	hookedStore
	entered chan struct{}
}

// errOnlyCtx reports its end through Err alone: Done never fires.
type errOnlyCtx struct {
	context.Context
	ended atomic.Bool
}

func (c *errOnlyCtx) Err() error {
	if c.ended.Load() {
		return context.Canceled
	}
	return nil
}

type claimResult struct {
	n, top int64
	err    error
}

// goClaim claims n UIDs of tag values in a goroutine of its own.
func goClaim(ctx context.Context, u *UIDs, n int64) chan claimResult {
	ch := make(chan claimResult, 1)
	go func() {
		top, err := u.claim(ctx, KindTagV, n)
		ch <- claimResult{n, top, err}
	}()
	return ch
}

// recv returns what ch gives, failing the test after 20 s rather than
// hanging until the test binary's timeout.
func recv(t *testing.T, ch chan claimResult) claimResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("a claim did not return within 20 s")
		return claimResult{}
	}
}

// waitQueued waits until n claims of tag values are queued.
func waitQueued(u *UIDs, n int) {
	q := &u.counters[KindTagV]
	for {
		q.mu.Lock()
		queued := len(q.waiting)
		q.mu.Unlock()
		if queued == n {
			return
		}
		runtime.Gosched()
	}
}

// checkTiled fails unless the ranges of res are disjoint and tile 1 to
// their sum, and the counter's next claim gets the UID after it.
func checkTiled(t *testing.T, u *UIDs, res []claimResult) {
	t.Helper()
	var total int64
	var ranges [][2]int64
	for _, r := range res {
		if r.err != nil {
			t.Fatalf("claim of %d: %v", r.n, r.err)
		}
		ranges = append(ranges, [2]int64{r.top - r.n + 1, r.top})
		total += r.n
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	next := int64(1)
	for _, r := range ranges {
		if r[0] != next {
			t.Fatalf("ranges %v: one starts at %d, want %d", ranges, r[0], next)
		}
		next = r[1] + 1
	}
	if next-1 != total {
		t.Fatalf("ranges end at %d, want %d", next-1, total)
	}
	if top, err := u.claim(context.Background(), KindTagV, 1); err != nil || top != total+1 {
		t.Fatalf("claim after them = %d, %v; want %d", top, err, total+1)
	}
}

// TestClaim: claims made while an increment is under way share the next
// one, led by the first of them, each with a range of its own, the
// ranges tiling the counter's; an increment that failed because its
// leader's context ended is made again for the others; a claim whose
// context ends while it is queued leaves at once and takes no UIDs; a
// store error is the claim's, not tried again.
func TestClaim(t *testing.T) {
	const others = 20
	t.Run("combined", func(t *testing.T) {
		u, h, release := gateFirst(t)
		ctx := context.Background()
		first := goClaim(ctx, u, 3)
		<-h.entered
		var chans []chan claimResult
		for i := range others {
			chans = append(chans, goClaim(ctx, u, int64(i+1)))
		}
		waitQueued(u, others)
		close(release)
		res := []claimResult{recv(t, first)}
		for _, ch := range chans {
			res = append(res, recv(t, ch))
		}
		checkTiled(t, u, res)
		// The first claim's, one for all that queued behind it, the
		// last claim's.
		if n := h.increments.Load(); n != 3 {
			t.Fatalf("%d increments, want 3", n)
		}
	})
	t.Run("leader's context ends", func(t *testing.T) {
		entered, release, second := make(chan struct{}), make(chan struct{}), make(chan struct{})
		h := &hookedStore{Store: openUIDStore(t), hook: func(ctx context.Context, call int64) error {
			switch call {
			case 1:
				close(entered)
				<-release
			case 2: // the next leader's, until its context ends
				close(second)
				<-ctx.Done()
				return fmt.Errorf("increment: %w", ctx.Err())
			}
			return nil
		}}
		u := newTestUIDs(t, h, mapping.DefaultLayout())
		ctx := context.Background()
		first := goClaim(ctx, u, 3)
		<-entered
		leaderCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		leader := goClaim(leaderCtx, u, 5)
		waitQueued(u, 1)
		var chans []chan claimResult
		for i := range others {
			chans = append(chans, goClaim(ctx, u, int64(i+1)))
		}
		waitQueued(u, 1+others)
		close(release)
		<-second
		cancel()
		if r := recv(t, leader); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("the leader whose context ended: %v, want context.Canceled", r.err)
		}
		res := []claimResult{recv(t, first)}
		for _, ch := range chans {
			res = append(res, recv(t, ch))
		}
		checkTiled(t, u, res)
		if n := h.increments.Load(); n < 4 {
			t.Fatalf("%d increments, want the failed one made again", n)
		}
	})
	t.Run("queued claim's context ends", func(t *testing.T) {
		u, h, release := gateFirst(t)
		ctx := context.Background()
		first := goClaim(ctx, u, 3)
		<-h.entered
		qctx, cancel := context.WithCancel(ctx)
		queued := goClaim(qctx, u, 7)
		waitQueued(u, 1)
		cancel()
		// It leaves while the first increment is still held.
		if r := recv(t, queued); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("queued claim whose context ended: %v, want context.Canceled", r.err)
		}
		close(release)
		checkTiled(t, u, []claimResult{recv(t, first)})
	})
	t.Run("store error", func(t *testing.T) {
		h := &hookedStore{Store: openUIDStore(t), hook: func(_ context.Context, call int64) error {
			if call == 1 { // as a client's own RPC deadline reports it
				return fmt.Errorf("%w: increment: %w", store.ErrUnavailable, context.DeadlineExceeded)
			}
			return nil
		}}
		u := newTestUIDs(t, h, mapping.DefaultLayout())
		if _, err := u.claim(context.Background(), KindTagV, 4); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("claim = %v, want store.ErrUnavailable", err)
		}
		if n := h.increments.Load(); n != 1 {
			t.Fatalf("%d increments, want 1 (not made again)", n)
		}
		checkTiled(t, u, nil)
	})

	t.Run("store error of a combined increment", func(t *testing.T) {
		u, g, release := gateFirstThen(t, func(_ context.Context, call int64) error {
			if call == 2 { // the leader's context alive: not made again
				return fmt.Errorf("%w: increment: %w", store.ErrUnavailable, context.DeadlineExceeded)
			}
			return nil
		})
		ctx := context.Background()
		first := goClaim(ctx, u, 3)
		<-g.entered
		leader := goClaim(ctx, u, 5)
		waitQueued(u, 1)
		follower := goClaim(ctx, u, 7)
		waitQueued(u, 2)
		close(release)
		for _, ch := range []chan claimResult{leader, follower} {
			if r := recv(t, ch); !errors.Is(r.err, store.ErrUnavailable) {
				t.Fatalf("claim of %d = %v, want store.ErrUnavailable", r.n, r.err)
			}
		}
		if n := g.increments.Load(); n != 2 {
			t.Fatalf("%d increments, want 2 (the failed one not made again)", n)
		}
		checkTiled(t, u, []claimResult{recv(t, first)})
	})
	t.Run("leader panics", func(t *testing.T) {
		u, g, release := gateFirstThen(t, func(_ context.Context, call int64) error {
			if call == 2 {
				panic("store panic")
			}
			return nil
		})
		ctx := context.Background()
		first := goClaim(ctx, u, 3)
		<-g.entered
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			_, _ = u.claim(ctx, KindTagV, 5)
		}()
		waitQueued(u, 1)
		follower := goClaim(ctx, u, 7)
		waitQueued(u, 2)
		close(release)
		if r := recv(t, follower); r.err == nil {
			t.Fatal("the claim combined into the increment that panicked got no error")
		}
		select {
		case p := <-panicked:
			if p == nil {
				t.Fatal("the leader's panic was swallowed")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the leader did not return")
		}
		// The queue is not left busy: later claims go on.
		checkTiled(t, u, []claimResult{recv(t, first)})
	})
	t.Run("next leader's context ended", func(t *testing.T) {
		// A context whose end the claim sees only through Err, so that it
		// is made the next leader (its Done never fires) with its context
		// already ended.
		var dead atomic.Int64
		u, g, release := gateFirstThen(t, func(ctx context.Context, _ int64) error {
			if ctx.Err() != nil {
				dead.Add(1)
			}
			return nil
		})
		ctx := context.Background()
		first := goClaim(ctx, u, 3)
		<-g.entered
		ended := &errOnlyCtx{Context: ctx}
		queued := goClaim(ended, u, 5)
		waitQueued(u, 1)
		behind := goClaim(ctx, u, 7)
		waitQueued(u, 2)
		ended.ended.Store(true)
		close(release)
		if r := recv(t, queued); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("next leader whose context ended: %v, want context.Canceled", r.err)
		}
		res := []claimResult{recv(t, first), recv(t, behind)}
		if n := dead.Load(); n != 0 {
			t.Fatalf("%d increments made with an ended context", n)
		}
		if n := g.increments.Load(); n != 2 {
			t.Fatalf("%d increments, want 2 (the first, then the claim behind alone)", n)
		}
		checkTiled(t, u, res)
	})
}
