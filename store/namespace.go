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
// (NamespacedTable). It has the optional interfaces of this package that
// st has (Syncer, DeferredPutter, RangeSplitter, CellGetter,
// RowRangeDeleter, Reclaimer, TableSizer when st has all of them; always
// BatchCheckAndPutter, one check-and-put after the other when st is not
// one). Close does nothing: st stays open for its owner, who closes it
// once. ns must not be empty.
func Namespaced(st Store, ns string) Store {
	v := &nsView{st: st, ns: ns}
	v.names.Store(&map[string]string{})
	if f, ok := st.(fullStore); ok {
		return &nsFullView{nsView: v, full: f}
	}
	return v
}

// fullStore is a Store with every optional interface (the embedded
// store).
type fullStore interface {
	Store
	Syncer
	DeferredPutter
	RangeSplitter
	CellGetter
	RowRangeDeleter
	Reclaimer
	TableSizer
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

// CheckAndPutBatch is st's when st is a BatchCheckAndPutter; otherwise
// the check-and-puts run one after the other, each seeing those before.
func (v *nsView) CheckAndPutBatch(ctx context.Context, table string, ops []CondPut, written []bool) error {
	t := v.table(table)
	if b, ok := v.st.(BatchCheckAndPutter); ok {
		return b.CheckAndPutBatch(ctx, t, ops, written)
	}
	for i, op := range ops {
		ok, err := v.st.CheckAndPut(ctx, t, op.Put, op.Family, op.Qualifier, op.Expected)
		if err != nil {
			clear(written)
			return err
		}
		written[i] = ok
	}
	return nil
}

func (v *nsView) Delete(ctx context.Context, table string, row []byte, columns []Column) error {
	return v.st.Delete(ctx, v.table(table), row, columns)
}

// Close does nothing: the store underneath belongs to its opener.
func (v *nsView) Close() error { return nil }

// nsFullView is the view of a store with every optional interface.
type nsFullView struct {
	*nsView
	full fullStore
}

func (v *nsFullView) Sync(ctx context.Context) error { return v.full.Sync(ctx) }

func (v *nsFullView) PutDeferred(ctx context.Context, table string, puts []Put) error {
	return v.full.PutDeferred(ctx, v.table(table), puts)
}

func (v *nsFullView) SplitRange(ctx context.Context, table string, start, stop []byte, n int) ([][]byte, error) {
	return v.full.SplitRange(ctx, v.table(table), start, stop, n)
}

func (v *nsFullView) GetCell(ctx context.Context, table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	return v.full.GetCell(ctx, v.table(table), row, family, qualifier)
}

func (v *nsFullView) DeleteRows(ctx context.Context, table string, start, stop []byte) error {
	return v.full.DeleteRows(ctx, v.table(table), start, stop)
}

// Reclaim reclaims the space of the whole store: its deleted ranges are
// not the namespace's alone.
func (v *nsFullView) Reclaim(ctx context.Context) error { return v.full.Reclaim(ctx) }

func (v *nsFullView) TableBytes(ctx context.Context, table string) (int64, error) {
	return v.full.TableBytes(ctx, v.table(table))
}
