package series

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
)

// TestResolveBatchMatchesResolve: ResolveBatch gives each item what Resolve
// gives it, invalid label sets included, and caches the valid ones.
func TestResolveBatchMatchesResolve(t *testing.T) {
	ctx := context.Background()
	sets := [][]mapping.Label{
		testLabels("__name__", "up", "job", "a"),
		testLabels("__name__", "up", "job", "b", "instance", "x:1"),
		testLabels("__name__", "only_name"),
		testLabels("__name__", "up", "job", "a"), // a duplicate
		testLabels("job", "no_name"),
		testLabels("__name__", "up", "job", "a", "job", "b"),
		testLabels("__name__", "up", "empty", "", "job", "c"),
		// One name as three kinds: three requests, three UIDs.
		testLabels("__name__", "job", "job", "up"),
		testLabels("__name__", "m", "a", "job", "job", "a"),
	}
	one := testMapper(t, mapping.DefaultLayout(), 0)
	batch := testMapper(t, mapping.DefaultLayout(), 0)
	items := make([]ResolveItem, len(sets))
	for i, l := range sets {
		items[i] = ResolveItem{Key: []byte(mapping.FormatLabels(l)), Labels: l}
	}
	batch.ResolveBatch(ctx, items)
	for i, l := range sets {
		want, wantErr := one.Resolve(ctx, []byte(mapping.FormatLabels(l)), l)
		got := items[i]
		if (wantErr == nil) != (got.Err == nil) {
			t.Errorf("%s: err %v, Resolve's %v", mapping.FormatLabels(l), got.Err, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if fmt.Sprintf("%X %X", got.Series.Metric, got.Series.Tags) != fmt.Sprintf("%X %X", want.Metric, want.Tags) {
			t.Errorf("%s: %X %X, Resolve's %X %X", mapping.FormatLabels(l), got.Series.Metric, got.Series.Tags, want.Metric, want.Tags)
		}
		if _, ok := batch.series.get(items[i].Key); !ok {
			t.Errorf("%s: not cached", mapping.FormatLabels(l))
		}
	}
}

// TestNameDedup: one request per distinct name and kind in a call; a name
// whose hash collides with another's gets a request of its own.
func TestNameDedup(t *testing.T) {
	d := nameDedup{seed: maphash.MakeSeed()}
	var reqs []uid.UIDRequest
	a1 := d.ref(&reqs, uid.KindTagV, []byte("a"))
	if a2 := d.ref(&reqs, uid.KindTagV, []byte("a")); a2 != a1 {
		t.Errorf("tagv a twice: requests %d and %d", a1, a2)
	}
	if k := d.ref(&reqs, uid.KindTagK, []byte("a")); k == a1 {
		t.Errorf("tagk a shares tagv a's request %d", k)
	}
	// b's hash taken by a: b must not get a's request, and a keeps it.
	d.idx[uid.KindTagV][maphash.Bytes(d.seed, []byte("b"))] = a1
	b := d.ref(&reqs, uid.KindTagV, []byte("b"))
	if b == a1 || string(reqs[b].Name) != "b" || reqs[b].Kind != uid.KindTagV {
		t.Errorf("colliding b: request %d %+v", b, reqs[b])
	}
	if a3 := d.ref(&reqs, uid.KindTagV, []byte("a")); a3 != a1 {
		t.Errorf("tagv a after the collision: request %d, want %d", a3, a1)
	}
	if len(reqs) != 3 {
		t.Errorf("%d requests, want 3: %+v", len(reqs), reqs)
	}
}

// TestFreshCells: a resolved series marks as fresh the cells of the UIDs
// assigned when it was resolved (its metric's: every cell), and only
// those, whatever the order of its pairs in the row key.
func TestFreshCells(t *testing.T) {
	ctx := context.Background()
	m := testMapper(t, mapping.DefaultLayout(), 0)
	u := m.UIDs()
	resolve := func(key string, kv ...string) Series {
		t.Helper()
		s, err := m.Resolve(ctx, []byte(key), testLabels(kv...))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The pair of s whose tag name is name.
	pairOf := func(s Series, name string) int {
		t.Helper()
		uid, err := u.ID(ctx, uid.KindTagK, name)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i*6 < len(s.Tags); i++ {
			if bytes.Equal(s.Tags[i*6:i*6+3], uid) {
				return i
			}
		}
		t.Fatalf("no pair of %s in %x", name, s.Tags)
		return -1
	}
	// instance's name gets its UID first, so the row key sorts its pair
	// first, unlike the labels below, which have it last.
	resolve("0", "__name__", "other", "instance", "w")
	first := resolve("1", "__name__", "up", "job", "a", "zeta", "z", "instance", "x")
	if p := pairOf(first, "instance"); p != 0 {
		t.Fatalf("instance is pair %d of the row key, want 0", p)
	}
	for i := -1; i < 3; i++ {
		if !first.FreshCell(i) {
			t.Errorf("all new: cell %d not fresh", i)
		}
	}
	s := resolve("2", "__name__", "up", "job", "a", "zeta", "z", "instance", "y")
	if !s.Fresh() || s.FreshCell(-1) {
		t.Errorf("new instance: fresh %v, metric cell fresh %v; want true, false", s.Fresh(), s.FreshCell(-1))
	}
	for name, want := range map[string]bool{"zeta": false, "job": false, "instance": true} {
		if got := s.FreshCell(pairOf(s, name)); got != want {
			t.Errorf("new instance: cell of %s fresh %v, want %v", name, got, want)
		}
	}
	again := resolve("3", "__name__", "up", "job", "a", "zeta", "z", "instance", "y")
	if again.Fresh() || again.FreshCell(-1) || again.FreshCell(pairOf(again, "instance")) {
		t.Errorf("known series: fresh %v", again.Fresh())
	}
}
