package compact

import (
	"context"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// panicGetStore's Get panics, as a defect on a hostile row might.
type panicGetStore struct{ rowStore }

func (panicGetStore) Get(context.Context, string, []byte, string) (store.Row, error) {
	panic("a defect")
}

// TestCompactRowPanicIsAnError: a panic while a row is compacted comes back
// as the row's error; the scheduler's worker goroutines would otherwise end
// the process.
func TestCompactRowPanicIsAnError(t *testing.T) {
	c := New(panicGetStore{}, Options{DataTable: "tsdb"})
	_, err := c.CompactRow(context.Background(), []byte{0, 0, 1, 0x65, 0x53, 0xf0, 0x00})
	if err == nil || !strings.Contains(err.Error(), "internal error: a defect") {
		t.Fatalf("CompactRow = %v, want the panic as an error", err)
	}
}
