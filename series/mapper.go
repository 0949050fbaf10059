package series

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/internal/gencache"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
)

// Series is a label set resolved to OpenTSDB's identifiers: the metric UID
// and the tag pairs (tagk UID ‖ tagv UID, sorted by tagk UID bytes), plus
// the salt bucket when salting is on. A row key is
// [salt] Metric base_time Tags.
type Series struct {
	Metric []byte
	Tags   []byte
	Bucket int
	mark   *indexMark // see IndexedFor; nil for Series not made by resolve
	// Hash is a 64-bit hash (xxhash) of Metric ‖ Tags, computed once when
	// the series is resolved, for sketches that count series.
	Hash uint64
}

// Mapper turns Prometheus label sets into Series and back. `__name__` is
// the metric; every other label with a non-empty value is a tag. A series
// with no label but its name gets the reserved tag `__name__=<metric name>`
// (OpenTSDB refuses and its fsck stops at a row key without a tag pair; no
// Prometheus label can be a tag named `__name__`, so the tag never
// collides). Reading hides every tag named `__name__`, so such a series
// reads back as written, and so do rows of it written without the tag by
// earlier versions. Both directions are cached (bounded).
type Mapper struct {
	uids   *uid.UIDs
	layout mapping.Layout
	series *seriesCache                   // wire key -> series
	labels *gencache.Cache[labels.Labels] // metric ‖ tags -> labels
	// freeReqs recycles resolveItems' UID requests, one per distinct name
	// of a call: a request of 2000 new series of ten labels asks for
	// about 2 200 names (one a series, the rest shared). A free list, not
	// a sync.Pool, which every garbage collection empties, and a first
	// contact collects often. Two slices are kept.
	freeMu   sync.Mutex
	freeReqs [][]uid.UIDRequest
	// dedupSeed hashes the names of a resolveItems call.
	dedupSeed maphash.Seed
}

// maxFreeRequests bounds the UID request slices kept for reuse: their
// number and each one's capacity.
const (
	maxFreeRequestSlices = 2
	maxFreeRequests      = 1 << 16
)

// NewMapper returns a Mapper over uids. cacheSize bounds each direction.
func NewMapper(uids *uid.UIDs, layout mapping.Layout, cacheSize int) *Mapper {
	if cacheSize <= 0 {
		cacheSize = 1 << 20
	}
	return &Mapper{uids: uids, layout: layout, dedupSeed: maphash.MakeSeed(),
		series: newSeriesCache(cacheSize),
		labels: gencache.New(cacheSize, func(_ string, l labels.Labels) int { return labelsBytes(l) }),
	}
}

// labelsBytes approximates the memory of a label set.
func labelsBytes(l labels.Labels) int {
	n := 16
	l.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) + 2 })
	return n
}

// SetCacheBytes bounds the memory of the series cache (the write path's
// label set -> row key template) and of the label cache (the read path's
// row key -> label set); 0 bounds a cache by entries only. Call it before
// the Mapper is used.
func (m *Mapper) SetCacheBytes(series, labels int) {
	m.series.SetMaxBytes(series)
	m.labels.SetMaxBytes(labels)
}

// Collector exports the Mapper's caches and its UIDs':
// promhbase_cache_{bytes,entries,max_bytes,hits_total,misses_total} by
// cache ("series", "series_labels", "uid_forward_<kind>",
// "uid_reverse_<kind>").
func (m *Mapper) Collector() prometheus.Collector {
	caches := map[string]gencache.StatsSource{"series": m.series, "series_labels": m.labels}
	m.uids.AddCaches(caches)
	return gencache.NewCollector(caches)
}

// Layout returns the byte layout in use.
func (m *Mapper) Layout() mapping.Layout { return m.layout }

// UIDs returns the UID table.
func (m *Mapper) UIDs() *uid.UIDs { return m.uids }

// Cached returns the Series cached under key, without allocating.
func (m *Mapper) Cached(key []byte) (Series, bool) { return m.series.get(key) }

// SeriesCacheReader looks many keys up in the series cache, for the write
// path's batches. It keeps the read lock of each shard it touched until
// gencache.LockBatch lookups have been made (gencache.ShardLocks: a batch
// pays a shard's lock once, not a lookup's), counts the hits and misses,
// and promotes the hits of the older generation on Release. It is not
// safe for concurrent use. Release must be called before Resolve (which
// may write the cache) and at the end of the batch.
type SeriesCacheReader struct {
	c            *seriesCache
	locks        gencache.ShardLocks
	hits, misses uint64 // counted here, added to the cache's on Release
	promote      []promotion
	epoch        uint64 // the cache's when the reader was made
	// ahead are copies of the keys of the last two Prefetch calls and
	// their hashes, newest first, so that the Get of an equal key does
	// not hash it again.
	ahead [2]aheadKey
}

// aheadKey is a key Prefetch hashed: a copy of its bytes (n of them; 0:
// none, or a key longer than the copy holds), and its hash.
type aheadKey struct {
	buf [maxAheadKey]byte
	n   int
	h   seriesKey
}

// maxAheadKey is the longest key whose hash Prefetch keeps for Get: a
// series of ten short labels as remote write 1.0 sends it takes about 200
// bytes.
const maxAheadKey = 384

// promotion is a hit in the older generation, moved to the newer one on
// Release.
type promotion struct {
	h seriesKey
	s Series
}

// CacheReader returns a reader of the series cache.
func (m *Mapper) CacheReader() SeriesCacheReader {
	return SeriesCacheReader{c: m.series, locks: gencache.NewReadLocks(m.series.locks), epoch: m.series.epoch.Load()}
}

// Prefetch starts loading the cache's memory that a later Get of key
// will read, so that the work between the two overlaps its cache misses:
// a hint, which changes nothing Get returns. A key of a hundred thousand
// misses every CPU cache on a server under writes; in a request's parse,
// the next series' key is known while the current one is handled (see
// wire.Series.NextKey). A Get of a key equal to one of the last two
// prefetched takes the hash Prefetch made (comparing and copying the
// bytes costs less than hashing them again).
func (r *SeriesCacheReader) Prefetch(key []byte) {
	if len(key) == 0 {
		return
	}
	h := r.c.key(key)
	r.ahead[1] = r.ahead[0]
	a := &r.ahead[0]
	a.n, a.h = 0, h
	if len(key) <= maxAheadKey {
		a.n = copy(a.buf[:], key)
	}
	i := r.c.shardIndex(h)
	r.locks.Hold(i)
	sh := &r.c.shards[i]
	sh.cur.prefetch(h)
	sh.old.prefetch(h)
}

// hash returns key's hash, from a Prefetch of an equal key when there
// was one.
func (r *SeriesCacheReader) hash(key []byte) seriesKey {
	for i := range r.ahead {
		if a := &r.ahead[i]; a.n > 0 && bytes.Equal(a.buf[:a.n], key) {
			return a.h
		}
	}
	return r.c.key(key)
}

// Get returns the Series cached under key.
func (r *SeriesCacheReader) Get(key []byte) (Series, bool) {
	h := r.hash(key)
	i := r.c.shardIndex(h)
	r.locks.Hold(i)
	s, ok, old := r.c.lookupLocked(&r.c.shards[i], h)
	if !ok {
		r.misses++
		return Series{}, false
	}
	r.hits++
	if old {
		r.promote = append(r.promote, promotion{h, s})
	}
	return s, true
}

// Release drops the read locks held, adds the reader's counts to the
// cache's and promotes the hits of the older generation.
func (r *SeriesCacheReader) Release() {
	r.locks.Release()
	r.ahead[0].n, r.ahead[1].n = 0, 0
	if r.hits > 0 || r.misses > 0 {
		r.c.hits.Add(r.hits)
		r.c.misses.Add(r.misses)
		r.hits, r.misses = 0, 0
	}
	for _, p := range r.promote {
		r.c.putEntryAt(p.h, p.s, true, r.epoch)
	}
	clear(r.promote)
	r.promote = r.promote[:0]
}

// Resolve returns the Series of lbls, assigning UIDs to new names. key
// identifies the label set, typically its wire encoding: calls with equal
// keys must carry equal label sets. A cached key costs one map lookup and
// no allocation. Errors wrapping ErrInvalidSeries mean the label set can
// never be stored.
func (m *Mapper) Resolve(ctx context.Context, key []byte, lbls []mapping.Label) (Series, error) {
	if s, ok := m.series.get(key); ok {
		return s, nil
	}
	s, err := m.resolve(ctx, lbls)
	if err != nil {
		return Series{}, err
	}
	return m.series.put(key, s), nil
}

func (m *Mapper) resolve(ctx context.Context, lbls []mapping.Label) (Series, error) {
	items := [1]ResolveItem{{Labels: lbls}}
	m.resolveItems(ctx, items[:])
	return items[0].Series, items[0].Err
}

// ResolveItem is one series of a ResolveBatch call and, after it, its
// result.
type ResolveItem struct {
	// Key identifies the label set in the series cache, as Resolve's key.
	Key    []byte
	Labels []mapping.Label

	Series Series
	Err    error
}

// ResolveBatch resolves every item as Resolve does, assigning the UIDs of
// all their new names together (UIDs.GetOrCreateBatch): one lookup per
// distinct name and, per kind, one Increment and two batches of
// check-and-puts for the new ones. Errors are per item, as Resolve's.
func (m *Mapper) ResolveBatch(ctx context.Context, items []ResolveItem) {
	todo := make([]ResolveItem, 0, len(items))
	idx := make([]int, 0, len(items))
	r := m.CacheReader()
	for i := range items {
		it := &items[i]
		it.Series, it.Err = Series{}, nil
		if s, ok := r.Get(it.Key); ok {
			it.Series = s
			continue
		}
		todo = append(todo, *it)
		idx = append(idx, i)
	}
	r.Release()
	m.ResolveMissed(ctx, todo)
	for j, i := range idx {
		items[i].Series, items[i].Err = todo[j].Series, todo[j].Err
	}
}

// ResolveMissed is ResolveBatch for items the caller has just looked up
// in the series cache (SeriesCacheReader) and not found: they are not
// looked up again. An item another call cached in the meantime gets the
// cached Series (its UIDs are the same: UIDs are assigned once per name),
// so the result is ResolveBatch's; only the work of resolving it is
// repeated.
func (m *Mapper) ResolveMissed(ctx context.Context, items []ResolveItem) {
	m.ResolveMissedAt(ctx, items, m.series.epoch.Load())
}

// ResolveMissedAt is ResolveMissed for a caller that read the cache at
// epoch (SeriesEpoch): after a reset since (ResetSeriesCache), the items
// are resolved but not cached, so that what the caller decided under a
// configuration replaced meanwhile is not kept.
func (m *Mapper) ResolveMissedAt(ctx context.Context, items []ResolveItem, epoch uint64) {
	for i := range items {
		items[i].Series, items[i].Err = Series{}, nil
	}
	m.resolveItems(ctx, items)
	m.series.putItemsAt(items, epoch)
}

// SeriesEpoch returns the series cache's epoch: the number of its resets.
func (m *Mapper) SeriesEpoch() uint64 { return m.series.epoch.Load() }

// ResetSeriesCache empties the series cache (its key to series entries:
// the UIDs' caches stay) and returns the new epoch. The writer resets it
// when what a key maps to changes (metric relabeling replaced).
func (m *Mapper) ResetSeriesCache() uint64 { return m.series.reset() }

// resolveItems builds the Series of each item's labels, assigning UIDs to
// new names in one batch. Its phases: take a request slice, name the
// items' distinct names in it, resolve them in one batch, then build
// each item's Series from their UIDs.
func (m *Mapper) resolveItems(ctx context.Context, items []ResolveItem) {
	reqs := m.takeRequests()
	defer func() { m.giveRequests(reqs) }()
	refs, first := m.nameRequests(items, &reqs)
	m.uids.GetOrCreateBatch(ctx, reqs)
	m.buildSeries(items, reqs, refs, first)
}

// takeRequests returns an empty request slice, one given back before
// where there is one.
func (m *Mapper) takeRequests() []uid.UIDRequest {
	var reqs []uid.UIDRequest
	m.freeMu.Lock()
	if k := len(m.freeReqs); k > 0 {
		reqs, m.freeReqs = m.freeReqs[k-1], m.freeReqs[:k-1]
	}
	m.freeMu.Unlock()
	return reqs[:0]
}

// giveRequests keeps reqs for a later call, cleared (no names or
// uid.UIDs kept alive), unless it is too large or enough are kept.
func (m *Mapper) giveRequests(reqs []uid.UIDRequest) {
	clear(reqs)
	m.freeMu.Lock()
	if cap(reqs) <= maxFreeRequests && len(m.freeReqs) < maxFreeRequestSlices {
		m.freeReqs = append(m.freeReqs, reqs[:0])
	}
	m.freeMu.Unlock()
}

// nameRequests appends one request per distinct name of the call to
// reqs: the names a request's series share (every label name, most
// values) are looked up in the UID caches once, not once a series. It
// returns each item's name slots (tagk, tagv of each label, the metric
// last) as indexes into reqs: item i's are refs[first[i]:first[i+1]]. An
// item whose labels are refused gets its Err and no slots.
func (m *Mapper) nameRequests(items []ResolveItem, reqs *[]uid.UIDRequest) (refs []int32, first []int) {
	// First the row key's length, which counts labels: a series of
	// thousands of labels is refused before ValidateLabels compares them
	// pairwise and before any UID is assigned.
	n := 0
	for i := range items {
		n += 2*len(items[i].Labels) + 1
	}
	d := nameDedup{seed: m.dedupSeed, items: len(items)}
	refs = make([]int32, 0, n)
	first = make([]int, len(items)+1)
	for i := range items {
		it := &items[i]
		first[i] = len(refs)
		if it.Err = mapping.CheckRowKey(m.layout, it.Labels); it.Err != nil {
			continue
		}
		if it.Err = mapping.ValidateLabels(it.Labels); it.Err != nil {
			continue
		}
		// The metric last, after tagk, tagv of each non-empty label; a
		// series with no label but its name carries the reserved tag
		// __name__=<metric>, since OpenTSDB's tools need at least one tag
		// pair in a row key (its fsck dies on a row without).
		var metric []byte
		tags := 0
		for _, l := range it.Labels {
			if string(l.Name) == mapping.MetricLabel {
				metric = l.Value
				continue
			}
			if len(l.Value) == 0 {
				continue // an empty label is an absent label
			}
			refs = append(refs, d.ref(reqs, uid.KindTagK, l.Name), d.ref(reqs, uid.KindTagV, l.Value))
			tags++
		}
		if tags == 0 {
			refs = append(refs, d.ref(reqs, uid.KindTagK, []byte(mapping.MetricLabel)), d.ref(reqs, uid.KindTagV, metric))
		}
		refs = append(refs, d.ref(reqs, uid.KindMetric, metric))
	}
	first[len(items)] = len(refs)
	return refs, first
}

// buildSeries sets each item's Series from the resolved reqs, or its Err
// from the first of its names that failed.
func (m *Mapper) buildSeries(items []ResolveItem, reqs []uid.UIDRequest, refs []int32, first []int) {
	pair := m.layout.TagKWidth + m.layout.TagVWidth
	// The items' tags and index marks come from one allocation each (the
	// series cache copies both; a Series too large for it keeps its part),
	// the fresh pairs from one scratch slice.
	uids := 0 // tag uid.UIDs of the items (their slots but the metric's)
	for i := range items {
		if k := first[i+1] - first[i]; k > 0 {
			uids += k - 1
		}
	}
	slab := make([]byte, 0, uids/2*pair)
	marks := make([]indexMark, len(items))
	var freshPairs [][2]int32
	for i := range items {
		it := &items[i]
		if it.Err != nil {
			continue
		}
		rs := refs[first[i]:first[i+1]]
		fresh := false // a UID of the series was assigned just now
		for _, r := range rs {
			if err := reqs[r].Err; err != nil {
				it.Err = err
				break
			}
			fresh = fresh || reqs[r].Created
		}
		if it.Err != nil {
			continue
		}
		// The pairs with a UID assigned just now, before the sort.
		freshPairs = freshPairs[:0]
		if fresh {
			for j := 0; j+1 < len(rs)-1; j += 2 {
				if reqs[rs[j]].Created || reqs[rs[j+1]].Created {
					freshPairs = append(freshPairs, [2]int32{rs[j], rs[j+1]})
				}
			}
		}
		var s Series
		s.Metric = reqs[rs[len(rs)-1]].UID
		start := len(slab)
		for _, r := range rs[:len(rs)-1] {
			slab = append(slab, reqs[r].UID...)
		}
		tags := slab[start:len(slab):len(slab)]
		m.layout.SortTags(tags)
		s.Tags = tags
		var mask uint32
		if fresh {
			mask = freshMask(tags, pair, m.layout.TagKWidth, reqs, freshPairs)
			if reqs[rs[len(rs)-1]].Created {
				mask |= 1 << freshMetric
			}
		}
		var d xxhash.Digest
		d.Reset()
		_, _ = d.Write(s.Metric) // a Digest's Write never fails
		_, _ = d.Write(s.Tags)
		s.Hash = d.Sum64()
		if m.layout.SaltWidth > 0 {
			s.Bucket = m.layout.SaltBucket(s.Metric, s.Tags)
		}
		marks[i].fresh = mask
		s.mark = &marks[i]
		it.Series = s
	}
}

// freshMask returns the indexMark bits of the sorted pairs of tags that
// are one of fresh (the requests of a tag name and value, one of them
// assigned just now).
func freshMask(tags []byte, pair, kw int, reqs []uid.UIDRequest, fresh [][2]int32) uint32 {
	var mask uint32
	for i := 0; i*pair < len(tags); i++ {
		p := tags[i*pair : (i+1)*pair]
		for _, f := range fresh {
			if bytes.Equal(p[:kw], reqs[f[0]].UID) && bytes.Equal(p[kw:], reqs[f[1]].UID) {
				mask |= 1 << min(i, freshOther)
				break
			}
		}
	}
	return mask
}

// nameDedup finds the request of a name already asked for in one
// resolveItems call: a map per kind from the name's hash to the index of
// its request, checked against the name (a colliding name gets a request
// of its own).
type nameDedup struct {
	seed maphash.Seed
	idx  [uid.NumKinds]map[uint64]int32
	// items is the number of label sets of the call: tag values, about one
	// new one a series in a first contact, get a map of their size.
	items int
}

// ref returns the index in *reqs of the request for kind's name, appending
// one when there is none.
func (d *nameDedup) ref(reqs *[]uid.UIDRequest, kind uid.Kind, name []byte) int32 {
	h := maphash.Bytes(d.seed, name)
	mp := d.idx[kind]
	if mp == nil {
		size := 256
		if kind == uid.KindTagV {
			size = max(size, 2*d.items)
		}
		mp = make(map[uint64]int32, size)
		d.idx[kind] = mp
	}
	r, ok := mp[h]
	if ok && bytes.Equal((*reqs)[r].Name, name) {
		return r
	}
	*reqs = append(*reqs, uid.UIDRequest{Kind: kind, Name: name})
	if !ok {
		mp[h] = int32(len(*reqs) - 1)
	}
	return int32(len(*reqs) - 1)
}

// AppendRowKey appends the row key of s for the hour starting at baseTime
// (Unix seconds, a multiple of 3600).
func (m *Mapper) AppendRowKey(dst []byte, s Series, baseTime uint32) []byte {
	dst = m.layout.AppendSalt(dst, s.Bucket)
	dst = append(dst, s.Metric...)
	dst = append(dst, byte(baseTime>>24), byte(baseTime>>16), byte(baseTime>>8), byte(baseTime))
	return append(dst, s.Tags...)
}

// CachedLabels returns what Labels returns for metric and tags (a row
// key's parts) when its caches answer it, without reading the store;
// cached is false when some UID's name is not cached (LoadNames reads
// them in batches).
func (m *Mapper) CachedLabels(ctx context.Context, metric, tags []byte) (l labels.Labels, cached bool, err error) {
	var buf [64]byte
	key := append(append(buf[:0], metric...), tags...)
	if l, ok := m.labels.Get(key); ok {
		return l, true, nil
	}
	if !m.uids.NameCached(uid.KindMetric, metric) {
		return labels.EmptyLabels(), false, nil
	}
	pair := m.layout.TagKWidth + m.layout.TagVWidth
	for i := 0; i+pair <= len(tags); i += pair {
		if !m.uids.NameCached(uid.KindTagK, tags[i:i+m.layout.TagKWidth]) || !m.uids.NameCached(uid.KindTagV, tags[i+m.layout.TagKWidth:i+pair]) {
			return labels.EmptyLabels(), false, nil
		}
	}
	l, err = m.Labels(ctx, metric, tags)
	return l, true, err
}

// LoadNames reads into the caches, in one batched read per kind where the
// store allows, the names of the UIDs of series (each a metric UID
// followed by its tag pairs, as in a row key) that the caches lack; so
// that Labels of many series after a restart, or of data OpenTSDB wrote,
// costs a few round trips to a remote store instead of one per UID.
func (m *Mapper) LoadNames(ctx context.Context, series [][]byte) error {
	var uids [uid.NumKinds][][]byte
	mw, kw, vw := m.layout.MetricWidth, m.layout.TagKWidth, m.layout.TagVWidth
	for _, s := range series {
		if len(s) < mw || (len(s)-mw)%(kw+vw) != 0 {
			continue // Labels reports it
		}
		uids[uid.KindMetric] = append(uids[uid.KindMetric], s[:mw])
		for i := mw; i < len(s); i += kw + vw {
			uids[uid.KindTagK] = append(uids[uid.KindTagK], s[i:i+kw])
			uids[uid.KindTagV] = append(uids[uid.KindTagV], s[i+kw:i+kw+vw])
		}
	}
	for k := range uid.NumKinds {
		if err := m.uids.LoadNames(ctx, k, uids[k]); err != nil {
			return err
		}
	}
	return nil
}

// Labels returns the label set of a row's metric UID and tag pairs,
// resolving UIDs to names (cached). The result is shared: do not modify it.
func (m *Mapper) Labels(ctx context.Context, metric, tags []byte) (labels.Labels, error) {
	key := make([]byte, 0, 32)
	key = append(append(key, metric...), tags...)
	if l, ok := m.labels.Get(key); ok {
		return l, nil
	}
	pair := m.layout.TagKWidth + m.layout.TagVWidth
	if len(tags)%pair != 0 {
		return labels.EmptyLabels(), fmt.Errorf("tags %x: length %d is not a multiple of %d", tags, len(tags), pair)
	}
	name, err := m.uids.Name(ctx, uid.KindMetric, metric)
	if err != nil {
		return labels.EmptyLabels(), err
	}
	b := labels.NewScratchBuilder(len(tags)/pair + 1)
	b.Add(mapping.MetricLabel, name)
	for i := 0; i < len(tags); i += pair {
		k, err := m.uids.Name(ctx, uid.KindTagK, tags[i:i+m.layout.TagKWidth])
		if err != nil {
			return labels.EmptyLabels(), err
		}
		if k == mapping.MetricLabel {
			continue // the reserved tag of a series with no other label
		}
		v, err := m.uids.Name(ctx, uid.KindTagV, tags[i+m.layout.TagKWidth:i+pair])
		if err != nil {
			return labels.EmptyLabels(), err
		}
		b.Add(k, v)
	}
	b.Sort()
	l := b.Labels()
	m.labels.Put(string(key), l)
	return l, nil
}
