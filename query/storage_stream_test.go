package query

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// TestStorageSelectPulls: the PromQL path's Select hands on series as they
// are pulled, in label order with every sample; a querier closed before
// its sets are drained ends their streams, and the budget then holds the
// series pulled only.
func TestStorageSelectPulls(t *testing.T) {
	q, m, st := newQuerier(t)
	for i := range 5 {
		writeSeries(t, m, st, t0, 720, func(j int) float64 { return float64(i + j) }, "__name__", fmt.Sprintf("m%d", i), "i", fmt.Sprint(i))
	}
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m.*")
	hints := &storage.SelectHints{Start: t0, End: t0 + 1<<40}

	sq, err := q.Storage().Querier(t0, t0+1<<40)
	if err != nil {
		t.Fatal(err)
	}
	set := sq.Select(context.Background(), true, hints, all)
	var got []string
	for set.Next() {
		s := set.At()
		n := 0
		it := s.Iterator(nil)
		for it.Next() != 0 {
			n++
		}
		if it.Err() != nil || n != 720 {
			t.Errorf("%s: %d samples, %v", s.Labels(), n, it.Err())
		}
		got = append(got, s.Labels().Get("__name__"))
	}
	if set.Err() != nil || fmt.Sprint(got) != "[m0 m1 m2 m3 m4]" {
		t.Errorf("series %v, %v", got, set.Err())
	}
	if err := sq.Close(); err != nil {
		t.Fatal(err)
	}

	sq, _ = q.Storage().Querier(t0, t0+1<<40)
	set = sq.Select(context.Background(), true, hints, all)
	unpulled := sq.Select(context.Background(), true, hints, all)
	if !set.Next() {
		t.Fatalf("no series: %v", set.Err())
	}
	pulled := set.(*chunkSeriesSet).cur.Bytes
	if err := sq.Close(); err != nil {
		t.Fatal(err)
	}
	if set.Next() {
		t.Errorf("a series after Close")
	}
	if unpulled.Next() || unpulled.Err() == nil {
		t.Errorf("a set never pulled before Close: no error")
	}
	if held := sq.(*storageQuerier).budget.Held(); held != pulled {
		t.Errorf("budget holds %d after Close, want %d (the series pulled)", held, pulled)
	}
}
