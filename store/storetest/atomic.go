package storetest

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/promhbase/promhbase/store"
)

func testCheckAndPut(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte("cas")
	p := func(v string) store.Put {
		return store.Put{Row: row, Cells: []store.Cell{cell("a", "q", v), cell("b", "other", v)}}
	}
	steps := []struct {
		name     string
		put      store.Put
		expected []byte
		want     bool
	}{
		{"absent expected, absent", p("1"), nil, true},
		{"absent expected, present", p("2"), nil, false},
		{"empty expected, present", p("2"), []byte{}, false},
		{"wrong value", p("3"), []byte("2"), false},
		{"right value", p("4"), []byte("1"), true},
	}
	for _, st := range steps {
		ok, err := s.CheckAndPut(c, table, st.put, "a", "q", st.expected)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if ok != st.want {
			t.Errorf("%s: CheckAndPut = %v, want %v", st.name, ok, st.want)
		}
	}
	got, err := s.Get(c, table, row, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:71=34 b:6f74686572=34"; cellString(got.Cells) != want {
		t.Errorf("after CAS sequence = %s, want %s", cellString(got.Cells), want)
	}
}

// testCheckAndPutBatch runs a batch through store.CheckAndPutAll (the
// backend's own batch, or concurrent CheckAndPuts) while other batches
// race for the same cells: each cell has exactly one winner, whose value
// it holds.
func testCheckAndPutBatch(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	// Sequential semantics first: an op sees the ones before it only in a
	// backend's own batch, so only disjoint cells are checked here.
	if err := s.Put(c, table, []store.Put{{Row: []byte("b-present"), Cells: []store.Cell{cell("a", "q", "old")}}}); err != nil {
		t.Fatal(err)
	}
	ops := []store.CondPut{
		{Put: store.Put{Row: []byte("b-absent"), Cells: []store.Cell{cell("a", "q", "new")}}, Family: "a", Qualifier: "q"},
		{Put: store.Put{Row: []byte("b-present"), Cells: []store.Cell{cell("a", "q", "new")}}, Family: "a", Qualifier: "q"},
		{Put: store.Put{Row: []byte("b-present"), Cells: []store.Cell{cell("a", "r", "x")}}, Family: "a", Qualifier: "q", Expected: []byte("wrong")},
	}
	written, opErrs := make([]bool, len(ops)), make([]error, len(ops))
	store.CheckAndPutAll(c, s, table, ops, written, opErrs, 4)
	if err := errors.Join(opErrs...); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false}; !slices.Equal(written, want) {
		t.Errorf("written = %v, want %v", written, want)
	}
	for row, want := range map[string]string{"b-absent": "a:71=6e6577", "b-present": "a:71=6f6c64"} {
		got, err := s.Get(c, table, []byte(row), "")
		if err != nil {
			t.Fatal(err)
		}
		if cellString(got.Cells) != want {
			t.Errorf("row %s = %s, want %s", row, cellString(got.Cells), want)
		}
	}

	const workers, names = 4, 50
	wins := make([][]bool, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops := make([]store.CondPut, names)
			for n := range names {
				ops[n] = store.CondPut{Put: store.Put{Row: []byte(fmt.Sprintf("race-%d", n)), Cells: []store.Cell{cell("a", "id", fmt.Sprint(w))}}, Family: "a", Qualifier: "id"}
			}
			wins[w] = make([]bool, names)
			opErrs := make([]error, names)
			store.CheckAndPutAll(c, s, table, ops, wins[w], opErrs, 8)
			if err := errors.Join(opErrs...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n := range names {
		var winners []int
		for w := range workers {
			if wins[w][n] {
				winners = append(winners, w)
			}
		}
		if len(winners) != 1 {
			t.Errorf("race-%d: winners %v, want exactly one", n, winners)
			continue
		}
		got, err := s.Get(c, table, []byte(fmt.Sprintf("race-%d", n)), "")
		if err != nil {
			t.Fatal(err)
		}
		if want := "a:6964=" + hex.EncodeToString([]byte(fmt.Sprint(winners[0]))); cellString(got.Cells) != want {
			t.Errorf("race-%d = %s, want %s", n, cellString(got.Cells), want)
		}
	}
}

func testCheckAndPutConcurrent(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	const workers, names = 8, 20
	var (
		mu   sync.Mutex
		wins = map[string][]int{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range names {
				row := []byte(fmt.Sprintf("name-%d", n))
				ok, err := s.CheckAndPut(c, table, store.Put{Row: row, Cells: []store.Cell{cell("a", "id", fmt.Sprint(w))}}, "a", "id", nil)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					mu.Lock()
					wins[string(row)] = append(wins[string(row)], w)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n := range names {
		row := fmt.Sprintf("name-%d", n)
		if len(wins[row]) != 1 {
			t.Errorf("row %s: winners %v, want exactly one", row, wins[row])
			continue
		}
		got, err := s.Get(c, table, []byte(row), "a")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("a:6964=%x", fmt.Sprint(wins[row][0])); cellString(got.Cells) != want {
			t.Errorf("row %s = %s, want the winner's %s", row, cellString(got.Cells), want)
		}
	}
}

func testIncrementConcurrent(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte{0x00}
	const workers, each = 8, 25
	seen := make(chan int64, workers*each)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, err := s.Increment(c, table, row, "a", "metrics", 1)
				if err != nil {
					errs <- err
					return
				}
				seen <- v
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(seen)
	for err := range errs {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for v := range seen {
		if got[v] {
			t.Errorf("increment returned %d twice", v)
		}
		got[v] = true
	}
	for i := int64(1); i <= workers*each; i++ {
		if !got[i] {
			t.Errorf("no increment returned %d", i)
		}
	}
	r, err := s.Get(c, table, row, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 1 || len(r.Cells[0].Value) != 8 || binary.BigEndian.Uint64(r.Cells[0].Value) != workers*each {
		t.Errorf("counter cell = %s, want 8-byte big-endian %d", cellString(r.Cells), workers*each)
	}
	if v, err := s.Increment(c, table, row, "a", "metrics", -5); err != nil || v != workers*each-5 {
		t.Errorf("increment by -5 = %d, %v; want %d", v, err, workers*each-5)
	}
	if v, err := s.Increment(c, table, []byte("fresh"), "a", "tagk", 0); err != nil || v != 0 {
		t.Errorf("increment of a missing cell by 0 = %d, %v; want 0", v, err)
	}
}
