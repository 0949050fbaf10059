package store

import (
	"context"
	"fmt"
	"reflect"
	"time"
)

// The optional interfaces: what a Store may do beyond Store, each a small
// interface of its own (a backend has those it can do cheaper or at all;
// embedded has every one but CheckAndPutSyncer, hbase has CellsGetter,
// BatchCheckAndPutter and CheckAndPutSyncer). A caller asks for one with
// As, never with a type assertion: a wrapper of a Store (Namespaced)
// forwards each that the store underneath has through its As method, and
// does not have their methods itself. Optional lists them all; a new one
// goes there too, and TestForwarding checks every wrapper forwards it.
//
// Why As and not type assertions on wrappers with the methods: a wrapper
// has to have a capability exactly when the store it wraps has it (one
// it has without would send callers down a "batched" path that runs one
// by one; one it lacks sends them down the slow path, which is how every
// tenant lost batched UID reads once). With ten interfaces that takes
// 1024 wrapper types, one for each combination; a lookup through the
// wrapper (as errors.As looks through wrapped errors) takes one small
// forwarding type per interface.

// Optional returns the optional interfaces of this package, the ones As
// finds: each a reflect.Type of an interface type.
func Optional() []reflect.Type {
	return []reflect.Type{
		reflect.TypeFor[Syncer](),
		reflect.TypeFor[DeferredPutter](),
		reflect.TypeFor[DeferredDeleter](),
		reflect.TypeFor[BulkPutter](),
		reflect.TypeFor[RangeSplitter](),
		reflect.TypeFor[BatchCheckAndPutter](),
		reflect.TypeFor[CheckAndPutSyncer](),
		reflect.TypeFor[CellGetter](),
		reflect.TypeFor[CellsGetter](),
		reflect.TypeFor[RowRangeDeleter](),
		reflect.TypeFor[Reclaimer](),
		reflect.TypeFor[Settler](),
		reflect.TypeFor[Snapshotter](),
		reflect.TypeFor[TableSizer](),
		reflect.TypeFor[ReadOnlyReporter](),
	}
}

// Wrapper is a Store over another Store that forwards the optional
// interfaces of the store underneath (Namespaced's view).
type Wrapper interface {
	Store
	// As sets *target, a pointer to a variable of one of the optional
	// interfaces (Optional), to the wrapper's implementation of it and
	// reports true when the store underneath has that interface (As of
	// it); otherwise it leaves *target alone and reports false. A store's
	// optional interfaces do not change while it is open.
	As(target any) bool
}

// As returns st's implementation of the optional interface T (Optional)
// and whether st has one: st itself when it implements T, otherwise, for
// a Wrapper, the one its As gives, which forwards to the store underneath
// (so a wrapper of a wrapper forwards too). st is a Store, held by the
// caller as any interface of its methods.
func As[T any](st any) (T, bool) {
	if t, ok := st.(T); ok {
		return t, true
	}
	var t T
	if w, ok := st.(Wrapper); ok && w.As(&t) {
		return t, true
	}
	return t, false
}

// Lookup is As for the optional interface typ (one of Optional), named
// by its reflect.Type: st's implementation of it, and whether st has one.
func Lookup(st any, typ reflect.Type) (any, bool) {
	if reflect.TypeOf(st).Implements(typ) {
		return st, true
	}
	target := reflect.New(typ)
	if w, ok := st.(Wrapper); ok && w.As(target.Interface()) {
		return target.Elem().Interface(), true
	}
	return nil, false
}

// Forward is the As of a wrapper that passes st's optional interfaces on
// as they are (one that changes nothing of their calls, as a test's
// wrapper failing some scans): it sets *target, a pointer to a variable
// of an optional interface, to st's implementation of it (Lookup) and
// reports whether st has one.
func Forward(st any, target any) bool {
	v := reflect.ValueOf(target).Elem()
	impl, ok := Lookup(st, v.Type())
	if ok {
		v.Set(reflect.ValueOf(impl))
	}
	return ok
}

// forward sets *target to wrap of st's T (As) when st has one and
// reports whether it did: a Wrapper's As of one optional interface.
func forward[T any](st Store, target *T, wrap func(T) T) bool {
	t, ok := As[T](st)
	if ok {
		*target = wrap(t)
	}
	return ok
}

// ReadOnlyReporter is a Store that may turn read-only by itself (the
// embedded store below its free-space watermark or after a full disk):
// ReadOnly reports whether it refuses writes now and why, without I/O,
// for readiness and metrics.
type ReadOnlyReporter interface {
	ReadOnly() (bool, string)
}

// Syncer is a Store whose Increment and CheckAndPut become durable only
// with a later write: Sync makes everything so far durable. Callers that
// acknowledge an Increment or CheckAndPut with no Put after it call Sync.
type Syncer interface {
	Sync(ctx context.Context) error
}

// DeferredPutter is a Store that can apply puts without waiting until they
// are durable: they are visible at once and become durable with the next
// Put, Sync or Close (the embedded store, whose log keeps the order of
// writes). A caller acknowledges nothing that depends on them before such
// a write.
type DeferredPutter interface {
	PutDeferred(ctx context.Context, table string, puts []Put) error
}

// DeferredDeleter is a Store that can apply a Delete without waiting
// until it is durable: visible at once, durable with the next Sync (or a
// later durable write, or Close). Nothing orders it with other writes not
// yet durable: a caller whose delete removes what a put replaced makes
// the put durable (Sync) before it deletes, as a compaction does.
type DeferredDeleter interface {
	DeleteDeferred(ctx context.Context, table string, row []byte, columns []Column) error
}

// BulkPutter is a Store that can take a bulk load's puts (an import of
// history) in a form cheaper than Put's: the embedded store writes the
// rows its write buffer does not hold straight into its settled form, one
// sorted table a call, bypassing the buffer's log, memory and flush.
// PutBulk is Put's contract: the puts are durable when it returns, a later
// put's cell replaces an earlier one's, and on error some of the puts may
// have been applied. Puts written before it that a caller has not made
// durable (DeferredPutter) may still be pending: Sync makes them so.
type BulkPutter interface {
	PutBulk(ctx context.Context, table string, puts []Put) error
}

// RangeSplitter is a Store that can cut a row range into parts holding
// about the same data, so that one large scan can run as several at once
// (on more cores, or more servers). SplitRange returns at most n-1 row keys
// k1 < k2 < ... strictly inside [start, stop) (stop empty: the table's
// end), each the key of a row the table held (it may have been deleted
// since; the cut is an estimate either way): the parts are [start, k1),
// [k1, k2), ... [kN, stop), every row in exactly one. It returns none
// when the range holds too little to be worth cutting; an estimate, never
// a promise of balance.
type RangeSplitter interface {
	SplitRange(ctx context.Context, table string, start, stop []byte, n int) ([][]byte, error)
}

// BatchCheckAndPutter is a Store that runs many check-and-puts in one call
// cheaper than one by one (the embedded store: one lock round and one
// commit). Each check-and-put is atomic on its own and sees the ones
// before it in the batch; the batch as a whole is not atomic. written[i]
// reports whether ops[i] was written; on error none is reported written.
type BatchCheckAndPutter interface {
	CheckAndPutBatch(ctx context.Context, table string, ops []CondPut, written []bool) error
}

// CellGetter is a Store that reads one cell cheaper than its row (the
// embedded store: a point read its bloom filters can answer).
type CellGetter interface {
	GetCell(ctx context.Context, table string, row []byte, family, qualifier string) (value []byte, found bool, err error)
}

// RowRangeDeleter is a Store that removes every row of a key range in one
// step (the embedded store: a range tombstone over its keys and the row
// buffer), cheaper than reading the rows and deleting them one by one.
// Rows written after DeleteRows returned are kept.
type RowRangeDeleter interface {
	DeleteRows(ctx context.Context, table string, start, stop []byte) error
}

// Reclaimer is a Store that can give the space of deleted data back to the
// filesystem on request (the embedded store: compact the ranges deletes
// touched). Stores that reclaim on their own schedule (HBase: at the next
// major compaction) need not implement it.
type Reclaimer interface {
	Reclaim(ctx context.Context) error
}

// Settler is a Store that can bring what was written and deleted, by
// this process or one before it, into its settled form on request, so
// that its files take the least space (the embedded store: flush both
// logs, compact every changed range down to the bottom level). Offline
// commands that rewrote much (promhbase compact, rollup) settle before
// they end; a server's store settles in the background.
type Settler interface {
	Settle(ctx context.Context) error
}

// Snapshotter is a Store that keeps named, consistent, point-in-time
// copies of its tables (the embedded store: a Pebble checkpoint of the
// whole store, hard links, under its directory's snapshots/; HBase: one
// HBase snapshot a table, named NAME.NAMESPACE.QUALIFIER so that they
// belong together). Every write acknowledged before CreateSnapshot was
// called is in the copy; writes that go on meanwhile may or may not be.
type Snapshotter interface {
	// CreateSnapshot makes the copy name of tables (the embedded store
	// copies all of its tables whatever tables says, at one instant;
	// HBase takes them one after the other in the order given, so callers
	// name the UID tables last, and skips those that do not exist). name
	// is of letters, digits, '-' and '_' and must be new.
	CreateSnapshot(ctx context.Context, name string, tables []string) error
	// ListSnapshots returns the snapshots kept, oldest first.
	ListSnapshots(ctx context.Context) ([]SnapshotInfo, error)
	// DeleteSnapshot deletes snapshot name, every table's copy of it.
	DeleteSnapshot(ctx context.Context, name string) error
}

// CheckSnapshotName accepts the names of snapshots: letters, digits, '-'
// and '_' (those Prometheus gives its snapshots among them; no '.', which
// ends the name in HBase's snapshot names, no '/'), 1 to 100 bytes. Other
// names are ErrInvalid.
func CheckSnapshotName(name string) error {
	if name == "" || len(name) > 100 {
		return fmt.Errorf("snapshot name %q: 1 to 100 bytes: %w", name, ErrInvalid)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("snapshot name %q: only letters, digits, '-' and '_' are allowed: %w", name, ErrInvalid)
		}
	}
	return nil
}

// NewSnapshotName returns a snapshot name made as Prometheus names its
// snapshots: now in UTC (20060102T150405Z), '-', 16 hex digits of r.
func NewSnapshotName(now time.Time, r uint64) string {
	return fmt.Sprintf("%s-%016x", now.UTC().Format("20060102T150405Z0700"), r&(1<<63-1))
}

// SnapshotInfo describes one snapshot (Snapshotter).
type SnapshotInfo struct {
	Name    string
	Created time.Time
	// Tables are the tables copied (HBase: each its own HBase snapshot,
	// NAME.NAMESPACE.QUALIFIER); nil when the copy is of the whole store.
	Tables []string
	// Location is where the copy is (the embedded store: its directory).
	Location string
}

// TableSizer is a Store that can tell how many bytes a table takes on disk
// (an estimate: compressed files, logs excluded).
type TableSizer interface {
	TableBytes(ctx context.Context, table string) (int64, error)
}

// CellsGetter is a Store that reads one cell (family:qualifier) of many
// rows in one call, cheaper than a GetCell or Get each (the embedded
// store: sorted seeks of one iterator; HBase: one multi-get per region
// server instead of a round trip a row). values[i] and found[i] answer
// rows[i]; both are as long as rows. An error fails the whole call.
type CellsGetter interface {
	GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error
}

// CheckAndPutSyncer is a Store that reports whether each check-and-put,
// in a batch too, is made durable on its own while the rows of one Put
// share that cost (HBase: a region server's WAL sync each): callers with
// many rows that no other writer races for then write them with one Put
// instead of check-and-puts.
type CheckAndPutSyncer interface {
	CheckAndPutSyncsEach() bool
}
