// Package resultcache keeps the answers of range queries for the steps
// whose data no longer changes, so that a dashboard refreshing the same
// query_range with its range moved forward has only its newest steps
// evaluated.
//
// A range query's answer at step t depends only on the query, t and the
// samples in (t − window, t], where window is how far back the query reads
// (its ranges, offsets, subqueries and the lookback delta): PromQL
// evaluates every step on its own. So the answer of a range [start, end]
// is the answer of [start, c] followed by that of [c + step, end], series
// matched by their labels. The cache keeps, per tenant, normalised query,
// step, step phase (start mod step) and lookback delta, the points of the
// steps no later than now − Offset (newer steps may still gain samples:
// the current scrape, an HA failover, a slow sender), and answers a query
// whose start lies in a kept extent by evaluating only the steps after it.
//
// Never a stale answer:
//   - Invalidate(tenant, mint, maxt) says that samples in [mint, maxt]
//     changed (a write older than Offset, a deletion, retention, a rollup
//     hour built again): every kept step t with mint ≤ t ≤ maxt + window is
//     dropped at once; a query running meanwhile answers with what it
//     read, and keeps only the steps the change left.
//   - A kept extent is served for at most MaxAge (when set) after its
//     oldest steps were evaluated: the bound on what this process cannot
//     be told of (writes through another promhbase replica, or by
//     OpenTSDB). A process that is the only writer of its store (the
//     embedded store, locked by the process that opened it) needs none.
//   - Reset(tenant) drops a tenant's answers (its limits changed).
//
// Memory is bounded by MaxBytes, least recently used first.
package resultcache

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/annotations"
)

// Options configures a Cache.
type Options struct {
	// MaxBytes bounds the memory of the kept answers (an estimate of their
	// labels and points); 0 turns the cache off.
	MaxBytes int64
	// Offset: steps later than now − Offset are never kept.
	Offset time.Duration
	// MaxAge bounds how long a kept step is served; 0: no bound (every
	// change of the data is told to the cache).
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// DataClock makes now the newest sample time told by Saw (the writes
	// through this process) instead of Now: for replays of old data, such
	// as the dashboard benchmark, which write one step at a time far
	// behind the wall clock. Before the first Saw nothing is kept.
	DataClock bool
	// Registerer takes the cache's metrics (none when nil).
	Registerer prometheus.Registerer
}

// eventRing is how many invalidations are remembered for queries that
// were running when they came; a query older than all of them is not kept.
const eventRing = 256

// Cache holds the kept answers of every tenant. It is safe for concurrent
// use.
type Cache struct {
	opts   Options
	now    func() time.Time
	newest atomic.Int64 // the newest sample seen (Unix ms), with DataClock

	mu      sync.Mutex
	entries map[key]*entry
	lru     list.List // of *entry, most recently used first
	bytes   int64
	seq     uint64           // invalidations so far
	events  [eventRing]event // the last invalidations, by seq % eventRing
	m       metrics
}

// event is one invalidation: samples of tenant in [mint, maxt] changed
// (all of the tenant's answers when all is set); only the downsampled
// answers when downsampled is set.
type event struct {
	seq         uint64
	tenant      string
	mint, maxt  int64
	all         bool
	downsampled bool
}

// key names one kept answer.
type key struct {
	tenant   string
	query    string // the normalised expression
	step     int64  // ms
	phase    int64  // start mod step, ms
	lookback int64  // ms
	// downsampled: the query reads rollups (a downsampling marker).
	downsampled bool
}

// entry is the kept answer of a key: the points of the steps start..end.
type entry struct {
	key        key
	start, end int64 // first and last kept step (ms)
	window     int64 // how far back a step reads (ms)
	mat        promql.Matrix
	warnings   annotations.Annotations
	born       time.Time // when its oldest steps were evaluated
	bytes      int64
	elem       *list.Element
}

type metrics struct {
	hits, partial, misses, bypassed, evictions, invalidations prometheus.Counter
}

// New returns a cache; its metrics go to opts.Registerer.
func New(opts Options) *Cache {
	c := &Cache{opts: opts, now: opts.Now, entries: map[key]*entry{}}
	if c.now == nil {
		c.now = time.Now
	}
	if opts.DataClock {
		c.now = func() time.Time { return time.UnixMilli(c.newest.Load()) }
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_query_results_cache_" + name, Help: help})
	}
	c.m = metrics{
		hits:          counter("hits_total", "Range queries answered from kept steps only."),
		partial:       counter("partial_hits_total", "Range queries of which kept steps answered a part, the rest evaluated."),
		misses:        counter("misses_total", "Range queries the cache could have answered but held nothing for."),
		bypassed:      counter("bypassed_total", "Range queries not looked up: nocache=1, stats, @ or a negative offset, the cache off."),
		evictions:     counter("evictions_total", "Kept answers dropped to stay under --query.results-cache.max-bytes."),
		invalidations: counter("invalidations_total", "Changes of old samples told to the cache (writes older than the offset, deletions, retention, rollups built again)."),
	}
	if r := opts.Registerer; r != nil {
		r.MustRegister(c.m.hits, c.m.partial, c.m.misses, c.m.bypassed, c.m.evictions, c.m.invalidations,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_query_results_cache_bytes", Help: "Estimated bytes of the kept answers."},
				func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(c.bytes) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_query_results_cache_entries", Help: "Kept answers (one per tenant, query, step and phase)."},
				func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(len(c.entries)) }))
	}
	return c
}

// Enabled reports whether the cache keeps anything.
func (c *Cache) Enabled() bool { return c != nil && c.opts.MaxBytes > 0 }

// DataClock reports whether the cache's now is the newest sample Saw.
func (c *Cache) DataClock() bool { return c.Enabled() && c.opts.DataClock }

// Saw tells a DataClock cache of a sample written at t (Unix ms).
func (c *Cache) Saw(t int64) {
	for {
		n := c.newest.Load()
		if t <= n || c.newest.CompareAndSwap(n, t) {
			return
		}
	}
}

// Horizon is the time (Unix ms) after which steps are not kept now:
// now − Offset.
func (c *Cache) Horizon() int64 { return c.now().Add(-c.opts.Offset).UnixMilli() }

// Invalidate says that samples of tenant between mint and maxt (Unix ms,
// inclusive) changed: the kept steps whose answers read them are dropped.
// It is cheap for a change no kept step reads.
func (c *Cache) Invalidate(tenant string, mint, maxt int64) {
	if !c.Enabled() {
		return
	}
	c.invalidate(event{tenant: tenant, mint: mint, maxt: maxt})
}

// InvalidateDownsampled says that the rollups of tenant's samples between
// mint and maxt were built again: the kept steps of the answers read from
// rollups (promhbase's downsampling markers) that read them are dropped.
func (c *Cache) InvalidateDownsampled(tenant string, mint, maxt int64) {
	if !c.Enabled() {
		return
	}
	c.invalidate(event{tenant: tenant, mint: mint, maxt: maxt, downsampled: true})
}

// Reset drops every kept answer of tenant.
func (c *Cache) Reset(tenant string) {
	if !c.Enabled() {
		return
	}
	c.invalidate(event{tenant: tenant, all: true})
}

func (c *Cache) invalidate(ev event) {
	c.m.invalidations.Inc()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	ev.seq = c.seq
	c.events[ev.seq%eventRing] = ev
	for _, e := range c.entries {
		if ev.touches(e.key) {
			c.apply(e, ev)
		}
	}
}

// touches reports whether ev concerns the answer of k.
func (ev event) touches(k key) bool {
	return ev.tenant == k.tenant && (!ev.downsampled || k.downsampled)
}

// apply trims e by ev; c.mu is held.
func (c *Cache) apply(e *entry, ev event) {
	start, end, ok := affected(e.start, e.end, e.key.step, e.window, ev)
	switch {
	case !ok:
		return
	case start > end:
		c.remove(e)
		return
	}
	c.bytes -= e.bytes
	e.mat = restrict(e.mat, start, end)
	e.start, e.end = start, end
	e.bytes = sizeOf(e.key, e.mat)
	c.bytes += e.bytes
}

// affected returns the steps of start..end (step apart) that ev leaves
// valid, and whether ev touches any: a step t reads samples in
// (t − window, t], so a change in [mint, maxt] touches the steps in
// [mint, maxt + window]. What stays is the longest run before them, or
// else the run after them.
func affected(start, end, step, window int64, ev event) (int64, int64, bool) {
	if ev.all {
		return 1, 0, true
	}
	lo, hi := ev.mint, ev.maxt
	if hi > maxTime-window {
		hi = maxTime
	} else {
		hi += window
	}
	if hi < start || lo > end {
		return start, end, false
	}
	if lo > start {
		// Keep the steps before lo.
		return start, start + (lo-1-start)/step*step, true
	}
	if hi >= end {
		return 1, 0, true
	}
	// Keep the steps after hi.
	return start + ((hi-start)/step+1)*step, end, true
}

const maxTime = int64(^uint64(0) >> 1)

// remove drops e; c.mu is held.
func (c *Cache) remove(e *entry) {
	delete(c.entries, e.key)
	c.lru.Remove(e.elem)
	c.bytes -= e.bytes
}

// lookup returns a copy of the kept answer of k, if it is still young
// enough, and the invalidation count a query evaluated from now on starts
// from. A copy: an invalidation trims the kept entry in place meanwhile
// (the points themselves are never written).
func (c *Cache) lookup(k key) (*entry, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e != nil && c.opts.MaxAge > 0 && c.now().Sub(e.born) > c.opts.MaxAge {
		c.remove(e)
		e = nil
	}
	if e == nil {
		return nil, c.seq
	}
	c.lru.MoveToFront(e.elem)
	cp := *e
	cp.elem = nil
	return &cp, c.seq
}

// store keeps ne for its key, replacing what was kept, after applying the
// invalidations that came since seq (when the query began reading). An
// answer larger than a quarter of the budget is not kept.
func (c *Cache) store(ne *entry, seq uint64) {
	ne.bytes = sizeOf(ne.key, ne.mat)
	if ne.bytes > c.opts.MaxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq-seq >= eventRing {
		return // invalidations were forgotten before this answer was kept
	}
	for s := seq + 1; s <= c.seq; s++ {
		if ev := c.events[s%eventRing]; ev.touches(ne.key) {
			start, end, ok := affected(ne.start, ne.end, ne.key.step, ne.window, ev)
			if ok && start > end {
				return
			}
			if ok {
				ne.mat = restrict(ne.mat, start, end)
				ne.start, ne.end = start, end
			}
		}
	}
	ne.bytes = sizeOf(ne.key, ne.mat)
	if old := c.entries[ne.key]; old != nil {
		c.remove(old)
	}
	ne.elem = c.lru.PushFront(ne)
	c.entries[ne.key] = ne
	c.bytes += ne.bytes
	for c.bytes > c.opts.MaxBytes {
		last := c.lru.Back().Value.(*entry)
		c.remove(last)
		c.m.evictions.Inc()
	}
}

// sizeOf estimates the bytes m holds under k.
func sizeOf(k key, m promql.Matrix) int64 {
	n := int64(len(k.tenant)+len(k.query)) + 256
	for _, s := range m {
		n += int64(s.Metric.ByteSize()) + 64 + int64(len(s.Floats))*16
		for _, h := range s.Histograms {
			n += 16
			if fh := h.H; fh != nil {
				n += 128 + 8*int64(len(fh.PositiveBuckets)+len(fh.NegativeBuckets)+len(fh.CustomValues)) +
					8*int64(len(fh.PositiveSpans)+len(fh.NegativeSpans))
			}
		}
	}
	return n
}
