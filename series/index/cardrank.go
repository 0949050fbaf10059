package index

import (
	"cmp"
	"container/heap"
	"context"
	"slices"

	"github.com/prometheus/common/model"

	"github.com/promhbase/promhbase/series/uid"
)

// rank turns the counts into res's totals and rankings, with names: those
// of every metric and label name counted (few), of the label values only
// for the pairs ranked. Its phases: the metrics by name, the tag pairs
// (per label name and the top ones), their names, then the label names'
// rankings and the pairs'.
func (r *Reader) rank(ctx context.Context, c *tally, q CardinalityQuery, res *Cardinality) error {
	res.TotalSeries, res.TotalLabelValuePairs = c.series, c.labels
	res.LabelPairs = uint64(len(c.metrics))
	var rk ranking
	if err := r.rankMetrics(ctx, c, &rk); err != nil {
		return err
	}
	var focus []uint64
	if q.FocusLabel != "" && q.FocusLabel != model.MetricNameLabel {
		var err error
		if focus, err = r.tagkUIDs(ctx, q.FocusLabel); err != nil {
			return err
		}
	}
	lens := &r.lens
	lens.mu.Lock()
	defer lens.mu.Unlock()
	if err := r.rankPairs(ctx, c, q.TopN, focus, &rk, res); err != nil {
		return err
	}
	if err := r.nameRanked(ctx, &rk); err != nil {
		return err
	}
	rk.labelRankings(c, q, res)
	rk.pairRankings(q, res)
	return nil
}

// ranking is what rank's phases gather.
type ranking struct {
	byMetric    map[string]uint64 // series by metric name
	metricNames map[uint64]string // metric UID to name
	metricMem   uint64            // the bytes of the metric names' labels
	aggs        map[uint64]*tagAgg
	pairs       *topN // the top pairs, metrics among them
	focused     *topN // the top pairs of the focus label
	tagkNames   map[uint64]string
	tagvNames   map[uint64]string
}

// tagAgg is the counts of one label name's pairs.
type tagAgg struct{ series, values, vbytes uint64 }

// rankMetrics counts the series by metric name (two UIDs of one name,
// its stored and legacy forms, count as one).
func (r *Reader) rankMetrics(ctx context.Context, c *tally, rk *ranking) error {
	metricUIDs := make([][]byte, 0, len(c.metrics))
	for m := range c.metrics {
		metricUIDs = append(metricUIDs, uidBytes(m, r.layout.MetricWidth))
	}
	rk.byMetric = map[string]uint64{}
	rk.metricNames = map[uint64]string{}
	nameBytes := uint64(labelBytes(len(model.MetricNameLabel)))
	return r.eachName(ctx, uid.KindMetric, metricUIDs, func(u []byte, name string) {
		n := c.metrics[uid64(u)]
		rk.metricNames[uid64(u)] = name
		rk.byMetric[name] += n
		rk.metricMem += n * (nameBytes + uint64(labelBytes(len(name))))
	})
}

// rankPairs counts the tag pairs per label name and ranks the topN pairs
// (and those of the focus label's UIDs), with the metrics named. The
// value lengths' lock is held.
func (r *Reader) rankPairs(ctx context.Context, c *tally, topN int, focus []uint64, rk *ranking, res *Cardinality) error {
	rk.aggs = map[uint64]*tagAgg{}
	rk.pairs, rk.focused = newTopN(topN), newTopN(topN)
	for m, n := range c.metrics {
		if _, ok := rk.metricNames[m]; ok {
			rk.pairs.offer(rankEntry{n: n, a: m})
		}
	}
	type unknown struct{ tagk, tagv, n uint64 }
	var missing []unknown
	lens := &r.lens
	if err := lens.fill(ctx, r, c.maxTagv); err != nil {
		return err
	}
	var lastK uint64
	var last *tagAgg
	c.pairs.each(func(k, v, n uint64) {
		res.LabelPairs++
		if last == nil || k != lastK {
			if last = rk.aggs[k]; last == nil {
				last = &tagAgg{}
				rk.aggs[k] = last
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
		rk.pairs.offer(e)
		if len(focus) > 0 && slices.Contains(focus, k) {
			rk.focused.offer(e)
		}
	})
	if len(missing) == 0 {
		return nil
	}
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
			rk.aggs[m.tagk].vbytes += m.n * uint64(labelBytes(l))
		}
	}
	return nil
}

// nameRanked reads the names: every label name, the values of the pairs
// ranked.
func (r *Reader) nameRanked(ctx context.Context, rk *ranking) error {
	tagks := make([][]byte, 0, len(rk.aggs))
	for k := range rk.aggs {
		tagks = append(tagks, uidBytes(k, r.layout.TagKWidth))
	}
	rk.tagkNames = map[uint64]string{}
	if err := r.eachName(ctx, uid.KindTagK, tagks, func(u []byte, name string) { rk.tagkNames[uid64(u)] = name }); err != nil {
		return err
	}
	var tagvs [][]byte
	for _, e := range append(slices.Clone(rk.pairs.h), rk.focused.h...) {
		if e.tag {
			tagvs = append(tagvs, uidBytes(e.b, r.layout.TagVWidth))
		}
	}
	rk.tagvNames = map[uint64]string{}
	return r.eachName(ctx, uid.KindTagV, tagvs, func(u []byte, name string) { rk.tagvNames[uid64(u)] = name })
}

// labelRankings sets res's rankings of the label names, __name__ among
// them, and of the metrics.
func (rk *ranking) labelRankings(c *tally, q CardinalityQuery, res *Cardinality) {
	type labelStat struct{ series, values, mem uint64 }
	byLabel := map[string]*labelStat{}
	if c.series > 0 {
		byLabel[model.MetricNameLabel] = &labelStat{series: c.series, values: uint64(len(rk.byMetric)), mem: rk.metricMem}
	}
	for k, a := range rk.aggs {
		name, ok := rk.tagkNames[k]
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
	metrics := make([]Stat, 0, len(rk.byMetric))
	for name, n := range rk.byMetric {
		metrics = append(metrics, Stat{name, n})
	}
	res.SeriesCountByMetricName = topStats(metrics, q.TopN)
}

// pairRankings sets res's rankings of the pairs, named.
func (rk *ranking) pairRankings(q CardinalityQuery, res *Cardinality) {
	res.SeriesCountByLabelValuePair = rk.named(rk.pairs, false)
	res.SeriesCountByFocusLabelValue = rk.named(rk.focused, true)
	if q.FocusLabel == model.MetricNameLabel {
		res.SeriesCountByFocusLabelValue = slices.Clone(res.SeriesCountByMetricName)
	}
}

// named returns the entries of t as stats, named by their values only
// when value is set.
func (rk *ranking) named(t *topN, value bool) []Stat {
	out := make([]Stat, 0, len(t.h))
	for _, e := range t.h {
		var s Stat
		switch {
		case !e.tag:
			s = Stat{model.MetricNameLabel + "=" + rk.metricNames[e.a], e.n}
		case value:
			s = Stat{rk.tagvNames[e.b], e.n}
		default:
			s = Stat{rk.tagkNames[e.a] + "=" + rk.tagvNames[e.b], e.n}
		}
		out = append(out, s)
	}
	return topStats(out, len(out))
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
