package series

import "sync/atomic"

// TSUID returns the series' TSUID: metric UID ‖ tag pairs.
func (s Series) TSUID() []byte {
	return append(append(make([]byte, 0, len(s.Metric)+len(s.Tags)), s.Metric...), s.Tags...)
}

// indexMark remembers the last index day a cached series was indexed for
// in this process (0: never). Series made by the Mapper carry one; the
// write path checks it per row, so a series already indexed for the day
// costs one atomic load.
type indexMark struct {
	day atomic.Uint32
	// fresh marks the UIDs of the series assigned when it was resolved:
	// bit i for its tag pair i (in row key order, i < freshOther), the
	// freshOther bit for a later pair, the freshMetric bit for its metric.
	// 0: none.
	fresh uint32
}

const (
	freshOther  = 30
	freshMetric = 31
)

// IndexedFor reports whether s was indexed for day by this process (the
// last day it was; false for a Series the Mapper did not make).
func (s Series) IndexedFor(day uint32) bool {
	return s.mark != nil && s.mark.day.Load() == day+1
}

// NewToIndex reports whether s was never indexed by this process.
func (s Series) NewToIndex() bool { return s.mark == nil || s.mark.day.Load() == 0 }

// Fresh reports whether one of the series' UIDs was assigned by this
// process when it resolved the series: no stored row (its TSMeta row
// included) can name the series yet.
func (s Series) Fresh() bool { return s.mark != nil && s.mark.fresh != 0 }

// FreshCell reports whether the index cell of the series' tag pair i
// (in row key order; i < 0: a cell of the metric alone) can be named by no
// stored row yet: the metric's UID or (i >= 0) a UID of the pair was
// assigned when this process resolved the series.
func (s Series) FreshCell(i int) bool {
	if s.mark == nil {
		return false
	}
	f := s.mark.fresh
	return f&(1<<freshMetric) != 0 || i >= 0 && i < freshOther && f&(1<<i) != 0
}

// SetIndexedFor records that s was indexed for day.
func (s Series) SetIndexedFor(day uint32) {
	if s.mark != nil {
		s.mark.day.Store(day + 1)
	}
}
