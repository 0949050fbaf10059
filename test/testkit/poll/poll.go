// Package poll waits, in tests and test harnesses, for a condition that
// can be observed (a server ready, a sample readable, a metric counted, a
// process gone): it checks the condition at once and then every interval
// until it holds, and when the bound passes first it says what it last
// saw. A poll returns as soon as the condition holds, where a fixed sleep
// would always wait its whole length. It is for tests only.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Wait calls check at once and then every interval until check reports
// done or an error, for at most bound. It returns nil once check is
// done; check's error as it is; ctx's error when ctx ends first; and,
// when bound passes first, an error "not <what> after <bound> (last saw:
// <what check last saw>)". what names the awaited state ("ready",
// "compacted"); saw is check's account of what it found instead.
func Wait(ctx context.Context, bound, interval time.Duration, what string, check func() (done bool, saw string, err error)) error {
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		done, saw, err := check()
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case !time.Now().Before(deadline):
			return fmt.Errorf("not %s after %s (last saw: %s)", what, bound, saw)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w (last saw: %s)", what, ctx.Err(), saw)
		case <-tick.C:
		}
	}
}

// Until is Wait in a test: it fails the test (t.Fatal) with what and
// what check last saw when check is not done within bound, or when the
// test's context ends first. Until must be called from the test's
// goroutine.
func Until(t testing.TB, bound, interval time.Duration, what string, check func() (done bool, saw string)) {
	t.Helper()
	if err := Wait(t.Context(), bound, interval, what, func() (bool, string, error) {
		done, saw := check()
		return done, saw, nil
	}); err != nil {
		t.Fatal(err)
	}
}
