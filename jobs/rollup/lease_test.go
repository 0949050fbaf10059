package rollup

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promhbase/promhbase/store/embedded"
)

func leaseStoreFor(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"rollup5m"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestLeaseOneHolder: while one holder builds, another waits; it takes the
// lease once the first hands it back, and an expired lease of a holder
// that died is taken over.
func TestLeaseOneHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := leaseStoreFor(t)
		ctx := t.Context()
		now := time.Now
		a := newLease(st, "rollup5m", time.Minute, now)
		b := newLease(st, "rollup5m", time.Minute, now)
		if ok, err := a.tryAcquire(ctx); err != nil || !ok {
			t.Fatalf("a: acquire a free lease: %v %v", ok, err)
		}
		if ok, err := b.tryAcquire(ctx); err != nil || ok {
			t.Fatalf("b: acquired a lease a holds: %v %v", ok, err)
		}
		if ok, err := a.tryAcquire(ctx); err != nil || !ok {
			t.Fatalf("a: take its own lease again: %v %v", ok, err)
		}
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := b.acquire(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("b: acquire while a holds it: %v, want a deadline error", err)
		}
		if err := a.release(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.tryAcquire(ctx); err != nil || !ok {
			t.Fatalf("b: acquire after a released: %v %v", ok, err)
		}
		// b dies holding it: a takes it over once it expired.
		later := func() time.Time { return time.Now().Add(2 * time.Minute) }
		c := newLease(st, "rollup5m", time.Minute, later)
		if ok, err := c.tryAcquire(ctx); err != nil || !ok {
			t.Fatalf("c: take over an expired lease: %v %v", ok, err)
		}
		// b renewing now finds it lost.
		if err := b.renew(ctx); err == nil {
			t.Fatal("b: renewed a lease c took over")
		}
	})
}

// TestLeaseSerializes: holding runs the functions of many holders one at a
// time, renews the lease of a long one, and hands it back after each.
func TestLeaseSerializes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := leaseStoreFor(t)
		ctx := t.Context()
		var inside, most, runs atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := newLease(st, "rollup5m", 90*time.Millisecond, time.Now)
				_, err := l.holding(ctx, func(ctx context.Context) error {
					n := inside.Add(1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					// Longer than the TTL: only renewals keep the others out.
					select {
					case <-time.After(150 * time.Millisecond):
					case <-ctx.Done():
						return ctx.Err()
					}
					inside.Add(-1)
					runs.Add(1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if most.Load() != 1 || runs.Load() != 4 {
			t.Fatalf("%d builds at once at most, %d ran; want 1 and 4", most.Load(), runs.Load())
		}
		l := newLease(st, "rollup5m", time.Minute, time.Now)
		v, err := l.read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if leaseExpiry(v) != 0 {
			t.Fatalf("lease left with expiry %d, want 0 (handed back)", leaseExpiry(v))
		}
	})
}

// TestLeaseLostCancels: a holder whose lease another process took over
// (it expired during a pause) sees its function's context canceled with
// the reason, and its error says so.
func TestLeaseLostCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := leaseStoreFor(t)
		ctx := t.Context()
		a := newLease(st, "rollup5m", 60*time.Millisecond, time.Now)
		_, err := a.holding(ctx, func(fctx context.Context) error {
			// Another process takes the lease as if it had expired.
			thief := newLease(st, "rollup5m", time.Minute, func() time.Time { return time.Now().Add(time.Hour) })
			if ok, err := thief.tryAcquire(ctx); err != nil || !ok {
				t.Errorf("take over: %v %v", ok, err)
			}
			select {
			case <-fctx.Done():
				return fctx.Err()
			case <-time.After(5 * time.Second):
				return nil
			}
		})
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("holding after losing the lease: %v, want the cancellation", err)
		}
		t.Log(err)
	})
}
