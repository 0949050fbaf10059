package uid

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

func openUIDStore(t testing.TB) store.Store {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb-uid"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newTestUIDs(t testing.TB, st store.Store, layout mapping.Layout) *UIDs {
	t.Helper()
	u, err := NewUIDs(st, layout, UIDOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// raceProcs runs work(w, u) for workers 0..workers-1 at once, u the first
// or second of two UIDs over st (two processes) as w is even or odd, and
// returns when all have returned.
func raceProcs(t *testing.T, st store.Store, workers int, work func(w int, u *UIDs)) {
	t.Helper()
	procs := []*UIDs{newTestUIDs(t, st, mapping.DefaultLayout()), newTestUIDs(t, st, mapping.DefaultLayout())}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { work(w, procs[w%2]) })
	}
	wg.Wait()
}

// numbered is the names prefix0..prefix<n-1>.
func numbered(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint(prefix, i)
	}
	return names
}

func TestUIDAssignmentLayout(t *testing.T) {
	st := openUIDStore(t)
	u := newTestUIDs(t, st, mapping.DefaultLayout())
	ctx := context.Background()
	for i, tc := range []struct {
		kind Kind
		name string
		want string
	}{
		{KindMetric, "sys.cpu.user", "000001"},
		{KindMetric, "sys.cpu.nice", "000002"},
		{KindTagK, "host", "000001"},
		{KindTagV, "web01", "000001"},
		{KindMetric, "sys.cpu.user", "000001"}, // again: same uid
	} {
		uid, err := u.GetOrCreate(ctx, tc.kind, []byte(tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%X", uid) != tc.want {
			t.Errorf("step %d: %s %q = %X, want %s", i, tc.kind, tc.name, uid, tc.want)
		}
	}
	// The cells are OpenTSDB's: forward, reverse and the max-id counter.
	for _, tc := range []struct {
		row    []byte
		family string
		want   string
	}{
		{[]byte("sys.cpu.user"), "id", "id:metrics=000001"},
		{[]byte{0, 0, 1}, "name", "name:metrics=7379732e6370752e75736572 name:tagk=686f7374 name:tagv=7765623031"},
		{[]byte{0}, "id", "id:metrics=0000000000000002 id:tagk=0000000000000001 id:tagv=0000000000000001"},
	} {
		r, err := st.Get(ctx, "tsdb-uid", tc.row, tc.family)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for i, c := range r.Cells {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%s:%s=%x", c.Family, c.Qualifier, c.Value)
		}
		if got != tc.want {
			t.Errorf("row %x: %s, want %s", tc.row, got, tc.want)
		}
	}
	// A fresh process finds them without assigning.
	u2 := newTestUIDs(t, st, mapping.DefaultLayout())
	if uid, err := u2.ID(ctx, KindTagV, "web01"); err != nil || fmt.Sprintf("%X", uid) != "000001" {
		t.Errorf("ID(web01) in a new process = %X, %v", uid, err)
	}
	if name, err := u2.Name(ctx, KindMetric, []byte{0, 0, 2}); err != nil || name != "sys.cpu.nice" {
		t.Errorf("Name(000002) = %q, %v", name, err)
	}
	if _, err := u2.ID(ctx, KindTagV, "nope"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("ID of an unknown name: %v, want ErrNoSuchName", err)
	}
	if _, err := u2.Name(ctx, KindTagV, []byte{9, 9, 9}); !errors.Is(err, ErrNoSuchUID) {
		t.Errorf("Name of an unknown uid: %v, want ErrNoSuchUID", err)
	}
}

// TestUIDRace: many goroutines of two "processes" (two UIDs on one store)
// ask for the same new names at once. Each name gets one UID, every
// forward mapping has its reverse.
func TestUIDRace(t *testing.T) {
	st := openUIDStore(t)
	ctx := context.Background()
	const names, workers = 50, 8
	results := make([][]string, workers)
	raceProcs(t, st, workers, func(w int, u *UIDs) {
		for n := range names {
			uid, err := u.GetOrCreate(ctx, KindTagV, []byte(fmt.Sprintf("name-%d", n)))
			if err != nil {
				t.Error(err)
				return
			}
			results[w] = append(results[w], fmt.Sprintf("%X", uid))
		}
	})
	for w := 1; w < workers; w++ {
		for n := range names {
			if results[w][n] != results[0][n] {
				t.Fatalf("name-%d: worker %d got %s, worker 0 got %s", n, w, results[w][n], results[0][n])
			}
		}
	}
	fresh := newTestUIDs(t, st, mapping.DefaultLayout())
	for n := range names {
		name := fmt.Sprintf("name-%d", n)
		uid, err := fresh.ID(ctx, KindTagV, name)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := fresh.Name(ctx, KindTagV, uid); err != nil || back != name {
			t.Errorf("reverse of %s (%X) = %q, %v", name, uid, back, err)
		}
	}
}

func TestUIDExhaustion(t *testing.T) {
	st := openUIDStore(t)
	l := mapping.DefaultLayout()
	l.TagVWidth = 1
	u := newTestUIDs(t, st, l)
	ctx := context.Background()
	for i := 1; i <= 255; i++ {
		uid, err := u.GetOrCreate(ctx, KindTagV, []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatalf("name %d: %v", i, err)
		}
		if len(uid) != 1 || int(uid[0]) != i {
			t.Fatalf("name %d got uid %X", i, uid)
		}
	}
	_, err := u.GetOrCreate(ctx, KindTagV, []byte("one too many"))
	if !errors.Is(err, ErrUIDExhausted) {
		t.Fatalf("256th name: %v, want ErrUIDExhausted", err)
	}
	// Existing names still resolve; other kinds still assign.
	if uid, err := u.GetOrCreate(ctx, KindTagV, []byte("7")); err != nil || uid[0] != 7 {
		t.Errorf("existing name after exhaustion: %X, %v", uid, err)
	}
	if _, err := u.GetOrCreate(ctx, KindTagK, []byte("k")); err != nil {
		t.Errorf("tagk after tagv exhaustion: %v", err)
	}
}

func TestUIDFsck(t *testing.T) {
	st := openUIDStore(t)
	u := newTestUIDs(t, st, mapping.DefaultLayout())
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := u.GetOrCreate(ctx, KindTagV, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := UIDFsck(ctx, st, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 || len(rep.Orphans) != 0 || rep.Forward[KindTagV] != 3 {
		t.Fatalf("clean table: %+v", rep)
	}
	// Break it: a forward mapping without reverse, a duplicate uid, an orphan.
	put := func(row, fam, qual string, val []byte) {
		t.Helper()
		if err := st.Put(ctx, "tsdb-uid", []store.Put{{Row: []byte(row), Cells: []store.Cell{{Family: []byte(fam), Qualifier: []byte(qual), Value: val}}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("d", "id", "tagv", []byte{0, 0, 9})
	put("e", "id", "tagv", []byte{0, 0, 1})
	put("\x00\x00\x07", "name", "tagv", []byte("lost"))
	rep, err = UIDFsck(ctx, st, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rep.Errors, "\n")
	for _, want := range []string{`"d" -> 000009 has no reverse`, "uid 000001 is used by", `"e" -> 000001, but 000001 -> "a"`, "counter 3 is behind the largest uid in use 9"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors %q lack %q", joined, want)
		}
	}
	if len(rep.Orphans) != 1 || !strings.Contains(rep.Orphans[0], `000007 -> "lost"`) {
		t.Errorf("orphans = %q", rep.Orphans)
	}
}
