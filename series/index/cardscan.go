package index

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"sync"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// uid64 is a UID (at most 8 bytes) as a big-endian integer.
func uid64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// uidBytes is the UID of width bytes whose integer is v.
func uidBytes(v uint64, width int) []byte {
	b := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// tally counts the series one worker is handed, in the order of their
// 'S' cells within each range. At each position of the tag list it keeps
// the pair of the series before and how many series in a row had it; a
// run is added to the pair counts (pairCounts) when the pair at its
// position changes, so that the pairs series share cost a comparison.
type tally struct {
	tagkW, pairW int
	hidden       []uint64 // the reserved tag's tagk UIDs: not counted
	// packed: pairs of at most 8 bytes are compared and split as
	// integers (prevKeys), wider ones as bytes (prev).
	packed   bool
	vBits    uint
	prevKeys []uint64

	series, labels uint64
	metrics        map[uint64]uint64
	maxTagv        uint64
	pairs          pairCounts

	metric    uint64 // the metric of the current run, and its series
	metricN   uint64
	havePrior bool
	prev      []byte   // the tags of the series before
	runs      []uint32 // at each position of prev, the series in a row with its pair
}

func newTally(tagkW, pairW int, hidden []uint64, pages *sync.Pool) *tally {
	return &tally{tagkW: tagkW, pairW: pairW, hidden: hidden, packed: pairW <= 8, vBits: uint(8 * (pairW - tagkW)),
		metrics: map[uint64]uint64{}, pairs: newPairCounts(pages)}
}

// pack is a pair of at most 8 bytes as a big-endian integer.
func pack(p []byte) uint64 {
	if len(p) == 6 {
		_ = p[5]
		return uint64(p[0])<<40 | uint64(p[1])<<32 | uint64(p[2])<<24 | uint64(p[3])<<16 | uint64(p[4])<<8 | uint64(p[5])
	}
	return uid64(p)
}

// add counts the series of metric and tags. Series of one range come in
// the order of their 'S' cells; endRuns ends a range.
func (t *tally) add(metric, tags []byte) {
	pw := t.pairW
	n := len(tags) / pw
	if n*pw != len(tags) {
		return // not tags of this layout
	}
	t.series++
	if m := uid64(metric); !t.havePrior || m != t.metric {
		if t.havePrior {
			t.metrics[t.metric] += t.metricN
		}
		t.metric, t.metricN, t.havePrior = m, 0, true
	}
	t.metricN++
	for len(t.runs) < n {
		t.runs = append(t.runs, 0)
	}
	if t.packed {
		pn := len(t.prevKeys)
		for i := range n {
			key := pack(tags[i*pw : i*pw+pw])
			if i < pn {
				if key == t.prevKeys[i] {
					t.runs[i]++
					continue
				}
				t.flushKey(t.prevKeys[i], t.runs[i])
				t.prevKeys[i] = key
			} else {
				t.prevKeys = append(t.prevKeys, key)
			}
			t.runs[i] = 1
		}
		for i := n; i < pn; i++ {
			t.flushKey(t.prevKeys[i], t.runs[i])
		}
		t.prevKeys = t.prevKeys[:n]
		return
	}
	pn := len(t.prev) / pw
	for i := range n {
		p := tags[i*pw : i*pw+pw]
		if i < pn {
			q := t.prev[i*pw : i*pw+pw]
			if string(p) == string(q) {
				t.runs[i]++
				continue
			}
			t.flush(q, t.runs[i])
		}
		t.runs[i] = 1
	}
	for i := n; i < pn; i++ {
		t.flush(t.prev[i*pw:i*pw+pw], t.runs[i])
	}
	t.prev = append(t.prev[:0], tags...)
}

// flush adds a run of n series with pair to the counts.
func (t *tally) flush(pair []byte, n uint32) {
	t.flushUIDs(uid64(pair[:t.tagkW]), uid64(pair[t.tagkW:]), n)
}

// flushKey is flush of a packed pair.
func (t *tally) flushKey(key uint64, n uint32) {
	t.flushUIDs(key>>t.vBits, key&(1<<t.vBits-1), n)
}

// flushUIDs adds a run of n series with pair k=v to the counts.
func (t *tally) flushUIDs(k, v uint64, n uint32) {
	for _, h := range t.hidden {
		if k == h {
			return
		}
	}
	t.labels += uint64(n)
	t.maxTagv = max(t.maxTagv, v)
	t.pairs.add(k, v, n)
}

// endRuns ends the runs, for a range whose order does not follow the
// last one's.
func (t *tally) endRuns() {
	pw := t.pairW
	for i := range len(t.prev) / pw {
		t.flush(t.prev[i*pw:i*pw+pw], t.runs[i])
	}
	for i, key := range t.prevKeys {
		t.flushKey(key, t.runs[i])
	}
	t.prev, t.prevKeys = t.prev[:0], t.prevKeys[:0]
	if t.havePrior {
		t.metrics[t.metric] += t.metricN
		t.havePrior, t.metricN = false, 0
	}
}

// finish ends the count: the runs, and the metric names' labels.
func (t *tally) finish() {
	t.endRuns()
	t.labels += t.series
}

// merge adds o's counts (finished) to t's; o's pages may become t's.
func (t *tally) merge(o *tally) {
	t.series += o.series
	t.labels += o.labels
	t.maxTagv = max(t.maxTagv, o.maxTagv)
	for m, n := range o.metrics {
		t.metrics[m] += n
	}
	t.pairs.merge(&o.pairs)
}

// countRange hands the series of rg on days that f selects to add, in
// the order of the 'S' cells (metric, bucket, tags; a series of several
// days once), then calls end.
func (r *Reader) countRange(ctx context.Context, days []uint32, rg tsuidRange, f *cardFilter, add func(metric, tags []byte), end func()) error {
	mw := r.layout.MetricWidth
	defer end()
	if len(days) == 1 {
		sc := r.scanDay(ctx, days[0], rg)
		defer sc.Close()
		for sc.Next() {
			row := sc.Row()
			_, rest, ok := mapping.IndexSeriesRowOf(row.Key)
			if !ok || len(rest) != mw+1 {
				continue
			}
			metric := rest[:mw]
			for _, c := range row.Cells {
				if f.match(metric, c.Qualifier) {
					add(metric, c.Qualifier)
				}
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("scan the series rows of day %d: %w", days[0], err)
		}
		return nil
	}
	m := &dayMerge{}
	defer m.close()
	for _, d := range days {
		ds := &dayScan{day: d, sc: r.scanDay(ctx, d, rg), mw: mw}
		m.scans = append(m.scans, ds)
		if err := ds.advance(); err != nil {
			return err
		}
		if ds.cur != nil {
			m.Push(ds)
		}
	}
	heap.Init(m)
	var last []byte
	for m.Len() > 0 {
		ds := m.h[0]
		if last == nil || !bytes.Equal(ds.cur, last) {
			last = append(last[:0], ds.cur...)
			metric, tags := last[:mw], last[mw+1:]
			if f.match(metric, tags) {
				add(metric, tags)
			}
		}
		if err := ds.advance(); err != nil {
			return err
		}
		if ds.cur == nil {
			heap.Pop(m)
		} else {
			heap.Fix(m, 0)
		}
	}
	return nil
}

// scanDay scans the 'S' rows of day in rg.
func (r *Reader) scanDay(ctx context.Context, day uint32, rg tsuidRange) store.Scanner {
	start := mapping.AppendIndexSeriesPrefix(nil, day, rg.lo)
	var stop []byte
	if rg.hi != nil {
		stop = mapping.AppendIndexSeriesPrefix(nil, day, rg.hi)
	} else {
		stop = store.PrefixEnd(mapping.AppendIndexSeriesPrefix(nil, day, nil))
	}
	return r.st.Scan(ctx, store.ScanRequest{Table: r.table, Start: start, Stop: stop, Family: mapping.IndexFamily})
}

// dayScan is one day's scanner of a merge, at its current series: cur is
// its metric UID ‖ bucket ‖ tags (nil: done), which orders the series of
// every day alike.
type dayScan struct {
	day  uint32
	sc   store.Scanner
	mw   int
	row  store.Row // the row being read, its next cell at cell
	cell int
	buf  []byte
	cur  []byte
}

// advance moves to the next series of the day.
func (d *dayScan) advance() error {
	for {
		if d.cell < len(d.row.Cells) {
			_, rest, _ := mapping.IndexSeriesRowOf(d.row.Key)
			d.buf = append(append(d.buf[:0], rest...), d.row.Cells[d.cell].Qualifier...)
			d.cur = d.buf
			d.cell++
			return nil
		}
		if !d.sc.Next() {
			break
		}
		d.row, d.cell = d.sc.Row(), 0
		if _, rest, ok := mapping.IndexSeriesRowOf(d.row.Key); !ok || len(rest) != d.mw+1 {
			d.row.Cells = nil
		}
	}
	d.cur = nil
	if err := d.sc.Err(); err != nil {
		return fmt.Errorf("scan the series rows of day %d: %w", d.day, err)
	}
	return nil
}

// dayMerge is a heap of the days' scanners by their current series.
type dayMerge struct {
	h     []*dayScan
	scans []*dayScan // all of them, to close
}

func (m *dayMerge) Len() int           { return len(m.h) }
func (m *dayMerge) Less(i, j int) bool { return bytes.Compare(m.h[i].cur, m.h[j].cur) < 0 }
func (m *dayMerge) Swap(i, j int)      { m.h[i], m.h[j] = m.h[j], m.h[i] }
func (m *dayMerge) Push(x any)         { m.h = append(m.h, x.(*dayScan)) }
func (m *dayMerge) Pop() any {
	x := m.h[len(m.h)-1]
	m.h = m.h[:len(m.h)-1]
	return x
}

func (m *dayMerge) close() {
	for _, d := range m.scans {
		d.sc.Close()
	}
}
