package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// cardFilter is match[] as UIDs: a series passes when it passes one of
// the sets. A nil filter passes every series.
type cardFilter struct {
	sets         []matchSet
	tagkW, pairW int
	metricW      int
}

// matchSet is one selector: the metrics it allows (nil: any) and a
// condition a label.
type matchSet struct {
	metrics map[uint64]struct{}
	conds   []labelCond
}

// labelCond is a matcher of a label other than __name__: a series with
// the label (one of tagks) passes when its value is one of values, one
// without it when empty.
type labelCond struct {
	tagks  []uint64
	values map[uint64]struct{}
	empty  bool
}

// match reports whether the series of metric and tags passes f.
func (f *cardFilter) match(metric, tags []byte) bool {
	if f == nil {
		return true
	}
	m := uid64(metric)
sets:
	for i := range f.sets {
		s := &f.sets[i]
		if s.metrics != nil {
			if _, ok := s.metrics[m]; !ok {
				continue
			}
		}
		for j := range s.conds {
			if !s.conds[j].pass(tags, f.tagkW, f.pairW) {
				continue sets
			}
		}
		return true
	}
	return false
}

// pass reports whether tags pass the condition.
func (c *labelCond) pass(tags []byte, tagkW, pairW int) bool {
	for i := 0; i+pairW <= len(tags); i += pairW {
		k := uid64(tags[i : i+tagkW])
		if slices.Contains(c.tagks, k) {
			_, ok := c.values[uid64(tags[i+tagkW:i+pairW])]
			return ok
		}
	}
	return c.empty
}

// metricRanges returns the metric UIDs f allows, sorted, when every set
// names its metrics; nil when some set allows any.
func (f *cardFilter) metricRanges() [][]byte {
	if f == nil {
		return nil
	}
	all := map[uint64]struct{}{}
	for _, s := range f.sets {
		if s.metrics == nil {
			return nil
		}
		for m := range s.metrics {
			all[m] = struct{}{}
		}
	}
	out := make([][]byte, 0, len(all))
	for m := range all {
		out = append(out, uidBytes(m, f.metricW))
	}
	slices.SortFunc(out, func(a, b []byte) int { return cmp.Compare(string(a), string(b)) })
	return out
}

// compileMatch turns match[] into a filter over the UIDs of the days: nil
// for no sets; errNoSeries when no series can pass.
func (r *Reader) compileMatch(ctx context.Context, sets [][]*labels.Matcher, days []uint32) (*cardFilter, error) {
	if len(sets) == 0 {
		return nil, nil
	}
	f := &cardFilter{tagkW: r.layout.TagKWidth, pairW: r.layout.PairLen(), metricW: r.layout.MetricWidth}
	start, end := int64(days[0])*mapping.DaySeconds*1000, int64(days[len(days)-1])*mapping.DaySeconds*1000
	for _, ms := range sets {
		s, err := r.compileSet(ctx, ms, start, end)
		if errors.Is(err, errNoSeries) {
			continue
		}
		if err != nil {
			return nil, err
		}
		f.sets = append(f.sets, s)
	}
	if len(f.sets) == 0 {
		return nil, errNoSeries
	}
	return f, nil
}

// compileSet compiles one selector for the days of [start, end].
func (r *Reader) compileSet(ctx context.Context, ms []*labels.Matcher, start, end int64) (matchSet, error) {
	var s matchSet
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			got, err := r.matchingUIDs(ctx, uid.KindMetric, m, func() ([][]byte, error) {
				return r.qualifiers(ctx, mapping.IndexKindMetrics, start, end)
			})
			if err != nil {
				return s, err
			}
			if s.metrics != nil {
				for k := range s.metrics {
					if _, ok := got[k]; !ok {
						delete(s.metrics, k)
					}
				}
			} else {
				s.metrics = got
			}
			if len(s.metrics) == 0 {
				return s, errNoSeries
			}
			continue
		}
		c := labelCond{empty: m.Matches("")}
		var err error
		if c.tagks, err = r.tagkUIDs(ctx, m.Name); err != nil {
			return s, err
		}
		if len(c.tagks) == 0 {
			// No series has the label.
			if !c.empty {
				return s, errNoSeries
			}
			continue
		}
		c.values, err = r.matchingUIDs(ctx, uid.KindTagV, m, func() ([][]byte, error) {
			return r.valuesOf(ctx, m.Name, start, end, nil)
		})
		if err != nil {
			return s, err
		}
		if len(c.values) == 0 && !c.empty {
			return s, errNoSeries
		}
		s.conds = append(s.conds, c)
	}
	return s, nil
}

// maxSetNames bounds the alternatives of a regex matcher that are looked
// up as names instead of listing the label's values.
const maxSetNames = 64

// matchingUIDs returns the UIDs of kind whose names m matches: by name
// for an equality or a short alternation, else among those list gives.
func (r *Reader) matchingUIDs(ctx context.Context, kind uid.Kind, m *labels.Matcher, list func() ([][]byte, error)) (map[uint64]struct{}, error) {
	out := map[uint64]struct{}{}
	names := m.SetMatches()
	if m.Type == labels.MatchEqual {
		names = []string{m.Value}
	}
	if len(names) > 0 && len(names) <= maxSetNames && (m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp) {
		for _, n := range names {
			if n == "" {
				continue
			}
			ids, err := r.uids.IDs(ctx, kind, n)
			if errors.Is(err, uid.ErrNoSuchName) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				out[uid64(id)] = struct{}{}
			}
		}
		return out, nil
	}
	uids, err := list()
	if err != nil {
		return nil, err
	}
	err = r.eachName(ctx, kind, uids, func(u []byte, name string) {
		if m.Matches(name) {
			out[uid64(u)] = struct{}{}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxLensUID bounds the UIDs whose name lengths valueLens keeps in its
// table (two bytes each: 32 MiB at most); longer UIDs are read each time.
const maxLensUID = 1 << 24

// valueLens keeps the lengths of tag values' names by UID, for
// memoryInBytesByLabelName: a UID's name never changes, so a length read
// once stays true. The table is filled by scanning the UID table's
// reverse rows up to the largest UID asked for; UIDs it found without a
// name (written later) are read one batch at a time when asked for.
type valueLens struct {
	mu      sync.Mutex
	lens    []uint16 // by UID: the name's length + 1; 0 unknown, 0xFFFF too long to keep
	scanned uint64   // the reverse rows of UIDs below this were scanned
}

// fill makes the lengths of the UIDs up to upTo (below maxLensUID) known
// as far as the UID table knows them: its reverse rows not scanned yet,
// in parts scanned at once. Called with mu held.
func (v *valueLens) fill(ctx context.Context, r *Reader, upTo uint64) error {
	upTo = min(upTo, maxLensUID-1)
	if upTo < v.scanned {
		return nil
	}
	if n := int(upTo) + 1; n > len(v.lens) {
		v.lens = append(v.lens, make([]uint16, n-len(v.lens))...)
	}
	from := max(v.scanned, 1)
	parts := uint64(max(1, min(runtime.GOMAXPROCS(0), int(upTo+1-from)/lensPart)))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := from+(upTo+1-from)*i/parts, from+(upTo+1-from)*(i+1)/parts
		wg.Go(func() { errs[i] = v.scan(ctx, r, lo, hi) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	v.scanned = upTo + 1
	return nil
}

// lensPart is the fewest UIDs a part of fill scans.
const lensPart = 1 << 16

// scan reads the lengths of the names of tag values [lo, hi) from their
// reverse rows into lens (each part its own elements).
func (v *valueLens) scan(ctx context.Context, r *Reader, lo, hi uint64) error {
	w := r.layout.TagVWidth
	var stop []byte
	if hi < 1<<(8*min(w, 7)) {
		stop = uidBytes(hi, w)
	}
	sc := r.st.Scan(ctx, store.ScanRequest{Table: r.uids.Table(), Start: uidBytes(lo, w), Stop: stop, Family: uid.FamilyName})
	defer sc.Close()
	q := uid.KindTagV.Qualifier()
	for sc.Next() {
		row := sc.Row()
		if len(row.Key) != w {
			continue
		}
		id := uid64(row.Key)
		for _, c := range row.Cells {
			if string(c.Qualifier) == q && id >= lo && id < hi {
				v.lens[id] = lenCode(mapping.NameLenFromStored(c.Value))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan the names of tag values %d to %d: %w", lo, hi-1, err)
	}
	return nil
}

// lenCode is a name length as valueLens keeps it.
func lenCode(n int) uint16 { return uint16(min(n+1, 0xFFFF)) }

// length returns the length of the name of tag value id; ok is false when
// the table does not know it.
func (v *valueLens) length(id uint64) (int, bool) {
	if id >= uint64(len(v.lens)) {
		return 0, false
	}
	c := v.lens[id]
	if c == 0 || c == 0xFFFF {
		return 0, false
	}
	return int(c) - 1, true
}

// lookup reads the lengths of ids' names (those the table does not
// know), keeps them and calls fn with each id that has a name.
func (v *valueLens) lookup(ctx context.Context, r *Reader, ids []uint64, fn func(id uint64, n int)) error {
	w := r.layout.TagVWidth
	uids := make([][]byte, len(ids))
	for i, id := range ids {
		uids[i] = uidBytes(id, w)
	}
	return r.eachName(ctx, uid.KindTagV, uids, func(u []byte, name string) {
		id := uid64(u)
		if id < uint64(len(v.lens)) {
			v.lens[id] = lenCode(len(name))
		}
		fn(id, len(name))
	})
}
