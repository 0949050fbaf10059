package query

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// WindowFunc is what a downsampled selection computes of the rollup
// windows of each series.
type WindowFunc uint8

// The functions of a downsampled selection. The first group are evaluated
// here, at each step of the query, over the windows inside the step's
// range (a PromQL function whose call the query API replaced by the
// selection); the last two hand the windows to PromQL's engine as
// samples, one a window, for the functions that have no aggregate of
// their own.
const (
	// WinLast is a plain selector: the average of the window that ends
	// at or before the step.
	WinLast WindowFunc = iota
	WinSum
	WinCount
	WinMin
	WinMax
	WinAvg
	WinRate
	WinIncrease
	// WinPointsAvg yields each window's average at the window's end.
	WinPointsAvg
	// WinPointsLast yields each window's last sample, at its time (the
	// counter aggregate, for irate and resets).
	WinPointsLast
)

var winFuncNames = [...]string{"last", "sum_over_time", "count_over_time", "min_over_time", "max_over_time", "avg_over_time",
	"rate", "increase", "points_avg", "points_last"}

func (f WindowFunc) String() string {
	if int(f) < len(winFuncNames) {
		return winFuncNames[f]
	}
	return fmt.Sprintf("WindowFunc(%d)", f)
}

// ParseWindowFunc returns the WindowFunc of a name String returns.
func ParseWindowFunc(s string) (WindowFunc, bool) {
	i := slices.Index(winFuncNames[:], s)
	return WindowFunc(i), i >= 0
}

// needs are the aggregates f reads of a window.
func (f WindowFunc) needs() uint16 {
	switch f {
	case WinSum, WinPointsAvg, WinAvg, WinLast:
		return rollup.HasSum | rollup.HasCount
	case WinCount:
		return rollup.HasCount
	case WinMin:
		return rollup.HasMin | rollup.HasCount
	case WinMax:
		return rollup.HasMax | rollup.HasCount
	}
	return rollup.HasCount | rollup.HasFirst | rollup.HasLast | rollup.HasResets | rollup.HasTimes
}

// WindowRequest is a downsampled selection.
type WindowRequest struct {
	// Interval is the resolution: its table and width.
	Interval rollup.Interval
	IDs      rollup.IDs
	Func     WindowFunc
	// Range and Offset are the range selector's (ms); Range is unused by
	// WinLast and the points functions.
	Range, Offset int64
	// Start, End and Step are the evaluation times (Unix ms; Step 0: an
	// instant query at Start). For the points functions Start and End
	// bound the windows' ends instead: (Start, End], offset applied.
	Start, End, Step int64
	// Built are the hours whose rollups are built and current: the
	// windows of those hours (ending in (H, H+1h]) are read from the
	// rollup table, the others computed from raw samples.
	Built rollup.Hours
	// Exact makes a range function's answer PromQL's own (the window
	// functions but WinLast; see exact.go): each step reads exactly its
	// range (t-Offset-Range, t-Offset], the rollup windows wholly inside
	// it and raw samples for the windows a range's end cuts. Otherwise a
	// step reads the whole windows of its range rounded to the windows
	// (an approximation where steps or ranges are not whole windows).
	Exact bool
}

// width is the window width in ms.
func (r *WindowRequest) width() int64 { return r.Interval.Seconds() * 1000 }

// points reports whether r hands windows on as samples.
func (r *WindowRequest) points() bool { return r.Func == WinPointsAvg || r.Func == WinPointsLast }

// steps is the number of evaluation steps.
func (r *WindowRequest) steps() int {
	if r.Step <= 0 || r.End < r.Start {
		return 1
	}
	return int((r.End-r.Start)/r.Step) + 1
}

// span is the window length a step reads: Range rounded to whole windows,
// at least one.
func (r *WindowRequest) span() int64 {
	w := r.width()
	if r.Exact {
		return r.Range
	}
	if r.Func == WinLast {
		return w
	}
	return max(w, (r.Range+w/2)/w*w)
}

// aligned is the end of the last window a step at t reads.
func (r *WindowRequest) aligned(t int64) int64 {
	w := r.width()
	return floorDiv(t-r.Offset, w) * w
}

// Covered returns the span (lo, hi] in Unix ms that r's steps read
// together: for an exact selection each step's range, else each step's
// whole windows.
func (r *WindowRequest) Covered() (lo, hi int64) {
	if r.Exact {
		return r.Start - r.Offset - r.Range, r.End - r.Offset
	}
	return r.aligned(r.Start) - r.span(), r.aligned(r.End)
}

// Aligned reports whether every step's range of r is whole windows: the
// range a multiple of the width, the first step's end (less the offset)
// on a window's end, the step a multiple of the width (or none).
func (r *WindowRequest) Aligned() bool {
	w := r.width()
	return r.Range%w == 0 && floorMod(r.Start-r.Offset, w) == 0 && (r.Step <= 0 || r.Step%w == 0)
}

// ends returns the windows read: those ending in (lo, hi].
func (r *WindowRequest) ends() (lo, hi int64) {
	if r.points() {
		w := r.width()
		return floorDiv(r.Start, w) * w, floorDiv(r.End, w) * w
	}
	last := r.Start
	if r.Step > 0 {
		last = r.Start + int64(r.steps()-1)*r.Step
	}
	if r.Exact {
		return r.Start - r.Offset - r.Range, last - r.Offset
	}
	return r.aligned(r.Start) - r.span(), r.aligned(last)
}

// sparse returns the Decoder's Every, Last and Span for r: when the steps
// are whole windows apart and each reads fewer windows than lie between
// two steps (a plain selector, or a range shorter than the step), the
// windows no step reads are not decoded; otherwise zeros (every window).
func (r *WindowRequest) sparse() (every, last, span int64) {
	w := r.width()
	if r.points() || r.Step <= 0 || r.Step%w != 0 || r.span() >= r.Step {
		return 0, 0, 0
	}
	return r.Step, r.aligned(r.Start + int64(r.steps()-1)*r.Step), r.span()
}

// stepRange returns the steps [from, to) whose range holds the window
// (start, end].
func (r *WindowRequest) stepRange(start, end int64) (from, to int) {
	if r.Exact {
		return r.exactSteps(start, end)
	}
	n := r.steps()
	if r.Step <= 0 {
		a := r.aligned(r.Start)
		if a-r.span() < end && end <= a {
			return 0, 1
		}
		return 0, 0
	}
	// end <= aligned(t_j) ⇔ t_j - Offset >= end; aligned(t_j) - span < end ⇔ t_j - Offset < end + span.
	ceil := func(x int64) int64 { return ceilDiv(x, r.Step) }
	f := max(ceil(end+r.Offset-r.Start), 0)
	t := min(ceil(end+r.span()+r.Offset-r.Start), int64(n))
	if f >= t {
		return 0, 0
	}
	return int(f), int(t)
}

// winAcc is what a downsampled selection keeps of a series: a range a
// step, or the windows (points functions).
type winAcc struct {
	ranges []rollup.Range
	wins   []rollup.Window
	first  int64 // End of the first window added
	n      int   // windows added
}

// add adds w, the window (start, w.End] (a rollup window, or raw samples
// of a part of one), to the ranges of the steps that hold it.
func (a *winAcc) add(r *WindowRequest, start int64, w *rollup.Window) {
	if a.n == 0 {
		a.first = w.End
	}
	a.n++
	if r.points() {
		a.wins = append(a.wins, *w)
		return
	}
	if a.ranges == nil {
		a.ranges = make([]rollup.Range, r.steps())
	}
	from, to := r.stepRange(start, w.End)
	for j := from; j < to; j++ {
		a.ranges[j].Add(w)
	}
}

// join adds later, the windows of the same series after a's.
func (a *winAcc) join(later *winAcc) {
	if later == nil || later.n == 0 {
		return
	}
	if a.n == 0 {
		*a = *later
		return
	}
	a.n += later.n
	a.wins = append(a.wins, later.wins...)
	if a.ranges == nil {
		a.ranges = later.ranges
		return
	}
	for j := range later.ranges {
		a.ranges[j].Merge(&later.ranges[j])
	}
}

// histograms reports whether a window of a holds native histograms.
func (a *winAcc) histograms() bool {
	for i := range a.ranges {
		if a.ranges[i].Histograms > 0 {
			return true
		}
	}
	for i := range a.wins {
		if a.wins[i].Histograms > 0 {
			return true
		}
	}
	return false
}

// accBytes estimates what a series' accumulator holds.
func accBytes(r *WindowRequest) int64 {
	if r.points() {
		return 0
	}
	return int64(r.steps()) * 96
}

// addWindows decodes a rollup row into the series' accumulator.
func (s *selection) addWindows(ctx context.Context, ser *Series, base uint32, row store.Row) error {
	r := s.win
	wins, err := s.winDec.Decode(r.Interval, base, row.Cells, s.start, s.end)
	if err != nil {
		return fmt.Errorf("row %x: %w", row.Key, err)
	}
	if ser.acc == nil {
		ser.acc = &winAcc{}
		if n := accBytes(r); n > 0 {
			if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
				return err
			}
			ser.charged += n
		}
	}
	need := r.Func.needs()
	for i := range wins {
		w := &wins[i]
		if w.Has&need != need {
			if r.Exact && w.Count > 0 {
				// Not built by promhbase: the aggregates the answer
				// needs are not there.
				return r.mustReadRaw(ctx, ErrDownsampledIncomplete)
			}
			w.Count = 0 // not built by promhbase: no float aggregate to use
		}
		if r.points() {
			if err := s.budget.addSamples(1); err != nil {
				return err
			}
			if err := s.budget.reserve(ctx, 96, s.ahead); err != nil {
				return err
			}
			ser.charged += 96
		}
		ser.acc.add(r, w.End-r.width(), &w.Window)
	}
	return nil
}

// rollupRanges returns the key ranges of the rollup rows of metric that
// hold windows ending in (lo, hi], one per salt bucket.
func rollupRanges(l mapping.Layout, iv rollup.Interval, metric []byte, lo, hi int64) []mapping.KeyRange {
	from := max(lo/1000, 0)
	to := hi/1000 - iv.Seconds() // the start of the last window
	if to < from-iv.Seconds() || to < 0 || from > math.MaxUint32 {
		return nil
	}
	to = max(min(to, math.MaxUint32), 0)
	span := iv.Span()
	start := span.BaseTime(uint32(min(from, to)))
	stop := span.NextBase(uint32(to))
	buckets := 1
	if l.SaltWidth > 0 {
		buckets = l.SaltBuckets
	}
	out := make([]mapping.KeyRange, 0, buckets)
	for b := range buckets {
		prefix := append(l.AppendSalt(nil, b), metric...)
		kr := mapping.KeyRange{Start: binary.BigEndian.AppendUint32(slices.Clip(prefix), start)}
		if stop <= math.MaxUint32 {
			kr.Stop = binary.BigEndian.AppendUint32(slices.Clip(prefix), uint32(stop))
		} else {
			kr.Stop = store.PrefixEnd(prefix)
		}
		out = append(out, kr)
	}
	return out
}

// SelectWindows runs a downsampled selection: the series the matchers
// select, each with the samples of r.Func (see WindowFunc) at each step,
// or its windows as samples, sorted by labels, under budget b. The windows
// of the hours r.Built holds come from r.Interval's rollup table, the
// others are computed from raw samples as the rollups would hold them;
// each part read adds its windows to the series' accumulators in time
// order, so that a step's range joins the parts as its samples would.
// Functions of a range (all but WinLast and the points) drop the
// metric name, as PromQL's do. A step without a value after one with a
// value gets a staleness marker, so that PromQL's lookback does not carry
// the value on.
func (q *Querier) SelectWindows(ctx context.Context, b *Budget, r WindowRequest, matchers []*labels.Matcher) ([]*ChunkSeries, error) {
	lo, hi := r.ends()
	if hi <= lo || hi < 0 {
		return nil, nil
	}
	accs := map[string]*winAcc{}
	var lset []labels.Labels
	put := func(l labels.Labels, a *winAcc) {
		k := string(l.Bytes(nil))
		if old, ok := accs[k]; ok {
			old.join(a)
			return
		}
		accs[k] = a
		lset = append(lset, l)
	}
	rolled := func(lo, hi int64) error {
		ss, err := q.selectWindows(ctx, b, &r, lo, hi, matchers)
		if err != nil {
			return err
		}
		lim := readLimitsOf(ctx) // the raw parts count theirs (streamMode)
		for _, s := range ss {
			if err := lim.addSeries(s.Labels); err != nil {
				return err
			}
			put(s.Labels, s.acc)
		}
		return nil
	}
	raw := func(lo, hi int64) error { return q.rawWindows(ctx, b, &r, lo, hi, matchers, put) }
	// In time order, as the accumulators take windows.
	for _, part := range r.parts(lo, hi) {
		read := raw
		if part.rolled {
			read = rolled
		}
		if err := read(part.lo, part.hi); err != nil {
			return nil, err
		}
	}
	for _, a := range accs {
		if a.histograms() {
			return nil, r.mustReadRaw(ctx, ErrDownsampledHistograms)
		}
	}
	slices.SortFunc(lset, labels.Compare)
	out := make([]*ChunkSeries, 0, len(lset))
	for _, l := range lset {
		a := accs[string(l.Bytes(nil))]
		pts := r.samples(a)
		if len(pts) == 0 {
			continue
		}
		if r.Func != WinLast && !r.points() {
			l = l.DropReserved(func(n string) bool { return n == model.MetricNameLabel })
		}
		cc := &chunkCutter{}
		if err := cc.appendMerged(pts, nil); err != nil {
			return nil, err
		}
		cc.finish()
		n := cc.size() + int64(l.ByteSize()) + seriesOverhead
		if err := b.Reserve(n); err != nil {
			return nil, err
		}
		out = append(out, &ChunkSeries{Labels: l, Chunks: cc.chunks, Samples: cc.n, Bytes: n})
	}
	return out, nil
}

// rawWindows computes the windows ending in (lo, hi] from raw samples and
// hands each series' accumulator to put. The rows are read as stored (a
// FloatSelection's, no chunks) and decoded here, each series' samples
// folded into its pieces as they come, in time order. A series with native
// histograms makes the request read raw samples (ErrDownsampledHistograms).
func (q *Querier) rawWindows(ctx context.Context, b *Budget, r *WindowRequest, lo, hi int64, matchers []*labels.Matcher, put func(labels.Labels, *winAcc)) error {
	var dec RowDecoder
	var pts []Sample
	cut := r.cutter()
	start, ok := readLimitsOf(ctx).clamp(lo+1, hi)
	if ok {
		start, ok = clampRange(start, hi)
	}
	if !ok {
		return nil
	}
	err := q.streamRows(ctx, b, nil, start, hi, matchers, func(cs *ChunkSeries) error {
		rs := &RowSeries{Labels: cs.Labels, rows: cs.rows, start: start, end: hi, b: b, bytes: cs.Bytes}
		defer rs.Release()
		var err error
		if pts, err = dec.Decode(pts[:0], rs); err != nil {
			return err
		}
		put(cs.Labels, r.fold(pts, cut))
		return nil
	})
	if errors.Is(err, ErrHistograms) {
		// Counted only by rollups: a range with histograms is answered raw.
		return r.mustReadRaw(ctx, ErrDownsampledHistograms)
	}
	return err
}

// fold computes the pieces of samples pts (in time order) as cut gives
// them, into a new accumulator. Consecutive samples in one piece (from,
// end] share it: no cut lies inside a piece, so cut is called once per
// piece, not per sample.
func (r *WindowRequest) fold(pts []Sample, cut func(t int64) (from, end int64)) *winAcc {
	a := &winAcc{}
	var w rollup.Window
	var from, end int64
	for i, p := range pts {
		if i == 0 || p.T > end {
			if w.Count > 0 {
				w.Finish()
				a.add(r, from, &w)
			}
			from, end = cut(p.T)
			w = rollup.Window{End: end}
		}
		w.Add(p.T, p.V)
	}
	if w.Count > 0 {
		w.Finish()
		a.add(r, from, &w)
	}
	return a
}

// samples are the samples of a series' accumulator.
func (r *WindowRequest) samples(a *winAcc) []Sample {
	if a == nil {
		return nil
	}
	if r.points() {
		slices.SortStableFunc(a.wins, func(x, y rollup.Window) int { return int(x.End - y.End) })
		out := make([]Sample, 0, len(a.wins))
		for i := range a.wins {
			w := &a.wins[i]
			if w.Count == 0 {
				continue
			}
			s := Sample{T: w.End, V: w.Sum / float64(w.Count)}
			if r.Func == WinPointsLast {
				s = Sample{T: w.LastT, V: w.Last}
			}
			if n := len(out); n > 0 && out[n-1].T >= s.T {
				continue
			}
			out = append(out, s)
		}
		return out
	}
	var out []Sample
	had := false
	for j := range a.ranges {
		t := r.Start + int64(j)*r.Step
		v, ok := r.value(&a.ranges[j], t)
		switch {
		case ok:
			out = append(out, Sample{T: t, V: v})
		case had:
			out = append(out, Sample{T: t, V: math.Float64frombits(value.StaleNaN)})
		}
		had = ok
	}
	return out
}

// value computes r.Func of the windows of the step at t.
func (r *WindowRequest) value(g *rollup.Range, t int64) (float64, bool) {
	if g.Count == 0 {
		return 0, false
	}
	switch r.Func {
	case WinSum:
		return g.SumValue(), true
	case WinCount:
		return float64(g.Count), true
	case WinMin:
		return g.Min, true
	case WinMax:
		return g.Max, true
	case WinAvg, WinLast:
		return g.AvgValue(), true
	case WinRate, WinIncrease:
		if r.Exact {
			return g.Rate(t-r.Offset-r.Range, t-r.Offset, true, r.Func == WinRate)
		}
		end := r.aligned(t)
		span := r.span()
		isRate := r.Func == WinRate
		if span == r.Range {
			return g.Rate(end-span, end, true, isRate)
		}
		v, ok := g.Rate(end-span, end, true, true)
		if !isRate {
			v *= float64(r.Range) / 1000
		}
		return v, ok
	}
	return 0, false
}

// selectWindows reads the rollup rows of the windows ending in (lo, hi]
// into accumulators, by series.
func (q *Querier) selectWindows(ctx context.Context, b *Budget, r *WindowRequest, lo, hi int64, matchers []*labels.Matcher) ([]*Series, error) {
	sel := &selection{q: q, mode: modeWindows, start: lo, end: hi, matchers: matchers, budget: b, win: r}
	var out []*Series
	found := func(s *Series) (*Series, bool) { return s, s.acc != nil && s.acc.n > 0 }
	err := run(ctx, sel, max(lo-r.width(), 0), false, found, func(ss []*Series) error {
		out = append(out, ss...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		b.Release(s.charged)
	}
	return out, nil
}

// DownsampleReport is what downsampled selections of one request report
// to the query API (see WithDownsampleReport).
type DownsampleReport struct {
	// Raw is set when a downsampled selection cannot answer: it met
	// native-histogram samples, which rollups do not hold, or an exact
	// selection met windows without the aggregates it needs (written by
	// another writer). The request must be answered from raw samples (the
	// selection failed with ErrDownsampledHistograms or
	// ErrDownsampledIncomplete).
	Raw atomic.Bool
}

type reportKey struct{}

// WithDownsampleReport returns ctx carrying a new report, which the
// downsampled selections of queries run with the returned context fill in.
func WithDownsampleReport(ctx context.Context) (context.Context, *DownsampleReport) {
	r := &DownsampleReport{}
	return context.WithValue(ctx, reportKey{}, r), r
}

// DownsampleReportFrom returns the report ctx carries, or nil.
func DownsampleReportFrom(ctx context.Context) *DownsampleReport {
	r, _ := ctx.Value(reportKey{}).(*DownsampleReport)
	return r
}

// ErrDownsampledHistograms fails a downsampled selection that met native
// histograms (see DownsampleReport).
var ErrDownsampledHistograms = errors.New("query: native histograms are not downsampled; read them raw")

// ErrDownsampledIncomplete fails an exact downsampled selection that met
// rollup windows without the aggregates it needs (see DownsampleReport).
var ErrDownsampledIncomplete = errors.New("query: rollup windows lack the aggregates an exact answer needs; read them raw")

// mustReadRaw reports that the request must be answered from raw
// samples, and returns err.
func (r *WindowRequest) mustReadRaw(ctx context.Context, err error) error {
	if rep, ok := ctx.Value(reportKey{}).(*DownsampleReport); ok {
		rep.Raw.Store(true)
	}
	return err
}

// DownsampleLabel is the name of the matcher by which the query API asks
// a Select for a downsampled selection (see WindowRequest.Marker): the
// matcher is not matched against any label.
const DownsampleLabel = "__promhbase_downsample__"

// Marker is the value of the DownsampleLabel matcher that asks for r
// (the interval by name; IDs come from the Querier's configuration):
//
//	func;interval;range;offset;start;end;step;built;exact
//
// (built: rollup.Hours.String; exact: 1 or 0).
// The points functions take start and end from the engine's hints.
func (r *WindowRequest) Marker() string {
	exact := 0
	if r.Exact {
		exact = 1
	}
	return fmt.Sprintf("%s;%s;%d;%d;%d;%d;%d;%s;%d", r.Func, r.Interval.Name, r.Range, r.Offset, r.Start, r.End, r.Step, r.Built, exact)
}

// parseMarker reads a Marker.
func (q *Querier) parseMarker(v string) (WindowRequest, error) {
	var r WindowRequest
	parts := strings.Split(v, ";")
	if len(parts) != 9 || q.opts.Rollups == nil {
		return r, fmt.Errorf("%w: downsampling marker %q", errBadMarker, v)
	}
	f, ok := ParseWindowFunc(parts[0])
	if !ok {
		return r, fmt.Errorf("%w: function %q", errBadMarker, parts[0])
	}
	iv, ok := q.opts.Rollups.Interval(parts[1])
	if !ok || iv.Default {
		return r, fmt.Errorf("%w: no rollup interval %q", errBadMarker, parts[1])
	}
	ids, err := q.opts.Rollups.IDs()
	if err != nil {
		return r, err
	}
	var nums [5]int64
	for i := range nums {
		if nums[i], err = strconv.ParseInt(parts[2+i], 10, 64); err != nil {
			return r, fmt.Errorf("%w: %q: %w", errBadMarker, v, err)
		}
	}
	built, err := rollup.ParseHours(parts[7])
	if err != nil {
		return r, fmt.Errorf("%w: %q: %w", errBadMarker, v, err)
	}
	r = WindowRequest{Interval: iv, IDs: ids, Func: f, Range: nums[0], Offset: nums[1], Start: nums[2], End: nums[3], Step: nums[4], Built: built}
	switch parts[8] {
	case "1":
		r.Exact = true
	case "0":
	default:
		return r, fmt.Errorf("%w: exact %q", errBadMarker, parts[8])
	}
	if r.Range < 0 || r.Step < 0 || r.End < r.Start || (r.Step > 0 && (r.End-r.Start)/r.Step > maxWindowSteps) ||
		(r.Exact && (r.Func == WinLast || r.points() || r.Range <= 0)) {
		return r, fmt.Errorf("%w: %q", errBadMarker, v)
	}
	return r, nil
}

// maxWindowSteps bounds the steps of a downsampled selection, as the
// query API bounds a range query's (11,000 points).
const maxWindowSteps = 11_000

var errBadMarker = errors.New("query: bad downsampling request")
