// Package faultstore is a store that fails one call of the store's
// changes with store.ErrUnavailable, as a region server that refused it
// or applied it and lost its answer: the tests of a job that rewrites
// rows (a rebuild, a delete) fail it at each of its steps in turn and
// check what reads see and what a run again repairs. It is for tests
// only.
//
// A run on a Store with no Fault counts the calls by name; Faults then
// lists every fault of those calls, each run again on a fresh Store:
//
//	counter := &faultstore.Store{Store: st, Name: name}
//	// ... the job on counter ...
//	for _, f := range counter.Faults() {
//		t.Run(f.String(), func(t *testing.T) {
//			fs := &faultstore.Store{Store: fresh, Name: name, Fault: f}
//			fs.CheckFailed(t, "the failing job", job(fs))
//			// ... what reads see, the job run again ...
//		})
//	}
package faultstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// Method is a method of store.Store that a Store can fail: one that
// changes the store.
type Method string

// The methods a Store can fail.
const (
	Put         Method = "put"
	Delete      Method = "delete"
	CheckAndPut Method = "check-and-put"
)

// Call is one call of a Method: its table, and for CheckAndPut the
// qualifier of the cell checked.
type Call struct {
	Method    Method
	Table     string
	Qualifier string
}

// Fault is the call a Store fails: the K-th call named Op, refused or,
// when Applied, made before its error is returned. The zero Fault fails
// nothing.
type Fault struct {
	Op      string
	K       int
	Applied bool
}

// String names the fault as the subtests of the fault tests are named:
// "OP K applied=APPLIED".
func (f Fault) String() string { return fmt.Sprintf("%s %d applied=%v", f.Op, f.K, f.Applied) }

// Store is a store.Store that counts the calls Name names and fails the
// one of its Fault with store.ErrUnavailable; every other call, and
// every call Name names "", goes to the store underneath as it is. Its
// As forwards the optional interfaces of the store underneath
// (store.Wrapper), whose calls it neither counts nor fails. It is safe
// for concurrent use; set its fields before its first call, and use it
// by pointer.
type Store struct {
	store.Store
	// Name names a call, the calls of one name counted together; ""
	// leaves the call uncounted and never failed.
	Name func(Call) string
	Fault

	mu     sync.Mutex
	calls  map[string]int
	order  []string
	failed bool
}

// As forwards the optional interfaces of the store underneath
// (store.Wrapper).
func (s *Store) As(target any) bool { return store.Forward(s.Store, target) }

// fails counts c and reports whether it is the call to fail, and its
// name.
func (s *Store) fails(c Call) (string, bool) {
	name := s.Name(c)
	if name == "" {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	if s.calls[name] == 0 {
		s.order = append(s.order, name)
	}
	s.calls[name]++
	if name != s.Op || s.calls[name] != s.K {
		return name, false
	}
	s.failed = true
	return name, true
}

// err is the error of the failed call c named name, wrapping err, the
// error of the call applied, when there was one.
func (s *Store) err(c Call, name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s %s (call %d of %q, applied): %w", c.Method, c.Table, s.K, name, err)
	}
	return fmt.Errorf("%s %s (call %d of %q): no answer (applied %v): %w", c.Method, c.Table, s.K, name, s.Applied, store.ErrUnavailable)
}

// Put puts into the store underneath, unless it is the call to fail.
func (s *Store) Put(ctx context.Context, table string, puts []store.Put) error {
	c := Call{Method: Put, Table: table}
	name, fail := s.fails(c)
	if !fail {
		return s.Store.Put(ctx, table, puts)
	}
	if s.Applied {
		if err := s.Store.Put(ctx, table, puts); err != nil {
			return s.err(c, name, err)
		}
	}
	return s.err(c, name, nil)
}

// Delete deletes from the store underneath, unless it is the call to
// fail.
func (s *Store) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	c := Call{Method: Delete, Table: table}
	name, fail := s.fails(c)
	if !fail {
		return s.Store.Delete(ctx, table, row, columns)
	}
	if s.Applied {
		if err := s.Store.Delete(ctx, table, row, columns); err != nil {
			return s.err(c, name, err)
		}
	}
	return s.err(c, name, nil)
}

// CheckAndPut checks and puts in the store underneath, unless it is the
// call to fail.
func (s *Store) CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	c := Call{Method: CheckAndPut, Table: table, Qualifier: qualifier}
	name, fail := s.fails(c)
	if !fail {
		return s.Store.CheckAndPut(ctx, table, put, family, qualifier, expected)
	}
	if s.Applied {
		if _, err := s.Store.CheckAndPut(ctx, table, put, family, qualifier, expected); err != nil {
			return false, s.err(c, name, err)
		}
	}
	return false, s.err(c, name, nil)
}

// Failed reports whether the Store failed its Fault's call.
func (s *Store) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Calls returns how many calls of each name the Store saw.
func (s *Store) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Order returns the names of the calls the Store saw, in the order of
// their first calls.
func (s *Store) Order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// Faults returns every fault of the calls the Store saw: for each name of
// names (all of Order when none), in that order, each of its calls, each
// refused and then applied.
func (s *Store) Faults(names ...string) []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(names) == 0 {
		names = s.order
	}
	var out []Fault
	for _, name := range names {
		for k := 1; k <= s.calls[name]; k++ {
			out = append(out, Fault{Op: name, K: k}, Fault{Op: name, K: k, Applied: true})
		}
	}
	return out
}

// CheckFailed fails t unless err, what the work run on the Store
// returned, is store.ErrUnavailable and the Store failed its Fault's
// call; what names the work in the message.
func (s *Store) CheckFailed(t testing.TB, what string, err error) {
	t.Helper()
	if failed := s.Failed(); !errors.Is(err, store.ErrUnavailable) || !failed {
		t.Fatalf("%s: %v (failed %v), want ErrUnavailable", what, err, failed)
	}
}
