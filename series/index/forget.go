package index

import (
	"sync"
	"sync/atomic"
)

// maxForgetRanges bounds the day ranges a Writer remembers forgetting;
// past it they are merged into the one range that spans them all (days
// in between are then forgotten too, which only costs their cells being
// written once more).
const maxForgetRanges = 256

// forgetRange is a range of days [from, to] forgotten by the Forget call
// numbered gen.
type forgetRange struct {
	from, to uint32
	gen      uint64
}

// forgets records the days whose cells a Writer must not trust having
// written (Writer.Forget). Each day has an epoch: the number of the last
// Forget that covered it, 0 for a day never forgotten. The keys of the
// seen set of a day's cells carry its epoch, so that a Forget makes every
// key remembered for the day before it unknown, also one that a write in
// flight adds after it, without walking the set.
type forgets struct {
	mu     sync.RWMutex
	ranges []forgetRange
	gen    uint64
	// last is the last day forgotten, -1 when none: the days after it,
	// where the write path writes nearly always, are told apart without
	// the lock.
	last atomic.Int64
}

func newForgets() *forgets {
	f := &forgets{}
	f.last.Store(-1)
	return f
}

// forget gives the days [from, to] a new epoch.
func (f *forgets) forget(from, to uint32) {
	if to < from {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	// The ranges the new one covers are left behind.
	kept := f.ranges[:0]
	for _, r := range f.ranges {
		if r.from < from || r.to > to {
			kept = append(kept, r)
		}
	}
	kept = append(kept, forgetRange{from: from, to: to, gen: f.gen})
	f.ranges = kept
	if len(f.ranges) > maxForgetRanges {
		lo, hi := f.ranges[0].from, f.ranges[0].to
		for _, r := range f.ranges {
			lo, hi = min(lo, r.from), max(hi, r.to)
		}
		f.ranges = append(f.ranges[:0], forgetRange{from: lo, to: hi, gen: f.gen})
	}
	f.last.Store(max(f.last.Load(), int64(to)))
}

// epoch returns the epoch of day: the number of the last Forget that
// covered it, 0 when none did.
func (f *forgets) epoch(day uint32) uint64 {
	if int64(day) > f.last.Load() {
		return 0
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	var ep uint64
	for _, r := range f.ranges {
		if day >= r.from && day <= r.to && r.gen > ep {
			ep = r.gen
		}
	}
	return ep
}

// Forget makes the Writer forget that it wrote the label cells (rows
// 'K', 'N' and 'V') of the days from to to (inclusive): the next write of
// a series into one of those days writes its cells again, also for a
// series this process already indexed for the day. Call it after deleting
// such cells (series deletion pruning a day, retention dropping old
// days); without it the Writer, which remembers what it wrote, would not
// write them again, and the index would lack a series written into the
// day anew. TSMeta rows and the row of every metric ('A'), which those
// deletions leave, stay remembered. Other processes' Writers do not
// forget: `promhbase reindex` covers what they miss.
func (w *Writer) Forget(from, to uint32) {
	w.forgets.forget(from, to)
}

// Forgotten reports whether Forget was called for a range holding day:
// the write path then hands the Writer the series it wrote into day even
// when their marks say they were indexed for it (ingest.DayForgetter).
// It costs an atomic load for the days after the last forgotten.
func (w *Writer) Forgotten(day uint32) bool {
	return w.forgets.epoch(day) != 0
}
