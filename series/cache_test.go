package series

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/promhbase/promhbase/internal/gencache"
	"github.com/promhbase/promhbase/mapping"
)

// TestSeriesCacheRecord: every field of a Series survives the arena
// record, whatever the widths: hashes of all 64 bits, buckets up to
// int32's, metric UIDs of 1 to 8 bytes, no tags or many.
func TestSeriesCacheRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Series
	}{
		{"typical", Series{Metric: []byte{0, 0, 7}, Tags: []byte{0, 0, 1, 0, 0, 2}, Bucket: 19, Hash: 0x9E3779B97F4A7C15}},
		{"no tags", Series{Metric: []byte{1, 2, 3}, Hash: ^uint64(0)}},
		{"wide", Series{Metric: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Tags: bytes.Repeat([]byte{0xFF}, 2000), Bucket: 1<<31 - 1, Hash: 1 << 63}},
		{"one-byte metric", Series{Metric: []byte{9}, Tags: []byte{1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSeriesCache(10)
			tc.s.mark = &indexMark{fresh: 1 << 3} // tag pair 3's uid.UIDs new
			c.put([]byte(tc.name), tc.s)
			got, ok := c.get([]byte(tc.name))
			if !ok {
				t.Fatal("miss right after put")
			}
			if !bytes.Equal(got.Metric, tc.s.Metric) || !bytes.Equal(got.Tags, tc.s.Tags) || got.Bucket != tc.s.Bucket || got.Hash != tc.s.Hash ||
				!got.Fresh() || !got.FreshCell(3) || got.FreshCell(2) || got.FreshCell(-1) {
				t.Errorf("got %+v, want %+v", got, tc.s)
			}
			if cap(got.Metric) != len(got.Metric) || cap(got.Tags) != len(got.Tags) {
				t.Errorf("capacities %d, %d: appending to them would write into the arena", cap(got.Metric), cap(got.Tags))
			}
		})
	}
}

// TestSeriesCacheGenerations: entries survive one generation swap and are
// promoted on a hit, with their index mark; the byte budget bounds the
// cache; an oversized series is not cached; Series handed out keep their
// bytes after their generation is dropped.
func TestSeriesCacheGenerations(t *testing.T) {
	mk := func(i int) Series {
		tags := fmt.Appendf(nil, "%06d", i)
		return Series{Metric: []byte{0, 0, byte(i)}, Tags: tags, Bucket: i % 3, Hash: uint64(i), mark: &indexMark{fresh: uint32(i%2) << freshMetric}}
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "series-%d", i) }
	t.Run("promotion keeps the mark", func(t *testing.T) {
		c := newSeriesCache(4)
		s := mk(1)
		c.put(key(1), s)
		got, ok := c.get(key(1))
		if !ok {
			t.Fatal("miss right after put")
		}
		got.SetIndexedFor(7)
		for i := 2; i <= 5; i++ { // fills cur, swaps: 1 is now in old
			c.put(key(i), mk(i))
		}
		got, ok = c.get(key(1)) // promoted
		if !ok || !bytes.Equal(got.Metric, s.Metric) || !bytes.Equal(got.Tags, s.Tags) || got.Bucket != 1 || got.Hash != 1 {
			t.Fatalf("after a swap: %+v %v, want %+v", got, ok, s)
		}
		if !got.IndexedFor(7) || got.Fresh() {
			t.Errorf("promoted mark: indexed for 7 %v, fresh %v; want true, false", got.IndexedFor(7), got.Fresh())
		}
		for i := 6; i <= 13; i++ { // two more swaps drop everything older
			c.put(key(i), mk(i))
		}
		if _, ok := c.get(key(2)); ok {
			t.Error("entry two generations old still cached")
		}
		if !bytes.Equal(got.Tags, s.Tags) {
			t.Errorf("a Series handed out changed after its generation was dropped: %q", got.Tags)
		}
	})
	t.Run("byte budget", func(t *testing.T) {
		c := newSeriesCache(1 << 30)
		c.SetMaxBytes(100 * (seriesEntryBytes + 9))
		for i := range 10000 {
			c.put(key(i), mk(i))
		}
		_, b, max := c.Stats()
		if b > max || c.Len() > 100 {
			t.Errorf("%d bytes, %d entries; budget %d bytes (100 entries)", b, c.Len(), max)
		}
		if _, ok := c.get(key(9999)); !ok {
			t.Error("newest entry missing")
		}
	})
	t.Run("oversized series", func(t *testing.T) {
		c := newSeriesCache(10)
		s := mk(1)
		s.Tags = make([]byte, gencache.MaxArenaEntry)
		c.put(key(1), s)
		if _, ok := c.get(key(1)); ok {
			t.Error("oversized series cached")
		}
		c.put(key(2), mk(2))
		if got, ok := c.get(key(2)); !ok || !bytes.Equal(got.Tags, mk(2).Tags) {
			t.Errorf("series after an oversized one: %+v %v", got, ok)
		}
	})
}

// TestResolveIndexMarkSticks: the write path marks the Series that
// Resolve and ResolveBatch return as indexed; the next lookup of the same
// label set, from the cache, must see the mark, or every write would
// index its series again.
func TestResolveIndexMarkSticks(t *testing.T) {
	ctx := t.Context()
	layout := mapping.DefaultLayout()
	m := testMapper(t, layout, 1000)
	lbls := func(v string) []mapping.Label {
		return []mapping.Label{{Name: []byte("__name__"), Value: []byte("up")}, {Name: []byte("job"), Value: []byte(v)}}
	}
	s, err := m.Resolve(ctx, []byte("a"), lbls("a"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetIndexedFor(5)
	items := []ResolveItem{{Key: []byte("b"), Labels: lbls("b")}}
	m.ResolveBatch(ctx, items)
	if items[0].Err != nil {
		t.Fatal(items[0].Err)
	}
	items[0].Series.SetIndexedFor(5)
	for _, k := range []string{"a", "b"} {
		c, ok := m.Cached([]byte(k))
		if !ok || !c.IndexedFor(5) {
			t.Errorf("%s: cached %v, indexed for day 5 %v; want both", k, ok, c.IndexedFor(5))
		}
		r := m.CacheReader()
		c, ok = r.Get([]byte(k))
		r.Release()
		if !ok || !c.IndexedFor(5) {
			t.Errorf("%s through a reader: cached %v, indexed for day 5 %v; want both", k, ok, c.IndexedFor(5))
		}
	}
}

// TestCacheReaderPrefetch: Get answers the same after a Prefetch of its
// key, of another key, of a prefix of it and of nothing; a Prefetch's
// hash is taken only by a Get of an equal key, and not after Release or
// once the bytes prefetched have changed.
func TestCacheReaderPrefetch(t *testing.T) {
	ctx := t.Context()
	m := testMapper(t, mapping.DefaultLayout(), 1000)
	want := map[string]Series{}
	for _, k := range []string{"a", "b", "c"} {
		s, err := m.Resolve(ctx, []byte(k), []mapping.Label{{Name: []byte("__name__"), Value: []byte("up")}, {Name: []byte("job"), Value: []byte(k)}})
		if err != nil {
			t.Fatal(err)
		}
		want[k] = s
	}
	buf := []byte("ab")
	for _, tc := range []struct {
		name     string
		prefetch [][]byte
		get      []byte
		cached   string // "" not cached
	}{
		{"its key", [][]byte{buf[:1]}, buf[:1], "a"},
		{"another key", [][]byte{[]byte("b")}, []byte("a"), "a"},
		{"two ahead", [][]byte{buf[:1], buf[1:]}, buf[:1], "a"},
		{"a prefix at the same bytes", [][]byte{buf[:1]}, buf, ""},
		{"an absent key", [][]byte{[]byte("zz")}, []byte("zz"), ""},
		{"nothing", [][]byte{nil, {}}, []byte("c"), "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.CacheReader()
			for _, k := range tc.prefetch {
				r.Prefetch(k)
			}
			got, ok := r.Get(tc.get)
			r.Release()
			if ok != (tc.cached != "") || ok && (!bytes.Equal(got.Metric, want[tc.cached].Metric) || !bytes.Equal(got.Tags, want[tc.cached].Tags)) {
				t.Errorf("Get(%q) = %v %v, want cached %q", tc.get, got, ok, tc.cached)
			}
		})
	}
	// Bytes changed since their Prefetch are hashed again, as after a
	// Release.
	r := m.CacheReader()
	r.Prefetch(buf[1:])
	buf[1] = 'c'
	if got, ok := r.Get(buf[1:]); !ok || !bytes.Equal(got.Tags, want["c"].Tags) {
		t.Errorf("after a change of the bytes prefetched: Get = %v %v, want c's", got, ok)
	}
	r.Prefetch([]byte("a"))
	r.Release()
	if got, ok := r.Get([]byte("b")); !ok || !bytes.Equal(got.Tags, want["b"].Tags) {
		t.Errorf("after Release: Get = %v %v, want b's", got, ok)
	}
	r.Release()
}

// TestSeriesCachePromotionNotFresh: a promoted Series keeps its mark's day
// but is never fresh: the Series handed out before the promotion may set
// the day on the old mark only, and a fresh copy would then have its
// TSMeta row written again without the read that keeps an existing one.
func TestSeriesCachePromotionNotFresh(t *testing.T) {
	c := newSeriesCache(2)
	s := Series{Metric: []byte{0, 0, 1}, Tags: []byte{0, 0, 1, 0, 0, 2}, mark: &indexMark{fresh: 1 << freshMetric}}
	got := c.put([]byte("a"), s)
	if !got.Fresh() {
		t.Fatal("a new series lost its freshness in the cache")
	}
	c.put([]byte("b"), s)
	c.put([]byte("c"), s) // a and b now in the older generation
	p, ok := c.get([]byte("a"))
	if !ok || p.Fresh() || p.FreshCell(-1) || p.FreshCell(0) {
		t.Errorf("promoted: cached %v, fresh %v; want cached, not fresh", ok, p.Fresh())
	}
}

// TestSeriesCacheShardsConcurrent: readers holding several shards' read
// locks (SeriesCacheReader) and writers putting batches (putItems) and
// single series run together without deadlock, also while new
// generations start all the time (a small byte budget), and every lookup
// that hits returns the Series put under its key.
func TestSeriesCacheShardsConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxBytes int // 0: no generation starts during the test
	}{{"one generation", 0}, {"generations starting", 300 * (seriesEntryBytes + 3)}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSeriesCache(1 << 20)
			if len(c.shards) < 2 {
				t.Fatalf("%d shards; the test needs several", len(c.shards))
			}
			c.SetMaxBytes(tc.maxBytes)
			const keys = 20000
			key := func(i int) []byte { return fmt.Appendf(nil, "k%d", i) }
			mk := func(i int) Series {
				return Series{Metric: []byte{byte(i >> 16), byte(i >> 8), byte(i)}, Hash: uint64(i), mark: &indexMark{}}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := range 2 {
				wg.Go(func() {
					for start := w; start < keys; start += 2 * 500 {
						items := make([]ResolveItem, 0, 500)
						for i := start; i < min(start+1000, keys); i += 2 {
							items = append(items, ResolveItem{Key: key(i), Series: mk(i)})
						}
						c.putItems(items)
						for _, it := range items {
							if it.Series.Hash != uint64(it.Series.Metric[0])<<16|uint64(it.Series.Metric[1])<<8|uint64(it.Series.Metric[2]) {
								errs <- fmt.Errorf("putItems gave back %+v", it.Series)
								return
							}
						}
						c.put(key(start), mk(start))
					}
				})
			}
			for r := range 4 {
				wg.Go(func() {
					m := &Mapper{series: c}
					for round := range 20 {
						rd := m.CacheReader()
						for j := range 1000 {
							i := (r*7919 + round*1000 + j*31) % keys
							s, ok := rd.Get(key(i))
							if ok && (s.Hash != uint64(i) || s.Metric[2] != byte(i)) {
								errs <- fmt.Errorf("key %d: got the series of %d", i, s.Hash)
								break
							}
						}
						rd.Release()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if tc.maxBytes > 0 {
				if _, b, max := c.Stats(); b > max {
					t.Errorf("%d bytes cached, budget %d", b, max)
				}
				return
			}
			for i := range keys {
				if s, ok := c.get(key(i)); !ok || s.Hash != uint64(i) {
					t.Fatalf("key %d after the writers: %+v %v", i, s, ok)
				}
			}
		})
	}
}
