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
	seen := make([]map[int64]bool, workers)
	for w := range workers {
		seen[w] = map[int64]bool{}
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
				seen[w][v<<2|int64((w+i)%3)] = true
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
	// Each counter went up by one per increment: it returned as many
	// distinct values as it was incremented.
	want, got := map[int64]int{}, map[int64]int{}
	for w := range workers {
		for i := range rounds {
			want[int64((w+i)%3)]++
		}
		for k := range seen[w] {
			got[k&3]++
		}
	}
	for q := range int64(3) {
		if got[q] != want[q] {
			t.Errorf("counter %d: %d distinct values from %d increments", q, got[q], want[q])
		}
	}
}
