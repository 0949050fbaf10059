package faultstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/faultstore"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// name names the puts and deletes of the UID table by their method and
// the check-and-puts by their qualifier; every other call is uncounted.
func name(uid string) func(faultstore.Call) string {
	return func(c faultstore.Call) string {
		switch {
		case c.Method == faultstore.CheckAndPut:
			return "cas " + c.Qualifier
		case c.Table == uid:
			return string(c.Method)
		}
		return ""
	}
}

// script runs its calls on st, going on after an error: put row a, put
// into another table (uncounted), put row b, delete row a, check-and-put
// row c. It returns the index of each call that failed, and the rows of
// the UID table then.
func script(t *testing.T, st store.Store, tb testbackend.Tables) (errs []int, rows string) {
	t.Helper()
	ctx := context.Background()
	put := func(row string) store.Put {
		return store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("id"), Qualifier: []byte("q"), Value: []byte(row)}}}
	}
	calls := []func() error{
		func() error { return st.Put(ctx, tb.UID, []store.Put{put("a")}) },
		func() error {
			return st.Put(ctx, tb.Meta, []store.Put{{Row: []byte("m"), Cells: []store.Cell{{Family: []byte("name"), Qualifier: []byte("q"), Value: []byte("m")}}}})
		},
		func() error { return st.Put(ctx, tb.UID, []store.Put{put("b")}) },
		func() error { return st.Delete(ctx, tb.UID, []byte("a"), nil) },
		func() error {
			_, err := st.CheckAndPut(ctx, tb.UID, put("c"), "id", "q", nil)
			return err
		},
	}
	for i, call := range calls {
		if err := call(); err != nil {
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("call %d: %v, want ErrUnavailable", i, err)
			}
			errs = append(errs, i)
		}
	}
	var got []string
	for _, row := range []string{"a", "b", "c"} {
		r, err := st.Get(ctx, tb.UID, []byte(row), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Cells) > 0 {
			got = append(got, row)
		}
	}
	return errs, strings.Join(got, " ")
}

// TestStore fails each call of a script in turn, refused and applied, and
// a call past its last: the call fails with ErrUnavailable, its change
// made only when applied; the calls are counted as they were without a
// fault; the optional interfaces are those of the store underneath.
func TestStore(t *testing.T) {
	t.Parallel()
	wantCalls := map[string]int{"put": 2, "delete": 1, "cas q": 1}
	for _, tc := range []struct {
		fault faultstore.Fault
		errs  []int // the calls of the script that fail
		rows  string
	}{
		{fault: faultstore.Fault{}, rows: "b c"},
		{fault: faultstore.Fault{Op: "put", K: 1}, errs: []int{0}, rows: "b c"},
		{fault: faultstore.Fault{Op: "put", K: 2}, errs: []int{2}, rows: "c"},
		{fault: faultstore.Fault{Op: "put", K: 2, Applied: true}, errs: []int{2}, rows: "b c"},
		{fault: faultstore.Fault{Op: "put", K: 3}, rows: "b c"},
		{fault: faultstore.Fault{Op: "delete", K: 1}, errs: []int{3}, rows: "a b c"},
		{fault: faultstore.Fault{Op: "delete", K: 1, Applied: true}, errs: []int{3}, rows: "b c"},
		{fault: faultstore.Fault{Op: "cas q", K: 1}, errs: []int{4}, rows: "b"},
		{fault: faultstore.Fault{Op: "cas q", K: 1, Applied: true}, errs: []int{4}, rows: "b c"},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			st, tb := testbackend.New(t)
			fs := &faultstore.Store{Store: st, Name: name(tb.UID), Fault: tc.fault}
			errs, rows := script(t, fs, tb)
			if !slices.Equal(errs, tc.errs) || rows != tc.rows {
				t.Errorf("calls failed %v, rows %q; want %v, %q", errs, rows, tc.errs, tc.rows)
			}
			if got := fs.Failed(); got != (len(tc.errs) > 0) {
				t.Errorf("Failed() = %v, want %v", got, len(tc.errs) > 0)
			}
			if got := fs.Calls(); !maps.Equal(got, wantCalls) {
				t.Errorf("Calls() = %v, want %v", got, wantCalls)
			}
			if got, want := fs.Order(), []string{"put", "delete", "cas q"}; !slices.Equal(got, want) {
				t.Errorf("Order() = %q, want %q", got, want)
			}
			for _, typ := range store.Optional() {
				_, want := store.Lookup(st, typ)
				if _, got := store.Lookup(fs, typ); got != want {
					t.Errorf("%v: forwarded %v, the store underneath has it %v", typ, got, want)
				}
			}
		})
	}
}

// TestFaults lists the faults of the calls counted, by name in the order
// asked or of their first calls.
func TestFaults(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	counter := &faultstore.Store{Store: st, Name: name(tb.UID)}
	script(t, counter, tb)
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, "[put 1 applied=false put 1 applied=true put 2 applied=false put 2 applied=true delete 1 applied=false delete 1 applied=true cas q 1 applied=false cas q 1 applied=true]"},
		{[]string{"delete", "put"}, "[delete 1 applied=false delete 1 applied=true put 1 applied=false put 1 applied=true put 2 applied=false put 2 applied=true]"},
		{[]string{"none"}, "[]"},
	} {
		t.Run(fmt.Sprint(tc.names), func(t *testing.T) {
			if got := fmt.Sprint(counter.Faults(tc.names...)); got != tc.want {
				t.Errorf("Faults(%q) = %s, want %s", tc.names, got, tc.want)
			}
		})
	}
}
