package store

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
)

// NamespaceSeparator separates a namespace from a table's name, as in
// HBase's "ns:table". Table names without it are in the default
// namespace.
const NamespaceSeparator = ':'

// NamespacedTable returns the name of table in namespace ns: ns:table
// (table itself when ns is empty).
func NamespacedTable(ns, table string) string {
	if ns == "" {
		return table
	}
	return ns + string(NamespaceSeparator) + table
}

// SplitNamespace splits a table name into its namespace and its name in
// it: ("", table) for a table of the default namespace.
func SplitNamespace(table string) (ns, name string) {
	if i := strings.IndexByte(table, NamespaceSeparator); i >= 0 {
		return table[:i], table[i+1:]
	}
	return "", table
}

// Namespaced returns a view of st in which every table is that of the
// same name in namespace ns: an operation on table t is st's on ns:t
// (NamespacedTable). The view is a Wrapper: As finds each optional
// interface of this package that st has (As of st), exactly those, their
// tables namespaced too; Sync, Reclaim and Settle are st's own, for the whole
// store (its log and its deleted ranges are not the namespace's alone).
// Close does nothing: st stays open for its owner, who closes it once. ns
// must not be empty.
func Namespaced(st Store, ns string) Wrapper {
	v := &nsView{st: st, ns: ns}
	v.names.Store(&map[string]string{})
	return v
}

// nsView is Namespaced's view of a store.
type nsView struct {
	st Store
	ns string
	// names maps a table to its namespaced name, copied on write, so
	// that the operations of the hot path do not allocate the name.
	names atomic.Pointer[map[string]string]
	mu    sync.Mutex // serializes writers of names
}

// table returns the namespaced name of t.
func (v *nsView) table(t string) string {
	if n, ok := (*v.names.Load())[t]; ok {
		return n
	}
	n := NamespacedTable(v.ns, t)
	v.mu.Lock()
	defer v.mu.Unlock()
	old := *v.names.Load()
	if len(old) >= 64 { // a bound: the tables of a server are a dozen
		return n
	}
	m := make(map[string]string, len(old)+1)
	for k, x := range old {
		m[k] = x
	}
	m[t] = n
	v.names.Store(&m)
	return n
}

func (v *nsView) Put(ctx context.Context, table string, puts []Put) error {
	return v.st.Put(ctx, v.table(table), puts)
}

func (v *nsView) Get(ctx context.Context, table string, row []byte, family string) (Row, error) {
	return v.st.Get(ctx, v.table(table), row, family)
}

func (v *nsView) Scan(ctx context.Context, req ScanRequest) Scanner {
	req.Table = v.table(req.Table)
	return v.st.Scan(ctx, req)
}

func (v *nsView) Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	return v.st.Increment(ctx, v.table(table), row, family, qualifier, delta)
}

func (v *nsView) CheckAndPut(ctx context.Context, table string, put Put, family, qualifier string, expected []byte) (bool, error) {
	return v.st.CheckAndPut(ctx, v.table(table), put, family, qualifier, expected)
}

func (v *nsView) Delete(ctx context.Context, table string, row []byte, columns []Column) error {
	return v.st.Delete(ctx, v.table(table), row, columns)
}

// Close does nothing: the store underneath belongs to its opener.
func (v *nsView) Close() error { return nil }

// As forwards the optional interfaces of the store underneath: one small
// type each, which namespaces the tables of its calls.
func (v *nsView) As(target any) bool {
	switch p := target.(type) {
	case *Syncer:
		return forward(v.st, p, func(s Syncer) Syncer { return s })
	case *Reclaimer:
		return forward(v.st, p, func(r Reclaimer) Reclaimer { return r })
	case *Settler:
		return forward(v.st, p, func(s Settler) Settler { return s })
	case *Snapshotter:
		return forward(v.st, p, func(s Snapshotter) Snapshotter { return nsSnapshotter{v, s} })
	case *CheckAndPutSyncer:
		return forward(v.st, p, func(c CheckAndPutSyncer) CheckAndPutSyncer { return c })
	case *DeferredPutter:
		return forward(v.st, p, func(d DeferredPutter) DeferredPutter { return nsDeferred{v, d} })
	case *DeferredDeleter:
		return forward(v.st, p, func(d DeferredDeleter) DeferredDeleter { return nsDeferredDel{v, d} })
	case *BulkPutter:
		return forward(v.st, p, func(b BulkPutter) BulkPutter { return nsBulk{v, b} })
	case *RangeSplitter:
		return forward(v.st, p, func(r RangeSplitter) RangeSplitter { return nsSplitter{v, r} })
	case *BatchCheckAndPutter:
		return forward(v.st, p, func(b BatchCheckAndPutter) BatchCheckAndPutter { return nsBatchCAS{v, b} })
	case *CellGetter:
		return forward(v.st, p, func(g CellGetter) CellGetter { return nsCell{v, g} })
	case *CellsGetter:
		return forward(v.st, p, func(g CellsGetter) CellsGetter { return nsCells{v, g} })
	case *RowRangeDeleter:
		return forward(v.st, p, func(d RowRangeDeleter) RowRangeDeleter { return nsRangeDeleter{v, d} })
	case *TableSizer:
		return forward(v.st, p, func(t TableSizer) TableSizer { return nsSizer{v, t} })
	case *ReadOnlyReporter:
		return forward(v.st, p, func(r ReadOnlyReporter) ReadOnlyReporter { return r })
	}
	return false
}

// nsOf is a forwarding type of As: the view, and the store underneath's
// implementation of one optional interface.
type nsOf[T any] struct {
	v *nsView
	x T
}

type (
	nsDeferred     nsOf[DeferredPutter]
	nsDeferredDel  nsOf[DeferredDeleter]
	nsBulk         nsOf[BulkPutter]
	nsSplitter     nsOf[RangeSplitter]
	nsBatchCAS     nsOf[BatchCheckAndPutter]
	nsCell         nsOf[CellGetter]
	nsCells        nsOf[CellsGetter]
	nsRangeDeleter nsOf[RowRangeDeleter]
	nsSizer        nsOf[TableSizer]
)

func (n nsDeferred) PutDeferred(ctx context.Context, table string, puts []Put) error {
	return n.x.PutDeferred(ctx, n.v.table(table), puts)
}

func (n nsDeferredDel) DeleteDeferred(ctx context.Context, table string, row []byte, columns []Column) error {
	return n.x.DeleteDeferred(ctx, n.v.table(table), row, columns)
}

func (n nsBulk) PutBulk(ctx context.Context, table string, puts []Put) error {
	return n.x.PutBulk(ctx, n.v.table(table), puts)
}

func (n nsSplitter) SplitRange(ctx context.Context, table string, start, stop []byte, parts int) ([][]byte, error) {
	return n.x.SplitRange(ctx, n.v.table(table), start, stop, parts)
}

func (n nsBatchCAS) CheckAndPutBatch(ctx context.Context, table string, ops []CondPut, written []bool) error {
	return n.x.CheckAndPutBatch(ctx, n.v.table(table), ops, written)
}

func (n nsCell) GetCell(ctx context.Context, table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	return n.x.GetCell(ctx, n.v.table(table), row, family, qualifier)
}

func (n nsCells) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error {
	return n.x.GetCells(ctx, n.v.table(table), rows, family, qualifier, values, found)
}

func (n nsRangeDeleter) DeleteRows(ctx context.Context, table string, start, stop []byte) error {
	return n.x.DeleteRows(ctx, n.v.table(table), start, stop)
}

func (n nsSizer) TableBytes(ctx context.Context, table string) (int64, error) {
	return n.x.TableBytes(ctx, n.v.table(table))
}

// nsSnapshotter snapshots the view's tables; the snapshots listed and
// deleted are the store's.
type nsSnapshotter struct {
	v *nsView
	Snapshotter
}

func (n nsSnapshotter) CreateSnapshot(ctx context.Context, name string, tables []string) error {
	ns := make([]string, len(tables))
	for i, t := range tables {
		ns[i] = n.v.table(t)
	}
	return n.Snapshotter.CreateSnapshot(ctx, name, ns)
}
