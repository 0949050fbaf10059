package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store/storetest"
)

// TestColdNames: a reader whose UID caches are empty (after a restart)
// answers label values and metric names with a regex matcher by reading
// the names in batches of nameBatch UIDs, not a Get a UID.
func TestColdNames(t *testing.T) {
	ctx := context.Background()
	g := newRig(t)
	const d0, values = 19700, nameBatch + 300
	var entries []Entry
	for i := range values {
		entries = append(entries, Entry{g.series(t, fmt.Sprintf("m%d", i%3), "instance", fmt.Sprintf("host-%05d", i)), d0})
	}
	if err := g.w.Write(ctx, entries); err != nil {
		t.Fatal(err)
	}
	s0, e0 := int64(d0)*day, int64(d0)*day+day-1
	cold := func(t *testing.T) (*Reader, *storetest.ReadCounter) {
		t.Helper()
		st := &storetest.ReadCounter{Table: "tsdb-uid", Family: "name", CellsStore: g.st}
		return NewReader(st, indexTable, newUIDs(t, st, mapping.DefaultLayout()), mapping.DefaultLayout()), st
	}
	t.Run("label values", func(t *testing.T) {
		r, st := cold(t)
		got, err := r.LabelValues(ctx, "instance", s0, e0)
		if err != nil || len(got) != values || got[0] != "host-00000" || got[values-1] != fmt.Sprintf("host-%05d", values-1) {
			t.Fatalf("%d values (%v), want %d", len(got), err, values)
		}
		if g, c := st.Gets.Load(), st.Batches.Load(); g != 0 || c != 2 {
			t.Errorf("names read with %d Gets and %d GetCells, want 0 and 2", g, c)
		}
	})
	t.Run("metric names by regex", func(t *testing.T) {
		r, st := cold(t)
		got, err := r.MetricNames(ctx, s0, e0, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-0000[0-1]")})
		if err != nil || fmt.Sprint(got) != "[m0 m1]" {
			t.Fatalf("metric names %v, %v; want [m0 m1]", got, err)
		}
		if g := st.Gets.Load(); g != 0 {
			t.Errorf("names read with %d Gets, want none", g)
		}
	})
}
