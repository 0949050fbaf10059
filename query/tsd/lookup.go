package tsd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// LookupQuery is OpenTSDB's /api/search/lookup (a SearchQuery of type
// LOOKUP): the series of Metric (every metric when "" or "*") whose
// TSUIDs hold every pair of Tags, read from the meta table's TSMeta rows
// (UseMeta) or from the data table's rows (one answer per hour row, as
// 2.4 answers), at most Limit of them (0: all).
type LookupQuery struct {
	Metric  string
	Tags    []LookupTag
	Limit   int
	UseMeta bool
}

// LookupTag is one pair of a lookup; a Key or a Value that is "" or "*"
// matches any (TimeSeriesLookup.resolveUIDs).
type LookupTag struct{ Key, Value string }

// LookupSeries is one series a lookup found: its TSUID (metric UID ‖
// tag pairs, no salt, no time), its metric's name and its tags in the
// TSUID's order.
type LookupSeries struct {
	TSUID  []byte
	Metric string
	Tags   []Tag
}

// ErrNoMetaTable is Lookup's error in meta mode when the evaluator has
// no meta table (SetMetaTable).
var ErrNoMetaTable = errors.New("no meta table")

// SetMetaTable names the table of the TSMeta rows a lookup in meta mode
// scans.
func (e *Evaluator) SetMetaTable(table string) { e.metaTable = table }

// Lookup answers q as TimeSeriesLookup.lookupAsync does: the metric and
// each pair resolved in turn (a name without a UID is the TSD's "No such
// name" *Error), the rows of the metric's key range scanned with the row
// key regex getRowKeyRegex builds (the TSD's own, sent to HBase as it
// sends it), then each TSUID's names. In data mode on a salted layout
// each bucket is scanned in turn, each to its share of the limit.
//
// Pairs of a value without a key, given with pairs with keys, match
// nothing: 2.4.1 builds their filter (tagv_filter) after lookupAsync has
// read it, so it is never applied, and the row key regex holds only the
// pairs with keys. TestOpenTSDBLookup checks this against the jar.
func (e *Evaluator) Lookup(ctx context.Context, q LookupQuery) ([]LookupSeries, error) {
	metric, pairs, err := e.resolveLookup(ctx, q)
	if err != nil {
		return nil, err
	}
	table := e.table
	if q.UseMeta {
		if table = e.metaTable; table == "" {
			return nil, ErrNoMetaTable
		}
	}
	var keyRegex string
	if len(pairs) > 0 {
		keyRegex = lookupRegex(e.layout, pairs, q.UseMeta)
	}
	buckets, limit := lookupBuckets(e.layout, q, metric != nil)
	var tsuids [][]byte
	for b := range buckets {
		start, stop := lookupRange(e.layout, metric, b, q.UseMeta)
		if tsuids, err = e.lookupScan(ctx, table, start, stop, keyRegex, q.UseMeta, limit, tsuids); err != nil {
			return nil, err
		}
	}
	return e.lookupNames(ctx, tsuids)
}

// lookupPair is a resolved pair: a nil key or value matches any.
type lookupPair struct{ key, value []byte }

// resolveLookup resolves the metric (nil for any) and the pairs, sorted
// as ByteArrayPair sorts them: by key, then value, a nil first.
func (e *Evaluator) resolveLookup(ctx context.Context, q LookupQuery) ([]byte, []lookupPair, error) {
	var metric []byte
	if q.Metric != "" && q.Metric != "*" {
		m, err := e.id(ctx, uid.KindMetric, q.Metric)
		if err != nil {
			return nil, nil, err
		}
		metric = m
	}
	pairs := make([]lookupPair, 0, len(q.Tags))
	for _, t := range q.Tags {
		var p lookupPair
		var err error
		if t.Key != "" && t.Key != "*" {
			if p.key, err = e.id(ctx, uid.KindTagK, t.Key); err != nil {
				return nil, nil, err
			}
		}
		if t.Value != "" && t.Value != "*" {
			if p.value, err = e.id(ctx, uid.KindTagV, t.Value); err != nil {
				return nil, nil, err
			}
		}
		pairs = append(pairs, p)
	}
	slices.SortStableFunc(pairs, func(a, b lookupPair) int {
		if c := compareMaybeNil(a.key, b.key); c != 0 {
			return c
		}
		return compareMaybeNil(a.value, b.value)
	})
	return metric, pairs, nil
}

// compareMaybeNil is Bytes.memcmpMaybeNull: nil before any bytes.
func compareMaybeNil(a, b []byte) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return bytes.Compare(a, b)
}

// lookupRegex builds getRowKeyRegex's row key pattern (Java syntax, each
// UID byte a character U+0000..U+00FF, as the TSD builds it with
// ISO-8859-1): of the pairs without a key when there are only those, else
// of the pairs with one (see Lookup). Its quirks are kept: the value-only
// alternatives are not grouped, and a pair after a key without a value
// of the same key is skipped.
func lookupRegex(l mapping.Layout, pairs []lookupPair, useMeta bool) string {
	tagSize := l.TagKWidth + l.TagVWidth
	prefix := l.MetricWidth
	if !useMeta {
		prefix += l.SaltWidth
	}
	var buf strings.Builder
	fmt.Fprintf(&buf, "(?s)^.{%d}", prefix)
	if !useMeta {
		fmt.Fprintf(&buf, "(?:.{%d})*", mapping.TimestampBytes)
	}
	fmt.Fprintf(&buf, "(?:.{%d})*", tagSize)
	index := 0
	for ; index < len(pairs) && pairs[index].key == nil; index++ {
		if index > 0 {
			buf.WriteByte('|')
		}
		fmt.Fprintf(&buf, "(?:.{%d})\\Q", l.TagKWidth)
		addID(&buf, pairs[index].value, true)
	}
	fmt.Fprintf(&buf, "(?:.{%d})*$", tagSize)
	if index >= len(pairs) {
		return buf.String() // value-only pairs: they are the row filter
	}
	buf.Reset()
	fmt.Fprintf(&buf, "(?s)^.{%d}", prefix)
	if !useMeta {
		fmt.Fprintf(&buf, "(?:.{%d})", mapping.TimestampBytes)
	}
	var last *lookupPair
	for ; index < len(pairs); index++ {
		p := &pairs[index]
		switch {
		case last != nil && last.value == nil && bytes.Equal(last.key, p.key):
			// a key with any value already covers its pairs
		case last != nil && bytes.Equal(last.key, p.key):
			buf.WriteString("|\\Q")
			addID(&buf, p.key, false)
			addID(&buf, p.value, true)
		default:
			if last != nil {
				buf.WriteByte(')')
			}
			fmt.Fprintf(&buf, "(?:.{%d})*(?:", tagSize)
			buf.WriteString("\\Q")
			if p.value != nil {
				addID(&buf, p.key, false)
				addID(&buf, p.value, true)
			} else {
				addID(&buf, p.key, true)
				fmt.Fprintf(&buf, "(?:.{%d})", l.TagVWidth)
			}
		}
		last = p
	}
	fmt.Fprintf(&buf, ")(?:.{%d})*$", tagSize)
	return buf.String()
}

// addID is QueryUtil.addId: id's bytes as characters inside a \Q
// section, a "\E" in them quoted, the section closed when close is set.
func addID(buf *strings.Builder, id []byte, close bool) {
	backslash := false
	for _, b := range id {
		buf.WriteRune(rune(b))
		if b == 'E' && backslash {
			buf.WriteString(`\\E\Q`)
		} else {
			backslash = b == '\\'
		}
	}
	if close {
		buf.WriteString(`\E`)
	}
}

// compileLatin1 compiles a pattern of lookupRegex for matchLatin1 (nil
// for "").
func compileLatin1(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, nil
	}
	return regexp.Compile(pattern)
}

// matchLatin1 reports whether re finds a match in key read as
// ISO-8859-1, as the TSD and HBase's RegexStringComparator match.
func matchLatin1(re *regexp.Regexp, key []byte, scratch []byte) (bool, []byte) {
	scratch = scratch[:0]
	for _, b := range key {
		scratch = utf8.AppendRune(scratch, rune(b))
	}
	return re.Match(scratch), scratch
}

// lookupBuckets returns how many scans a lookup makes and each one's
// limit: one per salt bucket in data mode on a salted layout when the
// metric is known, with the limit split among them (at least 1); one
// otherwise.
func lookupBuckets(l mapping.Layout, q LookupQuery, haveMetric bool) (int, int) {
	if q.UseMeta || l.SaltWidth < 1 {
		return 1, q.Limit
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = 0
	case limit < l.SaltBuckets:
		limit = 1
	default:
		limit /= l.SaltBuckets
	}
	if !haveMetric {
		return 1, limit
	}
	return l.SaltBuckets, limit
}

// lookupRange is getScanner's key range: the metric's rows (in bucket
// b's salt in data mode on a salted layout), the stop key left open
// when the metric's UID is the largest of its width; every row without
// a metric.
func lookupRange(l mapping.Layout, metric []byte, b int, useMeta bool) (start, stop []byte) {
	if metric == nil {
		return nil, nil
	}
	next, ok := nextUID(metric)
	prefix := func(id []byte) []byte {
		if useMeta || l.SaltWidth < 1 {
			return id
		}
		return append(l.AppendSalt(nil, b), id...)
	}
	start = prefix(metric)
	if ok {
		stop = prefix(next)
	}
	return start, stop
}

// nextUID returns the UID one above id, and false when that is the
// largest value of its width (UniqueId.uidToLong + 1 not below
// Internal.getMaxUnsignedValueOnBytes).
func nextUID(id []byte) ([]byte, bool) {
	var v uint64
	for _, b := range id {
		v = v<<8 | uint64(b)
	}
	v++
	if v >= 1<<(8*len(id))-1 {
		return nil, false
	}
	next := make([]byte, len(id))
	for i := len(id) - 1; i >= 0; i-- {
		next[i] = byte(v)
		v >>= 8
	}
	return next, true
}

// lookupScan scans [start, stop) of table for the rows keyRegex keeps
// and appends their TSUIDs, until limit rows (0: all) were kept.
func (e *Evaluator) lookupScan(ctx context.Context, table string, start, stop []byte, keyRegex string, useMeta bool, limit int, tsuids [][]byte) ([][]byte, error) {
	key, err := compileLatin1(keyRegex)
	if err != nil {
		return nil, fmt.Errorf("lookup: row key filter %q: %w", keyRegex, err)
	}
	req := store.ScanRequest{Table: table, Start: start, Stop: stop, Family: mapping.TSMetaFamily, KeysOnly: true}
	if !useMeta {
		req.Family = "t"
	}
	var scratch []byte
	if key != nil {
		req.RowRegex = keyRegex
		req.RowMatch = func(k []byte) bool {
			var ok bool
			ok, scratch = matchLatin1(key, k, scratch)
			return ok
		}
	}
	sc := e.st.Scan(ctx, req)
	defer sc.Close()
	read := 0
	for sc.Next() {
		if limit > 0 && read >= limit {
			break
		}
		tsuid := bytes.Clone(sc.Row().Key)
		if !useMeta {
			if tsuid = e.dataTSUID(tsuid); tsuid == nil {
				continue // not a data row of this layout
			}
		}
		tsuids = append(tsuids, tsuid)
		read++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lookup: scan %s: %w", table, err)
	}
	return tsuids, nil
}

// dataTSUID is UniqueId.getTSUIDFromKey: a data row key without its
// salt and base time; nil for a key too short to be one.
func (e *Evaluator) dataTSUID(key []byte) []byte {
	l := e.layout
	head := l.SaltWidth + l.MetricWidth + mapping.TimestampBytes
	if len(key) < head {
		return nil
	}
	tsuid := make([]byte, 0, len(key)-l.SaltWidth-mapping.TimestampBytes)
	tsuid = append(tsuid, key[l.SaltWidth:l.SaltWidth+l.MetricWidth]...)
	return append(tsuid, key[head:]...)
}

// lookupNames resolves each TSUID's metric and tag names; a UID without
// a name is the TSD's NoSuchUniqueId, a *NoSuchUIDError.
func (e *Evaluator) lookupNames(ctx context.Context, tsuids [][]byte) ([]LookupSeries, error) {
	l := e.layout
	names := map[string]string{}
	out := make([]LookupSeries, 0, len(tsuids))
	for _, id := range tsuids {
		if len(id) < l.MetricWidth || (len(id)-l.MetricWidth)%l.PairLen() != 0 {
			return nil, fmt.Errorf("lookup: TSUID %X is not a metric UID and tag pairs of layout %+v", id, l)
		}
		s := LookupSeries{TSUID: id}
		var err error
		if s.Metric, err = e.lookupName(ctx, uid.KindMetric, id[:l.MetricWidth], names); err != nil {
			return nil, err
		}
		for p := id[l.MetricWidth:]; len(p) > 0; p = p[l.PairLen():] {
			k, err := e.lookupName(ctx, uid.KindTagK, p[:l.TagKWidth], names)
			if err != nil {
				return nil, err
			}
			v, err := e.lookupName(ctx, uid.KindTagV, p[l.TagKWidth:l.PairLen()], names)
			if err != nil {
				return nil, err
			}
			s.Tags = append(s.Tags, Tag{Key: k, Value: v})
		}
		out = append(out, s)
	}
	return out, nil
}

// lookupName resolves a UID (memoized in names), the TSD's
// NoSuchUniqueId (a *NoSuchUIDError) when it has no name.
func (e *Evaluator) lookupName(ctx context.Context, kind uid.Kind, id []byte, names map[string]string) (string, error) {
	n, err := e.name(ctx, kind, id, names)
	if errors.Is(err, uid.ErrNoSuchUID) {
		k := map[uid.Kind]string{uid.KindMetric: "metrics", uid.KindTagK: "tagk", uid.KindTagV: "tagv"}[kind]
		return "", &NoSuchUIDError{Message: "No such unique ID for '" + k + "': " + javaBytesString(id)}
	}
	return n, err
}

// NoSuchUIDError is a UID without a name met resolving a TSUID: the
// TSD's NoSuchUniqueId, and its message.
type NoSuchUIDError struct{ Message string }

func (e *NoSuchUIDError) Error() string { return e.Message }

// javaBytesString renders b as Arrays.toString(byte[]): signed bytes.
func javaBytesString(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = strconv.Itoa(int(int8(c)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
