package engine

import (
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/schema"
)

// binNode is a binary operation between two vectors with one-to-one
// matching (on or ignoring labels).
type binNode struct {
	op         parser.ItemType
	returnBool bool
	on         bool
	matching   []string
	lhs, rhs   node
}

// eval matches the two sides at each step as Prometheus's engine does;
// what it answers with an error (a match group twice on one side, or two
// matches of one left series' group) hands the query over.
// On promhbase's store the two sides are evaluated at once (their scans
// overlap), the right one's annotations added after the left one's as
// in an evaluation one after the other; the left side's error wins when
// both fail.
func (n *binNode) eval(ev *evaluator) ([]*stepSeries, error) {
	lhs, rhs, err := bothSides(ev, n.lhs, n.rhs)
	if err != nil {
		return nil, err
	}
	if len(lhs) == 0 || len(rhs) == 0 {
		return nil, nil
	}
	sigs := map[string]int{}
	sigOf := func(ls labels.Labels) int {
		k := string(ls.MatchLabels(n.on, n.matching...).Bytes(nil))
		id, ok := sigs[k]
		if !ok {
			id = len(sigs)
			sigs[k] = id
		}
		return id
	}
	lsig := make([]int, len(lhs))
	for i, s := range lhs {
		lsig[i] = sigOf(s.labels)
	}
	rsig := make([]int, len(rhs))
	for i, s := range rhs {
		rsig[i] = sigOf(s.labels)
	}
	// The output series of each (left, right) pair, by its labels.
	outByLabels := map[string]*stepSeries{}
	pairOut := map[[2]int]*stepSeries{}
	right := make([]int, len(sigs)) // per signature: the right series at this step + 1
	matched := make([]bool, len(sigs))
	lb := labels.NewBuilder(labels.EmptyLabels())
	for step := range ev.steps {
		clear(right)
		clear(matched)
		for j, s := range rhs {
			if !s.has[step] {
				continue
			}
			if right[rsig[j]] != 0 {
				return nil, handOver("matching", "duplicate series on the right-hand side")
			}
			right[rsig[j]] = j + 1
		}
		for i, s := range lhs {
			if !s.has[step] {
				continue
			}
			j := right[lsig[i]] - 1
			if j < 0 {
				continue
			}
			if matched[lsig[i]] {
				return nil, handOver("matching", "multiple matches for labels")
			}
			matched[lsig[i]] = true
			v, keep := binop(n.op, s.vals[step], rhs[j].vals[step])
			if n.returnBool {
				v = 0
				if keep {
					v = 1
				}
				keep = true
			}
			if !keep {
				continue
			}
			o := pairOut[[2]int{i, j}]
			if o == nil {
				ls := n.resultLabels(lb, s.labels)
				k := string(ls.Bytes(nil))
				if o = outByLabels[k]; o == nil {
					o = newStepSeries(ls, ev.steps)
					outByLabels[k] = o
				}
				pairOut[[2]int{i, j}] = o
			}
			if o.has[step] {
				return nil, handOver("duplicate labels", "%s", o.labels)
			}
			o.vals[step], o.has[step] = v, true
		}
	}
	out := make([]*stepSeries, 0, len(outByLabels))
	for _, o := range outByLabels {
		out = append(out, o)
	}
	return out, nil
}

// resultLabels are the labels of an output series: the left series',
// without the metric name for arithmetic and bool comparisons, only the
// matching labels (on) or without them (ignoring).
func (n *binNode) resultLabels(lb *labels.Builder, lhs labels.Labels) labels.Labels {
	lb.Reset(lhs)
	if n.returnBool || isArithmetic(n.op) {
		schema.Metadata{}.SetToLabels(lb)
	}
	if n.on {
		lb.Keep(n.matching...)
	} else {
		lb.Del(n.matching...)
	}
	return lb.Labels()
}

// bothSides evaluates l and r: at once when ev reads rows (its float
// selection's budget is the query's), else one after the other.
func bothSides(ev *evaluator, l, r node) (lhs, rhs []*stepSeries, err error) {
	if ev.fs == nil {
		if lhs, err = l.eval(ev); err != nil {
			return nil, nil, err
		}
		rhs, err = r.eval(ev)
		return lhs, rhs, err
	}
	// The right side's scans wait for half the query's memory budget
	// while the left side runs, so that the two at once hold no more
	// than the budget and the left side never fails for the right one.
	var leftDone atomic.Bool
	sub := ev.fork(ev.fs.After(func() bool { return !leftDone.Load() }))
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rhs, rerr = r.eval(sub)
	}()
	lhs, err = l.eval(ev)
	leftDone.Store(true)
	ev.fs.Wake()
	<-done
	if err == nil {
		err = rerr
	}
	ev.mu.Lock()
	ev.annos.Merge(sub.annotations())
	ev.mu.Unlock()
	return lhs, rhs, err
}
