package engine

import (
	"container/heap"
	"math"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
	"github.com/prometheus/prometheus/util/kahansum"

	"github.com/promhbase/promhbase/query"
)

// aggrNode is an aggregation: sum, avg, min, max, count, group, and topk
// and bottomk of a seriesNode.
type aggrNode struct {
	op       parser.ItemType
	grouping []string // sorted
	without  bool
	k        float64 // topk, bottomk
	inner    node
	pos      posrange.PositionRange
}

func (n *aggrNode) eval(ev *evaluator) ([]*stepSeries, error) {
	if n.op == parser.TOPK || n.op == parser.BOTTOMK {
		return n.evalK(ev)
	}
	if sn, ok := n.inner.(*seriesNode); ok {
		return n.fold(ev, sn)
	}
	in, err := n.inner.eval(ev)
	if err != nil {
		return nil, err
	}
	g := newGroups(n, ev.steps)
	for _, s := range in {
		g.add(s)
	}
	return g.finish()
}

// fold evaluates the series of sn on every worker, each folded into its
// worker's groups as soon as it is done; the workers' groups are merged
// at the end.
func (n *aggrNode) fold(ev *evaluator, sn *seriesNode) ([]*stepSeries, error) {
	type worker struct {
		g    *groups
		sc   scratch
		s    *stepSeries
		seen map[string]struct{}
	}
	ws := make([]worker, ev.workers)
	for i := range ws {
		ws[i] = worker{g: newGroups(n, ev.steps), s: newStepSeries(labels.EmptyLabels(), ev.steps)}
		if sn.dropsName() {
			ws[i].seen = map[string]struct{}{}
		}
	}
	err := ev.each(sn.sel, func(w, _ int, ls labels.Labels, samples []query.Sample) error {
		wk := &ws[w]
		ok, key := sn.series(ev, &wk.sc, ls, samples, wk.s)
		if key != "" {
			if _, dup := wk.seen[key]; dup {
				return handOver("duplicate labels", "%s", wk.s.labels)
			}
			wk.seen[key] = struct{}{}
		}
		if !ok {
			return nil
		}
		wk.g.add(wk.s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ws[0].seen != nil {
		for _, w := range ws[1:] {
			for k := range w.seen {
				if _, dup := ws[0].seen[k]; dup {
					return nil, handOver("duplicate labels", "%q", k)
				}
				ws[0].seen[k] = struct{}{}
			}
		}
	}
	g := ws[0].g
	for _, w := range ws[1:] {
		g.merge(w.g)
	}
	return g.finish()
}

// groups are the aggregation groups of one aggregation, each with its
// state at every step.
type groups struct {
	n      *aggrNode
	steps  int
	names  []string // grouping labels (and __name__ for without), sorted
	byKey  map[string]*group
	lb     *labels.Builder
	inf    bool // avg met an infinite sum: Prometheus turns to an incremental mean
	keyBuf []byte
}

type group struct {
	labels labels.Labels
	vals   []float64 // sum, min or max
	comp   []float64 // Kahan compensation of sum and avg
	cnt    []float64 // count and avg
	has    []bool
}

func newGroups(n *aggrNode, steps int) *groups {
	names := n.grouping
	if n.without {
		names = append(slices.Clone(n.grouping), model.MetricNameLabel)
		slices.Sort(names)
	}
	return &groups{n: n, steps: steps, names: names, byKey: map[string]*group{}, lb: labels.NewBuilder(labels.EmptyLabels())}
}

// groupOf is the group of the series ls, made at its first series.
func (g *groups) groupOf(ls labels.Labels) *group {
	if g.n.without {
		g.keyBuf = ls.BytesWithoutLabels(g.keyBuf, g.names...)
	} else {
		g.keyBuf = ls.BytesWithLabels(g.keyBuf, g.names...)
	}
	if gr, ok := g.byKey[string(g.keyBuf)]; ok {
		return gr
	}
	var gl labels.Labels
	switch {
	case g.n.without:
		g.lb.Reset(ls)
		g.lb.Del(g.n.grouping...)
		g.lb.Del(model.MetricNameLabel)
		gl = g.lb.Labels()
	case len(g.n.grouping) > 0:
		g.lb.Reset(ls)
		g.lb.Keep(g.n.grouping...)
		gl = g.lb.Labels()
	default:
		gl = labels.EmptyLabels()
	}
	gr := &group{labels: gl, vals: make([]float64, g.steps), has: make([]bool, g.steps)}
	switch g.n.op {
	case parser.SUM, parser.AVG:
		gr.comp = make([]float64, g.steps)
	}
	if g.n.op == parser.AVG || g.n.op == parser.COUNT {
		gr.cnt = make([]float64, g.steps)
	}
	g.byKey[string(g.keyBuf)] = gr
	return gr
}

// add folds one series into its group, as Prometheus's aggregation does.
func (g *groups) add(s *stepSeries) {
	gr := g.groupOf(s.labels)
	if g.n.op == parser.SUM {
		// fold's sum, without its switch at every step.
		for i, ok := range s.has {
			switch {
			case !ok:
			case !gr.has[i]:
				gr.has[i], gr.vals[i], gr.comp[i] = true, s.vals[i], 0
			default:
				gr.vals[i], gr.comp[i] = kahansum.Inc(s.vals[i], gr.vals[i], gr.comp[i])
			}
		}
		return
	}
	for i, ok := range s.has {
		if ok {
			g.fold(gr, i, s.vals[i], 0, 1)
		}
	}
}

// fold folds f (with Kahan compensation c, and n values) into step i of gr.
func (g *groups) fold(gr *group, i int, f, c, n float64) {
	if !gr.has[i] {
		gr.has[i] = true
		gr.vals[i] = f
		switch g.n.op {
		case parser.SUM, parser.AVG:
			gr.comp[i] = c
			if g.n.op == parser.AVG && math.IsInf(f, 0) {
				g.inf = true
			}
		}
		if gr.cnt != nil {
			gr.cnt[i] = n
		}
		return
	}
	switch g.n.op {
	case parser.SUM, parser.AVG:
		gr.vals[i], gr.comp[i] = kahansum.Inc(f, gr.vals[i], gr.comp[i])
		if c != 0 {
			gr.vals[i], gr.comp[i] = kahansum.Inc(c, gr.vals[i], gr.comp[i])
		}
		if g.n.op == parser.AVG {
			gr.cnt[i] += n
			if math.IsInf(gr.vals[i], 0) {
				g.inf = true
			}
		}
	case parser.MAX:
		if gr.vals[i] < f || math.IsNaN(gr.vals[i]) {
			gr.vals[i] = f
		}
	case parser.MIN:
		if gr.vals[i] > f || math.IsNaN(gr.vals[i]) {
			gr.vals[i] = f
		}
	case parser.COUNT:
		gr.cnt[i] += n
	}
}

// merge folds the groups of another worker into g.
func (g *groups) merge(o *groups) {
	g.inf = g.inf || o.inf
	for k, og := range o.byKey {
		gr, ok := g.byKey[k]
		if !ok {
			g.byKey[k] = og
			continue
		}
		for i, has := range og.has {
			if !has {
				continue
			}
			var c, n float64
			if og.comp != nil {
				c = og.comp[i]
			}
			if og.cnt != nil {
				n = og.cnt[i]
			}
			g.fold(gr, i, og.vals[i], c, n)
		}
	}
}

// finish is the groups' output series, in label order.
func (g *groups) finish() ([]*stepSeries, error) {
	if g.inf {
		return nil, handOver("avg overflow", "an infinite sum")
	}
	out := make([]*stepSeries, 0, len(g.byKey))
	for _, gr := range g.byKey {
		s := &stepSeries{labels: gr.labels, vals: gr.vals, has: gr.has}
		for i, ok := range gr.has {
			if !ok {
				continue
			}
			switch g.n.op {
			case parser.SUM:
				s.vals[i] += gr.comp[i]
			case parser.AVG:
				s.vals[i] = gr.vals[i]/gr.cnt[i] + gr.comp[i]/gr.cnt[i]
			case parser.COUNT:
				s.vals[i] = gr.cnt[i]
			case parser.GROUP:
				s.vals[i] = 1
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *stepSeries) int { return labels.Compare(a.labels, b.labels) })
	return out, nil
}

// evalK is topk and bottomk: at each step, per group, the k series of
// the largest (smallest) values, chosen with Prometheus's heap in its
// input order (the series in label order), so that ties go the same way.
func (n *aggrNode) evalK(ev *evaluator) ([]*stepSeries, error) {
	in, err := n.inner.eval(ev)
	if err != nil {
		return nil, err
	}
	k := min(int64(n.k), int64(len(in)))
	if k < 1 {
		return nil, nil
	}
	g := newGroups(n, 0)
	groupOf := make([]int, len(in))
	keys := map[*group]int{}
	for i, s := range in {
		gr := g.groupOf(s.labels)
		id, ok := keys[gr]
		if !ok {
			id = len(keys)
			keys[gr] = id
		}
		groupOf[i] = id
	}
	heaps := make([]kHeap, len(keys))
	out := make([]*stepSeries, len(in))
	for step := range ev.steps {
		for h := range heaps {
			heaps[h] = kHeap{e: heaps[h].e[:0], bottom: n.op == parser.BOTTOMK}
		}
		for i, s := range in {
			if !s.has[step] {
				continue
			}
			h := &heaps[groupOf[i]]
			f := s.vals[step]
			switch {
			case int64(len(h.e)) < k:
				heap.Push(h, kEntry{idx: i, f: f})
			case h.replaces(f):
				h.e[0] = kEntry{idx: i, f: f}
				if k > 1 {
					heap.Fix(h, 0)
				}
			}
		}
		for _, h := range heaps {
			for _, e := range h.e {
				o := out[e.idx]
				if o == nil {
					o = newStepSeries(in[e.idx].labels, ev.steps)
					out[e.idx] = o
				}
				o.vals[step], o.has[step] = e.f, true
			}
		}
	}
	return slices.DeleteFunc(out, func(s *stepSeries) bool { return s == nil }), nil
}

type kEntry struct {
	idx int
	f   float64
}

// kHeap is Prometheus's heap of topk (a min-heap, NaN lowest) or bottomk
// (a max-heap, NaN highest).
type kHeap struct {
	e      []kEntry
	bottom bool
}

func (h *kHeap) Len() int { return len(h.e) }
func (h *kHeap) Less(i, j int) bool {
	vi, vj := h.e[i].f, h.e[j].f
	if math.IsNaN(vi) {
		return true
	}
	if h.bottom {
		return vi > vj
	}
	return vi < vj
}
func (h *kHeap) Swap(i, j int) { h.e[i], h.e[j] = h.e[j], h.e[i] }
func (h *kHeap) Push(x any)    { h.e = append(h.e, x.(kEntry)) }
func (h *kHeap) Pop() any {
	old := h.e[len(h.e)-1]
	h.e = h.e[:len(h.e)-1]
	return old
}

// replaces reports whether f takes the place of the heap's top.
func (h *kHeap) replaces(f float64) bool {
	top := h.e[0].f
	if h.bottom {
		return top > f || (math.IsNaN(top) && !math.IsNaN(f))
	}
	return top < f || (math.IsNaN(top) && !math.IsNaN(f))
}
