package engine

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/query"
)

// TestSeriesPool: series i goes to worker i mod workers, worker 0 being
// the caller's goroutine; a worker's error ends the selection and is
// returned; a panic of the caller's evaluation leaves no worker behind
// (the package's leak check).
func TestSeriesPool(t *testing.T) {
	mem := func() (*workerMem, func()) { return &workerMem{}, func() {} }
	jobOf := func(i int) job {
		return job{labels: labels.FromStrings("i", string(rune('a'+i))), samples: []query.Sample{{T: int64(i), V: float64(i)}}}
	}
	for _, workers := range []int{1, 2, 3} {
		t.Run("order/"+string(rune('0'+workers)), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var mu sync.Mutex
			got := map[int]int{}
			p := newSeriesPool(ctx, cancel, workers, mem, func(w, idx int, _ labels.Labels, samples []query.Sample) error {
				mu.Lock()
				defer mu.Unlock()
				got[idx] = w
				if samples[0].T != int64(idx) {
					t.Errorf("series %d got series %d's samples", idx, samples[0].T)
				}
				return nil
			})
			for i := range 40 {
				if err := p.send(jobOf(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.finish(); err != nil {
				t.Fatal(err)
			}
			p.abandon()
			for i := range 40 {
				if w, ok := got[i]; !ok || w != i%workers {
					t.Errorf("series %d on worker %d (evaluated: %v), want %d", i, w, ok, i%workers)
				}
			}
		})
	}
	t.Run("error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		boom := errors.New("boom")
		p := newSeriesPool(ctx, cancel, 2, mem, func(w, idx int, _ labels.Labels, _ []query.Sample) error {
			if idx == 5 {
				return boom
			}
			return nil
		})
		var sendErr error
		for i := 0; i < 1000 && sendErr == nil; i++ {
			sendErr = p.send(jobOf(i % 20))
		}
		if err := p.finish(); !errors.Is(err, boom) {
			t.Fatalf("finish: %v, want %v", err, boom)
		}
		if sendErr == nil {
			t.Error("sends went on after the error")
		}
	})
	t.Run("panic", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			p := newSeriesPool(ctx, cancel, 3, mem, func(w, idx int, _ labels.Labels, _ []query.Sample) error {
				if w == 0 && idx > 0 {
					panic("evaluation")
				}
				return nil
			})
			defer p.abandon()
			for i := range 40 {
				_ = p.send(jobOf(i % 20))
			}
			_ = p.finish()
		}()
	})
}
