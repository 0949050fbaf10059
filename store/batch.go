package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Batch is one write's puts, table by table, in the order the caller
// added them: for a remote-write request, the TSMeta and index rows of
// its new series, then its data rows, then its exemplars. Write commits a
// Batch the way its store makes writes durable, so that no caller needs
// to know how (which tables a store defers, syncs or writes in bulk).
//
// A Batch is reused across writes with Reset; it keeps the Puts slices
// the caller handed it, not copies.
type Batch struct {
	ops []BatchOp
}

// BatchOp is the puts of a Batch into one table.
type BatchOp struct {
	Table string
	Puts  []Put
	// Bulk marks a bulk load's rows (an import of history): a store that
	// writes those cheaper than Put's (BulkPutter) writes them so.
	Bulk bool
}

// Put adds puts into table to b; none is a no-op.
func (b *Batch) Put(table string, puts []Put) {
	if len(puts) > 0 {
		b.ops = append(b.ops, BatchOp{Table: table, Puts: puts})
	}
}

// PutBulk adds a bulk load's puts into table to b (BatchOp.Bulk).
func (b *Batch) PutBulk(table string, puts []Put) {
	if len(puts) > 0 {
		b.ops = append(b.ops, BatchOp{Table: table, Puts: puts, Bulk: true})
	}
}

// Ops returns b's puts, table by table, in the order they were added.
func (b *Batch) Ops() []BatchOp { return b.ops }

// Rows returns the number of puts (rows) in b.
func (b *Batch) Rows() int {
	n := 0
	for _, op := range b.ops {
		n += len(op.Puts)
	}
	return n
}

// Reset empties b for reuse, dropping its references to the puts.
func (b *Batch) Reset() {
	clear(b.ops)
	b.ops = b.ops[:0]
}

// Putter is what Write needs of a store: its Put; the optional interfaces
// it uses (DeferredPutter, BulkPutter, Syncer) are found with As.
type Putter interface {
	Put(ctx context.Context, table string, puts []Put) error
}

// Write commits b to st: when it returns nil, every put of b is durable as
// st promises (an embedded store's log synced; HBase's WAL) and visible to
// every later read, and the caller may acknowledge it.
//
// Order: within one table, a later put's cell replaces an earlier one's.
// Across tables a store commits in its own order (the embedded store
// applies them all and syncs its logs once; a store without deferred
// durability writes the tables at once, a round trip each), so a crash
// may leave some tables' puts of an unacknowledged batch without the
// others': writing b again is harmless.
//
// On a store that defers durability Write also makes durable what earlier
// WriteDeferred calls applied, an empty b included.
//
// Buffers: once Write returns nil the caller may reuse every byte the
// puts reference. After an error it must not: a remote store's calls may
// still read them (a client retrying an RPC it gave up on).
func Write(ctx context.Context, st Putter, b *Batch) error {
	return write(ctx, st, b, false)
}

// WriteDeferred is Write for a caller that acknowledges nothing before
// its next Write or Sync (an import, which syncs once at its end): on a
// store that defers durability (DeferredPutter) the puts are visible when
// it returns and durable with that next call; on others it is Write.
func WriteDeferred(ctx context.Context, st Putter, b *Batch) error {
	return write(ctx, st, b, true)
}

// Deleter is what DeleteDeferred needs of a store: its Delete; the
// optional DeferredDeleter is found with As.
type Deleter interface {
	Delete(ctx context.Context, table string, row []byte, columns []Column) error
}

// DeleteDeferred is Delete for a caller that acknowledges nothing before
// its next Write or Sync (a compaction's deletes, synced once for many
// rows): on a store that defers durability (DeferredDeleter) the delete is
// visible when it returns and durable with that next call; on others it is
// Delete. A delete that removes what a put replaced comes after that put's
// Write, never in the same deferred run.
func DeleteDeferred(ctx context.Context, st Deleter, table string, row []byte, columns []Column) error {
	if d, ok := As[DeferredDeleter](st); ok {
		return d.DeleteDeferred(ctx, table, row, columns)
	}
	return st.Delete(ctx, table, row, columns)
}

// Sync makes every write of st durable that was applied without being
// so (WriteDeferred, and the check-and-puts and increments a store makes
// durable with its next write: Syncer). On a store whose writes are
// durable when they return it does nothing.
func Sync(ctx context.Context, st any) error {
	sy, ok := As[Syncer](st)
	if !ok {
		return nil
	}
	if err := sy.Sync(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// write commits b: in order, one sync at the end, on a store that defers
// durability; table by table at once on others.
func write(ctx context.Context, st Putter, b *Batch, deferSync bool) error {
	if d, ok := As[DeferredPutter](st); ok {
		return writeInOrder(ctx, st, d, b, deferSync)
	}
	if len(b.ops) == 0 {
		return nil
	}
	return writeAtOnce(ctx, st, b)
}

// writeInOrder applies b's ops in order without waiting for each to be
// durable (bulk ops through BulkPutter, durable on their own), then syncs
// once (whatever is pending, earlier deferred writes too) unless
// deferSync.
func writeInOrder(ctx context.Context, st Putter, d DeferredPutter, b *Batch, deferSync bool) error {
	bulk, hasBulk := As[BulkPutter](st)
	for _, op := range b.ops {
		var err error
		if op.Bulk && hasBulk {
			err = bulk.PutBulk(ctx, op.Table, op.Puts)
		} else {
			err = d.PutDeferred(ctx, op.Table, op.Puts)
		}
		if err != nil {
			return fmt.Errorf("write %d rows into %s: %w", len(op.Puts), op.Table, err)
		}
	}
	if deferSync {
		return nil
	}
	return Sync(ctx, st)
}

// writeAtOnce writes b's ops of each table with one Put, the tables at
// once (each a round trip of its own on a remote store), and returns
// their errors joined. Ops of one table are put in their order.
func writeAtOnce(ctx context.Context, st Putter, b *Batch) error {
	var tbuf [8]string
	tables := tbuf[:0]
	for _, op := range b.ops {
		if !slices.Contains(tables, op.Table) {
			tables = append(tables, op.Table)
		}
	}
	if len(tables) == 1 {
		for _, op := range b.ops {
			if err := st.Put(ctx, op.Table, op.Puts); err != nil {
				return fmt.Errorf("write %d rows into %s: %w", len(op.Puts), op.Table, err)
			}
		}
		return nil
	}
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, table := range tables {
		put := func() {
			for _, op := range b.ops {
				if op.Table != table {
					continue
				}
				if err := st.Put(ctx, op.Table, op.Puts); err != nil {
					errs[i] = fmt.Errorf("write %d rows into %s: %w", len(op.Puts), op.Table, err)
					return
				}
			}
		}
		if i == len(tables)-1 {
			put() // the last on this goroutine
			continue
		}
		wg.Go(put)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first table's, in the batch's order
		}
	}
	return nil
}
