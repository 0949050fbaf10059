package hbase

import (
	"fmt"
	"sync"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestIncrementAmongBatchedCalls: increments run while puts and gets of
// the same region go out at once, as a first contact with new series
// assigns UIDs (counter increments, forward and reverse rows, lookups);
// every increment returns its own value and the process survives.
// gohbase batches concurrent calls to one region server into a Multi RPC;
// an increment's result cell parsed from a Multi response's cell block
// crashed the process once in a benchmark (see Store.Increment), so
// increments go as calls of their own. This test did not reproduce that
// crash before the change; it checks the increments' values under the
// same mix of calls.
func TestIncrementAmongBatchedCalls(t *testing.T) {
	s := needHBase(t)
	tbl := newTable(t, s, "id", "name")
	ctx := testCtx(t)
	const workers, rounds = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers*3)
	// The values each counter returned, all workers together.
	var mu sync.Mutex
	seen := [3]map[int64]int{{}, {}, {}}
	for w := range workers {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := range rounds {
				q := []string{"metrics", "tagk", "tagv"}[(w+i)%3]
				v, err := s.Increment(ctx, tbl, []byte{0}, "id", q, 1)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen[(w+i)%3][v]++
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			for i := range rounds {
				row := []byte(fmt.Sprintf("tag-%d-%d", w, i))
				err := s.Put(ctx, tbl, []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("id"), Qualifier: []byte("tagv"), Value: []byte{0, byte(w), byte(i)}}}}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range rounds {
				if _, err := s.Get(ctx, tbl, []byte(fmt.Sprintf("tag-%d-%d", w, i/2)), "id"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Each counter went up by one per increment: it returned 1, 2, ... as
	// many values as it was incremented, each once.
	want := [3]int{}
	for w := range workers {
		for i := range rounds {
			want[(w+i)%3]++
		}
	}
	for q, vals := range seen {
		for v := int64(1); v <= int64(want[q]); v++ {
			if vals[v] != 1 {
				t.Fatalf("counter %d: value %d returned %d times", q, v, vals[v])
			}
		}
		if len(vals) != want[q] {
			t.Errorf("counter %d: %d distinct values from %d increments", q, len(vals), want[q])
		}
	}
}
