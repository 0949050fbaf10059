package deletion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// maxPruneCandidates bounds the (day, tag pair) cells a pruner holds
// before it checks them; past it, it checks what it holds (a cell whose
// other rows are deleted later in the same delete then stays).
const maxPruneCandidates = 1 << 16

// maxRegexPairs bounds the tag pairs the row filter of a check names; a
// check of more reads every row of the metric's day.
const maxRegexPairs = 256

// pruner collects, from the data rows a delete deleted samples from, the
// series index cells those rows may have been the last support of, a
// metric at a time (the rows come metric by metric), and removes the
// cells no data left supports (see the package doc).
type pruner struct {
	d       *Deleter
	lastDay int64 // the last day whose cells may go
	off     bool  // the index table is missing: nothing to prune
	metric  []byte
	days    map[uint32]map[string]struct{} // day -> tag pairs (tagk ‖ tagv)
	series  map[uint32]map[string]struct{} // day -> the series' tags
	n       int
}

// note adds the index cells of the data row key.
func (p *pruner) note(ctx context.Context, key []byte, st *Stats) error {
	l := p.d.opts.Layout
	_, metric, base, tags, err := l.ParseRowKey(key)
	if err != nil {
		// Rows hands on data rows of the layout only.
		return fmt.Errorf("index cells of row %x: %w", key, err)
	}
	day := base / mapping.DaySeconds
	if p.off || int64(day) > p.lastDay {
		return nil
	}
	if p.metric != nil && (!bytes.Equal(metric, p.metric) || p.n >= maxPruneCandidates) {
		if err := p.flush(ctx, st); err != nil {
			return err
		}
	}
	if p.metric == nil {
		p.metric = bytes.Clone(metric)
		p.days = map[uint32]map[string]struct{}{}
		p.series = map[uint32]map[string]struct{}{}
	}
	set := p.days[day]
	if set == nil {
		set = map[string]struct{}{}
		p.days[day] = set
		p.series[day] = map[string]struct{}{}
	}
	if _, ok := p.series[day][string(tags)]; !ok {
		p.series[day][string(tags)] = struct{}{}
		p.n++
	}
	pair := l.PairLen()
	for i := 0; i+pair <= len(tags); i += pair {
		if _, ok := set[string(tags[i:i+pair])]; !ok {
			set[string(tags[i:i+pair])] = struct{}{}
			p.n++
		}
	}
	return nil
}

// flush checks and prunes what the pruner holds, then forgets it.
func (p *pruner) flush(ctx context.Context, st *Stats) error {
	if p.metric == nil {
		return nil
	}
	metric, days, series := p.metric, p.days, p.series
	p.metric, p.days, p.series, p.n = nil, nil, nil, 0
	order := make([]uint32, 0, len(days))
	for day := range days {
		order = append(order, day)
	}
	slices.Sort(order)
	for _, day := range order {
		if p.off {
			return nil
		}
		if err := p.pruneDay(ctx, metric, day, days[day], series[day], st); err != nil {
			return err
		}
	}
	return nil
}

// pruneDay removes the index cells of metric on day that no data row left
// supports: the 'V' cells of pairs, the 'S' cells of the series (of their
// tags), the 'N' cell, and the 'K' cells of the tag names whose 'V' rows
// of the day are left empty. The cells' versions are read first and the
// deletes bounded by them, so that a cell written again while the data is
// checked stays.
func (p *pruner) pruneDay(ctx context.Context, metric []byte, day uint32, pairs, series map[string]struct{}, st *Stats) error {
	d := p.d
	if f := d.opts.IndexWriter; f != nil {
		before := st.IndexCells
		defer func() {
			if st.IndexCells > before {
				f.Forget(day, day)
			}
		}()
	}
	l := d.opts.Layout
	idx := d.opts.IndexTable
	nKey := mapping.AppendIndexDayKey(nil, mapping.IndexKindMetrics, day)
	nVer, err := p.version(ctx, nKey, metric)
	if errors.Is(err, store.ErrTableNotFound) {
		p.d.opts.Logger.Warn("no series index table: its cells of deleted series stay", "table", idx, "err", err)
		p.off = true
		return nil
	}
	if err != nil {
		return err
	}
	kKey := mapping.AppendIndexDayKey(nil, mapping.IndexKindTagKs, day)
	vVer := map[string]uint64{}
	kVer := map[string]uint64{}
	for pair := range pairs {
		tagk, tagv := []byte(pair[:l.TagKWidth]), []byte(pair[l.TagKWidth:])
		v, err := p.version(ctx, mapping.AppendIndexValueKey(nil, day, tagk, tagv), metric)
		if err != nil {
			return err
		}
		if v == 0 {
			continue
		}
		vVer[pair] = v
		if _, ok := kVer[string(tagk)]; !ok {
			k, err := p.version(ctx, kKey, tagk)
			if err != nil {
				return err
			}
			kVer[string(tagk)] = k
		}
	}
	sVer := map[string]uint64{} // the series' tags -> their 'S' cell's version
	for tags := range series {
		v, err := p.version(ctx, mapping.AppendIndexSeriesKey(nil, day, metric, []byte(tags)), []byte(tags))
		if err != nil {
			return err
		}
		if v != 0 {
			sVer[tags] = v
		}
	}
	if nVer == 0 && len(vVer) == 0 && len(sVer) == 0 {
		return nil
	}
	// The data left on the day: any row of the metric, and the rows with
	// the pairs whose cells may go.
	from := int64(day) * mapping.DaySeconds
	ranges := l.MetricRanges(metric, from, from+mapping.DaySeconds-1)
	hasRows := false
	for _, r := range ranges {
		k, err := store.FirstKey(ctx, d.st, d.opts.DataTable, r.Start, r.Stop)
		if err != nil {
			return err
		}
		if k != nil {
			hasRows = true
			break
		}
	}
	if hasRows && (len(vVer) > 0 || len(sVer) > 0) {
		if err := p.strikeSupported(ctx, ranges, vVer, sVer); err != nil {
			return err
		}
	}
	for tags, v := range sVer {
		if err := p.deleteCell(ctx, mapping.AppendIndexSeriesKey(nil, day, metric, []byte(tags)), []byte(tags), v, st); err != nil {
			return err
		}
	}
	emptied := map[string]bool{}
	for pair, v := range vVer {
		tagk, tagv := []byte(pair[:l.TagKWidth]), []byte(pair[l.TagKWidth:])
		if err := p.deleteCell(ctx, mapping.AppendIndexValueKey(nil, day, tagk, tagv), metric, v, st); err != nil {
			return err
		}
		emptied[string(tagk)] = true
	}
	if !hasRows && nVer != 0 {
		if err := p.deleteCell(ctx, nKey, metric, nVer, st); err != nil {
			return err
		}
	}
	for tagk := range emptied {
		v := kVer[tagk]
		if v == 0 {
			continue
		}
		prefix := mapping.AppendIndexValueKey(nil, day, []byte(tagk), nil)
		k, err := store.FirstKey(ctx, d.st, idx, prefix, store.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		if k == nil {
			if err := p.deleteCell(ctx, kKey, []byte(tagk), v, st); err != nil {
				return err
			}
		}
	}
	return nil
}

// strikeSupported scans the keys of the data rows in ranges that carry
// one of the pairs of cand or of the series of series (their tags), and
// removes those pairs from cand and those series from series.
func (p *pruner) strikeSupported(ctx context.Context, ranges []mapping.KeyRange, cand, series map[string]uint64) error {
	d := p.d
	l := d.opts.Layout
	pair := l.PairLen()
	req := store.ScanRequest{Table: d.opts.DataTable, Family: dataFamily, KeysOnly: true}
	// The rows of a series carry its pairs: the filter is of the pairs of
	// both.
	pairs := maps.Clone(cand)
	for tags := range series {
		for i := 0; i+pair <= len(tags) && len(pairs) <= maxRegexPairs; i += pair {
			pairs[tags[i:i+pair]] = 0
		}
	}
	if len(pairs) <= maxRegexPairs {
		req.RowRegex, req.RowMatch = pairFilter(l, pairs)
	}
	for _, r := range ranges {
		if len(cand) == 0 && len(series) == 0 {
			return nil
		}
		req.Start, req.Stop = r.Start, r.Stop
		sc := d.st.Scan(ctx, req)
		for sc.Next() && (len(cand) > 0 || len(series) > 0) {
			_, _, _, tags, err := l.ParseRowKey(sc.Row().Key)
			if err != nil {
				continue
			}
			for i := 0; i+pair <= len(tags); i += pair {
				delete(cand, string(tags[i:i+pair]))
			}
			delete(series, string(tags))
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return fmt.Errorf("scan %s [%x, %x): %w", req.Table, r.Start, r.Stop, err)
		}
	}
	return nil
}

// pairFilter returns the row filter that keeps the rows carrying one of
// the tag pairs of cand, as a regex of OpenTSDB's shape and as a function.
func pairFilter(l mapping.Layout, cand map[string]uint64) (string, func([]byte) bool) {
	pairs := make([]string, 0, len(cand))
	for p := range cand {
		pairs = append(pairs, p)
	}
	slices.Sort(pairs)
	pl := strconv.Itoa(l.PairLen())
	re := []byte(`(?s)^.{` + strconv.Itoa(l.PrefixLen()) + `}(?:.{` + pl + `})*(?:`)
	for i, p := range pairs {
		if i > 0 {
			re = append(re, '|')
		}
		re = mapping.AppendRegexQuoted(re, []byte(p))
	}
	re = append(re, `)(?:.{`+pl+`})*\z`...)
	set := make(map[string]struct{}, len(pairs))
	for _, p := range pairs {
		set[p] = struct{}{}
	}
	pair := l.PairLen()
	match := func(key []byte) bool {
		_, _, _, tags, err := l.ParseRowKey(key)
		if err != nil {
			return false
		}
		for i := 0; i+pair <= len(tags); i += pair {
			if _, ok := set[string(tags[i:i+pair])]; ok {
				return true
			}
		}
		return false
	}
	return string(re), match
}

// version returns the version of the index cell qual of row, 0 when it is
// absent.
func (p *pruner) version(ctx context.Context, row, qual []byte) (uint64, error) {
	r, err := p.d.st.Get(ctx, p.d.opts.IndexTable, row, mapping.IndexFamily)
	if err != nil {
		return 0, fmt.Errorf("read index row %x: %w", row, err)
	}
	for _, c := range r.Cells {
		if bytes.Equal(c.Qualifier, qual) {
			return max(c.Timestamp, 1), nil
		}
	}
	return 0, nil
}

// deleteCell deletes the index cell qual of row, bounded by version.
func (p *pruner) deleteCell(ctx context.Context, row, qual []byte, version uint64, st *Stats) error {
	col := store.Column{Family: []byte(mapping.IndexFamily), Qualifier: qual, Timestamp: version}
	if err := p.d.st.Delete(ctx, p.d.opts.IndexTable, row, []store.Column{col}); err != nil {
		return fmt.Errorf("delete index cell %x of row %x: %w", qual, row, err)
	}
	st.IndexCells++
	p.d.indexCells.Inc()
	return nil
}
