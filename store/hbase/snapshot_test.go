package hbase

import (
	"errors"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestSnapshotNames: a promhbase snapshot's HBase snapshots are named
// NAME.NAMESPACE.QUALIFIER, and names that would break that are refused.
func TestSnapshotNames(t *testing.T) {
	for _, tc := range []struct{ name, table, want string }{
		{"20261126T130000Z-2be650b6d019eb54", "tsdb", "20261126T130000Z-2be650b6d019eb54.default.tsdb"},
		{"nightly", "tsdb-uid", "nightly.default.tsdb-uid"},
		{"nightly", "t_acme:tsdb", "nightly.t_acme.tsdb"},
		{"a_b", "t_x_2e:tsdb-rollup-1h", "a_b.t_x_2e.tsdb-rollup-1h"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tableSnapshotName(tc.name, tc.table); got != tc.want {
				t.Errorf("tableSnapshotName(%q, %q) = %q, want %q", tc.name, tc.table, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"20261126T130000Z-2be650b6d019eb54", true},
		{"a", true},
		{"", false},
		{"a.b", false}, // the '.' ends the name in HBase's
		{"../x", false},
		{"a b", false},
		{string(make([]byte, 101)), false},
	} {
		t.Run("check "+tc.name, func(t *testing.T) {
			err := store.CheckSnapshotName(tc.name)
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, store.ErrInvalid) {
				t.Errorf("store.CheckSnapshotName(%q) = %v, want ok %v", tc.name, err, tc.ok)
			}
		})
	}
}
