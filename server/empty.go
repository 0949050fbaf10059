package server

import (
	"context"
	"fmt"

	"github.com/promhbase/promhbase/store"
)

// emptyStore is a store with no data, the tables of a tenant not yet
// created as reads see them: every table exists and is empty. Writes
// fail: a tenant is created before its first write.
type emptyStore struct{}

var errEmptyWrite = fmt.Errorf("write to a tenant not created: %w", store.ErrTableNotFound)

func (emptyStore) Put(context.Context, string, []store.Put) error { return errEmptyWrite }

func (emptyStore) Get(context.Context, string, []byte, string) (store.Row, error) {
	return store.Row{}, nil
}

func (emptyStore) Scan(context.Context, store.ScanRequest) store.Scanner { return emptyScanner{} }

func (emptyStore) Increment(context.Context, string, []byte, string, string, int64) (int64, error) {
	return 0, errEmptyWrite
}

func (emptyStore) CheckAndPut(context.Context, string, store.Put, string, string, []byte) (bool, error) {
	return false, errEmptyWrite
}

func (emptyStore) Delete(context.Context, string, []byte, []store.Column) error { return nil }

func (emptyStore) Close() error { return nil }

// emptyScanner is the scan of an empty table.
type emptyScanner struct{}

func (emptyScanner) Next() bool     { return false }
func (emptyScanner) Row() store.Row { return store.Row{} }
func (emptyScanner) Err() error     { return nil }
func (emptyScanner) Close() error   { return nil }
