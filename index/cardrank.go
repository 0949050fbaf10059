package index

import (
	"cmp"
	"container/heap"
	"context"
	"slices"

	"github.com/prometheus/common/model"

	"github.com/promhbase/promhbase/uid"
)

// rank turns the counts into res's totals and rankings, with names: those
// of every metric and label name counted (few), of the label values only
// for the pairs ranked.
func (r *Reader) rank(ctx context.Context, c *tally, q CardinalityQuery, res *Cardinality) error {
	res.TotalSeries, res.TotalLabelValuePairs = c.series, c.labels
	res.LabelPairs = uint64(len(c.metrics))

	// Metrics, by name (two UIDs of one name, its stored and legacy
	// forms, count as one).
	metricUIDs := make([][]byte, 0, len(c.metrics))
	for m := range c.metrics {
		metricUIDs = append(metricUIDs, uidBytes(m, r.layout.MetricWidth))
	}
	byMetric := map[string]uint64{}
	metricNames := map[uint64]string{}
	nameBytes := uint64(labelBytes(len(model.MetricNameLabel)))
	var metricMem uint64
	err := r.eachName(ctx, uid.KindMetric, metricUIDs, func(u []byte, name string) {
		n := c.metrics[uid64(u)]
		metricNames[uid64(u)] = name
		byMetric[name] += n
		metricMem += n * (nameBytes + uint64(labelBytes(len(name))))
	})
	if err != nil {
		return err
	}

	// Tag pairs: per label name, and the top pairs.
	type agg struct{ series, values, vbytes uint64 }
	aggs := map[uint64]*agg{}
	var focus []uint64
	if q.FocusLabel != "" && q.FocusLabel != model.MetricNameLabel {
		if focus, err = r.tagkUIDs(ctx, q.FocusLabel); err != nil {
			return err
		}
	}
	pairs, focused := newTopN(q.TopN), newTopN(q.TopN)
	for m, n := range c.metrics {
		if _, ok := metricNames[m]; ok {
			pairs.offer(rankEntry{n: n, a: m})
		}
	}
	type unknown struct{ tagk, tagv, n uint64 }
	var missing []unknown
	lens := &r.lens
	lens.mu.Lock()
	defer lens.mu.Unlock()
	if err := lens.fill(ctx, r, c.maxTagv); err != nil {
		return err
	}
	var lastK uint64
	var last *agg
	c.pairs.each(func(k, v, n uint64) {
		res.LabelPairs++
		if last == nil || k != lastK {
			if last = aggs[k]; last == nil {
				last = &agg{}
				aggs[k] = last
			}
			lastK = k
		}
		last.series += n
		last.values++
		if l, ok := lens.length(v); ok {
			last.vbytes += n * uint64(labelBytes(l))
		} else {
			missing = append(missing, unknown{k, v, n})
		}
		e := rankEntry{n: n, tag: true, a: k, b: v}
		pairs.offer(e)
		if len(focus) > 0 && slices.Contains(focus, k) {
			focused.offer(e)
		}
	})
	if len(missing) > 0 {
		ids := make([]uint64, len(missing))
		for i, m := range missing {
			ids[i] = m.tagv
		}
		got := map[uint64]int{}
		if err := lens.lookup(ctx, r, ids, func(id uint64, n int) { got[id] = n }); err != nil {
			return err
		}
		for _, m := range missing {
			if l, ok := got[m.tagv]; ok {
				aggs[m.tagk].vbytes += m.n * uint64(labelBytes(l))
			}
		}
	}

	// Names: every label name, the values of the pairs ranked.
	tagks := make([][]byte, 0, len(aggs))
	for k := range aggs {
		tagks = append(tagks, uidBytes(k, r.layout.TagKWidth))
	}
	tagkNames := map[uint64]string{}
	if err := r.eachName(ctx, uid.KindTagK, tagks, func(u []byte, name string) { tagkNames[uid64(u)] = name }); err != nil {
		return err
	}
	var tagvs [][]byte
	for _, e := range append(slices.Clone(pairs.h), focused.h...) {
		if e.tag {
			tagvs = append(tagvs, uidBytes(e.b, r.layout.TagVWidth))
		}
	}
	tagvNames := map[uint64]string{}
	if err := r.eachName(ctx, uid.KindTagV, tagvs, func(u []byte, name string) { tagvNames[uid64(u)] = name }); err != nil {
		return err
	}

	// The label names' rankings, __name__ among them.
	type labelStat struct{ series, values, mem uint64 }
	byLabel := map[string]*labelStat{}
	if c.series > 0 {
		byLabel[model.MetricNameLabel] = &labelStat{series: c.series, values: uint64(len(byMetric)), mem: metricMem}
	}
	for k, a := range aggs {
		name, ok := tagkNames[k]
		if !ok {
			continue
		}
		s := byLabel[name]
		if s == nil {
			s = &labelStat{}
			byLabel[name] = s
		}
		s.series += a.series
		s.values += a.values
		s.mem += a.series*uint64(labelBytes(len(name))) + a.vbytes
	}
	var series, values, mem []Stat
	for name, s := range byLabel {
		series = append(series, Stat{name, s.series})
		values = append(values, Stat{name, s.values})
		mem = append(mem, Stat{name, s.mem})
	}
	res.SeriesCountByLabelName = topStats(series, q.TopN)
	res.LabelValueCountByLabelName = topStats(values, q.TopN)
	res.MemoryInBytesByLabelName = topStats(mem, q.TopN)
	metrics := make([]Stat, 0, len(byMetric))
	for name, n := range byMetric {
		metrics = append(metrics, Stat{name, n})
	}
	res.SeriesCountByMetricName = topStats(metrics, q.TopN)

	// The pairs ranked, named.
	named := func(t *topN, value bool) []Stat {
		out := make([]Stat, 0, len(t.h))
		for _, e := range t.h {
			var s Stat
			switch {
			case !e.tag:
				s = Stat{model.MetricNameLabel + "=" + metricNames[e.a], e.n}
			case value:
				s = Stat{tagvNames[e.b], e.n}
			default:
				s = Stat{tagkNames[e.a] + "=" + tagvNames[e.b], e.n}
			}
			out = append(out, s)
		}
		return topStats(out, len(out))
	}
	res.SeriesCountByLabelValuePair = named(pairs, false)
	res.SeriesCountByFocusLabelValue = named(focused, true)
	if q.FocusLabel == model.MetricNameLabel {
		res.SeriesCountByFocusLabelValue = slices.Clone(res.SeriesCountByMetricName)
	}
	return nil
}

// labelBytes is the size of a label's name or value of n bytes in
// Prometheus's labels (stringlabels: the bytes after their length, which
// takes one byte below 255, four from there).
func labelBytes(n int) int {
	if n < 255 {
		return n + 1
	}
	return n + 4
}

// topStats sorts stats by value, largest first, then name, and keeps n.
func topStats(stats []Stat, n int) []Stat {
	slices.SortFunc(stats, func(a, b Stat) int {
		if c := cmp.Compare(b.Value, a.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(stats) > n {
		stats = stats[:n]
	}
	if stats == nil {
		return []Stat{}
	}
	return stats
}

// rankEntry is a candidate of a ranking of pairs: a metric (a) or a tag
// pair (a=b), and its series.
type rankEntry struct {
	n    uint64
	tag  bool
	a, b uint64
}

// worse orders candidates: fewer series, then (deterministically, as
// names are not known yet) larger UIDs, tag pairs after metrics.
func (e rankEntry) worse(o rankEntry) bool {
	if e.n != o.n {
		return e.n < o.n
	}
	if e.tag != o.tag {
		return e.tag
	}
	if e.a != o.a {
		return e.a > o.a
	}
	return e.b > o.b
}

// topN keeps the n best candidates offered, the worst at its root.
type topN struct {
	n int
	h []rankEntry
}

func newTopN(n int) *topN { return &topN{n: n} }

func (t *topN) offer(e rankEntry) {
	if len(t.h) < t.n {
		heap.Push(t, e)
		return
	}
	if !t.h[0].worse(e) {
		return
	}
	t.h[0] = e
	heap.Fix(t, 0)
}

func (t *topN) Len() int           { return len(t.h) }
func (t *topN) Less(i, j int) bool { return t.h[i].worse(t.h[j]) }
func (t *topN) Swap(i, j int)      { t.h[i], t.h[j] = t.h[j], t.h[i] }
func (t *topN) Push(x any)         { t.h = append(t.h, x.(rankEntry)) }
func (t *topN) Pop() any {
	x := t.h[len(t.h)-1]
	t.h = t.h[:len(t.h)-1]
	return x
}
