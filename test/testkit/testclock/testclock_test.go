package testclock

import (
	"sync"
	"testing"
	"time"
)

// TestClock: Now reads what New and Add set, also while other goroutines
// move the clock on.
func TestClock(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Add(time.Second)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(400*time.Second); !got.Equal(want) {
		t.Errorf("Now = %v after 400 Adds of a second, want %v", got, want)
	}
}
