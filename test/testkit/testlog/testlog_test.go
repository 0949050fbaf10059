package testlog

import (
	"fmt"
	"sync"
	"testing"
)

// TestBuffer: writes from many goroutines all land, whole; Count and
// String read them.
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				fmt.Fprintf(&b, "w%d line %d\n", w, i)
			}
		})
	}
	wg.Wait()
	if n := b.Count(" line "); n != 200 {
		t.Errorf("Count = %d, want 200", n)
	}
	if n := b.Count("w3 line 49\n"); n != 1 {
		t.Errorf("w3's last line written %d times, want once:\n%s", n, b.String())
	}
}
