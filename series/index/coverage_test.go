package index

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// refusingStore refuses puts with store.ErrUnavailable while refuse is
// set, as an embedded store below its free-space watermark does.
type refusingStore struct {
	writeStore
	refuse atomic.Bool
}

func (s *refusingStore) Put(ctx context.Context, table string, puts []store.Put) error {
	if s.refuse.Load() {
		return store.ErrUnavailable
	}
	return s.writeStore.Put(ctx, table, puts)
}

// TestMarkCoverageLater: a coverage the store refused at start is
// recorded by the first write the store takes, before its entries; the
// writes it refuses meanwhile fail with its error, and record nothing.
func TestMarkCoverageLater(t *testing.T) {
	ctx := context.Background()
	g := newRig(t)
	rs := &refusingStore{writeStore: g.st}
	w := NewWriter(rs, Options{MetaTable: metaTable, IndexTable: indexTable, Layout: mapping.DefaultLayout()}, nil)
	const d0 = 19700
	coverage := func() (uint32, bool) {
		t.Helper()
		row, err := g.st.Get(ctx, indexTable, mapping.IndexCoverageKey, mapping.IndexFamily)
		if err != nil {
			t.Fatal(err)
		}
		return coverageOf(row, mapping.IndexSinceQual)
	}

	rs.refuse.Store(true)
	if err := w.MarkCoverage(ctx, d0); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("MarkCoverage on a store refusing writes: %v, want store.ErrUnavailable", err)
	}
	w.MarkCoverageLater(d0)
	up := g.series(t, "up", "job", "a")
	if err := w.Write(ctx, []Entry{{up, d0}}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write while refused: %v, want store.ErrUnavailable", err)
	}
	if day, ok := coverage(); ok {
		t.Fatalf("coverage %d recorded while the store refused writes", day)
	}

	rs.refuse.Store(false)
	if err := w.Write(ctx, []Entry{{up, d0}}); err != nil {
		t.Fatal(err)
	}
	if day, ok := coverage(); !ok || day != d0 {
		t.Fatalf("coverage %d, %v after the first write taken, want %d", day, ok, d0)
	}
	if w.pending.Load() != nil {
		t.Error("the coverage is still pending once recorded")
	}
	names, err := g.r.LabelNames(ctx, d0*day, d0*day+day-1)
	if err != nil || len(names) == 0 {
		t.Errorf("label names after the write: %q, %v", names, err)
	}
}
