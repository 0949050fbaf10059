package uid

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/internal/gencache"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Kind is one of OpenTSDB's three UID kinds.
type Kind uint8

// The UID kinds, in OpenTSDB's order.
const (
	KindMetric Kind = iota
	KindTagK
	KindTagV
	NumKinds
)

// Qualifier returns the kind's column qualifier in tsdb-uid: "metrics",
// "tagk" or "tagv".
func (k Kind) Qualifier() string {
	switch k {
	case KindMetric:
		return "metrics"
	case KindTagK:
		return "tagk"
	case KindTagV:
		return "tagv"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// String returns the kind's name as OpenTSDB's tools spell it.
func (k Kind) String() string {
	if k == KindMetric {
		return "metrics"
	}
	return k.Qualifier()
}

// ParseKind parses "metrics" (or "metric"), "tagk" or "tagv".
func ParseKind(s string) (Kind, error) {
	switch s {
	case "metrics", "metric":
		return KindMetric, nil
	case "tagk":
		return KindTagK, nil
	case "tagv":
		return KindTagV, nil
	}
	return 0, fmt.Errorf("unknown uid kind %q (want metrics, tagk or tagv)", s)
}

// Errors of the UID table.
var (
	// ErrUIDExhausted means every UID of a kind's width has been assigned.
	ErrUIDExhausted = errors.New("uids exhausted")
	// ErrNoSuchName means a name has no UID (and none was to be created).
	ErrNoSuchName = errors.New("no such name")
	// ErrNoSuchUID means a UID has no name.
	ErrNoSuchUID = errors.New("no such uid")
)

// Families and rows of tsdb-uid.
const (
	FamilyID   = "id"
	FamilyName = "name"
)

// maxIDRow is the row of tsdb-uid that holds one 8-byte counter per kind.
var maxIDRow = []byte{0x00}

// uidStore is the part of store.Store the UID table uses.
type uidStore interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error)
	CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error)
	Put(ctx context.Context, table string, puts []store.Put) error
	Delete(ctx context.Context, table string, row []byte, columns []store.Column) error
}

// UIDs maps names to UIDs and back in OpenTSDB's tsdb-uid table.
//
// Layout of tsdb-uid: the forward row (key = the name's bytes) holds the
// UID in cell id:<kind>; the reverse row (key = the UID's bytes) holds the
// name in cell name:<kind>; row 0x00 holds in id:<kind> the 8-byte
// big-endian count of UIDs handed out for the kind.
//
// A new UID is made as OpenTSDB makes it: increment the counter, write the
// reverse mapping with check-and-put (expect absent), then the forward
// mapping with check-and-put (expect absent). When another writer wins the
// forward race, its UID is used and ours stays an orphan reverse mapping,
// harmless, as in OpenTSDB. Concurrent requests in this process for one new
// name share one creation.
//
// Names are Prometheus's UTF-8 strings in this API; in the table they are
// stored as OpenTSDB stores them (see mapping.StoredNames: Latin-1 where possible,
// UTF-8 otherwise) and read back with mapping.NameFromStored.
//
// Both directions are cached, each bounded to about 2×CacheSize entries.
type UIDs struct {
	st     uidStore
	table  string
	widths [NumKinds]int

	fwd [NumKinds]*uidCache  // name -> uid
	rev [NumKinds]*nameCache // uid -> name

	// inflight: the names being resolved, each shard (by the name's
	// hash) under its own lock (inflightLocks, for gencache.ShardLocks),
	// so that the misses of one request's new series hold back only the
	// requests resolving names of the same shards.
	inflight      [inflightShards]inflightShard
	inflightLocks []*sync.RWMutex
	inflightSeed  maphash.Seed
	// stranded (see keepStranded) under strandedMu, its size in
	// nstranded, so that the write path's misses skip the lock while it
	// is empty, as it nearly always is.
	strandedMu sync.Mutex
	stranded   map[inflightKey][]byte
	nstranded  atomic.Int32
	sole       bool // UIDOptions.SoleWriter

	hits, misses, assigned *prometheus.CounterVec
	// The vectors' counters, resolved once: lookups hit and missed by kind
	// and direction (forward, reverse), UIDs assigned by kind.
	hitsBy, missesBy [NumKinds][2]prometheus.Counter
	assignedBy       [NumKinds]prometheus.Counter

	// metricGen counts metric names that entered the forward cache: a
	// reader holding a list of metric names refreshes it when this moves.
	metricGen atomic.Uint64

	headroom headroom

	// counters combine the counter row's increments of each kind's
	// allocations at the same time (claim).
	counters [NumKinds]counterQueue
}

// The directions of UID lookups, indexes of UIDs.hitsBy and missesBy.
const (
	forward = 0 // name to UID
	reverse = 1 // UID to name
)

type inflightKey struct {
	kind Kind
	name string
}

// inflightShards is the number of shards of UIDs.inflight.
const inflightShards = 32

// inflightShard is a shard of UIDs.inflight, padded to its own cache
// lines.
type inflightShard struct {
	mu    sync.RWMutex
	calls map[inflightKey]*inflightCall
	_     [64]byte
}

// inflightShardOf returns the index of k's shard.
func (u *UIDs) inflightShardOf(k inflightKey) int {
	return int(maphash.String(u.inflightSeed, k.name) % inflightShards)
}

type inflightCall struct {
	done    chan struct{}
	uid     []byte
	created bool // this process assigned uid
	err     error
}

// UIDOptions configure UIDs.
type UIDOptions struct {
	// Table is the UID table, "tsdb-uid" by default.
	Table string
	// CacheSize bounds each cache direction of each kind, in entries per
	// generation.
	CacheSize int
	// CacheBytes bounds the memory of the six UID caches together (split
	// evenly); 0 bounds them by CacheSize only.
	CacheBytes int
	// Registerer receives the cache, assignment and headroom metrics; nil
	// skips them.
	Registerer prometheus.Registerer
	// Logger receives the warning when a kind's UIDs run low; nil
	// discards it.
	Logger *slog.Logger
	// SoleWriter promises that no other writer assigns UIDs in the table
	// while these UIDs live: no other process (the embedded store, which
	// Pebble locks to one process) and no other UIDs of this process.
	// New names are then written with plain puts instead of
	// check-and-puts, which have nothing to guard against.
	SoleWriter bool
}

// NewUIDs returns the UID table in st with the widths of layout.
func NewUIDs(st uidStore, layout mapping.Layout, opts UIDOptions) (*UIDs, error) {
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	if opts.Table == "" {
		opts.Table = mapping.DefaultUIDTable
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 1 << 20
	}
	u := &UIDs{
		st:           st,
		table:        opts.Table,
		widths:       [NumKinds]int{layout.MetricWidth, layout.TagKWidth, layout.TagVWidth},
		inflightSeed: maphash.MakeSeed(),
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_uid_cache_hits_total", Help: "UID lookups answered by the cache, by kind and direction.",
		}, []string{"kind", "direction"}),
		misses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_uid_cache_misses_total", Help: "UID lookups that went to the UID table, by kind and direction.",
		}, []string{"kind", "direction"}),
		assigned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_uid_assigned_total", Help: "New UIDs assigned by this process, by kind.",
		}, []string{"kind"}),
	}
	u.headroom.logger = opts.Logger
	u.sole = opts.SoleWriter
	u.inflightLocks = make([]*sync.RWMutex, inflightShards)
	for i := range u.inflight {
		u.inflight[i].calls = map[inflightKey]*inflightCall{}
		u.inflightLocks[i] = &u.inflight[i].mu
	}
	for k := range NumKinds {
		for d, dir := range [2]string{"forward", "reverse"} {
			u.hitsBy[k][d] = u.hits.WithLabelValues(k.String(), dir)
			u.missesBy[k][d] = u.misses.WithLabelValues(k.String(), dir)
		}
		u.assignedBy[k] = u.assigned.WithLabelValues(k.String())
	}
	for k := range NumKinds {
		u.fwd[k] = newUIDCache(opts.CacheSize)
		u.rev[k] = newNameCache(opts.CacheSize)
	}
	for k := range NumKinds {
		if opts.CacheBytes > 0 {
			u.fwd[k].SetMaxBytes(opts.CacheBytes / (2 * int(NumKinds)))
			u.rev[k].SetMaxBytes(opts.CacheBytes / (2 * int(NumKinds)))
		}
	}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{u.hits, u.misses, u.assigned, u.headroomCollector()} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register uid metrics: %w", err)
			}
		}
	}
	return u, nil
}

// Width returns the UID width of kind in bytes.
func (u *UIDs) Width(kind Kind) int { return u.widths[kind] }

// Table returns the UID table's name.
func (u *UIDs) Table() string { return u.table }

// CachedID returns the UID of name from the cache only. It never allocates.
func (u *UIDs) CachedID(kind Kind, name []byte) ([]byte, bool) {
	return u.fwd[kind].getName(name)
}

// ID returns the UID of name without creating one; ErrNoSuchName when the
// name has none.
func (u *UIDs) ID(ctx context.Context, kind Kind, name string) ([]byte, error) {
	if uid, ok := u.fwd[kind].getName([]byte(name)); ok {
		u.hitsBy[kind][forward].Inc()
		return uid, nil
	}
	u.missesBy[kind][forward].Inc()
	if mapping.ReservedName([]byte(name)) {
		return nil, fmt.Errorf("%s %q: %w", kind, name, ErrNoSuchName)
	}
	uid, err := u.lookup(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	if uid == nil {
		return nil, fmt.Errorf("%s %q: %w", kind, name, ErrNoSuchName)
	}
	u.remember(kind, name, uid)
	return uid, nil
}

// IDs returns every UID name has: the UID of its stored form and, when the
// name also exists in the legacy form earlier versions wrote (see
// mapping.StoredNames), that UID too. A reader must select both; writers use the
// first. It returns ErrNoSuchName when the name has none.
func (u *UIDs) IDs(ctx context.Context, kind Kind, name string) ([][]byte, error) {
	stored, legacy := mapping.StoredNames(name)
	if legacy == "" {
		uid, err := u.ID(ctx, kind, name)
		if err != nil {
			return nil, err
		}
		return [][]byte{uid}, nil
	}
	if mapping.ReservedName([]byte(name)) {
		return nil, fmt.Errorf("%s %q: %w", kind, name, ErrNoSuchName)
	}
	var out [][]byte
	for _, form := range []string{stored, legacy} {
		uid, err := u.readForward(ctx, kind, form)
		if err != nil {
			return nil, err
		}
		if uid != nil {
			out = append(out, uid)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %q: %w", kind, name, ErrNoSuchName)
	}
	u.remember(kind, name, out[0])
	return out, nil
}

// lookup reads the UID of name from the table: that of its stored form,
// else that of its legacy form, else nil.
func (u *UIDs) lookup(ctx context.Context, kind Kind, name string) ([]byte, error) {
	stored, legacy := mapping.StoredNames(name)
	uid, err := u.readForward(ctx, kind, stored)
	if err != nil || uid != nil || legacy == "" {
		return uid, err
	}
	return u.readForward(ctx, kind, legacy)
}

// GetOrCreate returns the UID of name, assigning a new one when it has none.
func (u *UIDs) GetOrCreate(ctx context.Context, kind Kind, name []byte) ([]byte, error) {
	uid, _, err := u.GetOrCreateNew(ctx, kind, name)
	return uid, err
}

// GetOrCreateNew is GetOrCreate that also reports whether the UID was
// assigned by this call (or a concurrent one of this process it waited
// for): then nothing stored before names it.
func (u *UIDs) GetOrCreateNew(ctx context.Context, kind Kind, name []byte) ([]byte, bool, error) {
	if uid, ok := u.fwd[kind].getName(name); ok {
		u.hitsBy[kind][forward].Inc()
		return uid, false, nil
	}
	u.missesBy[kind][forward].Inc()
	key := inflightKey{kind, string(name)}
	sh := &u.inflight[u.inflightShardOf(key)]
	sh.mu.Lock()
	if c, ok := sh.calls[key]; ok {
		sh.mu.Unlock()
		select {
		case <-c.done:
			return c.uid, c.created, c.err
		case <-ctx.Done():
			return nil, false, fmt.Errorf("wait for uid of %s %q: %w", kind, name, ctx.Err())
		}
	}
	c := &inflightCall{done: make(chan struct{})}
	sh.calls[key] = c
	sh.mu.Unlock()

	c.uid, c.created, c.err = u.getOrCreate(ctx, kind, key.name)
	if c.err == nil {
		u.remember(kind, key.name, c.uid)
	}
	sh.mu.Lock()
	delete(sh.calls, key)
	sh.mu.Unlock()
	close(c.done)
	return c.uid, c.created, c.err
}

// rememberWork caches the name and UID of every item of work without an
// error, in both directions, shard by shard: each shard's lock is taken
// for its items alone, up to gencache.LockBatch at a time (a first
// contact remembers a name or more a series, spread over every shard).
func (u *UIDs) rememberWork(work []uidWork) {
	var items []int32
	for kind := range NumKinds {
		items = items[:0]
		for i := range work {
			if w := &work[i]; w.kind == kind && w.err == nil {
				items = append(items, int32(i))
			}
		}
		if len(items) == 0 {
			continue
		}
		fwd, rev := u.fwd[kind], u.rev[kind]
		keys := make([]nameKey, len(items))
		for j, i := range items {
			keys[j] = fwd.keyString(work[i].name)
		}
		gencache.PutByShard(fwd.ShardedByteCache, len(items), func(j int) nameKey { return keys[j] }, func(j int) []byte { return work[items[j]].uid })
		// The reverse cache keys UIDs of up to 8 bytes (uidKey); longer
		// ones (never of a valid width) are not cached.
		revKeys := make([]uint64, 0, len(items))
		revItems := items[:0:0]
		for _, i := range items {
			if k, ok := uidKey(work[i].uid); ok {
				revKeys, revItems = append(revKeys, k), append(revItems, i)
			}
		}
		gencache.PutByShard(rev.ShardedByteCache, len(revItems), func(j int) uint64 { return revKeys[j] }, func(j int) []byte {
			name := work[revItems[j]].name
			return unsafe.Slice(unsafe.StringData(name), len(name))
		})
		if kind == KindMetric {
			u.metricGen.Add(1)
		}
	}
}

func (u *UIDs) remember(kind Kind, name string, uid []byte) {
	u.fwd[kind].putName(name, uid)
	u.rev[kind].putUID(uid, name)
	if kind == KindMetric {
		u.metricGen.Add(1)
	}
}

// MetricGeneration changes whenever this process learns a metric name it
// had not cached (assigned here or read from the table). A list of metric
// names read before a change may lack that name.
func (u *UIDs) MetricGeneration() uint64 { return u.metricGen.Load() }

// readForward reads the forward mapping whose row key is stored, the
// bytes of a name as tsdb-uid holds it.
func (u *UIDs) readForward(ctx context.Context, kind Kind, stored string) ([]byte, error) {
	var value []byte
	if cg, ok := store.As[store.CellGetter](u.st); ok {
		v, found, err := cg.GetCell(ctx, u.table, []byte(stored), FamilyID, kind.Qualifier())
		if err != nil {
			return nil, fmt.Errorf("read uid of %s %q: %w", kind, mapping.NameFromStored([]byte(stored)), err)
		}
		if !found {
			return nil, nil
		}
		value = v
	} else {
		row, err := u.st.Get(ctx, u.table, []byte(stored), FamilyID)
		if err != nil {
			return nil, fmt.Errorf("read uid of %s %q: %w", kind, mapping.NameFromStored([]byte(stored)), err)
		}
		i := slices.IndexFunc(row.Cells, func(c store.Cell) bool { return string(c.Qualifier) == kind.Qualifier() })
		if i < 0 {
			return nil, nil
		}
		value = row.Cells[i].Value
	}
	if len(value) != u.widths[kind] {
		return nil, fmt.Errorf("uid of %s %q is %x: %d bytes, want %d", kind, mapping.NameFromStored([]byte(stored)), value, len(value), u.widths[kind])
	}
	return value, nil
}

const maxAssignAttempts = 3

func (u *UIDs) getOrCreate(ctx context.Context, kind Kind, name string) ([]byte, bool, error) {
	if uid, err := u.lookup(ctx, kind, name); err != nil || uid != nil {
		return uid, false, err
	}
	stored, _ := mapping.StoredNames(name)
	width := u.widths[kind]
	q := kind.Qualifier()
	for range maxAssignAttempts {
		id, err := u.claim(ctx, kind, 1)
		if err != nil {
			return nil, false, fmt.Errorf("allocate uid for %s %q: %w", kind, name, err)
		}
		u.noteCounter(kind, id)
		if id <= 0 || (width < 8 && id >= int64(1)<<(8*width)) {
			return nil, false, fmt.Errorf("all %d-byte uids of kind %s are assigned (counter at %d), cannot assign %q: %w", width, kind, id, name, ErrUIDExhausted)
		}
		uid := make([]byte, width)
		var full [8]byte
		binary.BigEndian.PutUint64(full[:], uint64(id))
		copy(uid, full[8-width:])

		ok, err := u.st.CheckAndPut(ctx, u.table, store.Put{Row: uid, Cells: []store.Cell{{
			Family: []byte(FamilyName), Qualifier: []byte(q), Value: []byte(stored),
		}}}, FamilyName, q, nil)
		if err != nil {
			return nil, false, fmt.Errorf("write reverse mapping %x -> %s %q: %w", uid, kind, name, err)
		}
		if !ok {
			// The counter and the reverse rows disagree (a uid written by
			// hand, or a counter reset); take the next id.
			continue
		}
		ok, err = u.st.CheckAndPut(ctx, u.table, store.Put{Row: []byte(stored), Cells: []store.Cell{{
			Family: []byte(FamilyID), Qualifier: []byte(q), Value: uid,
		}}}, FamilyID, q, nil)
		if err != nil {
			return nil, false, fmt.Errorf("write forward mapping %s %q -> %x: %w", kind, name, uid, err)
		}
		if ok {
			u.assignedBy[kind].Inc()
			return uid, true, nil
		}
		// Another writer won the race: use its uid.
		winner, err := u.readForward(ctx, kind, stored)
		if err != nil {
			return nil, false, err
		}
		if winner == nil {
			return nil, false, fmt.Errorf("forward mapping of %s %q lost a race but is absent", kind, name)
		}
		if !bytes.Equal(winner, uid) {
			u.dropReverse(ctx, kind, uid)
		}
		return winner, false, nil
	}
	return nil, false, fmt.Errorf("assign uid for %s %q: reverse rows taken after %d attempts; run a uid fsck", kind, name, maxAssignAttempts)
}

// Name returns the name of uid.
func (u *UIDs) Name(ctx context.Context, kind Kind, uid []byte) (string, error) {
	cacheable := len(uid) == u.widths[kind] // the cache keys UIDs of the kind's width
	if cacheable {
		if name, ok := u.rev[kind].getUID(uid); ok {
			u.hitsBy[kind][reverse].Inc()
			return name, nil
		}
	}
	u.missesBy[kind][reverse].Inc()
	row, err := u.st.Get(ctx, u.table, uid, FamilyName)
	if err != nil {
		return "", fmt.Errorf("read name of %s uid %x: %w", kind, uid, err)
	}
	for _, c := range row.Cells {
		if string(c.Qualifier) == kind.Qualifier() {
			name := mapping.NameFromStored(c.Value)
			if cacheable {
				u.rev[kind].putUID(uid, name)
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("%s uid %x: %w", kind, uid, ErrNoSuchUID)
}
