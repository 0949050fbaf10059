package storetest

import (
	"context"
	"sync/atomic"

	"github.com/promhbase/promhbase/store"
)

// CellsStore is a store.Store that reads one cell of many rows at once
// (both backends).
type CellsStore interface {
	store.Store
	store.CellsGetter
}

// ReadCounter counts the reads of family in table through it: Gets (one a
// row) and GetCells (one a batch of rows). Only the methods of CellsStore
// pass through it.
type ReadCounter struct {
	CellsStore
	Table, Family string
	Gets, Batches atomic.Int64
}

// Get counts and passes on.
func (c *ReadCounter) Get(ctx context.Context, table string, row []byte, family string) (store.Row, error) {
	if table == c.Table && family == c.Family {
		c.Gets.Add(1)
	}
	return c.CellsStore.Get(ctx, table, row, family)
}

// GetCells counts and passes on.
func (c *ReadCounter) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error {
	if table == c.Table && family == c.Family {
		c.Batches.Add(1)
	}
	return c.CellsStore.GetCells(ctx, table, rows, family, qualifier, values, found)
}
