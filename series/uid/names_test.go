package uid

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// TestLoadNames: LoadNames fills the reverse cache with the names of the
// UIDs it lacks, each read once, in batches of at most maxNamesBatch; a UID
// without a name stays for Name to report; a store that cannot read many
// cells at once is left to Name's Gets.
func TestLoadNames(t *testing.T) {
	ctx := context.Background()
	st := openUIDStore(t)
	writer := newTestUIDs(t, st, mapping.DefaultLayout())
	var uids [][]byte
	names := map[string]string{}
	for i := range maxNamesBatch + 10 {
		name := fmt.Sprintf("v%04d", i)
		uid, err := writer.GetOrCreate(ctx, KindTagV, []byte(name))
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, uid)
		names[string(uid)] = name
	}
	missing := []byte{0xff, 0xff, 0xfe}
	t.Run("batched", func(t *testing.T) {
		cs := &cellCounter{Store: st}
		u := newTestUIDs(t, cs, mapping.DefaultLayout())
		in := append(append(append([][]byte{}, uids...), uids[:5]...), missing, []byte{1, 2}) // repeats, a missing UID, a short one
		if err := u.LoadNames(ctx, KindTagV, in); err != nil {
			t.Fatal(err)
		}
		if cs.calls != 2 || cs.rows != len(uids)+1 {
			t.Errorf("%d GetCells of %d rows, want 2 of %d", cs.calls, cs.rows, len(uids)+1)
		}
		for _, uid := range uids {
			if !u.NameCached(KindTagV, uid) {
				t.Fatalf("uid %x not cached", uid)
			}
			if got, err := u.Name(ctx, KindTagV, uid); err != nil || got != names[string(uid)] {
				t.Fatalf("Name(%x) = %q, %v; want %q", uid, got, err, names[string(uid)])
			}
		}
		if u.NameCached(KindTagV, missing) || u.NameCached(KindTagK, uids[0]) {
			t.Error("a UID without a name (or of another kind) is cached")
		}
		if _, err := u.Name(ctx, KindTagV, missing); !errors.Is(err, ErrNoSuchUID) {
			t.Errorf("Name of a missing UID: %v, want ErrNoSuchUID", err)
		}
		before := cs.calls
		if err := u.LoadNames(ctx, KindTagV, uids); err != nil || cs.calls != before {
			t.Errorf("cached names read again: %d GetCells, %v", cs.calls-before, err)
		}
	})
	t.Run("store without GetCells", func(t *testing.T) {
		u := newTestUIDs(t, remoteLike{st}, mapping.DefaultLayout())
		if err := u.LoadNames(ctx, KindTagV, uids); err != nil {
			t.Fatal(err)
		}
		if u.NameCached(KindTagV, uids[0]) {
			t.Error("names cached without a batched read")
		}
	})
}

// cellCounter counts GetCells calls and the rows they read.
type cellCounter struct {
	store.Store
	calls, rows int
}

func (c *cellCounter) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error {
	c.calls++
	c.rows += len(rows)
	return c.Store.(store.CellsGetter).GetCells(ctx, table, rows, family, qualifier, values, found)
}

// TestLoadIDs: LoadIDs fills the forward cache with the UIDs of the names
// it lacks, in one batched read; names without a UID, and names with a
// legacy stored form (Latin-1 ones), are left to ID, which still answers
// them right.
func TestLoadIDs(t *testing.T) {
	ctx := context.Background()
	st := openUIDStore(t)
	writer := newTestUIDs(t, st, mapping.DefaultLayout())
	names := []string{"a", "b", "c", "café"}
	want := map[string][]byte{}
	for _, n := range names {
		uid, err := writer.GetOrCreate(ctx, KindTagV, []byte(n))
		if err != nil {
			t.Fatal(err)
		}
		want[n] = uid
	}
	cs := &cellCounter{Store: st}
	u := newTestUIDs(t, cs, mapping.DefaultLayout())
	if err := u.LoadIDs(ctx, KindTagV, []string{"a", "b", "a", "nope", "c", "café", "\x00"}); err != nil {
		t.Fatal(err)
	}
	if cs.calls != 1 || cs.rows != 4 {
		t.Errorf("%d GetCells of %d rows, want 1 of 4 (a, b, nope, c)", cs.calls, cs.rows)
	}
	for _, n := range []string{"a", "b", "c"} {
		if uid, ok := u.CachedID(KindTagV, []byte(n)); !ok || string(uid) != string(want[n]) {
			t.Errorf("cached uid of %q = %x, %v; want %x", n, uid, ok, want[n])
		}
	}
	for _, n := range []string{"nope", "café"} {
		if _, ok := u.CachedID(KindTagV, []byte(n)); ok {
			t.Errorf("%q cached", n)
		}
	}
	if uid, err := u.ID(ctx, KindTagV, "café"); err != nil || string(uid) != string(want["café"]) {
		t.Errorf("ID(café) = %x, %v; want %x", uid, err, want["café"])
	}
	if _, err := u.ID(ctx, KindTagV, "nope"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("ID(nope): %v, want ErrNoSuchName", err)
	}
}

// TestNamespacedBatches: through a tenant's view of the store
// (store.Namespaced) the UIDs read many cells at once as over the store
// itself: new names are looked up in batches, names loaded in batches.
func TestNamespacedBatches(t *testing.T) {
	ctx := context.Background()
	emb, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb-uid"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	if _, err := emb.CreateNamespace(ctx, "t_a"); err != nil {
		t.Fatal(err)
	}
	cs := &cellCounter{Store: emb}
	u := newTestUIDs(t, store.Namespaced(cs, "t_a"), mapping.DefaultLayout())
	reqs := make([]UIDRequest, 100)
	for i := range reqs {
		reqs[i] = UIDRequest{Kind: KindTagV, Name: fmt.Appendf(nil, "v%03d", i)}
	}
	u.GetOrCreateBatch(ctx, reqs)
	var uids [][]byte
	for _, r := range reqs {
		if r.Err != nil || !r.Created {
			t.Fatalf("%s: created %v, %v", r.Name, r.Created, r.Err)
		}
		uids = append(uids, r.UID)
	}
	if cs.calls == 0 || cs.rows < len(reqs) {
		t.Errorf("new names looked up with %d GetCells of %d rows, want batches of all %d", cs.calls, cs.rows, len(reqs))
	}
	before := cs.calls
	fresh := newTestUIDs(t, store.Namespaced(cs, "t_a"), mapping.DefaultLayout())
	if err := fresh.LoadNames(ctx, KindTagV, uids); err != nil || cs.calls != before+1 || !fresh.NameCached(KindTagV, uids[0]) {
		t.Errorf("LoadNames through the view: %d GetCells, %v, cached %v; want 1", cs.calls-before, err, fresh.NameCached(KindTagV, uids[0]))
	}
}
