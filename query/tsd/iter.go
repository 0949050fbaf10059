package tsd

import (
	"math"
	"strconv"
)

// ended is the lookahead time of a series that has no more points: past
// any query's end.
const ended = math.MaxInt64

// slot is a point the aggregation holds for a series: its current one
// (t 0: not begun, or done) or the one after it.
type slot struct {
	t int64
	p Point
}

// aggIter is a TSD's AggregationIterator over the views of one group's
// series (each downsampled and turned into a rate already): it steps
// through the union of their timestamps up to end; at each, every series
// between its own first and last point gives a value (its point there,
// or one interpolated by the aggregator's method; with rate, its last
// rate), and the aggregator combines them, in integers while every value
// held (current and lookahead, of every series) is an integer.
type aggIter struct {
	agg      aggregator
	rate     bool
	end      int64
	views    [][]Point
	pos      []int // the next point of each view to load
	cur, nxt []slot
	current  int // the series of the current timestamp
	longs    []int64
	doubles  []float64
}

// newAggIter starts the aggregation at start: each view's points before
// it are skipped; with rate, each series' first rate (the one against
// (0, 0)) is its current value from the start, never a timestamp of its
// own.
func newAggIter(views [][]Point, start, end int64, agg aggregator, rate bool) *aggIter {
	n := len(views)
	it := &aggIter{agg: agg, rate: rate, end: end, views: views, pos: make([]int, n), cur: make([]slot, n), nxt: make([]slot, n)}
	for i, v := range views {
		k := 0
		for k < len(v) && v[k].T < start {
			k++
		}
		if k == len(v) {
			it.endReached(i)
			continue
		}
		it.nxt[i], it.pos[i] = slot{t: v[k].T, p: v[k]}, k+1
		if rate {
			if it.pos[i] < len(v) {
				it.moveToNext(i)
			} else {
				it.endReached(i)
			}
		}
	}
	return it
}

func (it *aggIter) endReached(i int) { it.nxt[i] = slot{t: ended} }

// moveToNext makes series i's lookahead its current point and loads the
// one after.
func (it *aggIter) moveToNext(i int) {
	it.cur[i] = it.nxt[i]
	if v := it.views[i]; it.pos[i] < len(v) {
		it.nxt[i] = slot{t: v[it.pos[i]].T, p: v[it.pos[i]]}
		it.pos[i]++
		return
	}
	it.endReached(i)
}

// hasNext reports whether a series has a point at or before end ahead.
func (it *aggIter) hasNext() bool {
	for _, s := range it.nxt {
		if s.t <= it.end {
			return true
		}
	}
	return false
}

// next steps to the next timestamp and returns the aggregate there. Of
// the series whose lookahead it is, the first becomes current and all
// move on; series that ended at the last step stop contributing (only
// from the last step's current series on, as the TSD clears them).
func (it *aggIter) next() (Point, error) {
	n := len(it.views)
	for i := it.current; i < n; i++ {
		if it.nxt[i].t == ended {
			it.cur[i] = slot{}
		}
	}
	it.current = -1
	minT, multiple := int64(math.MaxInt64), false
	for i := range n {
		t := it.nxt[i].t
		if t > it.end {
			continue
		}
		if t < minT {
			minT, it.current, multiple = t, i, false
		} else if t == minT {
			multiple = true
		}
	}
	it.moveToNext(it.current)
	if multiple {
		for i := it.current + 1; i < n; i++ {
			if it.nxt[i].t == minT {
				it.moveToNext(i)
			}
		}
	}
	return it.value()
}

// isInteger: no rate, and every slot holds an integer.
func (it *aggIter) isInteger() bool {
	if it.rate {
		return false
	}
	for i := range it.cur {
		if it.cur[i].p.Float && it.cur[i].t != 0 || it.nxt[i].p.Float && it.nxt[i].t != ended {
			return false
		}
	}
	return true
}

// value aggregates the values of the active series at the current time.
func (it *aggIter) value() (Point, error) {
	x := it.cur[it.current].t
	if it.isInteger() {
		it.longs = it.longs[:0]
		for i := range it.cur {
			if it.cur[i].t != 0 {
				it.longs = append(it.longs, it.longAt(i, x))
			}
		}
		return Point{T: x, I: it.agg.long(it.longs)}, nil
	}
	it.doubles = it.doubles[:0]
	for i := range it.cur {
		if it.cur[i].t != 0 {
			it.doubles = append(it.doubles, it.doubleAt(i, x))
		}
	}
	v := it.agg.double(it.doubles)
	if math.IsInf(v, 0) {
		return Point{}, &Error{Message: "Got Infinity: " + strconv.FormatFloat(v, 'g', -1, 64)}
	}
	return Point{T: x, F: v, Float: true}, nil
}

// longAt is series i's value at x: its point there, or interpolated.
func (it *aggIter) longAt(i int, x int64) int64 {
	c, nx := it.cur[i], it.nxt[i]
	switch {
	case i == it.current, x == c.t:
		return c.p.I
	case x == nx.t:
		return nx.p.I
	}
	switch it.agg.interp {
	case lerp:
		return c.p.I + (x-c.t)*(nx.p.I-c.p.I)/(nx.t-c.t)
	case zim:
		return 0
	case imax:
		return math.MaxInt64
	case imin:
		return math.MinInt64
	}
	return c.p.I // prev
}

// doubleAt is series i's value at x as a double: with rate, its current
// rate; else as longAt.
func (it *aggIter) doubleAt(i int, x int64) float64 {
	c, nx := it.cur[i], it.nxt[i]
	y0 := c.p.double()
	switch {
	case i == it.current, it.rate, x == c.t:
		return y0
	case x == nx.t:
		return nx.p.double()
	}
	switch it.agg.interp {
	case lerp:
		// The product rounded on its own, as Java computes it (no fused
		// multiply-add).
		return y0 + float64(float64(x-c.t)*(nx.p.double()-y0))/float64(nx.t-c.t)
	case zim:
		return 0
	case imax:
		return math.MaxFloat64
	case imin:
		return -math.MaxFloat64
	}
	return y0 // prev
}
