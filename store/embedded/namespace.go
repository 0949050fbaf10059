package embedded

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
)

// Namespaces: a table "ns:name" (store.NamespacedTable) of a namespace
// that CreateNamespace made is a table of its own, whose keys start with
// "ns:name" 0x00 (keys.go): the tenants' key prefixes. It exists when name
// is among Options.Tables, is buffered when name is among
// Options.BufferTables and has the row codec of name. A table named in
// full among Options.Tables ("t_acme:tsdb", as the commands' table flags
// name a tenant's) exists, is buffered and has a codec as named, whether
// or not its namespace was made.
//
// nsKeyPrefix ‖ ns marks a namespace (an empty value). It starts with
// 0x00, as the store's other state keys (runs.go).
var nsKeyPrefix = []byte("\x00ns\x00")

// baseTable returns a table's name without its namespace.
func baseTable(table string) string {
	if i := strings.IndexByte(table, store.NamespaceSeparator); i >= 0 {
		return table[i+1:]
	}
	return table
}

// codecFor returns the row codec of table: that of its name without the
// namespace.
func codecFor(codecs map[string]RowCodec, table string) RowCodec {
	if c, ok := codecs[table]; ok {
		return c
	}
	return codecs[baseTable(table)]
}

// checkNamespace reports an error for a namespace name that is empty or
// holds 0x00 or the namespace separator.
func checkNamespace(ns string) error {
	if ns == "" || strings.IndexByte(ns, 0) >= 0 || strings.IndexByte(ns, store.NamespaceSeparator) >= 0 {
		return fmt.Errorf("namespace name %q: %w", ns, store.ErrInvalid)
	}
	return nil
}

// loadNamespaces reads the namespaces marked in the database.
func (s *Store) loadNamespaces() error {
	m := map[string]bool{}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: nsKeyPrefix, UpperBound: store.PrefixEnd(nsKeyPrefix)})
	if err != nil {
		return fmt.Errorf("read namespaces: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		m[string(bytes.TrimPrefix(it.Key(), nsKeyPrefix))] = true
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("read namespaces: %w", err)
	}
	s.namespaces.Store(&m)
	return nil
}

// CreateNamespace makes namespace ns, whose tables are then those of
// Options.Tables under ns (store.NamespacedTable), durably; created is
// false when it existed. The name may not be empty nor hold 0x00 or ':'.
func (s *Store) CreateNamespace(ctx context.Context, ns string) (created bool, err error) {
	if err := checkNamespace(ns); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	old := *s.namespaces.Load()
	if old[ns] {
		return false, nil
	}
	key := append(slices.Clip(nsKeyPrefix), ns...)
	if err := s.db.Set(key, nil, pebble.Sync); err != nil {
		return false, fmt.Errorf("create namespace %s: %w: %w", ns, store.ErrUnavailable, err)
	}
	m := maps.Clone(old)
	m[ns] = true
	s.namespaces.Store(&m)
	return true, nil
}

// Namespaces returns the namespaces CreateNamespace made, sorted.
func (s *Store) Namespaces() []string {
	return slices.Sorted(maps.Keys(*s.namespaces.Load()))
}
