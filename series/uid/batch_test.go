package uid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// countingStore counts the UID table operations that reach the store.
type countingStore struct {
	store.Store
	increments, casBatches, gets atomic.Int64
}

func (c *countingStore) Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	c.increments.Add(1)
	return c.Store.Increment(ctx, table, row, family, qualifier, delta)
}

func (c *countingStore) CheckAndPutBatch(ctx context.Context, table string, ops []store.CondPut, written []bool) error {
	c.casBatches.Add(1)
	return c.Store.(store.BatchCheckAndPutter).CheckAndPutBatch(ctx, table, ops, written)
}

func (c *countingStore) GetCell(ctx context.Context, table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	c.gets.Add(1)
	return c.Store.(store.CellGetter).GetCell(ctx, table, row, family, qualifier)
}

// remoteLike hides the embedded store's batch and point-read methods, so
// that UIDs take the paths they take on HBase.
type remoteLike struct{ store.Store }

// syncEachLike is a store whose check-and-puts each sync on their own, as
// HBase's: batched check-and-puts, and one-cell reads of many rows.
type syncEachLike struct{ store.Store }

func (s syncEachLike) CheckAndPutSyncsEach() bool { return true }
func (s syncEachLike) CheckAndPutBatch(ctx context.Context, table string, ops []store.CondPut, written []bool) error {
	return s.Store.(store.BatchCheckAndPutter).CheckAndPutBatch(ctx, table, ops, written)
}
func (s syncEachLike) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error {
	return s.Store.(store.CellsGetter).GetCells(ctx, table, rows, family, qualifier, values, found)
}

// syncEachGetLike is syncEachLike without the reads of many rows.
type syncEachGetLike struct{ store.Store }

func (s syncEachGetLike) CheckAndPutSyncsEach() bool { return true }

// uidStores are the paths of GetOrCreateBatch's reverse rows.
var uidStores = []struct {
	name string
	wrap func(store.Store) store.Store
}{
	{"batched", func(s store.Store) store.Store { return s }},
	{"remote", func(s store.Store) store.Store { return remoteLike{s} }},
	{"sync each, cells read in batches (HBase)", func(s store.Store) store.Store { return syncEachLike{s} }},
	{"sync each, rows read one by one", func(s store.Store) store.Store { return syncEachGetLike{s} }},
}

func uidReqs(kind Kind, names ...string) []UIDRequest {
	reqs := make([]UIDRequest, len(names))
	for i, n := range names {
		reqs[i] = UIDRequest{Kind: kind, Name: []byte(n)}
	}
	return reqs
}

// TestGetOrCreateBatch: a batch's new names of a kind take consecutive
// UIDs from one Increment, with two batched check-and-puts; duplicates
// share a UID; names already known keep theirs; the rows are OpenTSDB's,
// as uid fsck sees them.
func TestGetOrCreateBatch(t *testing.T) {
	ctx := context.Background()
	cs := &countingStore{Store: openUIDStore(t)}
	u := newTestUIDs(t, cs, mapping.DefaultLayout())
	if _, err := u.GetOrCreate(ctx, KindTagV, []byte("known")); err != nil {
		t.Fatal(err)
	}
	cs.increments.Store(0)
	cs.casBatches.Store(0)
	reqs := append(uidReqs(KindTagV, "a", "b", "known", "a", "c"), uidReqs(KindTagK, "host", "pod")...)
	u.GetOrCreateBatch(ctx, reqs)
	want := []struct {
		uid     string
		created bool
	}{{"000002", true}, {"000003", true}, {"000001", false}, {"000002", true}, {"000004", true}, {"000001", true}, {"000002", true}}
	for i, r := range reqs {
		if r.Err != nil || fmt.Sprintf("%X", r.UID) != want[i].uid || r.Created != want[i].created {
			t.Errorf("%s %q = %X created %v err %v, want %s created %v", r.Kind, r.Name, r.UID, r.Created, r.Err, want[i].uid, want[i].created)
		}
	}
	if n := cs.increments.Load(); n != 2 {
		t.Errorf("increments = %d, want 2 (one per kind)", n)
	}
	if n := cs.casBatches.Load(); n != 2 {
		t.Errorf("check-and-put batches = %d, want 2 (reverse, forward)", n)
	}
	// A second batch is answered from the cache.
	gets := cs.gets.Load()
	again := uidReqs(KindTagV, "a", "b", "c")
	u.GetOrCreateBatch(ctx, again)
	if cs.gets.Load() != gets || cs.increments.Load() != 2 {
		t.Errorf("cached batch reached the store")
	}
	// Another process reads what the batch wrote.
	other := newTestUIDs(t, cs, mapping.DefaultLayout())
	for _, name := range []string{"a", "b", "c"} {
		uid, err := other.ID(ctx, KindTagV, name)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := other.Name(ctx, KindTagV, uid); err != nil || back != name {
			t.Errorf("reverse of %s (%X) = %q, %v", name, uid, back, err)
		}
	}
	rep, err := UIDFsck(ctx, cs, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 || len(rep.Orphans) != 0 {
		t.Errorf("uid fsck: %+v", rep)
	}
}

// TestGetOrCreateBatchReverseTaken: a counter behind the table (a reverse
// row written by hand at the UID the counter gives next) sends that name
// through the one-by-one path, which skips the taken UID.
func TestGetOrCreateBatchReverseTaken(t *testing.T) {
	for _, sc := range uidStores {
		t.Run(sc.name, func(t *testing.T) { testGetOrCreateBatchReverseTaken(t, sc.wrap(openUIDStore(t))) })
	}
}

func testGetOrCreateBatchReverseTaken(t *testing.T, st store.Store) {
	ctx := context.Background()
	if err := st.Put(ctx, "tsdb-uid", []store.Put{{Row: []byte{0, 0, 2}, Cells: []store.Cell{{Family: []byte("name"), Qualifier: []byte("tagv"), Value: []byte("squatter")}}}}); err != nil {
		t.Fatal(err)
	}
	u := newTestUIDs(t, st, mapping.DefaultLayout())
	reqs := uidReqs(KindTagV, "x", "y", "z")
	u.GetOrCreateBatch(ctx, reqs)
	seen := map[string]string{}
	for _, r := range reqs {
		if r.Err != nil {
			t.Fatalf("%q: %v", r.Name, r.Err)
		}
		if string(r.UID) == "\x00\x00\x02" {
			t.Errorf("%q got the taken uid 000002", r.Name)
		}
		if prev, ok := seen[string(r.UID)]; ok {
			t.Errorf("%q and %q share uid %X", prev, r.Name, r.UID)
		}
		seen[string(r.UID)] = string(r.Name)
		if back, err := newTestUIDs(t, st, mapping.DefaultLayout()).Name(ctx, KindTagV, r.UID); err != nil || back != string(r.Name) {
			t.Errorf("reverse of %q (%X) = %q, %v", r.Name, r.UID, back, err)
		}
	}
}

// TestGetOrCreateBatchExhaustion: with 1-byte UIDs, a batch that would
// pass the last UID assigns what fits and refuses the rest by name.
func TestGetOrCreateBatchExhaustion(t *testing.T) {
	ctx := context.Background()
	l := mapping.DefaultLayout()
	l.TagVWidth = 1
	u := newTestUIDs(t, openUIDStore(t), l)
	names := numbered("v", 260)
	reqs := uidReqs(KindTagV, names...)
	u.GetOrCreateBatch(ctx, reqs)
	for i, r := range reqs {
		switch {
		case i < 255 && (r.Err != nil || int(r.UID[0]) != i+1):
			t.Errorf("%s = %X, %v; want %02X", names[i], r.UID, r.Err, i+1)
		case i >= 255 && !errors.Is(r.Err, ErrUIDExhausted):
			t.Errorf("%s: err %v, want ErrUIDExhausted", names[i], r.Err)
		}
	}
	reqs = uidReqs(KindTagV, "v7", "\x00")
	u.GetOrCreateBatch(ctx, reqs)
	if reqs[0].Err != nil || reqs[0].UID[0] != 8 {
		t.Errorf("known name after exhaustion: %X, %v", reqs[0].UID, reqs[0].Err)
	}
	if !errors.Is(reqs[1].Err, mapping.ErrInvalidSeries) {
		t.Errorf("the counter row's key: %v, want ErrInvalidSeries", reqs[1].Err)
	}
}

// TestGetOrCreateBatchRace: batches of two processes (two UIDs on one
// store) and single calls race for overlapping new names; each name ends
// with one UID that every caller got, and its reverse row names it.
func TestGetOrCreateBatchRace(t *testing.T) {
	for _, sc := range uidStores {
		t.Run(sc.name, func(t *testing.T) { testGetOrCreateBatchRace(t, sc.wrap(openUIDStore(t))) })
	}
}

func testGetOrCreateBatchRace(t *testing.T, st store.Store) {
	ctx := context.Background()
	const names, workers = 200, 8
	got := make([]map[string]string, workers)
	raceProcs(t, st, workers, func(w int, u *UIDs) {
		got[w] = map[string]string{}
		// Each worker asks for a different, overlapping slice of the names.
		var batch []string
		for n := w * 10; n < w*10+names/2; n++ {
			batch = append(batch, fmt.Sprint("n", n%names))
		}
		if w%4 == 3 {
			for _, name := range batch {
				uid, err := u.GetOrCreate(ctx, KindTagV, []byte(name))
				if err != nil {
					t.Error(err)
					return
				}
				got[w][name] = fmt.Sprintf("%X", uid)
			}
			return
		}
		reqs := uidReqs(KindTagV, batch...)
		u.GetOrCreateBatch(ctx, reqs)
		for _, r := range reqs {
			if r.Err != nil {
				t.Error(r.Err)
				return
			}
			got[w][string(r.Name)] = fmt.Sprintf("%X", r.UID)
		}
	})
	final := newTestUIDs(t, st, mapping.DefaultLayout())
	for w := range workers {
		for name, uid := range got[w] {
			want, err := final.ID(ctx, KindTagV, name)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%X", want) != uid {
				t.Errorf("worker %d: %s = %s, table says %X", w, name, uid, want)
			}
			if back, err := final.Name(ctx, KindTagV, want); err != nil || back != name {
				t.Errorf("reverse of %s (%X) = %q, %v", name, want, back, err)
			}
		}
	}
	rep, err := UIDFsck(ctx, st, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("uid fsck errors: %q", rep.Errors)
	}
}

// flakyStore fails the check-and-puts of the forward rows named in fail,
// once each, as a remote store's RPC errors do.
type flakyStore struct {
	store.Store
	mu   sync.Mutex
	fail map[string]bool
	// getAfter are rows whose next Get after their failed check-and-put
	// fails too, getting those armed.
	getAfter, getting map[string]bool
}

func (f *flakyStore) Get(ctx context.Context, table string, row []byte, family string) (store.Row, error) {
	f.mu.Lock()
	failing := f.getting[string(row)]
	delete(f.getting, string(row))
	f.mu.Unlock()
	if failing {
		return store.Row{}, fmt.Errorf("injected: %w", store.ErrUnavailable)
	}
	return f.Store.Get(ctx, table, row, family)
}

func (f *flakyStore) CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	f.mu.Lock()
	failing := f.fail[string(put.Row)]
	delete(f.fail, string(put.Row))
	if failing && f.getAfter[string(put.Row)] {
		if f.getting == nil {
			f.getting = map[string]bool{}
		}
		f.getting[string(put.Row)] = true
	}
	f.mu.Unlock()
	if failing {
		return false, fmt.Errorf("injected: %w", store.ErrUnavailable)
	}
	return f.Store.CheckAndPut(ctx, table, put, family, qualifier, expected)
}

// TestGetOrCreateBatchPartialFailure: on a remote store, a failed forward
// write fails its own name only; the others get their UIDs; nothing is
// cached or left in flight for the failed one, whose retry succeeds; and
// uid fsck finds no error (at most a warning for the failed name's
// reverse row).
func TestGetOrCreateBatchPartialFailure(t *testing.T) {
	ctx := context.Background()
	base := openUIDStore(t)
	st := &flakyStore{Store: remoteLike{base}, fail: map[string]bool{"n3": true, "n7": true}}
	u := newTestUIDs(t, st, mapping.DefaultLayout())
	names := numbered("n", 10)
	reqs := uidReqs(KindTagV, names...)
	u.GetOrCreateBatch(ctx, reqs)
	for i, r := range reqs {
		failed := i == 3 || i == 7
		if failed != (r.Err != nil) {
			t.Errorf("%s: err %v, want failure %v", names[i], r.Err, failed)
		}
		if failed && !errors.Is(r.Err, store.ErrUnavailable) {
			t.Errorf("%s: err %v, want ErrUnavailable", names[i], r.Err)
		}
		if _, ok := u.CachedID(KindTagV, []byte(names[i])); ok == failed {
			t.Errorf("%s: cached %v after failure %v", names[i], ok, failed)
		}
	}
	retry := uidReqs(KindTagV, "n3", "n7")
	u.GetOrCreateBatch(ctx, retry)
	for _, r := range retry {
		if r.Err != nil || !r.Created {
			t.Errorf("retry of %s: %X created %v err %v", r.Name, r.UID, r.Created, r.Err)
		}
	}
	rep, err := UIDFsck(ctx, base, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("uid fsck errors: %q", rep.Errors)
	}
	if len(rep.Orphans) > 2 {
		t.Errorf("uid fsck orphans: %q", rep.Orphans)
	}
}

// TestGetOrCreateBatchUnknownOutcome: a forward write that fails, and
// whose row then cannot be read either (a store restarting), leaves its
// UID's reverse row naming the name; the name's retry takes that UID
// again, so uid fsck finds no reverse row naming a name that maps to
// another UID.
func TestGetOrCreateBatchUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	base := openUIDStore(t)
	st := &flakyStore{Store: remoteLike{base}, fail: map[string]bool{"n3": true}, getAfter: map[string]bool{"n3": true}}
	u := newTestUIDs(t, st, mapping.DefaultLayout())
	reqs := uidReqs(KindTagV, numbered("n", 5)...)
	u.GetOrCreateBatch(ctx, reqs)
	if !errors.Is(reqs[3].Err, store.ErrUnavailable) {
		t.Fatalf("n3: err %v, want ErrUnavailable", reqs[3].Err)
	}
	retry := uidReqs(KindTagV, "n3")
	u.GetOrCreateBatch(ctx, retry)
	if r := retry[0]; r.Err != nil || !r.Created {
		t.Fatalf("retry of n3: %X created %v err %v", r.UID, r.Created, r.Err)
	}
	rep, err := UIDFsck(ctx, base, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 || len(rep.Orphans) != 0 {
		t.Errorf("uid fsck errors %q, orphans %q", rep.Errors, rep.Orphans)
	}
}

// TestGetOrCreateBatchSoleWriter: UIDs that are their table's only writer
// write new names with plain puts (no check-and-put), one Increment per
// kind, and leave a table uid fsck finds clean; a second batch and another
// reader agree with the first.
func TestGetOrCreateBatchSoleWriter(t *testing.T) {
	ctx := context.Background()
	cs := &countingStore{Store: openUIDStore(t)}
	u, err := NewUIDs(cs, mapping.DefaultLayout(), UIDOptions{SoleWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprint("v", i%250) // with duplicates
	}
	reqs := append(uidReqs(KindTagV, names...), uidReqs(KindTagK, "host", "pod")...)
	u.GetOrCreateBatch(ctx, reqs)
	for i, r := range reqs {
		if r.Err != nil || !r.Created {
			t.Fatalf("%s %q: %X created %v err %v", r.Kind, r.Name, r.UID, r.Created, r.Err)
		}
		if i < 250 && int(r.UID[2]) != i+1 {
			t.Errorf("%q = %X, want %06X", r.Name, r.UID, i+1)
		}
	}
	if cs.increments.Load() != 2 || cs.casBatches.Load() != 0 {
		t.Errorf("increments %d, check-and-put batches %d; want 2 and 0", cs.increments.Load(), cs.casBatches.Load())
	}
	reader := newTestUIDs(t, cs, mapping.DefaultLayout())
	for _, r := range reqs[:250] {
		uid, err := reader.ID(ctx, KindTagV, string(r.Name))
		if err != nil || !bytes.Equal(uid, r.UID) {
			t.Errorf("%q read back as %X, %v; want %X", r.Name, uid, err, r.UID)
		}
	}
	rep, err := UIDFsck(ctx, cs, "tsdb-uid", mapping.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 || len(rep.Orphans) != 0 || rep.Forward[KindTagV] != 250 {
		t.Errorf("uid fsck: %+v", rep)
	}
}
