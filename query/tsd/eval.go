package tsd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// scanner is the part of the store the evaluator reads.
type scanner interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}

// uidNames resolves names to UIDs and back (uid.UIDs).
type uidNames interface {
	ID(ctx context.Context, kind uid.Kind, name string) ([]byte, error)
	Name(ctx context.Context, kind uid.Kind, uid []byte) (string, error)
}

// Evaluator answers queries over one data table.
type Evaluator struct {
	st     scanner
	uids   uidNames
	layout mapping.Layout
	table  string
	// metaTable holds the TSMeta rows a lookup in meta mode scans
	// (SetMetaTable).
	metaTable string
}

// New returns an Evaluator of the rows of table, laid out as layout.
func New(st scanner, uids uidNames, layout mapping.Layout, table string) *Evaluator {
	return &Evaluator{st: st, uids: uids, layout: layout, table: table}
}

// maxTimespan is a row's hour, in seconds (Const.MAX_TIMESPAN).
const maxTimespan = 3600

// Eval answers q: the results of each sub-query in turn.
func (e *Evaluator) Eval(ctx context.Context, q Query) ([]Result, error) {
	var out []Result
	for i, sq := range q.Subs {
		rs, err := e.sub(ctx, q, i, sq)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// span is one series' points in the scanned hours.
type span struct {
	salt []byte // its rows' salt: spans are in salt, then tags order (SpanCmp)
	tags []byte // its row key's tag pairs: the group key's source
	pts  []Point
}

// plan is a sub-query resolved: its functions, UIDs and filters.
type plan struct {
	agg, ds  aggregator
	metric   []byte
	matchers []matcher
	tagks    [][]byte // each matcher's tag key UID
	groupBys [][]byte // the group-by tag keys' UIDs, in UID order

	tagkWidth, pairLen int // of the row keys' tag pairs
}

// sub evaluates one sub-query: resolve, scan, group, aggregate.
func (e *Evaluator) sub(ctx context.Context, q Query, index int, sq SubQuery) ([]Result, error) {
	p, err := e.resolve(ctx, sq)
	if err != nil {
		return nil, err
	}
	scanStart, scanEnd := scanRange(q, sq)
	spans, err := e.scan(ctx, p, sq, scanStart, scanEnd)
	if err != nil || len(spans) == 0 {
		return nil, err
	}
	var out []Result
	for _, g := range group(spans, p, sq.Aggregator == "none", scanStart, scanEnd) {
		r, err := e.aggregate(ctx, q, sq, p, g, scanStart, scanEnd)
		if err != nil {
			return nil, err
		}
		r.Sub, r.Metric = index, sq.Metric
		out = append(out, r)
	}
	return out, nil
}

// noSuchName is a TSD's error for a name without a UID.
func noSuchName(kind uid.Kind, name string) error {
	k := map[uid.Kind]string{uid.KindMetric: "metrics", uid.KindTagK: "tagk", uid.KindTagV: "tagv"}[kind]
	return &Error{Message: "No such name for '" + k + "': '" + name + "'"}
}

// id resolves a name, a TSD's error when it has no UID.
func (e *Evaluator) id(ctx context.Context, kind uid.Kind, name string) ([]byte, error) {
	b, err := e.uids.ID(ctx, kind, name)
	if errors.Is(err, uid.ErrNoSuchName) {
		return nil, noSuchName(kind, name)
	}
	return b, err
}

// resolve looks up the aggregators, the metric's UID, each filter's tag
// key and the values of its case-sensitive literals, in the TSD's order.
func (e *Evaluator) resolve(ctx context.Context, sq SubQuery) (plan, error) {
	p := plan{tagkWidth: e.layout.TagKWidth, pairLen: e.layout.PairLen()}
	var err error
	if p.agg, err = lookupAggregator(sq.Aggregator); err != nil {
		return p, err
	}
	if sq.DownsampleMs > 0 {
		if p.ds, err = lookupAggregator(sq.DownsampleFn); err != nil {
			return p, err
		}
	}
	if p.metric, err = e.id(ctx, uid.KindMetric, sq.Metric); err != nil {
		return p, err
	}
	for _, f := range sq.Filters {
		m, err := compileFilter(f)
		if err != nil {
			return p, err
		}
		k, err := e.id(ctx, uid.KindTagK, f.Tagk)
		if err != nil {
			return p, err
		}
		for _, v := range f.literalValues() {
			if _, err := e.id(ctx, uid.KindTagV, v); err != nil {
				return p, err
			}
		}
		p.matchers, p.tagks = append(p.matchers, m), append(p.tagks, k)
		if f.GroupBy && !slices.ContainsFunc(p.groupBys, func(g []byte) bool { return bytes.Equal(g, k) }) {
			p.groupBys = append(p.groupBys, k)
		}
	}
	slices.SortFunc(p.groupBys, bytes.Compare)
	return p, nil
}

// scanRange is the hours a TSD scans for sq (TsdbQuery's scan start and
// end, Unix seconds): the start aligned down to the downsampling
// interval, then to its hour; the end one second later, aligned up past
// its interval, then up to an hour.
func scanRange(q Query, sq SubQuery) (start, end int64) {
	start = q.Start / 1000
	if iv := sq.DownsampleMs; iv > 0 {
		start -= (1000 * start % iv) / 1000
	}
	start -= start % maxTimespan
	start = max(start, 0)
	end = q.End/1000 + 1
	if iv := sq.DownsampleMs; iv > 0 {
		end += (iv - 1000*end%iv) / 1000
		if off := end % maxTimespan; off != 0 {
			end += maxTimespan - off
		}
		return start, end
	}
	return start, end + maxTimespan - end%maxTimespan
}

// scan reads the metric's rows of the hours [start, end) in every salt
// bucket and returns the series the filters keep, in the TSD's order of
// its spans: by salt, then tags (SpanCmp skips only the base time).
func (e *Evaluator) scan(ctx context.Context, p plan, sq SubQuery, start, end int64) ([]*span, error) {
	l := e.layout
	buckets := 1
	if l.SaltWidth > 0 {
		buckets = l.SaltBuckets
	}
	byKey := map[string]*span{}
	names := map[string]string{} // kind byte + uid -> name
	stop := end
	if sq.ExplicitTags && len(p.matchers) > 0 {
		// A TSD scans explicit tags with a FuzzyRowFilter whose stop key
		// is the end hour followed by the filters' tag keys with values
		// of 0xFF bytes: the rows of the end hour itself are read too
		// (the series' points there are no answer's, but they are the
		// lookahead that keeps a series active up to the end).
		stop = end + 1
	}
	for b := range buckets {
		startKey := binary.BigEndian.AppendUint32(append(l.AppendSalt(nil, b), p.metric...), uint32(start))
		stopKey := binary.BigEndian.AppendUint32(append(l.AppendSalt(nil, b), p.metric...), uint32(stop))
		if err := e.scanBucket(ctx, p, sq, startKey, stopKey, byKey, names); err != nil {
			return nil, err
		}
	}
	spans := make([]*span, 0, len(byKey))
	for _, s := range byKey {
		if s == nil {
			continue // a series the filters refused
		}
		if err := s.settle(); err != nil {
			return nil, err
		}
		spans = append(spans, s)
	}
	slices.SortFunc(spans, func(a, b *span) int { return cmp.Or(bytes.Compare(a.salt, b.salt), bytes.Compare(a.tags, b.tags)) })
	return spans, nil
}

// scanBucket adds the points of the rows in [startKey, stopKey) of the
// series the filters keep to byKey.
func (e *Evaluator) scanBucket(ctx context.Context, p plan, sq SubQuery, startKey, stopKey []byte, byKey map[string]*span, names map[string]string) error {
	sc := e.st.Scan(ctx, store.ScanRequest{Table: e.table, Start: startKey, Stop: stopKey, Family: "t"})
	defer sc.Close()
	var raw []mapping.RawPoint
	for sc.Next() {
		row := sc.Row()
		salt, _, base, tags, err := e.layout.ParseRowKey(row.Key)
		if err != nil {
			continue // not a data row of this layout
		}
		s, ok := byKey[string(tags)]
		if !ok {
			keep, err := e.keeps(ctx, p, sq, tags, names)
			if err != nil {
				return err
			}
			if !keep {
				byKey[string(tags)] = nil
				continue
			}
			s = &span{salt: bytes.Clone(salt), tags: bytes.Clone(tags)}
			byKey[string(tags)] = s
		}
		if s == nil {
			continue
		}
		for _, c := range row.Cells {
			raw, err = mapping.AppendRawPoints(raw[:0], base, c.Qualifier, c.Value)
			if err != nil {
				return &Error{Message: fmt.Sprintf("row %x: %v", row.Key, err)}
			}
			for _, rp := range raw {
				s.pts = append(s.pts, decodeRaw(rp))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", e.table, err)
	}
	return nil
}

// keeps reports whether the series of tags passes every filter: each
// filter's tag key present and its value matching; with explicitTags,
// no other tag key.
func (e *Evaluator) keeps(ctx context.Context, p plan, sq SubQuery, tags []byte, names map[string]string) (bool, error) {
	if len(p.matchers) == 0 && !sq.ExplicitTags {
		return true, nil // nothing to match: no name to look up
	}
	kw, pw := e.layout.TagKWidth, e.layout.PairLen()
	values := make(map[string]string, len(tags)/pw)
	for i := 0; i+pw <= len(tags); i += pw {
		k, v := tags[i:i+kw], tags[i+kw:i+pw]
		vn, err := e.name(ctx, uid.KindTagV, v, names)
		if err != nil {
			return false, err
		}
		values[string(k)] = vn
	}
	for i, m := range p.matchers {
		v, ok := values[string(p.tagks[i])]
		if !ok || !m.match(v) {
			return false, nil
		}
	}
	if sq.ExplicitTags {
		for k := range values {
			if !slices.ContainsFunc(p.tagks, func(t []byte) bool { return string(t) == k }) {
				return false, nil
			}
		}
	}
	return true, nil
}

// name resolves a UID, memoized for the query.
func (e *Evaluator) name(ctx context.Context, kind uid.Kind, id []byte, names map[string]string) (string, error) {
	key := string(append([]byte{byte(kind)}, id...))
	if n, ok := names[key]; ok {
		return n, nil
	}
	n, err := e.uids.Name(ctx, kind, id)
	if err != nil {
		return "", fmt.Errorf("name of %x: %w", id, err)
	}
	names[key] = n
	return n, nil
}

// decodeRaw is a stored point's value: an integer of 1, 2, 4 or 8 bytes
// or a float of 4 (widened) or 8, by its qualifier's flags.
func decodeRaw(rp mapping.RawPoint) Point {
	q := rp.Qualifier()
	flags := q[len(q)-1] & 0x0F
	v := rp.Value
	p := Point{T: rp.T}
	switch {
	case flags&0x8 != 0 && len(v) == 4:
		p.F, p.Float = float64(math.Float32frombits(binary.BigEndian.Uint32(v))), true
	case flags&0x8 != 0:
		p.F, p.Float = math.Float64frombits(binary.BigEndian.Uint64(v)), true
	case len(v) == 1:
		p.I = int64(int8(v[0]))
	case len(v) == 2:
		p.I = int64(int16(binary.BigEndian.Uint16(v)))
	case len(v) == 4:
		p.I = int64(int32(binary.BigEndian.Uint32(v)))
	default:
		p.I = int64(binary.BigEndian.Uint64(v))
	}
	return p
}

// settle sorts a span's points by time; a timestamp stored twice with the
// same value is one point, with two values the TSD's refusal.
func (s *span) settle() error {
	slices.SortStableFunc(s.pts, func(a, b Point) int { return cmp.Compare(a.T, b.T) })
	out := s.pts[:0]
	for _, p := range s.pts {
		if n := len(out); n > 0 && out[n-1].T == p.T {
			if out[n-1] != p {
				return &Error{Message: fmt.Sprintf("Duplicate timestamp for key=%x, ms_offset=%d; set tsd.storage.fix_duplicates=true to fix automatically or run Fsck", s.tags, p.T)}
			}
			continue
		}
		out = append(out, p)
	}
	s.pts = out
	return nil
}
