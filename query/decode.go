package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/store"
)

// errScanPanic marks the error of a scan that panicked (see scan).
var errScanPanic = errors.New("internal error")

// maxPending bounds the series of a scan whose labels wait for a batched
// read of names, and so the data kept of series that may turn out not to
// match.
const maxPending = 256

// histScratch is what selection.histograms decodes a row's histogram cells
// into, kept between rows: the chunk appenders copy what they keep.
type histScratch struct {
	cands []histCand
	out   []HistogramSample
	hs    []*histogram.Histogram
	fhs   []*histogram.FloatHistogram
}

// histCand is a histogram cell of a row, by time and version.
type histCand struct {
	t       int64
	version uint64
	cell    int
}

// scan reads the rows of req into the selection's series. It runs in a
// goroutine of its own when a query scans in parallel, so a panic on
// data the decoders let through (a defect: they check what they read)
// fails the query with an error instead of ending the process.
func (s *selection) scan(ctx context.Context, req store.ScanRequest) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scan of %s from %x: %w: %v", req.Table, req.Start, errScanPanic, r)
		}
	}()
	switch s.mode {
	case modeSamples:
		// Settled rows straight from their packed form into samples.
		req.Packed = cells.PackedFormat
	case modeWindows:
		req.Packed, req.PackedAlso, req.PackedRuns = rollup.CodecFormat, rollup.DenseFormat, true
	}
	sc := s.q.st.Scan(ctx, req)
	defer sc.Close()
	layout := s.q.mapper.Layout()
	var key []byte
	for sc.Next() {
		row := sc.Row()
		_, metric, base, tags, err := layout.ParseRowKey(row.Key)
		if err != nil {
			continue // not a data row of this layout
		}
		key = append(append(key[:0], metric...), tags...)
		ser, ok := s.series[string(key)]
		if ser != nil && ser.pending {
			// A later row (hour) of a series whose labels are not known
			// yet: learn them first, so that no series holds more than a
			// row before it is known to match.
			if err := s.resolvePending(ctx); err != nil {
				return err
			}
			ser = s.series[string(key)]
		}
		if !ok {
			lbls, cached, err := s.q.mapper.CachedLabels(ctx, metric, tags)
			if err != nil {
				return fmt.Errorf("labels of row %x: %w", row.Key, err)
			}
			if cached {
				if ser, err = s.addSeries(ctx, string(key), lbls); err != nil {
					return err
				}
			} else if ser, err = s.addPending(ctx, string(key)); err != nil {
				return err
			}
		}
		if ser == nil {
			continue
		}
		switch s.mode {
		case modeLabels:
			if !ser.inRange {
				ser.inRange, err = s.rowInRange(base, row)
			}
		case modeSamples:
			err = s.addRow(ctx, ser, base, row)
		case modeExemplars:
			err = s.addExemplars(ser, base, row)
		case modeWindows:
			err = s.addWindows(ctx, ser, base, row)
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan %s [%x, %x): %w", req.Table, req.Start, req.Stop, err)
	}
	return s.resolvePending(ctx)
}

// addSeries adds the series of key with its labels, nil when they do
// not match, and returns it. The map entry is kept for matching series and
// others alike.
func (s *selection) addSeries(ctx context.Context, key string, lbls labels.Labels) (*Series, error) {
	var ser *Series
	if s.matches(lbls) {
		ser = &Series{Labels: lbls}
	}
	if s.charges() {
		n := int64(len(key)) + mapEntryOverhead
		if ser != nil {
			ser.charged = int64(lbls.ByteSize()) + seriesOverhead
			n += ser.charged
		}
		if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
			return nil, err
		}
		s.keyBytes += int64(len(key)) + mapEntryOverhead
	}
	s.series[key] = ser
	return ser, nil
}

// addPending adds the series of key, whose labels the caches cannot
// answer, as pending: it collects its rows until resolvePending, which
// runs when maxPending series wait, when a pending series' next row
// comes, and when the scan ends. It returns the series to add the
// current row to, nil when a resolvePending found it does not match.
func (s *selection) addPending(ctx context.Context, key string) (*Series, error) {
	ser := &Series{pending: true}
	if s.charges() {
		n := int64(len(key)) + mapEntryOverhead
		if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
			return nil, err
		}
		s.keyBytes += n
	}
	s.series[key] = ser
	s.pending = append(s.pending, key)
	if len(s.pending) < maxPending {
		return ser, nil
	}
	if err := s.resolvePending(ctx); err != nil {
		return nil, err
	}
	return s.series[key], nil
}

// resolvePending reads the names the pending series lack in one batched
// read per kind (series.Mapper.LoadNames), then gives each its labels,
// or drops it, releasing what it was charged, when they do not match.
func (s *selection) resolvePending(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	keys := make([][]byte, len(s.pending))
	for i, k := range s.pending {
		keys[i] = []byte(k)
	}
	if err := s.q.mapper.LoadNames(ctx, keys); err != nil {
		return fmt.Errorf("labels of %d series: %w", len(keys), err)
	}
	mw := s.q.mapper.Layout().MetricWidth
	for i, k := range s.pending {
		ser := s.series[k]
		lbls, err := s.q.mapper.Labels(ctx, keys[i][:mw], keys[i][mw:])
		if err != nil {
			return fmt.Errorf("labels of series %x: %w", k, err)
		}
		ser.pending = false
		if !s.matches(lbls) {
			if s.charges() {
				s.budget.Release(ser.charged)
			}
			s.series[k] = nil
			continue
		}
		ser.Labels = lbls
		if s.charges() {
			n := int64(lbls.ByteSize()) + seriesOverhead
			if err := s.budget.reserve(ctx, n, s.ahead); err != nil {
				return err
			}
			ser.charged += n
		}
	}
	s.pending = s.pending[:0]
	return nil
}

// charges reports whether the selection charges its series to the budget.
func (s *selection) charges() bool { return s.mode == modeSamples || s.mode == modeWindows }

func (s *selection) matches(lbls labels.Labels) bool {
	for _, m := range s.matchers {
		if !m.Matches(lbls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// addRow decodes a row's cells, merges them by timestamp (see
// cells.Merger: the newest cell version wins, then the later cell), and
// appends the samples in [start, end] to the series' chunks, charging the
// budget for what they grow by.
func (s *selection) addRow(ctx context.Context, ser *Series, base uint32, row store.Row) error {
	if s.rawRows {
		return s.addRawRow(ctx, ser, base, row)
	}
	pts, err := s.merger.Merge(base, row.Cells, s.start, s.end)
	if err != nil {
		return fmt.Errorf("row %x: %w", row.Key, err)
	}
	hs, err := s.histograms(base, row)
	if err != nil {
		return err
	}
	if len(pts)+len(hs) == 0 {
		return nil
	}
	if err := s.budget.addSamples(len(pts) + len(hs)); err != nil {
		return err
	}
	if ser.cc == nil {
		ser.cc = &chunkCutter{raw: s.rawFloats}
	}
	before := ser.cc.size()
	if err := ser.cc.appendMerged(pts, hs); err != nil {
		return fmt.Errorf("row %x: %w", row.Key, err)
	}
	if d := ser.cc.size() - before; d > 0 {
		if err := s.budget.reserve(ctx, d, s.ahead); err != nil {
			return err
		}
		ser.charged += d
	}
	return nil
}

// rowInRange reports whether a row has a sample (float or histogram) in
// [start, end]: at once when the row's hour lies inside the range, else by
// decoding it (rows at the range's edges only).
func (s *selection) rowInRange(base uint32, row store.Row) (bool, error) {
	first := int64(base) * 1000
	if first >= s.start && first+mapping.MaxOffsetMs-1 <= s.end {
		return len(row.Cells) > 0, nil
	}
	pts, err := s.merger.Merge(base, row.Cells, s.start, s.end)
	if err != nil {
		return false, fmt.Errorf("row %x: %w", row.Key, err)
	}
	if len(pts) > 0 {
		return true, nil
	}
	for _, c := range row.Cells {
		if off, ok := mapping.ParseHistogramQualifier(c.Qualifier); ok {
			if t := first + int64(off); t >= s.start && t <= s.end {
				return true, nil
			}
		}
	}
	return false, nil
}

// addExemplars decodes a row of the exemplar table and appends its
// exemplars in [start, end] to the series, in time order.
func (s *selection) addExemplars(ser *Series, base uint32, row store.Row) error {
	var scratch [8]mapping.Label
	n := len(ser.Exemplars)
	for _, c := range row.Cells {
		off, v, lbls, err := mapping.DecodeExemplarValue(c.Value, scratch[:0])
		if err != nil {
			return fmt.Errorf("row %x: exemplar cell %X: %w", row.Key, c.Qualifier, err)
		}
		t := int64(base)*1000 + int64(off)
		if t < s.start || t > s.end {
			continue
		}
		b := labels.NewScratchBuilder(len(lbls))
		for _, l := range lbls {
			b.Add(string(l.Name), string(l.Value))
		}
		b.Sort()
		ser.Exemplars = append(ser.Exemplars, Exemplar{Labels: b.Labels(), V: v, T: t})
	}
	slices.SortStableFunc(ser.Exemplars[n:], func(a, b Exemplar) int { return cmp.Compare(a.T, b.T) })
	return s.budget.addSamples(len(ser.Exemplars) - n)
}

// histograms decodes the native-histogram cells of a row (qualifier 0x06 +
// offset, see mapping.AppendHistogramQualifier) whose time is in [start,
// end], sorted by time; of several cells with one timestamp (a 3-byte and
// a 5-byte qualifier for the same instant) the newest version wins. The
// samples and their histograms are the selection's scratch, valid until
// the next call.
func (s *selection) histograms(base uint32, row store.Row) ([]HistogramSample, error) {
	sc := &s.hist
	cs := sc.cands[:0]
	for i, c := range row.Cells {
		off, ok := mapping.ParseHistogramQualifier(c.Qualifier)
		if !ok {
			continue
		}
		t := int64(base)*1000 + int64(off)
		if t < s.start || t > s.end {
			continue
		}
		cs = append(cs, histCand{t, c.Timestamp, i})
	}
	sc.cands = cs
	if len(cs) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(cs, func(a, b histCand) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if c := cmp.Compare(a.version, b.version); c != 0 {
			return c
		}
		return a.cell - b.cell
	})
	out := sc.out[:0]
	for i, c := range cs {
		if i+1 < len(cs) && cs[i+1].t == c.t {
			continue // a newer version follows
		}
		cell := row.Cells[c.cell]
		k := len(out)
		for len(sc.hs) <= k {
			sc.hs = append(sc.hs, &histogram.Histogram{})
			sc.fhs = append(sc.fhs, &histogram.FloatHistogram{})
		}
		h, fh := sc.hs[k], sc.fhs[k]
		isFloat, err := mapping.DecodeHistogramValue(cell.Value, h, fh)
		if err != nil {
			return nil, fmt.Errorf("row %x: histogram cell %X: %w", row.Key, cell.Qualifier, err)
		}
		hs := HistogramSample{T: c.t, H: h}
		if isFloat {
			hs = HistogramSample{T: c.t, FH: fh}
		}
		out = append(out, hs)
	}
	sc.out = out
	return out, nil
}
