package series

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/test/testkit/testuid"
)

func TestResolveLabels(t *testing.T) {
	m := testMapper(t, mapping.DefaultLayout(), 0)
	ctx := context.Background()
	lbl := testLabels
	for _, tc := range []struct {
		name    string
		lbls    []mapping.Label
		wantErr string
	}{
		{"no name", lbl("a", "b"), "no __name__"},
		{"empty name", lbl("__name__", "", "a", "b"), "no __name__"},
		{"repeated", lbl("__name__", "x", "a", "b", "a", "c"), "repeated"},
		{"bad utf8", lbl("__name__", "x", "a", "\xff"), "UTF-8"},
		{"empty label name", lbl("__name__", "x", "", "c"), "empty label name"},
		{"NUL value", lbl("__name__", "x", "a", "\x00"), "counter row"},
		{"NUL metric", lbl("__name__", "\x00"), "counter row"},
		{"value too long", lbl("__name__", "x", "a", strings.Repeat("v", mapping.MaxNameBytes+1)), "longer than 32767 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Resolve(ctx, []byte(tc.name), tc.lbls)
			if !errors.Is(err, mapping.ErrInvalidSeries) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want ErrInvalidSeries mentioning %q", err, tc.wantErr)
			}
		})
	}
	// Tags are sorted by tagk UID, not by name; empty values are absent.
	s1, err := m.Resolve(ctx, []byte("k1"), lbl("__name__", "m", "zz", "1", "aa", "2", "empty", ""))
	if err != nil {
		t.Fatal(err)
	}
	// zz got tagk 000001, aa 000002: zz first.
	if got := fmt.Sprintf("%X %X", s1.Metric, s1.Tags); got != "000001 000001000001000002000002" {
		t.Errorf("series = %s", got)
	}
	back, err := m.Labels(ctx, s1.Metric, s1.Tags)
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != `{__name__="m", aa="2", zz="1"}` {
		t.Errorf("labels back = %s", back)
	}
}

// TestFreshSeries: a series is Fresh when resolving it assigned one of its
// UIDs, in this process or another's cache (a second Mapper over the same
// UIDs, or new UIDs over the same table) not.
func TestFreshSeries(t *testing.T) {
	ctx := context.Background()
	st := testuid.Store(t)
	layout := mapping.DefaultLayout()
	u := testuid.UIDs(t, st, layout)
	lbls := testLabels
	for _, tc := range []struct {
		name  string
		uids  *uid.UIDs
		lbls  []mapping.Label
		fresh bool
	}{
		{"all new", u, lbls("__name__", "up", "job", "a"), true},
		{"same labels, new mapper", u, lbls("__name__", "up", "job", "a"), false},
		{"one new value", u, lbls("__name__", "up", "job", "b"), true},
		{"known names, another process", testuid.UIDs(t, st, layout), lbls("__name__", "up", "job", "b"), false},
		{"label-less, new reserved tag", u, lbls("__name__", "bare"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewMapper(tc.uids, layout, 10).Resolve(ctx, []byte(tc.name), tc.lbls)
			if err != nil {
				t.Fatal(err)
			}
			if s.Fresh() != tc.fresh {
				t.Errorf("Fresh() = %v, want %v", s.Fresh(), tc.fresh)
			}
		})
	}
}

// testMapper returns a Mapper under layout, caching size series, over the
// UIDs of a fresh table.
func testMapper(t testing.TB, layout mapping.Layout, size int) *Mapper {
	t.Helper()
	return NewMapper(testuid.UIDs(t, testuid.Store(t), layout), layout, size)
}

// testLabels makes labels of name, value, name, value, ...
func testLabels(kv ...string) []mapping.Label {
	var out []mapping.Label
	for i := 0; i < len(kv); i += 2 {
		out = append(out, mapping.Label{Name: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return out
}

// TestCacheMetrics: the Mapper's collector reports every cache, and the
// series cache's bytes grow with what it holds.
func TestCacheMetrics(t *testing.T) {
	m := testMapper(t, mapping.DefaultLayout(), 100)
	m.SetCacheBytes(1<<20, 1<<20)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector())
	if _, err := m.Resolve(context.Background(), []byte("k"), testLabels("__name__", "up", "job", "a")); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			v := mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
			got[mf.GetName()+"/"+mt.GetLabel()[0].GetValue()] = v
		}
	}
	if len(got) != 5*8 {
		t.Errorf("%d series of cache metrics, want 40 (5 metrics × 8 caches)", len(got))
	}
	if got["promhbase_cache_entries/series"] != 1 || got["promhbase_cache_bytes/series"] < 64 || got["promhbase_cache_max_bytes/series"] != 1<<20 {
		t.Errorf("series cache metrics: %v", got)
	}
	if got["promhbase_cache_entries/uid_forward_tagv"] != 1 {
		t.Errorf("uid cache metrics: %v", got)
	}
}

// TestResetSeriesCache: a reset empties the series cache and starts a
// new epoch; a resolution of an older epoch (a request that began
// before) is answered but not cached, nor is a reader's promotion, while
// one of the new epoch is.
func TestResetSeriesCache(t *testing.T) {
	ctx := context.Background()
	m := testMapper(t, mapping.DefaultLayout(), 100)
	items := []ResolveItem{{Key: []byte("a"), Labels: testLabels("__name__", "up", "job", "a")}}
	old := m.SeriesEpoch()
	m.ResolveMissedAt(ctx, items, old)
	if _, ok := m.Cached([]byte("a")); !ok || items[0].Err != nil {
		t.Fatalf("not cached before the reset: %v", items[0].Err)
	}
	r := m.CacheReader()
	if epoch := m.ResetSeriesCache(); epoch == old {
		t.Fatalf("epoch %d unchanged", epoch)
	}
	if _, ok := m.Cached([]byte("a")); ok {
		t.Error("a reset kept an entry")
	}
	r.Release()
	items = []ResolveItem{{Key: []byte("b"), Labels: testLabels("__name__", "up", "job", "b")}}
	m.ResolveMissedAt(ctx, items, old)
	if _, ok := m.Cached([]byte("b")); ok || items[0].Err != nil || len(items[0].Series.Metric) == 0 {
		t.Errorf("a resolution of the old epoch: cached %v, series %+v, err %v; want resolved, not cached", ok, items[0].Series, items[0].Err)
	}
	m.ResolveMissedAt(ctx, items, m.SeriesEpoch())
	if _, ok := m.Cached([]byte("b")); !ok {
		t.Error("a resolution of the new epoch was not cached")
	}
}
