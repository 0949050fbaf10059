package federation

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// memQueryable is a tenant's read path over a list of series.
type memQueryable []labels.Labels

func (m memQueryable) Querier(int64, int64) (storage.Querier, error) { return memQuerier(m), nil }

type memQuerier []labels.Labels

func (m memQuerier) matching(ms []*labels.Matcher) []labels.Labels {
	var out []labels.Labels
	for _, ls := range m {
		ok := true
		for _, mt := range ms {
			ok = ok && mt.Matches(ls.Get(mt.Name))
		}
		if ok {
			out = append(out, ls)
		}
	}
	return out
}

func (m memQuerier) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var ss []storage.Series
	for _, ls := range m.matching(ms) {
		ss = append(ss, storage.NewListSeries(ls, []chunks.Sample{}))
	}
	return &seriesSet{series: ss, i: -1}
}

func (m memQuerier) LabelValues(_ context.Context, name string, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var out []string
	for _, ls := range m.matching(ms) {
		if v := ls.Get(name); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil, nil
}

func (m memQuerier) LabelNames(_ context.Context, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var out []string
	for _, ls := range m.matching(ms) {
		ls.Range(func(l labels.Label) {
			if !slices.Contains(out, l.Name) {
				out = append(out, l.Name)
			}
		})
	}
	slices.Sort(out)
	return out, nil, nil
}

func (memQuerier) Close() error { return nil }

func TestFederation(t *testing.T) {
	f := New([]Tenant{
		{ID: "b", Queryable: memQueryable{labels.FromStrings("__name__", "m", "x", "2")}},
		{ID: "a", Queryable: memQueryable{labels.FromStrings("__name__", "m", "x", "1"), labels.FromStrings("__name__", "m", "__tenant_id__", "own")}},
		{ID: "c"}, // not created: no data
	})
	q, err := f.Querier(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := t.Context()
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	for _, tc := range []struct {
		name string
		ms   []*labels.Matcher
		want []string
	}{
		{"all", []*labels.Matcher{name}, []string{
			`{__name__="m", __tenant_id__="a", original___tenant_id__="own"}`,
			`{__name__="m", __tenant_id__="a", x="1"}`,
			`{__name__="m", __tenant_id__="b", x="2"}`}},
		{"one tenant", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchEqual, TenantLabel, "b")}, []string{`{__name__="m", __tenant_id__="b", x="2"}`}},
		{"tenant regex", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchRegexp, TenantLabel, "a|c")}, []string{
			`{__name__="m", __tenant_id__="a", original___tenant_id__="own"}`, `{__name__="m", __tenant_id__="a", x="1"}`}},
		{"tenant not named", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchEqual, TenantLabel, "d")}, nil},
		{"own tenant label", []*labels.Matcher{name, labels.MustNewMatcher(labels.MatchEqual, OriginalTenantLabel, "own")}, []string{
			`{__name__="m", __tenant_id__="a", original___tenant_id__="own"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := q.Select(ctx, true, nil, tc.ms...)
			var got []string
			for set.Next() {
				got = append(got, set.At().Labels().String())
			}
			if err := set.Err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	if vs, _, err := q.LabelValues(ctx, TenantLabel, nil); err != nil || !slices.Equal(vs, []string{"a", "b", "c"}) {
		t.Errorf("tenant values %q, %v", vs, err)
	}
	if vs, _, err := q.LabelValues(ctx, "x", nil, labels.MustNewMatcher(labels.MatchNotEqual, TenantLabel, "a")); err != nil || !slices.Equal(vs, []string{"2"}) {
		t.Errorf("x values outside a: %q, %v", vs, err)
	}
	if vs, _, err := q.LabelValues(ctx, OriginalTenantLabel, nil); err != nil || !slices.Equal(vs, []string{"own"}) {
		t.Errorf("original tenant values %q, %v", vs, err)
	}
	if ns, _, err := q.LabelNames(ctx, nil); err != nil || !slices.Equal(ns, []string{"__name__", TenantLabel, OriginalTenantLabel, "x"}) {
		t.Errorf("names %q, %v", ns, err)
	}
}
