package ruler_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// testGroup returns a group of one recording rule, its expression expr.
func testGroup(name, expr string) rulefmt.RuleGroup {
	return rulefmt.RuleGroup{Name: name, Interval: model.Duration(time.Minute),
		Rules: []rulefmt.Rule{{Record: "job:up:sum", Expr: expr, Labels: map[string]string{"team": "a"}}}}
}

// groupNames returns the namespaces and group names of a listing, sorted.
func groupNames(m map[string][]rulefmt.RuleGroup) []string {
	var out []string
	for ns, gs := range m {
		for _, g := range gs {
			out = append(out, ns+"/"+g.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestRuleStore runs the GroupStore contract against RuleStore on the
// backend of PROMHBASE_TEST_BACKEND: every group round-trips whole,
// listings are by namespace in group order, deletes take the lease rows,
// and what is not there is ErrGroupNotFound.
func TestRuleStore(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithRules(t)
	ctx := context.Background()
	rs := ruler.NewRuleStore(st, ruler.RuleStoreOptions{Table: tb.Rules})

	t.Run("empty tenant", func(t *testing.T) {
		all, err := rs.ListGroups(ctx)
		if err != nil || len(all) != 0 {
			t.Fatalf("ListGroups: %v, %v; want none", all, err)
		}
		if _, err := rs.GetGroup(ctx, "ns", "g"); !errors.Is(err, ruler.ErrGroupNotFound) {
			t.Errorf("GetGroup: %v, want ErrGroupNotFound", err)
		}
		if err := rs.DeleteGroup(ctx, "ns", "g"); !errors.Is(err, ruler.ErrGroupNotFound) {
			t.Errorf("DeleteGroup: %v, want ErrGroupNotFound", err)
		}
		if err := rs.DeleteNamespace(ctx, "ns"); !errors.Is(err, ruler.ErrGroupNotFound) {
			t.Errorf("DeleteNamespace: %v, want ErrGroupNotFound", err)
		}
	})

	full := rulefmt.RuleGroup{Name: "alerts", Interval: model.Duration(30 * time.Second), Limit: 10,
		Labels: map[string]string{"env": "prod"},
		Rules: []rulefmt.Rule{
			{Alert: "Down", Expr: `up{job="a"} == 0`, For: model.Duration(5 * time.Minute), KeepFiringFor: model.Duration(time.Minute),
				Labels: map[string]string{"severity": "page"}, Annotations: map[string]string{"summary": "{{ $labels.instance }} is down"}},
			{Record: "job:up:sum", Expr: "sum by (job) (up)"},
		}}
	offset := model.Duration(10 * time.Second)
	full.QueryOffset = &offset
	for _, p := range []struct {
		ns string
		g  rulefmt.RuleGroup
	}{
		{"team-b", testGroup("z", "up")},
		{"team-a", full},
		{"team-a", testGroup("b", "up")},
		{"team-ab", testGroup("a", "up")}, // a namespace whose name the other's is a prefix of
		{"a/é ✓", testGroup("x y", "up")},
	} {
		if err := rs.SetGroup(ctx, p.ns, p.g); err != nil {
			t.Fatalf("SetGroup %s/%s: %v", p.ns, p.g.Name, err)
		}
	}

	t.Run("get round-trips every field", func(t *testing.T) {
		got, err := rs.GetGroup(ctx, "team-a", "alerts")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, full) {
			t.Errorf("got %+v\nwant %+v", got, full)
		}
	})
	t.Run("list by namespace in group order", func(t *testing.T) {
		all, err := rs.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"a/é ✓/x y", "team-a/alerts", "team-a/b", "team-ab/a", "team-b/z"}
		if got := groupNames(all); !slices.Equal(got, want) {
			t.Fatalf("groups %q, want %q", got, want)
		}
		if all["team-a"][0].Name != "alerts" || all["team-a"][1].Name != "b" {
			t.Errorf("team-a's groups out of order: %v", all["team-a"])
		}
	})
	t.Run("set replaces", func(t *testing.T) {
		if err := rs.SetGroup(ctx, "team-a", testGroup("b", "sum(up)")); err != nil {
			t.Fatal(err)
		}
		got, err := rs.GetGroup(ctx, "team-a", "b")
		if err != nil || got.Rules[0].Expr != "sum(up)" {
			t.Fatalf("after replace: %+v, %v", got, err)
		}
	})
	t.Run("delete group takes its lease row", func(t *testing.T) {
		lease := ruler.AppendKey(nil, ruler.RowKindLease, "team-a", "b")
		if err := st.Put(ctx, tb.Rules, []store.Put{{Row: lease, Cells: []store.Cell{
			{Family: []byte(ruler.Family), Qualifier: []byte(ruler.QualLease), Value: []byte("12345678tok")},
		}}}); err != nil {
			t.Fatal(err)
		}
		if err := rs.DeleteGroup(ctx, "team-a", "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.GetGroup(ctx, "team-a", "b"); !errors.Is(err, ruler.ErrGroupNotFound) {
			t.Errorf("GetGroup after delete: %v", err)
		}
		row, err := st.Get(ctx, tb.Rules, lease, "")
		if err != nil || len(row.Cells) != 0 {
			t.Errorf("lease row after delete: %v, %v", row.Cells, err)
		}
		if err := rs.DeleteGroup(ctx, "team-a", "b"); !errors.Is(err, ruler.ErrGroupNotFound) {
			t.Errorf("second delete: %v, want ErrGroupNotFound", err)
		}
	})
	t.Run("delete namespace leaves the one its name prefixes", func(t *testing.T) {
		if err := rs.DeleteNamespace(ctx, "team-a"); err != nil {
			t.Fatal(err)
		}
		all, err := rs.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"a/é ✓/x y", "team-ab/a", "team-b/z"}
		if got := groupNames(all); !slices.Equal(got, want) {
			t.Fatalf("groups %q, want %q", got, want)
		}
		if err := rs.DeleteNamespace(ctx, "team-a"); !errors.Is(err, ruler.ErrGroupNotFound) {
			t.Errorf("second delete: %v, want ErrGroupNotFound", err)
		}
	})
	t.Run("names that cannot be keys", func(t *testing.T) {
		for _, ns := range []string{"", "a\x00b", "\xff"} {
			if err := rs.SetGroup(ctx, ns, testGroup("g", "up")); !errors.Is(err, ruler.ErrInvalidName) {
				t.Errorf("SetGroup namespace %q: %v, want ErrInvalidName", ns, err)
			}
		}
		if err := rs.SetGroup(ctx, "ns", testGroup("g\x00", "up")); !errors.Is(err, ruler.ErrInvalidName) {
			t.Errorf("SetGroup group with 0x00: %v, want ErrInvalidName", err)
		}
	})
}

// TestRuleStoreMissingTable: a tenant whose tables are not created has
// no groups, and a write tells why it failed.
func TestRuleStoreMissingTable(t *testing.T) {
	t.Parallel()
	st, _ := testbackend.New(t)
	ctx := context.Background()
	rs := ruler.NewRuleStore(store.Namespaced(st, "t_nobody"), ruler.RuleStoreOptions{})
	if all, err := rs.ListGroups(ctx); err != nil || len(all) != 0 {
		t.Fatalf("ListGroups: %v, %v; want none", all, err)
	}
	if _, err := rs.GetGroup(ctx, "ns", "g"); !errors.Is(err, ruler.ErrGroupNotFound) {
		t.Errorf("GetGroup: %v, want ErrGroupNotFound", err)
	}
	if err := rs.SetGroup(ctx, "ns", testGroup("g", "up")); !errors.Is(err, store.ErrTableNotFound) {
		t.Errorf("SetGroup: %v, want ErrTableNotFound", err)
	}
}
