package tsd

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/promhbase/promhbase/series/uid"
)

// group splits spans (in tags order) into the groups a TSD aggregates:
// each span alone for the none aggregator; else by the values of the
// group-by tag keys (all in one group without any), in the order of
// their value UIDs. A span without a point in the scanned range
// (SpanGroup.add) is left out.
func group(spans []*span, p plan, none bool, scanStart, scanEnd int64) [][]*span {
	lo, hi := scanStart*1000, scanEnd*1000
	inRange := func(s *span) bool { return len(s.pts) > 0 && s.pts[0].T <= hi && s.pts[len(s.pts)-1].T >= lo }
	var out [][]*span
	switch {
	case none:
		for _, s := range spans {
			if inRange(s) {
				out = append(out, []*span{s})
			}
		}
		return out
	case len(p.groupBys) == 0:
		var g []*span
		for _, s := range spans {
			if inRange(s) {
				g = append(g, s)
			}
		}
		return [][]*span{g}
	}
	type keyed struct {
		key   []byte
		spans []*span
	}
	var groups []keyed
	for _, s := range spans {
		key, ok := groupKey(s.tags, p.groupBys, p.tagkWidth, p.pairLen)
		if !ok {
			continue
		}
		i, found := slices.BinarySearchFunc(groups, key, func(g keyed, k []byte) int { return bytes.Compare(g.key, k) })
		if !found {
			groups = slices.Insert(groups, i, keyed{key: key})
		}
		if inRange(s) {
			groups[i].spans = append(groups[i].spans, s)
		}
	}
	for _, g := range groups {
		out = append(out, g.spans)
	}
	return out
}

// groupKey is the values of the group-by keys in tags, concatenated.
func groupKey(tags []byte, groupBys [][]byte, kw, pw int) ([]byte, bool) {
	var key []byte
	for _, k := range groupBys {
		found := false
		for i := 0; i+pw <= len(tags); i += pw {
			if bytes.Equal(tags[i:i+kw], k) {
				key = append(key, tags[i+kw:i+pw]...)
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return key, true
}

// aggregate runs a group's aggregation: each span's view (downsampled,
// then its rates), the aggregation over the scanned range, the points
// in [q.Start, q.End]; and the group's tags.
func (e *Evaluator) aggregate(ctx context.Context, q Query, sq SubQuery, p plan, g []*span, scanStart, scanEnd int64) (Result, error) {
	var r Result
	views := make([][]Point, len(g))
	for i, s := range g {
		v := s.pts
		if iv := sq.DownsampleMs; iv > 0 {
			// The downsampler seeks its source to the first interval
			// boundary at or after the scan's start (seekInterval): with
			// an interval that does not divide the hour, the scan's first
			// points before it are not downsampled.
			from := scanStart*1000 + iv - 1
			from -= from % iv
			k, _ := slices.BinarySearchFunc(v, from, func(p Point, t int64) int { return cmp.Compare(p.T, t) })
			if f := sq.DownsampleFill; f != "" && f != "none" {
				var err error
				if v, err = filled(v[k:], iv, p.ds, f, scanStart*1000, scanEnd*1000); err != nil {
					return r, err
				}
			} else {
				v = downsampled(v[k:], iv, p.ds)
			}
		}
		if sq.Rate {
			var err error
			if v, err = rates(v, sq.RateOptions); err != nil {
				return r, err
			}
		}
		views[i] = v
	}
	it := newAggIter(views, scanStart*1000, scanEnd*1000, p.agg, sq.Rate)
	for it.hasNext() {
		pt, err := it.next()
		if err != nil {
			return r, err
		}
		if pt.T >= q.Start && pt.T <= q.End {
			r.Points = append(r.Points, pt)
		}
	}
	var err error
	r.Tags, r.AggregateTags, err = e.groupTags(ctx, g, p)
	r.NullFill = sq.DownsampleFill == "null"
	return r, err
}

// groupTags is SpanGroup.computeTags: the tag keys with one value across
// the group's spans (that have the key), and those whose values differ,
// each in the order of its key's UID.
func (e *Evaluator) groupTags(ctx context.Context, g []*span, p plan) ([]Tag, []string, error) {
	type kv struct{ k, v []byte }
	var set []kv
	var discards [][]byte
	kw, pw := p.tagkWidth, p.pairLen
	for _, s := range g {
		for i := 0; i+pw <= len(s.tags); i += pw {
			k, v := s.tags[i:i+kw], s.tags[i+kw:i+pw]
			if slices.ContainsFunc(discards, func(d []byte) bool { return bytes.Equal(d, k) }) {
				continue
			}
			j := slices.IndexFunc(set, func(t kv) bool { return bytes.Equal(t.k, k) })
			switch {
			case j < 0:
				set = append(set, kv{k, v})
			case !bytes.Equal(set[j].v, v):
				discards = append(discards, k)
				set = slices.Delete(set, j, j+1)
			}
		}
	}
	slices.SortFunc(set, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	slices.SortFunc(discards, bytes.Compare)
	names := map[string]string{}
	tags := make([]Tag, len(set))
	for i, t := range set {
		k, err := e.name(ctx, uid.KindTagK, t.k, names)
		if err != nil {
			return nil, nil, err
		}
		v, err := e.name(ctx, uid.KindTagV, t.v, names)
		if err != nil {
			return nil, nil, err
		}
		tags[i] = Tag{k, v}
	}
	agg := make([]string, len(discards))
	for i, d := range discards {
		k, err := e.name(ctx, uid.KindTagK, d, names)
		if err != nil {
			return nil, nil, err
		}
		agg[i] = k
	}
	return tags, agg, nil
}
