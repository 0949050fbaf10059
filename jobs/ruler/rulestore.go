package ruler

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// RuleStoreOptions configure a RuleStore.
type RuleStoreOptions struct {
	// Table is the rules table; empty: mapping.DefaultRulesTable.
	Table string
}

// RuleStore is the GroupStore of one tenant over the rules table of its
// store (a tenant's store.Namespaced view, or the store itself with
// tenants off). Each group is one row, 'g' namespace 0x00 group (AppendKey),
// whose cell r:group holds the group as Prometheus's rule-file YAML (one
// rulefmt.RuleGroup, encoded by yaml.v3 as rulefmt's own types encode).
// A missing table (a tenant whose tables are not created) reads as a
// tenant without groups; writes into it fail with store.ErrTableNotFound.
// It keeps no state: replicas over the same store see every change at
// once. Its methods are safe for concurrent use.
type RuleStore struct {
	st    store.Store
	table string
}

var _ GroupStore = (*RuleStore)(nil)

// NewRuleStore returns the RuleStore over st.
func NewRuleStore(st store.Store, opts RuleStoreOptions) *RuleStore {
	if opts.Table == "" {
		opts.Table = mapping.DefaultRulesTable
	}
	return &RuleStore{st: st, table: opts.Table}
}

// Table returns the rules table's name.
func (s *RuleStore) Table() string { return s.table }

// ListGroups returns every group of the tenant by rule namespace, the
// groups of a namespace in name order (bytewise). A row that does not
// decode fails the whole listing, naming its key.
func (s *RuleStore) ListGroups(ctx context.Context) (map[string][]rulefmt.RuleGroup, error) {
	out := map[string][]rulefmt.RuleGroup{}
	err := s.scanGroups(ctx, []byte{RowKindGroup}, []byte{RowKindGroup + 1}, func(ns, _ string, cell []byte) error {
		g, err := decodeGroup(cell)
		if err != nil {
			return err
		}
		out[ns] = append(out[ns], g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanGroups calls fn with each group row's names and r:group cell in
// [start, stop) of the 'g' rows; a missing table has none. The cell's
// memory is valid during the call only.
func (s *RuleStore) scanGroups(ctx context.Context, start, stop []byte, fn func(ns, group string, cell []byte) error) error {
	sc := s.st.Scan(ctx, store.ScanRequest{Table: s.table, Start: start, Stop: stop, Family: Family})
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		_, ns, group, err := ParseKey(row.Key)
		if err != nil {
			return fmt.Errorf("list rule groups in %s: %w", s.table, err)
		}
		cell, ok := groupCell(row)
		if !ok {
			continue // a row without its group cell: deleted meanwhile
		}
		if err := fn(ns, group, cell); err != nil {
			return fmt.Errorf("rule group %q of namespace %q in %s: %w", group, ns, s.table, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, store.ErrTableNotFound) {
			return nil
		}
		return fmt.Errorf("list rule groups in %s: %w", s.table, err)
	}
	return nil
}

// GetGroup returns one group; an error wrapping ErrGroupNotFound when it
// is not stored.
func (s *RuleStore) GetGroup(ctx context.Context, namespace, group string) (rulefmt.RuleGroup, error) {
	if err := checkNames(namespace, group); err != nil {
		return rulefmt.RuleGroup{}, err
	}
	row, err := s.st.Get(ctx, s.table, AppendKey(nil, RowKindGroup, namespace, group), Family)
	if errors.Is(err, store.ErrTableNotFound) {
		return rulefmt.RuleGroup{}, fmt.Errorf("rule group %q of namespace %q: %w", group, namespace, ErrGroupNotFound)
	}
	if err != nil {
		return rulefmt.RuleGroup{}, fmt.Errorf("get rule group %q of namespace %q from %s: %w", group, namespace, s.table, err)
	}
	cell, ok := groupCell(row)
	if !ok {
		return rulefmt.RuleGroup{}, fmt.Errorf("rule group %q of namespace %q: %w", group, namespace, ErrGroupNotFound)
	}
	g, err := decodeGroup(cell)
	if err != nil {
		return rulefmt.RuleGroup{}, fmt.Errorf("rule group %q of namespace %q in %s: %w", group, namespace, s.table, err)
	}
	return g, nil
}

// SetGroup stores g under namespace, replacing a group of the same name
// (its lease row stays: the evaluation of the replaced group's name goes
// on where it was). The names must pass CheckName (ErrInvalidName).
func (s *RuleStore) SetGroup(ctx context.Context, namespace string, g rulefmt.RuleGroup) error {
	if err := checkNames(namespace, g.Name); err != nil {
		return err
	}
	b, err := yaml.Marshal(&g)
	if err != nil {
		return fmt.Errorf("encode rule group %q of namespace %q: %w", g.Name, namespace, err)
	}
	put := store.Put{Row: AppendKey(nil, RowKindGroup, namespace, g.Name), Cells: []store.Cell{
		{Family: []byte(Family), Qualifier: []byte(QualGroup), Value: b},
	}}
	if err := s.st.Put(ctx, s.table, []store.Put{put}); err != nil {
		return fmt.Errorf("store rule group %q of namespace %q in %s: %w", g.Name, namespace, s.table, err)
	}
	return nil
}

// DeleteGroup deletes one group and its lease row; an error wrapping
// ErrGroupNotFound when the group is not stored (its lease row, if any,
// is deleted all the same).
func (s *RuleStore) DeleteGroup(ctx context.Context, namespace, group string) error {
	if err := checkNames(namespace, group); err != nil {
		return err
	}
	key := AppendKey(nil, RowKindGroup, namespace, group)
	row, err := s.st.Get(ctx, s.table, key, Family)
	if errors.Is(err, store.ErrTableNotFound) {
		return fmt.Errorf("rule group %q of namespace %q: %w", group, namespace, ErrGroupNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete rule group %q of namespace %q from %s: %w", group, namespace, s.table, err)
	}
	_, found := groupCell(row)
	if err := s.deleteRows(ctx, namespace, group, key); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("rule group %q of namespace %q: %w", group, namespace, ErrGroupNotFound)
	}
	return nil
}

// DeleteNamespace deletes every group of a namespace and their lease
// rows; an error wrapping ErrGroupNotFound when it has none. A group
// stored while it runs may survive it.
func (s *RuleStore) DeleteNamespace(ctx context.Context, namespace string) error {
	if err := CheckName("namespace", namespace); err != nil {
		return err
	}
	prefix := AppendNamespacePrefix(nil, RowKindGroup, namespace)
	var groups []string
	err := s.scanGroups(ctx, prefix, store.PrefixEnd(prefix), func(_, group string, _ []byte) error {
		groups = append(groups, group)
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete namespace %q: %w", namespace, err)
	}
	if len(groups) == 0 {
		return fmt.Errorf("namespace %q: %w", namespace, ErrGroupNotFound)
	}
	var key []byte
	for _, g := range groups {
		key = AppendKey(key[:0], RowKindGroup, namespace, g)
		if err := s.deleteRows(ctx, namespace, g, key); err != nil {
			return err
		}
	}
	return nil
}

// deleteRows deletes a group's row (key) and its lease row, the group's
// first: a replica that finds the lease row gone and the group there
// would evaluate it once more.
func (s *RuleStore) deleteRows(ctx context.Context, namespace, group string, key []byte) error {
	if err := s.st.Delete(ctx, s.table, key, nil); err != nil {
		return fmt.Errorf("delete rule group %q of namespace %q from %s: %w", group, namespace, s.table, err)
	}
	lease := AppendKey(nil, RowKindLease, namespace, group)
	if err := s.st.Delete(ctx, s.table, lease, nil); err != nil {
		return fmt.Errorf("delete the lease of rule group %q of namespace %q from %s: %w", group, namespace, s.table, err)
	}
	return nil
}

// checkNames checks a namespace and a group name with CheckName.
func checkNames(namespace, group string) error {
	if err := CheckName("namespace", namespace); err != nil {
		return err
	}
	return CheckName("group name", group)
}

// groupCell returns the r:group cell of row.
func groupCell(row store.Row) ([]byte, bool) {
	for _, c := range row.Cells {
		if string(c.Family) == Family && string(c.Qualifier) == QualGroup {
			return c.Value, true
		}
	}
	return nil, false
}

// decodeGroup decodes a stored group cell.
func decodeGroup(cell []byte) (rulefmt.RuleGroup, error) {
	var g rulefmt.RuleGroup
	if err := yaml.Unmarshal(cell, &g); err != nil {
		return rulefmt.RuleGroup{}, fmt.Errorf("decode the stored rule group (%d bytes): %w", len(cell), err)
	}
	return g, nil
}
