package index

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// TestForget: the label cells of a day deleted behind the Writer's back
// are not written again by a later write of the same series and day (the
// Writer remembers them), until Forget of a range holding the day; the
// other days stay remembered, and a write after the Forget is
// remembered again.
func TestForget(t *testing.T) {
	ctx := context.Background()
	g := newRig(t)
	const d0 = 19700
	// Series whose UIDs exist already (resolved by another mapper), as
	// after a restart: their cells are remembered once written. (A
	// series whose UIDs this process assigned writes its cells that name
	// them whenever its mark misses the day.)
	g.series(t, "up", "job", "node")
	g.series(t, "other", "job", "api")
	g.restart(t)
	up := g.series(t, "up", "job", "node")
	other := g.series(t, "other", "job", "api")
	write := func(es ...Entry) {
		t.Helper()
		if err := g.w.Write(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	// deleteDay deletes the label rows of day, as retention does.
	deleteDay := func(day uint32) {
		t.Helper()
		for _, kind := range []byte{mapping.IndexKindTagKs, mapping.IndexKindMetrics} {
			if err := g.st.Delete(ctx, indexTable, mapping.AppendIndexDayKey(nil, kind, day), nil); err != nil {
				t.Fatal(err)
			}
		}
		sc := g.st.Scan(ctx, store.ScanRequest{Table: indexTable, Start: mapping.AppendIndexDayKey(nil, mapping.IndexKindValues, day),
			Stop: mapping.AppendIndexDayKey(nil, mapping.IndexKindValues, day+1), KeysOnly: true})
		var keys [][]byte
		for sc.Next() {
			keys = append(keys, slices.Clone(sc.Row().Key))
		}
		sc.Close()
		for _, k := range keys {
			if err := g.st.Delete(ctx, indexTable, k, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	values := func(d uint32) []string {
		t.Helper()
		got, err := g.r.LabelValues(ctx, "job", int64(d)*day, int64(d)*day+day-1)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	write(Entry{up, d0}, Entry{other, d0 + 1}, Entry{up, d0 + 1})
	// The series' mark is of day d0+1 now: d0 is asked of the seen set.
	deleteDay(d0)
	deleteDay(d0 + 1)
	write(Entry{up, d0}, Entry{up, d0 + 1}, Entry{other, d0 + 1})
	if got := values(d0); len(got) != 0 {
		t.Fatalf("day d0 written again without a Forget: %v (the test no longer shows the cache)", got)
	}
	g.w.Forget(d0, d0)
	write(Entry{up, d0}, Entry{up, d0 + 1}, Entry{other, d0 + 1})
	if got, want := values(d0), []string{"node"}; !slices.Equal(got, want) {
		t.Errorf("job values of day d0 after Forget and a write: %v, want %v", got, want)
	}
	if got := values(d0 + 1); len(got) != 0 {
		t.Errorf("day d0+1, not forgotten, written again: %v", got)
	}
	// The series marked for d0+1 itself: Forget of a range holding it.
	g.w.Forget(d0-5, d0+1)
	write(Entry{up, d0 + 1}, Entry{other, d0 + 1})
	if got, want := values(d0+1), []string{"api", "node"}; !slices.Equal(got, want) {
		t.Errorf("job values of day d0+1 after Forget and a write: %v, want %v", got, want)
	}
	// Remembered again: the same write twice costs no puts the second time.
	cells := func() float64 {
		t.Helper()
		return testutil.ToFloat64(g.w.cells)
	}
	write(Entry{up, d0}, Entry{up, d0 + 1}, Entry{other, d0 + 1})
	before := cells()
	write(Entry{up, d0}, Entry{up, d0 + 1}, Entry{other, d0 + 1})
	if n := cells() - before; n != 0 {
		t.Errorf("%v cells written again after the days were written anew, want 0", n)
	}
}

// TestForgetRanges: epochs by day, ranges covered by later ones dropped,
// and the bound on ranges kept.
func TestForgetRanges(t *testing.T) {
	f := newForgets()
	if f.epoch(0) != 0 || f.epoch(100) != 0 {
		t.Fatal("epochs before any forget")
	}
	f.forget(10, 20)
	f.forget(15, 15)
	if f.epoch(9) != 0 || f.epoch(10) != 1 || f.epoch(15) != 2 || f.epoch(20) != 1 || f.epoch(21) != 0 {
		t.Errorf("epochs 9,10,15,20,21: %d %d %d %d %d", f.epoch(9), f.epoch(10), f.epoch(15), f.epoch(20), f.epoch(21))
	}
	f.forget(0, 30)
	if len(f.ranges) != 1 || f.epoch(15) != 3 {
		t.Errorf("after a covering forget: %v", f.ranges)
	}
	f.forget(20, 10) // empty
	if f.gen != 3 {
		t.Errorf("an empty range counted: gen %d", f.gen)
	}
	for d := uint32(100); d < 100+2*maxForgetRanges; d += 2 {
		f.forget(d, d)
	}
	if len(f.ranges) > maxForgetRanges {
		t.Errorf("%d ranges kept, want at most %d", len(f.ranges), maxForgetRanges)
	}
	for d := uint32(0); d < 100+2*maxForgetRanges; d++ {
		if (d <= 30 || d >= 100 && d%2 == 0) && f.epoch(d) == 0 {
			t.Fatalf("day %d forgotten, epoch 0", d)
		}
	}
}
