package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/internal/arena"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// selection accumulates the answer of one scan, or of a query's scans.
type selection struct {
	q    *Querier
	mode mode
	// rawFloats keeps the floats of series without histograms raw
	// (StreamFloats).
	rawFloats bool
	// rawRows keeps the rows of series as stored (FloatSelection).
	rawRows    bool
	start, end int64
	matchers   []*labels.Matcher
	series     map[string]*Series // metric ‖ tags -> series
	budget     *Budget            // shared by the selections of one request
	// ahead reports whether the scan works ahead of what is being handed
	// on (see Budget.reserve); nil means no.
	ahead func() bool
	// behind, when not nil, makes the scans work ahead while it reports
	// true (a FloatSelection's After).
	behind   func() bool
	keyBytes int64 // charged for the keys of series (matching or not)
	merger   cells.Merger
	hist     histScratch
	// pending are the keys of series met whose labels wait for a batched
	// read of their UIDs' names (resolvePending), in the order met.
	pending []string
	// win is the downsampled selection of modeWindows, winDec its
	// decoder.
	win    *WindowRequest
	winDec *rollup.Decoder
	// rowBytes and rowCells hold the kept rows' cells (rawRows): chunks
	// shared by the rows of one scan.
	rowBytes     arena.Arena
	rowBytesKept int
	rowCells     []store.Cell
}

// sub returns a selection of s's query for one scan.
func (s *selection) sub() *selection {
	sub := &selection{q: s.q, mode: s.mode, rawFloats: s.rawFloats, rawRows: s.rawRows, start: s.start, end: s.end, matchers: s.matchers, series: map[string]*Series{}, budget: s.budget, win: s.win}
	if s.win != nil {
		sub.winDec = rollup.NewDecoder(s.win.IDs)
		sub.winDec.Want = s.win.Func.needs() | rollup.HasHistograms
		sub.winDec.Every, sub.winDec.Last, sub.winDec.Span = s.win.sparse()
	}
	return sub
}

// tagConstraint is a tag that every selected row must carry, with the
// values it may have (nil: any value).
type tagConstraint struct {
	tagk   []byte
	values [][]byte
}

// constraints resolves the matchers to tag constraints. ok is false when
// no row can match (a required name or value has no UID).
func (s *selection) constraints(ctx context.Context) (cs []tagConstraint, ok bool, err error) {
	uids := s.q.mapper.UIDs()
	byTagk := map[string]*tagConstraint{}
	for _, m := range s.matchers {
		if m.Name == model.MetricNameLabel || m.Matches("") {
			continue // post-filter only: absent labels may match
		}
		tagks, err := uids.IDs(ctx, uid.KindTagK, m.Name)
		if errors.Is(err, uid.ErrNoSuchName) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if len(tagks) > 1 {
			// The name is stored in two forms (see mapping.StoredName);
			// one regex term cannot require either tag: post-filter only.
			continue
		}
		tagk := tagks[0]
		c := byTagk[string(tagk)]
		if c == nil {
			c = &tagConstraint{tagk: tagk}
			byTagk[string(tagk)] = c
		}
		var literals []string
		switch m.Type {
		case labels.MatchEqual:
			literals = []string{m.Value}
		case labels.MatchRegexp:
			literals = m.SetMatches()
		}
		if len(literals) == 0 || c.values != nil {
			continue // presence only, or already narrowed by another matcher
		}
		if len(literals) > 1 {
			if err := uids.LoadIDs(ctx, uid.KindTagV, literals); err != nil {
				return nil, false, err
			}
		}
		for _, v := range literals {
			ids, err := uids.IDs(ctx, uid.KindTagV, v)
			if errors.Is(err, uid.ErrNoSuchName) {
				continue
			}
			if err != nil {
				return nil, false, err
			}
			c.values = append(c.values, ids...)
		}
		if len(c.values) == 0 {
			return nil, false, nil
		}
	}
	for _, c := range byTagk {
		cs = append(cs, *c)
	}
	slices.SortFunc(cs, func(a, b tagConstraint) int { return bytes.Compare(a.tagk, b.tagk) })
	return cs, true, nil
}

// RowRegex builds the row-key regex of OpenTSDB's shape for the tag
// constraints:
//
//	(?s)^.{prefix}(?:.{pair})*<tagk>(?:<v1>|<v2>)(?:.{pair})*...\z
//
// with every UID byte written as \xHH. Constraints must be sorted by tagk
// UID, the order of the pairs in the row key.
func RowRegex(layout mapping.Layout, cs []tagConstraint) string {
	if len(cs) == 0 {
		return ""
	}
	pair := strconv.Itoa(layout.PairLen())
	re := make([]byte, 0, 64)
	re = append(re, `(?s)^.{`...)
	re = strconv.AppendInt(re, int64(layout.PrefixLen()), 10)
	re = append(re, '}')
	for _, c := range cs {
		re = append(re, `(?:.{`+pair+`})*`...)
		re = mapping.AppendRegexQuoted(re, c.tagk)
		if len(c.values) == 0 {
			re = append(re, `.{`...)
			re = strconv.AppendInt(re, int64(layout.TagVWidth), 10)
			re = append(re, '}')
			continue
		}
		re = append(re, `(?:`...)
		for i, v := range c.values {
			if i > 0 {
				re = append(re, '|')
			}
			re = mapping.AppendRegexQuoted(re, v)
		}
		re = append(re, ')')
	}
	re = append(re, `(?:.{`+pair+`})*\z`...)
	return string(re)
}

// rowFilter is the row filter of a query's scans in both forms.
type rowFilter struct {
	regex string
	match func([]byte) bool
	seek  func(dst, key []byte) []byte
}

func newRowFilter(layout mapping.Layout, cs []tagConstraint) rowFilter {
	return rowFilter{regex: RowRegex(layout, cs), match: RowMatcher(layout, cs), seek: RowSeeker(layout, cs)}
}

// scans are the scans of a query: per metric UID (a name may have two, see
// mapping.StoredName) and salt bucket, over the hours of [start, end].
func (s *selection) scans(ctx context.Context, names []string, f rowFilter) ([]store.ScanRequest, error) {
	uids := s.q.mapper.UIDs()
	if len(names) > 1 {
		if err := uids.LoadIDs(ctx, uid.KindMetric, names); err != nil {
			return nil, err
		}
	}
	var reqs []store.ScanRequest
	for _, name := range names {
		metrics, err := uids.IDs(ctx, uid.KindMetric, name)
		if errors.Is(err, uid.ErrNoSuchName) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, metric := range metrics {
			if s.mode == modeWindows {
				for _, r := range rollupRanges(s.q.mapper.Layout(), s.win.Interval, metric, s.start, s.end) {
					reqs = append(reqs, store.ScanRequest{Table: s.win.Interval.Table, Start: r.Start, Stop: r.Stop, Family: rollup.Family,
						RowRegex: f.regex, RowMatch: f.match, RowSeek: f.seek})
				}
				continue
			}
			for _, p := range s.hourParts() {
				for _, r := range s.q.mapper.Layout().MetricRanges(metric, p.from/1000, p.to/1000) {
					req := store.ScanRequest{Table: s.q.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: "t", RowRegex: f.regex, RowMatch: f.match, RowSeek: f.seek, KeysOnly: p.keysOnly}
					if s.mode == modeExemplars {
						req.Table, req.Family = s.q.opts.ExemplarTable, mapping.ExemplarFamily
					}
					reqs = append(reqs, req)
				}
			}
		}
	}
	return reqs, nil
}

// hourPart is a part of a selection's range, in whole hours of rows but
// at its edges (Unix milliseconds, inclusive).
type hourPart struct {
	from, to int64
	keysOnly bool // the rows' hours lie inside [start, end]: their keys say all
}

// hourParts returns the selection's range as one part, or, for
// SelectLabels, as the hours at its edges and the whole hours inside it,
// which are scanned for their keys only (see rowInRange: a row inside
// the range counts when it has a cell, none is decoded).
func (s *selection) hourParts() []hourPart {
	const hour = mapping.MaxOffsetMs
	whole := []hourPart{{from: s.start, to: s.end}}
	if s.mode != modeLabels || s.end-s.start+1 < hour {
		return whole
	}
	first := (s.start + hour - 1) / hour * hour // the first hour inside
	last := (s.end - hour + 1) / hour * hour    // the last hour inside
	if first > last {
		return whole
	}
	var parts []hourPart
	if s.start < first {
		parts = append(parts, hourPart{from: s.start, to: first - 1})
	}
	parts = append(parts, hourPart{from: first, to: last + hour - 1, keysOnly: true})
	if s.end >= last+hour {
		parts = append(parts, hourPart{from: last + hour, to: s.end})
	}
	return parts
}

// split cuts scans into parts that run at once (see schedule) when the
// cores a query may use (ScanConcurrency and GOMAXPROCS) are at least
// twice the scans and the store can cut a range (store.RangeSplitter):
// one large metric then takes every core, as many metrics or salt buckets
// do. A range of at least as many hours as parts is cut at hours
// (mapping.Layout.HourCuts: a series has a row an hour, so parts of equal
// hours hold about equal data, and finding them costs nothing); a shorter
// one where the store's estimate of its data says (SplitRange), which
// cost 0.2 ms a query, a twentieth of one of 20 series of a day. A series
// whose rows fall in two parts is joined when the parts are collected
// (collect); until then each part charges the budget for it (its labels,
// overhead and open chunk), so such a query may reach
// --query.max-bytes-per-query with fewer series than one scan would.
func (s *selection) split(ctx context.Context, reqs []store.ScanRequest) ([]store.ScanRequest, error) {
	sp, ok := store.As[store.RangeSplitter](s.q.st)
	par := min(s.q.opts.ScanConcurrency, runtime.GOMAXPROCS(0))
	if !ok || len(reqs) == 0 || par/len(reqs) < 2 {
		return reqs, nil
	}
	parts := par / len(reqs)
	out := make([]store.ScanRequest, 0, par)
	layout := s.q.mapper.Layout()
	for _, req := range reqs {
		keys := layout.HourCuts(mapping.KeyRange{Start: req.Start, Stop: req.Stop}, parts)
		if keys == nil {
			var err error
			if keys, err = sp.SplitRange(ctx, req.Table, req.Start, req.Stop, parts); err != nil {
				return nil, fmt.Errorf("split scan %s [%x, %x): %w", req.Table, req.Start, req.Stop, err)
			}
		}
		start := req.Start
		for _, k := range keys {
			part := req
			part.Start, part.Stop = start, k
			out = append(out, part)
			start = k
		}
		last := req
		last.Start = start
		out = append(out, last)
	}
	return out, nil
}
