// Package federation reads several tenants as one, as Mimir's tenant
// federation does: a query naming tenants a|b sees the series of both,
// each with a label __tenant_id__ naming its tenant. A series that
// carries __tenant_id__ of its own keeps that value as
// original___tenant_id__. Matchers on __tenant_id__ choose among the
// tenants; matchers on original___tenant_id__ apply to the series' own
// __tenant_id__.
package federation

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

const (
	// TenantLabel names the tenant of a series of a federated read.
	TenantLabel = "__tenant_id__"
	// OriginalTenantLabel keeps a series' own TenantLabel.
	OriginalTenantLabel = "original_" + TenantLabel
)

// Tenant is one tenant of a federated read: its ID and its read path
// (nil: a tenant with no data yet).
type Tenant struct {
	ID        string
	Queryable storage.Queryable
}

// Queryable reads tenants as one; it is also a storage.ExemplarQueryable
// over the tenants' exemplars (those whose Queryable is one).
type Queryable struct {
	tenants []Tenant
}

// New returns the federated read of tenants (in the order given; their
// IDs distinct).
func New(tenants []Tenant) *Queryable { return &Queryable{tenants: tenants} }

// Querier implements storage.Queryable.
func (f *Queryable) Querier(mint, maxt int64) (storage.Querier, error) {
	p, err := openEach(f.tenants, func(t Tenant) (storage.Querier, error) {
		if t.Queryable == nil {
			return nil, nil
		}
		return t.Queryable.Querier(mint, maxt)
	})
	q := &querier{p}
	if err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

// perTenant holds a querier of each tenant, in the tenants' order (nil:
// the tenant has none).
type perTenant[Q any] struct {
	ids []string
	qs  []Q
}

// openEach opens open's querier of each tenant. On an error it returns
// it with those it opened before.
func openEach[Q any](tenants []Tenant, open func(Tenant) (Q, error)) (perTenant[Q], error) {
	var p perTenant[Q]
	for _, t := range tenants {
		q, err := open(t)
		if err != nil {
			return p, err
		}
		p.ids = append(p.ids, t.ID)
		p.qs = append(p.qs, q)
	}
	return p, nil
}

// querier is the federated storage.Querier.
type querier struct {
	perTenant[storage.Querier]
}

// choose splits matchers into the tenants they select (by
// TenantLabel) and the matchers passed to each tenant
// (OriginalTenantLabel's renamed to TenantLabel).
func (q *querier) choose(ms []*labels.Matcher) (chosen []int, rest []*labels.Matcher) {
	rest = make([]*labels.Matcher, 0, len(ms))
	var onTenant []*labels.Matcher
	for _, m := range ms {
		switch m.Name {
		case TenantLabel:
			onTenant = append(onTenant, m)
		case OriginalTenantLabel:
			c := *m
			c.Name = TenantLabel
			rest = append(rest, &c)
		default:
			rest = append(rest, m)
		}
	}
	for i, id := range q.ids {
		ok := true
		for _, m := range onTenant {
			ok = ok && m.Matches(id)
		}
		if ok {
			chosen = append(chosen, i)
		}
	}
	return chosen, rest
}

// relabel returns a series' labels in the federated read of tenant id.
func relabel(b *labels.Builder, ls labels.Labels, id string) labels.Labels {
	b.Reset(ls)
	if own := ls.Get(TenantLabel); own != "" {
		b.Set(OriginalTenantLabel, own)
	}
	b.Set(TenantLabel, id)
	return b.Labels()
}

// Select reads every chosen tenant and returns their series, each with
// its TenantLabel, sorted by labels (series of different tenants never
// share a label set).
func (q *querier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	chosen, rest := q.choose(ms)
	var out []storage.Series
	var ws annotations.Annotations
	b := labels.NewBuilder(labels.EmptyLabels())
	for _, i := range chosen {
		if q.qs[i] == nil {
			continue
		}
		set := q.qs[i].Select(ctx, false, hints, rest...)
		for set.Next() {
			s := set.At()
			out = append(out, &series{Series: s, lbls: relabel(b, s.Labels(), q.ids[i])})
		}
		if err := set.Err(); err != nil {
			return storage.ErrSeriesSet(err)
		}
		ws.Merge(set.Warnings())
	}
	sort.Slice(out, func(a, b int) bool { return labels.Compare(out[a].Labels(), out[b].Labels()) < 0 })
	return &seriesSet{series: out, i: -1, ws: ws}
}

// LabelValues returns the values of name across the chosen tenants: the
// tenants' IDs for TenantLabel.
func (q *querier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	chosen, rest := q.choose(ms)
	if name == TenantLabel {
		out := make([]string, 0, len(chosen))
		for _, i := range chosen {
			out = append(out, q.ids[i])
		}
		slices.Sort(out)
		return out, nil, nil
	}
	if name == OriginalTenantLabel {
		name = TenantLabel
	}
	return q.union(chosen, func(tq storage.Querier) ([]string, annotations.Annotations, error) {
		return tq.LabelValues(ctx, name, hints, rest...)
	}, nil)
}

// LabelNames returns the label names across the chosen tenants, with
// TenantLabel (a tenant's own TenantLabel as OriginalTenantLabel).
func (q *querier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	chosen, rest := q.choose(ms)
	names, ws, err := q.union(chosen, func(tq storage.Querier) ([]string, annotations.Annotations, error) {
		return tq.LabelNames(ctx, hints, rest...)
	}, func(n string) string {
		if n == TenantLabel {
			return OriginalTenantLabel
		}
		return n
	})
	if err != nil || len(chosen) == 0 {
		return names, ws, err
	}
	if i, found := slices.BinarySearch(names, TenantLabel); !found {
		names = slices.Insert(names, i, TenantLabel)
	}
	return names, ws, nil
}

// union returns the sorted union of fn over the chosen tenants' queriers,
// each value passed through rename when given.
func (q *querier) union(chosen []int, fn func(storage.Querier) ([]string, annotations.Annotations, error), rename func(string) string) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	var ws annotations.Annotations
	for _, i := range chosen {
		if q.qs[i] == nil {
			continue
		}
		vs, w, err := fn(q.qs[i])
		if err != nil {
			return nil, nil, err
		}
		ws.Merge(w)
		for _, v := range vs {
			if rename != nil {
				v = rename(v)
			}
			seen[v] = struct{}{}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, ws, nil
}

// Close closes every tenant's querier.
func (q *querier) Close() error {
	var errs []error
	for _, tq := range q.qs {
		if tq != nil {
			errs = append(errs, tq.Close())
		}
	}
	return errors.Join(errs...)
}

// series is a tenant's series under its federated labels.
type series struct {
	storage.Series
	lbls labels.Labels
}

func (s *series) Labels() labels.Labels { return s.lbls }

// seriesSet is a sorted list of series.
type seriesSet struct {
	series []storage.Series
	i      int
	ws     annotations.Annotations
}

func (s *seriesSet) Next() bool {
	s.i++
	return s.i < len(s.series)
}
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return s.ws }

// ExemplarQuerier implements storage.ExemplarQueryable: the exemplars of
// the chosen tenants, their series labels federated.
func (f *Queryable) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	p, err := openEach(f.tenants, func(t Tenant) (storage.ExemplarQuerier, error) {
		if e, ok := t.Queryable.(storage.ExemplarQueryable); ok {
			return e.ExemplarQuerier(ctx)
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return &exemplarQuerier{p}, nil
}

// exemplarQuerier is the federated storage.ExemplarQuerier.
type exemplarQuerier struct {
	perTenant[storage.ExemplarQuerier]
}

// Select returns each chosen tenant's exemplars; a tenant is chosen by
// every matcher set that it satisfies on TenantLabel.
func (e *exemplarQuerier) Select(start, end int64, sets ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	var out []exemplar.QueryResult
	b := labels.NewBuilder(labels.EmptyLabels())
	for i, id := range e.ids {
		if e.qs[i] == nil {
			continue
		}
		var mine [][]*labels.Matcher
		for _, ms := range sets {
			chosen, rest := (&querier{perTenant[storage.Querier]{ids: []string{id}}}).choose(ms)
			if len(chosen) == 1 {
				mine = append(mine, rest)
			}
		}
		if len(mine) == 0 {
			continue
		}
		rs, err := e.qs[i].Select(start, end, mine...)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			r.SeriesLabels = relabel(b, r.SeriesLabels, id)
			out = append(out, r)
		}
	}
	return out, nil
}

// ChunkQuerier implements storage.ChunkQueryable over Querier's series.
func (f *Queryable) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	q, err := f.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return chunkQuerier{q.(*querier)}, nil
}

// chunkQuerier encodes the federated series as chunks.
type chunkQuerier struct{ *querier }

func (c chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return storage.NewSeriesSetToChunkSet(c.querier.Select(ctx, sortSeries, hints, ms...))
}
