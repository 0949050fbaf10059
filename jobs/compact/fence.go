package compact

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// fence keeps CompactRow off the rows another writer of this process is
// rewriting (a deletion: see Compactor.Hold). Compacting a row reads its
// cells, puts the compacted cell and deletes what it replaces; a deletion
// that ran between the read and the put would be undone by the put, which
// carries the samples read before. Under a hold no compaction of the held
// rows is in flight and none starts until the hold is released.
//
// The fence is of one process: CompactRange (`promhbase compact`, a
// process of its own) and the compactors of other processes sharing an
// HBase table do not see it.
type fence struct {
	mu      sync.Mutex
	holds   map[*held]struct{}
	flights map[*flight]struct{}
}

// held is a key range [start, stop) under a hold (stop nil: the table's
// end); done is closed when it is released.
type held struct {
	start, stop []byte
	done        chan struct{}
}

func (h *held) covers(row []byte) bool {
	return bytes.Compare(row, h.start) >= 0 && (h.stop == nil || bytes.Compare(row, h.stop) < 0)
}

// flight is a row being compacted; done is closed when it is finished.
type flight struct {
	row  []byte
	done chan struct{}
}

// enter waits until no hold covers row, then records row as in flight
// until leave is called.
func (f *fence) enter(ctx context.Context, row []byte) (leave func(), err error) {
	for {
		f.mu.Lock()
		var wait *held
		for h := range f.holds {
			if h.covers(row) {
				wait = h
				break
			}
		}
		if wait == nil {
			if f.flights == nil {
				f.flights = map[*flight]struct{}{}
			}
			fl := &flight{row: row, done: make(chan struct{})}
			f.flights[fl] = struct{}{}
			f.mu.Unlock()
			return func() {
				f.mu.Lock()
				delete(f.flights, fl)
				f.mu.Unlock()
				close(fl.done)
			}, nil
		}
		f.mu.Unlock()
		select {
		case <-wait.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("compact row %x: wait for a hold on it: %w", row, context.Cause(ctx))
		}
	}
}

// Hold keeps the compactor from compacting the rows of the data table in
// [start, stop) (stop empty: to the table's end) until release is called:
// it returns once every compaction of such a row that was in flight has
// finished, and CompactRow on such a row waits for the release before it
// reads the row. A deletion holds the rows it rewrites, so that a
// compaction cannot put back samples it read before they were deleted.
// release may be called more than once. On error (ctx ended while
// waiting) nothing is held.
//
// Holds are of this Compactor, in this process: CompactRange and other
// processes' compactors do not see them.
func (c *Compactor) Hold(ctx context.Context, start, stop []byte) (release func(), err error) {
	h := &held{start: bytes.Clone(start), done: make(chan struct{})}
	if len(stop) > 0 {
		h.stop = bytes.Clone(stop)
	}
	f := &c.fence
	f.mu.Lock()
	if f.holds == nil {
		f.holds = map[*held]struct{}{}
	}
	f.holds[h] = struct{}{}
	var waits []chan struct{}
	for fl := range f.flights {
		if h.covers(fl.row) {
			waits = append(waits, fl.done)
		}
	}
	f.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.holds, h)
			f.mu.Unlock()
			close(h.done)
		})
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("hold rows [%x, %x) against compaction: %w", start, stop, context.Cause(ctx))
		}
	}
	return release, nil
}
