package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// The cardinality view (/api/v1/status/tsdb): counts of the series of a
// day, or of a range of days, read from the index's 'S' cells in one pass
// (mapping/index.go): a cell a series, in the order (metric, bucket of
// the tags, tags), so that a metric's series come together and, within a
// bucket, series that share their first labels follow each other. The
// pass counts runs of equal pairs at each position of the tag list and
// adds a run to the pair counts (pages of counters by tagv UID,
// cardpages.go) when it ends: a comparison for the pairs series share, an
// array increment for the others, no allocation a series. Workers scan
// parts of the day at once (store.RangeSplitter's cuts, or cuts between
// the day's metrics and buckets) and their counts are added up at the
// end. Memory grows with the distinct label pairs met (64 MiB of pages a
// worker at most, a map past them), not with the series; a range of days
// merges one scanner a day, so a series met on several days counts once.
//
// What costs more than the series of the range:
//   - a match[] matcher other than an equality (or a short alternation)
//     lists the values its label has on those days from the 'V' rows and
//     reads their names: a regex over a label of a million values reads
//     a million names;
//   - memoryInBytesByLabelName needs the length of the name of every
//     label value met: the Reader keeps them by UID (two bytes a UID, for
//     UIDs below 2^24), read once by a scan of the UID table's reverse
//     rows, then for new UIDs only;
//   - a range of days costs a scanner a day (AllDays: a seek a day to find
//     them), and the days' rows are merged.

// CardinalityQuery says which series Cardinality counts and how long its
// rankings are.
type CardinalityQuery struct {
	// From and To are the days (mapping.DayOf) whose series count: a
	// series counts once when it has data on any day of [From, To].
	From, To uint32
	// AllDays counts the series of every day the index holds instead
	// (VictoriaMetrics's date=1970-01-01).
	AllDays bool
	// Match selects the series counted: those matching every matcher of
	// one of its sets (VictoriaMetrics's match[]); none: every series.
	Match [][]*labels.Matcher
	// FocusLabel is the label whose values SeriesCountByFocusLabelValue
	// ranks by series; empty: none.
	FocusLabel string
	// TopN is the length of each ranking; 0 means 10.
	TopN int
}

// Stat is an entry of a ranking: a name and its count.
type Stat struct {
	Name  string
	Value uint64
}

// Cardinality is what Cardinality counted. Every ranking is sorted by
// Value, largest first, then by Name; of entries tied at the last place
// kept, those of the smallest UIDs are kept.
type Cardinality struct {
	// TotalSeries is the series counted.
	TotalSeries uint64
	// TotalLabelValuePairs is the labels of those series summed, the
	// metric name included (VictoriaMetrics's totalLabelValuePairs).
	TotalLabelValuePairs uint64
	// LabelPairs is the distinct label=value pairs among them, the
	// metric names' included (Prometheus's headStats.numLabelPairs).
	LabelPairs uint64
	// SeriesCountByMetricName ranks metric names by series.
	SeriesCountByMetricName []Stat
	// SeriesCountByLabelName ranks label names by the series that carry
	// them (__name__: every series).
	SeriesCountByLabelName []Stat
	// SeriesCountByFocusLabelValue ranks the values of the query's
	// FocusLabel by series.
	SeriesCountByFocusLabelValue []Stat
	// SeriesCountByLabelValuePair ranks "name=value" pairs by series.
	SeriesCountByLabelValuePair []Stat
	// LabelValueCountByLabelName ranks label names by distinct values.
	LabelValueCountByLabelName []Stat
	// MemoryInBytesByLabelName ranks label names by the bytes the
	// series' labels of that name take in Prometheus's head (its
	// labels.SizeOfLabels: name and value, each with its length's
	// encoding, once a series).
	MemoryInBytesByLabelName []Stat
	// From and To are the days counted (with AllDays: the first and last
	// the index holds; From > To when it holds none).
	From, To uint32
	// Partial reports that some of those days precede the day from which
	// the index has every series' 'S' row (an index kept by an earlier
	// version): series written only then are not counted until a
	// `promhbase reindex` of those days.
	Partial bool
}

// errNoSeries ends a count that no series can match.
var errNoSeries = errors.New("no series can match")

// Cardinality counts the series q selects on its days from the 'S' rows
// (see the package's cardinality view above). It is safe for concurrent
// use.
func (r *Reader) Cardinality(ctx context.Context, q CardinalityQuery) (*Cardinality, error) {
	if q.TopN <= 0 {
		q.TopN = 10
	}
	days, err := r.cardDays(ctx, q)
	if err != nil {
		return nil, err
	}
	res := &Cardinality{From: 1, To: 0}
	if q.AllDays {
		if len(days) > 0 {
			res.From, res.To = days[0], days[len(days)-1]
		}
	} else {
		res.From, res.To = q.From, q.To
	}
	empty := func() *Cardinality {
		res.SeriesCountByMetricName, res.SeriesCountByLabelName, res.SeriesCountByFocusLabelValue = []Stat{}, []Stat{}, []Stat{}
		res.SeriesCountByLabelValuePair, res.LabelValueCountByLabelName, res.MemoryInBytesByLabelName = []Stat{}, []Stat{}, []Stat{}
		return res
	}
	if res.From <= res.To {
		if res.Partial, err = r.seriesPartial(ctx, res.From); err != nil {
			return nil, err
		}
	}
	if len(days) == 0 {
		return empty(), nil
	}
	filter, err := r.compileMatch(ctx, q.Match, days)
	if errors.Is(err, errNoSeries) {
		return empty(), nil
	}
	if err != nil {
		return nil, err
	}
	hidden, err := r.tagkUIDs(ctx, mapping.MetricLabel)
	if err != nil {
		return nil, err
	}
	workers := runtime.GOMAXPROCS(0)
	ranges, err := r.cardRanges(ctx, days, filter.metricRanges(), 4*workers)
	if err != nil {
		return nil, err
	}
	t, err := countAll(ctx, r, days, ranges, filter, hidden, workers)
	if err != nil {
		return nil, err
	}
	defer t.pairs.release()
	if err := r.rank(ctx, t, q, res); err != nil {
		return nil, err
	}
	return res, nil
}

// cardDays returns the days q counts that may hold 'S' rows: [From, To],
// or with AllDays those that hold some (a seek a day).
func (r *Reader) cardDays(ctx context.Context, q CardinalityQuery) ([]uint32, error) {
	if !q.AllDays {
		if q.To < q.From {
			return nil, nil
		}
		if q.To-q.From >= MaxDays {
			return nil, fmt.Errorf("cardinality of days %d to %d: at most %d days at once", q.From, q.To, MaxDays)
		}
		days := make([]uint32, 0, q.To-q.From+1)
		for d := q.From; ; d++ {
			days = append(days, d)
			if d == q.To {
				return days, nil
			}
		}
	}
	var days []uint32
	start := mapping.AppendIndexSeriesPrefix(nil, 0, nil)
	stop := store.PrefixEnd([]byte{mapping.IndexKindSeries})
	for {
		k, err := r.firstKey(ctx, start, stop)
		if err != nil {
			return nil, err
		}
		d, _, ok := mapping.IndexSeriesRowOf(k)
		if !ok {
			return days, nil
		}
		if len(days) == MaxDays {
			return nil, fmt.Errorf("cardinality of every day: the index holds more than %d days; name a range", MaxDays)
		}
		days = append(days, d)
		if d == ^uint32(0) {
			return days, nil
		}
		start = mapping.AppendIndexSeriesPrefix(start[:0], d+1, nil)
	}
}

// firstKey returns the key of the first row of the index in [start,
// stop), nil when there is none.
func (r *Reader) firstKey(ctx context.Context, start, stop []byte) ([]byte, error) {
	sc := r.st.Scan(ctx, store.ScanRequest{Table: r.table, Start: start, Stop: stop, Family: mapping.IndexFamily, KeysOnly: true})
	defer sc.Close()
	if sc.Next() {
		return slices.Clone(sc.Row().Key), nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan index rows from %x: %w", start, err)
	}
	return nil, nil
}

// seriesPartial reports whether day precedes the coverage of the 'S'
// rows.
func (r *Reader) seriesPartial(ctx context.Context, day uint32) (bool, error) {
	row, err := r.st.Get(ctx, r.table, mapping.IndexCoverageKey, mapping.IndexFamily)
	if err != nil {
		return false, fmt.Errorf("read index coverage: %w", err)
	}
	since, ok := coverageOf(row, mapping.IndexSeriesSinceQual)
	return !ok || day < since, nil
}

// tagkUIDs returns the tagk UIDs of name (as integers); none when it has
// none.
func (r *Reader) tagkUIDs(ctx context.Context, name string) ([]uint64, error) {
	ids, err := r.uids.IDs(ctx, uid.KindTagK, name)
	if errors.Is(err, uid.ErrNoSuchName) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uid64(id)
	}
	return out, nil
}

// tsuidRange is a range [lo, hi) of what follows the day in 'S' row
// keys (metric UID ‖ bucket); hi nil: to the day's end.
type tsuidRange struct{ lo, hi []byte }

// cardRanges cuts the 'S' rows of a day into about parts ranges for the
// workers: one a metric of metrics when not nil; else at the cuts the
// store suggests for the last day (store.RangeSplitter), or between the
// days' metrics.
func (r *Reader) cardRanges(ctx context.Context, days []uint32, metrics [][]byte, parts int) ([]tsuidRange, error) {
	if metrics != nil {
		out := make([]tsuidRange, len(metrics))
		for i, m := range metrics {
			out[i] = tsuidRange{lo: m, hi: store.PrefixEnd(m)}
		}
		return out, nil
	}
	var cuts [][]byte
	if sp, ok := store.As[store.RangeSplitter](r.st); ok && parts > 1 {
		d := days[len(days)-1]
		p := mapping.AppendIndexSeriesPrefix(nil, d, nil)
		keys, err := sp.SplitRange(ctx, r.table, p, store.PrefixEnd(p), parts)
		if err != nil {
			return nil, fmt.Errorf("cut the series rows of day %d: %w", d, err)
		}
		for _, k := range keys {
			if kd, rest, ok := mapping.IndexSeriesRowOf(k); ok && kd == d {
				cuts = append(cuts, slices.Clone(rest))
			}
		}
	}
	if len(cuts) < parts/4 && parts > 1 {
		// The store cannot tell (rows not yet on disk, or no splitter):
		// cut between the days' metrics, and within metrics at their
		// buckets, which hold about as many series each.
		ms, err := r.qualifiers(ctx, mapping.IndexKindMetrics, int64(days[0])*mapping.DaySeconds*1000, int64(days[len(days)-1])*mapping.DaySeconds*1000)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(ms, func(a, b []byte) int { return cmp.Compare(string(a), string(b)) })
		cuts = metricCuts(ms, parts)
	}
	out := make([]tsuidRange, 0, len(cuts)+1)
	var lo []byte
	for _, c := range cuts {
		if lo != nil && string(c) <= string(lo) {
			continue
		}
		out = append(out, tsuidRange{lo: lo, hi: c})
		lo = c
	}
	return append(out, tsuidRange{lo: lo}), nil
}

// metricCuts cuts the 'S' rows of sorted metrics into about parts ranges:
// at every len(ms)/parts-th metric, or with fewer metrics than parts at
// each metric and at equal steps of its buckets.
func metricCuts(ms [][]byte, parts int) [][]byte {
	var cuts [][]byte
	if len(ms) >= parts {
		for i := 1; i < parts; i++ {
			cuts = append(cuts, ms[i*len(ms)/parts])
		}
		return cuts
	}
	per := (parts + len(ms) - 1) / max(len(ms), 1)
	for i, m := range ms {
		if i > 0 {
			cuts = append(cuts, m)
		}
		for j := 1; j < per; j++ {
			cuts = append(cuts, append(slices.Clone(m), byte(256*j/per)))
		}
	}
	return cuts
}

// countAll runs workers over ranges and returns their counts added up.
func countAll(ctx context.Context, r *Reader, days []uint32, ranges []tsuidRange, f *cardFilter, hidden []uint64, workers int) (*tally, error) {
	workers = max(1, min(workers, len(ranges)))
	tallies := make([]*tally, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		t := newTally(r.layout.TagKWidth, r.layout.PairLen(), hidden, &r.pages)
		tallies[w] = t
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ranges) || ctx.Err() != nil {
					return
				}
				if err := r.countRange(ctx, days, ranges[i], f, t.add, t.endRuns); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("count series: %w", err)
	}
	t := tallies[0]
	t.finish()
	for _, o := range tallies[1:] {
		o.finish()
		t.merge(o)
	}
	return t, nil
}
