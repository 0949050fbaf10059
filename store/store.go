// Package store defines the cell store that promhbase keeps its data in.
//
// The model is HBase's: a table holds rows sorted by their key bytes
// (unsigned, lexicographic); a row holds cells addressed by family and
// qualifier; each cell keeps one version (VERSIONS=1) with a timestamp in
// milliseconds. Backends: store/hbase (a real HBase through gohbase) and
// store/embedded (one machine, on Pebble). store/storetest holds the
// contract suite every backend must pass.
//
// A backend may have optional interfaces (optional.go: batched reads,
// deferred puts, range deletes, settling, snapshots and more), asked for
// with As, which finds them through wrappers. FirstKey and DeleteRows work
// over any store. Namespaced (namespace.go) is a view whose tables are
// ns:table (a tenant's), forwarding each optional interface the store has.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Cell is one cell of a row.
type Cell struct {
	Family    []byte
	Qualifier []byte
	Value     []byte
	// Timestamp is the cell's version in Unix milliseconds. On writes zero
	// means "the store's current time", as HBase does for LATEST_TIMESTAMP.
	// A cell written with an explicit Timestamp older than the version the
	// store holds stays hidden behind that version, as in HBase, where the
	// highest version is the one read.
	Timestamp uint64
}

// Packed reports whether c is a packed cell: one that a scan asking for
// them (ScanRequest.Packed) returned in the backend's packed form of a
// settled row instead of as the cells it stands for. A packed cell has
// neither Family nor Qualifier (every stored cell has a family, in HBase
// as here); its Value is the packed form whole, which names its format in
// its first byte (package dense: dense.Format) and holds the version; its
// Timestamp is zero.
func (c Cell) Packed() bool { return len(c.Family) == 0 && len(c.Qualifier) == 0 }

// Put writes cells into one row. All cells of a Put land atomically.
type Put struct {
	Row   []byte
	Cells []Cell
}

// Row is a row as returned by Get and Scan: its key and its cells, sorted
// by family then qualifier.
type Row struct {
	Key   []byte
	Cells []Cell
}

// Column names one column of a row, for deletes.
type Column struct {
	Family    []byte
	Qualifier []byte
	// Timestamp, when not zero, bounds the delete: only the versions of
	// the column at or before it (Unix ms) are removed, as HBase's "delete
	// columns up to ts" does, so that a version written later survives.
	// Zero removes every version. (On HBase the delete marker also hides a
	// version written later with an explicit Timestamp at or before the
	// bound; writes that take the store's time are not affected.)
	Timestamp uint64
}

// ScanRequest describes a scan of rows in [Start, Stop).
type ScanRequest struct {
	Table string
	// Start is the first row key included; nil or empty starts at the
	// beginning of the table.
	Start []byte
	// Stop is the first row key excluded; nil or empty scans to the end.
	Stop []byte
	// Family restricts the cells returned to one family; empty returns all.
	Family string
	// RowRegex, when not empty, keeps only the rows whose key matches it.
	// The key is decoded as ISO-8859-1 (byte b is the rune U+00b) and the
	// pattern is searched (not fully matched) as HBase's
	// RegexStringComparator with the JAVA engine does, so patterns must
	// anchor themselves. Patterns must stay within the syntax shared by
	// java.util.regex and Go's regexp: (?s), ^, \z, (?:...), x{n}, \xHH,
	// alternation and repetition.
	RowRegex string
	// RowMatch, when set, is RowRegex as a function of the row key: it
	// keeps exactly the rows RowRegex keeps. A store that filters rows in
	// process (the embedded store) calls it instead of running the regex;
	// HBase's scans send RowRegex.
	RowMatch func(key []byte) bool
	// RowSeek, when set with RowMatch, says how far a store that filters
	// rows in process may skip: for a row key that RowMatch refuses it
	// appends to dst and returns a key greater than that row's, every
	// row between the two being one RowMatch refuses too, or returns nil
	// (the next row). The embedded store seeks to it instead of reading
	// the rows between; HBase's scans ignore it.
	RowSeek func(dst, key []byte) []byte
	// KeysOnly says the caller needs only the keys of the rows that have
	// a cell (of Family), not their cells: a store may then return one
	// cell a row with its value left out (HBase: FirstKeyOnlyFilter and
	// KeyOnlyFilter), or the rows whole (the embedded store).
	KeysOnly bool
	// Packed says the caller reads packed cells (Cell.Packed) of the
	// format Packed names (its first byte; 0: none): a backend that keeps
	// a row's settled data in that form (the embedded store, package
	// dense) may return such a row as one packed cell, and the caller
	// decodes it. Rows it holds otherwise come as cells; backends without
	// a packed form (HBase) ignore it.
	Packed byte
	// PackedAlso is a second format the caller reads packed cells of
	// (0: none), for a codec that packs in two (package rollup).
	PackedAlso byte
	// PackedRuns says the caller also takes a row held as several packed
	// runs, as one packed cell per run, oldest first: each later one's
	// cells replace the earlier ones' of the same column (the rollup
	// tables). Without it only a row of one packed run comes packed.
	PackedRuns bool
}

// Scanner iterates over the rows of a scan in key order. It is not safe for
// concurrent use. Close must be called when the caller stops early.
type Scanner interface {
	// Next advances to the next row and reports whether there is one.
	Next() bool
	// Row returns the current row. Its memory is valid until the next call
	// to Next or Close.
	Row() Row
	// Err returns the error that ended the scan, if any.
	Err() error
	// Close releases the scanner's resources.
	Close() error
}

// Store is the cell store. Every method is safe for concurrent use.
type Store interface {
	// Put writes the puts, which may touch many rows, and returns only once
	// the store has durably acknowledged every one of them. On error some
	// puts may have landed; writing them again is harmless.
	Put(ctx context.Context, table string, puts []Put) error
	// Get returns the cells of one row, restricted to family when it is not
	// empty. A missing row is an empty Row and no error.
	Get(ctx context.Context, table string, row []byte, family string) (Row, error)
	// Scan returns the rows in [req.Start, req.Stop) that match req.RowRegex.
	Scan(ctx context.Context, req ScanRequest) Scanner
	// Increment atomically adds delta to the 8-byte big-endian counter in
	// the cell (a missing cell counts as 0) and returns the new value.
	Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error)
	// CheckAndPut writes put only if the cell (family, qualifier) of
	// put.Row holds exactly expected; a nil or empty expected means the cell
	// must be absent. It reports whether the put was written.
	//
	// Increment and CheckAndPut are atomic and visible at once; a backend
	// may make them durable only with its next Put (the embedded store,
	// whose log keeps their order; see Syncer), never out of order.
	CheckAndPut(ctx context.Context, table string, put Put, family, qualifier string, expected []byte) (bool, error)
	// Delete removes the listed columns of row, or the whole row when
	// columns is empty. A column with a zero Timestamp loses all its
	// versions; one with a Timestamp only those at or before it, checked
	// atomically with respect to writes of the row, so that a newer version
	// is never removed. Deleting what does not exist is no error. On error
	// some columns may have been deleted; deleting them again is harmless.
	Delete(ctx context.Context, table string, row []byte, columns []Column) error
	// Close releases the store.
	Close() error
}

// CondPut is one check-and-put of a batch: Put is written only if the
// cell (Family, Qualifier) of Put.Row holds exactly Expected (absent when
// Expected is empty), as Store.CheckAndPut does.
type CondPut struct {
	Put               Put
	Family, Qualifier string
	Expected          []byte
}

// CheckAndPutAll runs ops against st: in one call when st is a
// BatchCheckAndPutter, otherwise as concurrent CheckAndPuts, at most
// concurrency at once (a remote store pipelines them), each on its own:
// one failing does not stop the others. written and errs, as long as ops,
// receive each op's outcome; an op with an error may or may not have
// landed, as a failed CheckAndPut.
func CheckAndPutAll(ctx context.Context, st interface {
	CheckAndPut(ctx context.Context, table string, put Put, family, qualifier string, expected []byte) (bool, error)
}, table string, ops []CondPut, written []bool, errs []error, concurrency int) {
	if b, ok := As[BatchCheckAndPutter](st); ok {
		err := b.CheckAndPutBatch(ctx, table, ops, written)
		for i := range errs {
			errs[i] = err
		}
		return
	}
	_ = Parallel(ctx, len(ops), concurrency, func(ctx context.Context, i int) error {
		op := &ops[i]
		written[i], errs[i] = st.CheckAndPut(ctx, table, op.Put, op.Family, op.Qualifier, op.Expected)
		if errs[i] == nil && ctx.Err() != nil && !written[i] {
			errs[i] = fmt.Errorf("check-and-put row %x: %w", op.Put.Row, ctx.Err())
		}
		return nil
	})
	if err := ctx.Err(); err != nil {
		for i := range errs {
			if errs[i] == nil && !written[i] {
				// Not run, or run after the cancellation: unknown.
				errs[i] = fmt.Errorf("check-and-put row %x: %w", ops[i].Put.Row, err)
			}
		}
	}
}

// Parallel calls fn for 0..n-1 with at most concurrency calls at once and
// returns the first error; after an error no new call starts and ctx of
// the running ones is cancelled. A cancellation of ctx is returned only
// when it kept some call from running.
func Parallel(ctx context.Context, n, concurrency int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	concurrency = max(1, min(concurrency, n))
	if concurrency == 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel(err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && next.Load() < int64(n) {
		first = context.Cause(ctx) // cancelled before every call ran
	}
	return first
}

// Errors that backends wrap with %w so that callers can classify them.
var (
	// ErrTableNotFound means the table does not exist.
	ErrTableNotFound = errors.New("table not found")
	// ErrUnavailable means the store could not be reached or refused the
	// operation for now; the same operation may succeed later.
	ErrUnavailable = errors.New("store unavailable")
	// ErrInvalid means the request can never succeed as it is (a bad
	// regex, an oversized cell).
	ErrInvalid = errors.New("invalid store request")
)

// PrefixEnd returns the first key after every key that starts with p: the
// exclusive stop of a prefix scan. It returns nil (scan to the end) when p
// is empty or all 0xFF.
func PrefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			end := make([]byte, i+1)
			copy(end, p)
			end[i]++
			return end
		}
	}
	return nil
}

// deleteBatch is how many rows DeleteRows deletes between scans when the
// store has no range delete.
const deleteBatch = 512

// DeleteRows removes every row of table in [start, stop) (stop empty: to
// the table's end) and returns how many rows it deleted (-1 when the store
// deleted the range in one step and did not count). With a RowRangeDeleter
// it is one call; otherwise it scans the keys a batch at a time and
// deletes each row, so memory stays bounded and a cancelled call can
// simply be run again.
func DeleteRows(ctx context.Context, st Store, table string, start, stop []byte) (int64, error) {
	if d, ok := As[RowRangeDeleter](st); ok {
		if err := d.DeleteRows(ctx, table, start, stop); err != nil {
			return 0, fmt.Errorf("delete rows [%x, %x) of %s: %w", start, stop, table, err)
		}
		return -1, nil
	}
	var n int64
	from := start
	keys := make([][]byte, 0, deleteBatch)
	for {
		keys = keys[:0]
		sc := st.Scan(ctx, ScanRequest{Table: table, Start: from, Stop: stop, KeysOnly: true})
		for len(keys) < deleteBatch && sc.Next() {
			keys = append(keys, append([]byte(nil), sc.Row().Key...))
		}
		err := sc.Err()
		_ = sc.Close()
		if err != nil {
			return n, fmt.Errorf("delete rows [%x, %x) of %s: scan: %w", start, stop, table, err)
		}
		if len(keys) == 0 {
			return n, nil
		}
		if err := Parallel(ctx, len(keys), 16, func(ctx context.Context, i int) error {
			return st.Delete(ctx, table, keys[i], nil)
		}); err != nil {
			return n, fmt.Errorf("delete rows [%x, %x) of %s: %w", start, stop, table, err)
		}
		n += int64(len(keys))
		if len(keys) < deleteBatch {
			return n, nil
		}
		from = append(bytes.Clone(keys[len(keys)-1]), 0) // the next row after the last deleted
	}
}

// FirstKey returns the key of the first row of table in [start, stop)
// (stop empty: to the table's end), nil when there is none: a seek that
// reads keys only.
func FirstKey(ctx context.Context, st Store, table string, start, stop []byte) ([]byte, error) {
	sc := st.Scan(ctx, ScanRequest{Table: table, Start: start, Stop: stop, KeysOnly: true})
	defer sc.Close()
	if sc.Next() {
		return bytes.Clone(sc.Row().Key), nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("seek the rows of %s from %x: %w", table, start, err)
	}
	return nil, nil
}
