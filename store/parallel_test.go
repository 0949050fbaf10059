package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestParallel checks Parallel's contract: every index runs once, the
// first error is returned and stops the calls not yet started, and a
// cancelled context is returned when it kept calls from running.
func TestParallel(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name        string
		n, workers  int
		failAt      int // index whose call fails; -1 for none
		cancelFirst bool
		wantErr     error
		wantAll     bool // every index ran exactly once
	}{
		{name: "none", n: 0, workers: 4, failAt: -1, wantAll: true},
		{name: "serial", n: 10, workers: 1, failAt: -1, wantAll: true},
		{name: "concurrent", n: 100, workers: 8, failAt: -1, wantAll: true},
		{name: "more workers than calls", n: 3, workers: 16, failAt: -1, wantAll: true},
		{name: "serial error", n: 10, workers: 1, failAt: 0, wantErr: boom},
		{name: "concurrent late error", n: 50, workers: 4, failAt: 2, wantErr: boom},
		{name: "concurrent error", n: 1000, workers: 4, failAt: 0, wantErr: boom},
		{name: "cancelled", n: 10, workers: 4, failAt: -1, cancelFirst: true, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelFirst {
				cancel()
			}
			runs := make([]atomic.Int32, tc.n)
			err := Parallel(ctx, tc.n, tc.workers, func(ctx context.Context, i int) error {
				runs[i].Add(1)
				switch {
				case i == tc.failAt:
					return boom
				case tc.failAt >= 0:
					<-ctx.Done() // held until the error cancels the rest
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Parallel: got error %v, want %v", err, tc.wantErr)
			}
			ran := 0
			for i := range runs {
				if c := runs[i].Load(); c > 1 {
					t.Fatalf("index %d ran %d times", i, c)
				}
				ran += int(runs[i].Load())
			}
			if tc.wantAll && ran != tc.n {
				t.Fatalf("%d of %d indices ran", ran, tc.n)
			}
			if tc.failAt >= 0 && ran > tc.workers {
				t.Fatalf("%d indices ran with %d workers after an error; want no call started after it", ran, tc.workers)
			}
		})
	}
}
