package embedded

import (
	"fmt"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestCheckAndPutBatchSeesEarlierOps checks the embedded batch's promise
// beyond the contract: a check sees the puts of the ops before it.
func TestCheckAndPutBatchSeesEarlierOps(t *testing.T) {
	s := openTemp(t, Options{NoSync: true})
	put := func(v string) store.Put {
		return store.Put{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(v)}}}
	}
	ops := []store.CondPut{
		{Put: put("1"), Family: "f", Qualifier: "q"},                        // absent: written
		{Put: put("2"), Family: "f", Qualifier: "q"},                        // now present: refused
		{Put: put("3"), Family: "f", Qualifier: "q", Expected: []byte("1")}, // sees "1": written
		{Put: put("4"), Family: "f", Qualifier: "q", Expected: []byte("1")}, // sees "3": refused
	}
	written := make([]bool, len(ops))
	if err := s.CheckAndPutBatch(t.Context(), "t", ops, written); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, false}; fmt.Sprint(written) != fmt.Sprint(want) {
		t.Errorf("written = %v, want %v", written, want)
	}
	v, found, err := s.GetCell(t.Context(), "t", []byte("r"), "f", "q")
	if err != nil || !found || string(v) != "3" {
		t.Errorf("cell = %q, %v, %v; want \"3\"", v, found, err)
	}
}
