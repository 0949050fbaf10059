package query

import (
	"cmp"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// part is a part of a series that the scans of a query found: *ChunkSeries
// (Stream) or *Series (SelectLabels, SelectExemplars). One series comes in
// several parts when its rows fall in different parts of a split scan (its
// rows of different hours), or when its label set has several row keys (a
// label-less series written with and without its reserved tag, a name
// stored in its Latin-1 and its legacy UTF-8 form).
type part[P any] interface {
	labelSet() labels.Labels
	// firstT is the time of the part's first sample (0 when it has none):
	// it orders the parts of one label set.
	firstT() int64
	// join merges later, a part of the same label set, into the receiver,
	// one sample per timestamp (the receiver's kept).
	join(later P) error
}

// collect returns the parts that take accepts of the series the scans of
// subs found, sorted by labels, the parts of one label set joined; it
// releases what the rejected series and the scans' maps were charged, and
// drops the scans' series. The parts that the parts of a split scan found
// of one row key are joined first, in the parts' order, which is the rows'
// key order and so their time order: the sort then orders each series
// once.
func collect[P part[P]](subs []*selection, take func(*Series) (P, bool)) ([]P, error) {
	// The parts with their sort keys side by side, so that the sort reads
	// a run of memory and each part's label data, not the part too.
	type entry struct {
		labels labels.Labels
		firstT int64
		p      P
	}
	var ents []entry
	var seen map[string]int // row key -> index in ents, when split
	if len(subs) > 1 {
		seen = map[string]int{}
	}
	for _, sub := range subs {
		b := sub.budget
		b.Release(sub.keyBytes)
		for key, ser := range sub.series {
			if ser == nil {
				continue
			}
			p, ok := take(ser)
			if !ok {
				b.Release(ser.charged)
				continue
			}
			if seen != nil {
				if i, ok := seen[key]; ok {
					if err := ents[i].p.join(p); err != nil {
						return nil, err
					}
					continue
				}
				seen[key] = len(ents)
			}
			ents = append(ents, entry{p.labelSet(), p.firstT(), p})
		}
		sub.series = nil
	}
	slices.SortFunc(ents, func(a, b entry) int {
		if c := labels.Compare(a.labels, b.labels); c != 0 {
			return c
		}
		return cmp.Compare(a.firstT, b.firstT) // one label set under two row keys
	})
	out := make([]P, len(ents))
	for i, e := range ents {
		out[i] = e.p
	}
	return joinSorted(out)
}

// chunkSeriesOf is collect's take for Stream: the samples of ser as a
// ChunkSeries, its chunks closed; false when it has none.
func chunkSeriesOf(ser *Series) (*ChunkSeries, bool) {
	if ser.cc == nil || ser.cc.n == 0 {
		return nil, false
	}
	ser.cc.finish()
	return &ChunkSeries{Labels: ser.Labels, Chunks: ser.cc.chunks, Floats: ser.cc.floats, Samples: ser.cc.n, Bytes: ser.charged}, true
}

// seriesFound is collect's take for SelectLabels and SelectExemplars: ser
// when it has a sample in the range or an exemplar.
func seriesFound(ser *Series) (*Series, bool) {
	return ser, ser.inRange || len(ser.Samples) > 0 || len(ser.Histograms) > 0 || len(ser.Exemplars) > 0
}

// joinSorted joins adjacent parts of sorted that have equal labels.
func joinSorted[P part[P]](sorted []P) ([]P, error) {
	out := sorted[:0]
	for _, p := range sorted {
		n := len(out)
		if n == 0 || !labels.Equal(out[n-1].labelSet(), p.labelSet()) {
			out = append(out, p)
			continue
		}
		if err := out[n-1].join(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// joinChunkSeries joins adjacent series of sorted that have equal labels
// (see ChunkSeries.join).
func joinChunkSeries(sorted []*ChunkSeries) ([]*ChunkSeries, error) {
	return joinSorted(sorted)
}

// mergeByTime merges b into a, both sorted by time (of), one element per
// timestamp: of equal times the element of a is kept.
func mergeByTime[T any](a, b []T, of func(T) int64) []T {
	m := append(a, b...) //nolint:gocritic // a is the caller's, given up to the merge
	slices.SortStableFunc(m, func(x, y T) int { return cmp.Compare(of(x), of(y)) })
	return slices.CompactFunc(m, func(x, y T) bool { return of(x) == of(y) })
}

func sampleT(s Sample) int64             { return s.T }
func histogramT(s HistogramSample) int64 { return s.T }

func (s *Series) labelSet() labels.Labels { return s.Labels }

func (s *Series) firstT() int64 {
	t, ok := int64(0), false
	first := func(u int64) {
		if !ok || u < t {
			t, ok = u, true
		}
	}
	if len(s.Samples) > 0 {
		first(s.Samples[0].T)
	}
	if len(s.Histograms) > 0 {
		first(s.Histograms[0].T)
	}
	if len(s.Exemplars) > 0 {
		first(s.Exemplars[0].T)
	}
	if s.acc != nil && s.acc.n > 0 {
		first(s.acc.first)
	}
	return t
}

// join merges the samples and histograms of later into s by time, one per
// timestamp, and appends its exemplars, keeping them sorted by time.
func (s *Series) join(later *Series) error {
	s.Samples = mergeByTime(s.Samples, later.Samples, sampleT)
	s.Histograms = mergeByTime(s.Histograms, later.Histograms, histogramT)
	s.Exemplars = append(s.Exemplars, later.Exemplars...)
	slices.SortStableFunc(s.Exemplars, func(a, b Exemplar) int { return cmp.Compare(a.T, b.T) })
	s.inRange = s.inRange || later.inRange
	if later.acc != nil {
		if s.acc == nil {
			s.acc = &winAcc{}
		}
		s.acc.join(later.acc)
	}
	s.charged += later.charged
	return nil
}

func (s *ChunkSeries) labelSet() labels.Labels { return s.Labels }

func (s *ChunkSeries) firstT() int64 {
	switch {
	case len(s.rows) > 0:
		first := s.rows[0].base
		for _, r := range s.rows[1:] {
			first = min(first, r.base)
		}
		return int64(first) * 1000
	case len(s.Floats) > 0:
		return s.Floats[0].T
	case len(s.Chunks) > 0:
		return s.Chunks[0].MinT
	}
	return 0
}

// join joins the samples of later into s, with its budget charge. When
// later's chunks all come after s's (the parts of a scan cut in two, a
// series' rows of two hours in different parts) its chunks (or raw
// floats) are appended. Otherwise (one label set stored under two row
// keys, rare) their samples are decoded, merged by time (one per
// timestamp, later's sample dropped) and encoded again.
func (s *ChunkSeries) join(later *ChunkSeries) error {
	switch {
	case len(s.rows) > 0 || len(later.rows) > 0:
		// Rows are put in time order when decoded (RowDecoder).
		s.rows = append(s.rows, later.rows...)
		s.Bytes += later.Bytes
		return nil
	case len(s.Chunks) > 0 && len(later.Chunks) > 0 && s.Chunks[len(s.Chunks)-1].MaxT < later.Chunks[0].MinT:
		s.Chunks = append(s.Chunks, later.Chunks...)
		s.Samples += later.Samples
		s.Bytes += later.Bytes
		return nil
	case len(s.Floats) > 0 && len(later.Floats) > 0 && s.Floats[len(s.Floats)-1].T < later.Floats[0].T:
		s.Floats = append(s.Floats, later.Floats...)
		s.Samples += later.Samples
		s.Bytes += later.Bytes
		return nil
	}
	f1, h1, err := decodeSeries(s)
	if err != nil {
		return err
	}
	f2, h2, err := decodeSeries(later)
	if err != nil {
		return err
	}
	fs := mergeByTime(f1, f2, sampleT)
	hs := mergeByTime(h1, h2, histogramT)
	// Raw floats stay raw while there is no histogram, as the cutter of
	// a part keeps them.
	c := chunkCutter{raw: len(s.Floats) > 0 && len(later.Floats) > 0}
	if err := c.appendMerged(fs, hs); err != nil {
		return err
	}
	c.finish()
	s.Chunks, s.Floats, s.Samples, s.Bytes = c.chunks, c.floats, c.n, s.Bytes+later.Bytes
	return nil
}

// decodeSeries returns the samples of s: its raw floats, or those of its
// chunks and its histograms.
func decodeSeries(s *ChunkSeries) ([]Sample, []HistogramSample, error) {
	if len(s.Floats) > 0 {
		return slices.Clone(s.Floats), nil, nil
	}
	return DecodeChunks(s.Chunks)
}
