package gencache

import (
	"sync"
	"testing"
)

// TestReadLocks: readers holding several shards' read locks at once and
// writers taking one shard's write lock at a time never deadlock; a
// writer never runs while a reader holds its shard (each shard's counter
// is changed only under its write lock and read twice by a holder, which
// must see it unchanged); and the holder lets go after LockBatch lookups.
func TestReadLocks(t *testing.T) {
	const shards = 16
	var mus [shards]sync.RWMutex
	var vals [shards]int
	locks := make([]*sync.RWMutex, shards)
	for i := range mus {
		locks[i] = &mus[i]
	}
	t.Run("batch bound", func(t *testing.T) {
		r := NewReadLocks(locks)
		for range LockBatch {
			r.Hold(3)
		}
		if r.held == 0 {
			t.Fatal("nothing held after LockBatch lookups")
		}
		r.Hold(3) // the LockBatch+1st lookup lets go first
		if r.n != 1 {
			t.Errorf("lookups counted since the locks were taken: %d, want 1", r.n)
		}
		r.Release()
		if !mus[3].TryLock() {
			t.Fatal("shard 3 still read-locked after Release")
		}
		mus[3].Unlock()
	})
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan int, 4)
		for w := range 2 {
			wg.Go(func() {
				for j := range 20000 {
					i := (j*7 + w) % shards
					mus[i].Lock()
					vals[i]++
					mus[i].Unlock()
				}
			})
		}
		for rd := range 4 {
			wg.Go(func() {
				r := NewReadLocks(locks)
				seen := map[int]int{}
				for j := range 50000 {
					i := (j*13 + rd*5) % shards
					r.Hold(i)
					v, ok := seen[i]
					if ok && r.held&(1<<i) != 0 && v != vals[i] && r.n > 1 {
						errs <- i
						break
					}
					seen[i] = vals[i]
					if r.n == 1 {
						clear(seen)
						seen[i] = vals[i]
					}
				}
				r.Release()
			})
		}
		wg.Wait()
		close(errs)
		for i := range errs {
			t.Errorf("shard %d changed while a reader held its read lock", i)
		}
	})
}
