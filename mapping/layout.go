package mapping

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Row-key constants, as in OpenTSDB's Const.
const (
	// TimestampBytes is the width of the base time in a row key.
	TimestampBytes = 4
	// MaxTimespan is the number of seconds one row covers.
	MaxTimespan = 3600
	// MaxUIDWidth is the largest UID width OpenTSDB accepts.
	MaxUIDWidth = 8
	// MaxSaltWidth is the largest salt width OpenTSDB accepts.
	MaxSaltWidth = 8
	// DefaultUIDWidth is OpenTSDB's default width of metric, tagk and
	// tagv UIDs.
	DefaultUIDWidth = 3
	// DefaultSaltBuckets is OpenTSDB's default tsd.storage.salt.buckets.
	DefaultSaltBuckets = 20
)

// Layout holds the widths that every process sharing a table must agree on:
// OpenTSDB's tsd.storage.salt.width, tsd.storage.salt.buckets and
// tsd.storage.uid.width.metric|tagk|tagv. A Layout is a small value; copy it
// freely. Methods other than Validate assume a valid layout.
type Layout struct {
	// SaltWidth is the number of salt bytes in front of each row key,
	// 0 (salting off, the default) to 8.
	SaltWidth int
	// SaltBuckets is the number of salt buckets, >= 1 (default 20). It
	// must fit in SaltWidth bytes when SaltWidth is below 4.
	SaltBuckets int
	// MetricWidth, TagKWidth and TagVWidth are the UID widths in bytes,
	// 1..8 each (default 3).
	MetricWidth, TagKWidth, TagVWidth int
}

// DefaultLayout returns OpenTSDB's defaults: no salt (20 buckets should it
// be turned on) and 3-byte UIDs.
func DefaultLayout() Layout {
	return Layout{
		SaltWidth:   0,
		SaltBuckets: DefaultSaltBuckets,
		MetricWidth: DefaultUIDWidth,
		TagKWidth:   DefaultUIDWidth,
		TagVWidth:   DefaultUIDWidth,
	}
}

// Validate reports whether l is a layout OpenTSDB accepts. It is stricter
// than OpenTSDB in one way: with a salt width below 4 bytes, the bucket count
// must fit in the salt bytes (OpenTSDB silently truncates the bucket number,
// which puts several buckets on one salt and makes per-bucket scans read the
// same rows twice).
func (l Layout) Validate() error {
	if l.SaltWidth < 0 || l.SaltWidth > MaxSaltWidth {
		return fmt.Errorf("%w: salt width %d not in 0..%d", ErrInvalidLayout, l.SaltWidth, MaxSaltWidth)
	}
	if l.SaltBuckets < 1 || l.SaltBuckets > math.MaxInt32 {
		return fmt.Errorf("%w: salt buckets %d not in 1..%d", ErrInvalidLayout, l.SaltBuckets, math.MaxInt32)
	}
	if l.SaltWidth > 0 && l.SaltWidth < 4 && l.SaltBuckets > 1<<(8*l.SaltWidth) {
		return fmt.Errorf("%w: %d salt buckets do not fit in %d salt byte(s)", ErrInvalidLayout, l.SaltBuckets, l.SaltWidth)
	}
	for _, w := range [...]struct {
		name  string
		width int
	}{{"metric", l.MetricWidth}, {"tagk", l.TagKWidth}, {"tagv", l.TagVWidth}} {
		if w.width < 1 || w.width > MaxUIDWidth {
			return fmt.Errorf("%w: %s UID width %d not in 1..%d", ErrInvalidLayout, w.name, w.width, MaxUIDWidth)
		}
	}
	return nil
}

// PrefixLen is the length of the row-key part before the tags:
// SaltWidth + MetricWidth + 4. It is the P of the row-key regex ^.{P}.
func (l Layout) PrefixLen() int { return l.SaltWidth + l.MetricWidth + TimestampBytes }

// PairLen is the length of one tag pair, TagKWidth + TagVWidth.
func (l Layout) PairLen() int { return l.TagKWidth + l.TagVWidth }

// RowKeyLen is the length of a row key with numTags tag pairs.
func (l Layout) RowKeyLen(numTags int) int { return l.PrefixLen() + numTags*l.PairLen() }

// SaltHash is Java's Arrays.hashCode over metric‖tags: h = 1, then
// h = 31*h + b for each byte b taken as a signed byte, in wrapping 32-bit
// arithmetic. metric and tags are the UIDs as they appear in the row key (no
// salt, no base time), so all rows of one series share a hash.
func SaltHash(metric, tags []byte) int32 {
	return javaHash(javaHash(1, metric), tags)
}

// javaHash continues Arrays.hashCode's h = 31*h + b over b. Four bytes at a
// time it uses the expanded form 31^4*h + 31^3*b0 + 31^2*b1 + 31*b2 + b3,
// which is the same in wrapping int32 arithmetic and shortens the chain of
// dependent multiplications.
func javaHash(h int32, b []byte) int32 {
	for len(b) >= 4 {
		h = 923521*h + 29791*int32(int8(b[0])) + 961*int32(int8(b[1])) + 31*int32(int8(b[2])) + int32(int8(b[3]))
		b = b[4:]
	}
	for _, c := range b {
		h = 31*h + int32(int8(c))
	}
	return h
}

// SaltBucket is the salt bucket of the series metric‖tags, as OpenTSDB's
// RowKey.prefixKeyWithSalt computes it: SaltHash modulo SaltBuckets with
// Java's truncated remainder, then made non-negative. It is in
// [0, SaltBuckets).
func (l Layout) SaltBucket(metric, tags []byte) int {
	return saltBucket(l.SaltBuckets, metric, tags)
}

func saltBucket(buckets int, metric, tags []byte) int {
	if buckets <= 1 {
		return 0
	}
	m := SaltHash(metric, tags) % int32(buckets)
	if m < 0 {
		m = -m
	}
	return int(m)
}

// AppendSalt appends the SaltWidth salt bytes of bucket to dst, as
// OpenTSDB's RowKey.getSaltBytes writes them: the bucket big-endian, least
// significant byte last. For widths above 4 this copies a Java quirk: the
// shift count of an int wraps at 32, so byte i from the end holds
// bucket >> (8*i mod 32), and the 4-byte big-endian bucket repeats (width 6,
// bucket 0x0102: 01 02 00 00 01 02). It appends nothing when salting is off.
func (l Layout) AppendSalt(dst []byte, bucket int) []byte {
	return appendSalt(dst, l.SaltWidth, bucket)
}

func appendSalt(dst []byte, width, bucket int) []byte {
	u := uint32(bucket)
	for i := width - 1; i >= 0; i-- {
		dst = append(dst, byte(u>>(uint(8*i)&31)))
	}
	return dst
}

// AppendRowKey appends the row key [salt] metric baseTime tags to dst and
// returns the extended slice.
//
// metric must be MetricWidth bytes and tags the concatenation of tagk‖tagv
// pairs of PairLen bytes each, already sorted (see [Layout.SortTags]);
// AppendRowKey does not check this (use [Layout.CheckSeries] once per
// series). baseTime is the row's hour in Unix seconds (a multiple of 3600;
// see [SplitMs]). With SaltWidth > 0 the salt is computed from metric and
// tags; a metric UID of all zero bytes (OpenTSDB's global-annotation row)
// gets zero salt bytes, as OpenTSDB leaves that row unsalted. It does not
// allocate when dst has room for [Layout.RowKeyLen] more bytes.
func (l Layout) AppendRowKey(dst, metric []byte, baseTime uint32, tags []byte) []byte {
	dst = slices.Grow(dst, l.SaltWidth+len(metric)+TimestampBytes+len(tags))
	if l.SaltWidth > 0 {
		// The helpers take fields, not l: see ParseRowKey.
		bucket := 0
		if !allZero(metric) {
			bucket = saltBucket(l.SaltBuckets, metric, tags)
		}
		dst = appendSalt(dst, l.SaltWidth, bucket)
	}
	dst = append(dst, metric...)
	dst = binary.BigEndian.AppendUint32(dst, baseTime)
	return append(dst, tags...)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// CheckSeries reports whether metric and tags can form a row key of l: the
// metric UID is MetricWidth bytes, tags is a whole number of tag pairs, and
// the pairs are sorted with no tagk repeated.
func (l Layout) CheckSeries(metric, tags []byte) error {
	if len(metric) != l.MetricWidth {
		return fmt.Errorf("%w: metric UID of %d bytes, want %d", ErrMalformedRowKey, len(metric), l.MetricWidth)
	}
	pair := l.PairLen()
	if l.TagKWidth <= 0 || l.TagVWidth <= 0 || len(tags)%pair != 0 {
		return fmt.Errorf("%w: tags of %d bytes, want a multiple of %d", ErrMalformedRowKey, len(tags), pair)
	}
	for i := pair; i < len(tags); i += pair {
		prev, cur := tags[i-pair:i], tags[i:i+pair]
		if c := bytes.Compare(prev[:l.TagKWidth], cur[:l.TagKWidth]); c >= 0 {
			what := "out of order"
			if c == 0 {
				what = "repeated"
			}
			return fmt.Errorf("%w: tagk %X at pair %d %s", ErrMalformedRowKey, cur[:l.TagKWidth], i/pair, what)
		}
	}
	return nil
}

// SortTags sorts tags, a concatenation of tagk‖tagv pairs of PairLen bytes,
// in place by unsigned byte order of each whole pair, as OpenTSDB orders
// the pairs of a row key. A trailing partial pair is left where it is. It
// does not allocate.
func (l Layout) SortTags(tags []byte) {
	pair := l.TagKWidth + l.TagVWidth
	if pair <= 0 || pair > 2*MaxUIDWidth {
		return
	}
	n := len(tags) / pair
	if n <= 12 {
		insertionSortPairs(tags, pair, n)
		return
	}
	heapSortPairs(tags, pair, n)
}

func insertionSortPairs(tags []byte, pair, n int) {
	var tmp [2 * MaxUIDWidth]byte
	for i := 1; i < n; i++ {
		cur := tags[i*pair : (i+1)*pair]
		j := i
		for j > 0 && bytes.Compare(tags[(j-1)*pair:j*pair], cur) > 0 {
			j--
		}
		if j == i {
			continue
		}
		copy(tmp[:pair], cur)
		copy(tags[(j+1)*pair:(i+1)*pair], tags[j*pair:i*pair])
		copy(tags[j*pair:(j+1)*pair], tmp[:pair])
	}
}

func heapSortPairs(tags []byte, pair, n int) {
	for i := n/2 - 1; i >= 0; i-- {
		siftDownPairs(tags, pair, i, n)
	}
	for end := n - 1; end > 0; end-- {
		swapPairs(tags, pair, 0, end)
		siftDownPairs(tags, pair, 0, end)
	}
}

func siftDownPairs(tags []byte, pair, root, n int) {
	for {
		child := 2*root + 1
		if child >= n {
			return
		}
		if child+1 < n && lessPair(tags, pair, child, child+1) {
			child++
		}
		if !lessPair(tags, pair, root, child) {
			return
		}
		swapPairs(tags, pair, root, child)
		root = child
	}
}

func lessPair(tags []byte, pair, i, j int) bool {
	return bytes.Compare(tags[i*pair:(i+1)*pair], tags[j*pair:(j+1)*pair]) < 0
}

func swapPairs(tags []byte, pair, i, j int) {
	a, b := tags[i*pair:(i+1)*pair], tags[j*pair:(j+1)*pair]
	for k := range a {
		a[k], b[k] = b[k], a[k]
	}
}

// ParseRowKey splits a row key of layout l into its parts. The returned
// slices alias key. tags holds zero or more whole pairs. It checks the
// lengths first and returns an error wrapping [ErrMalformedRowKey] for a key
// whose length is not PrefixLen plus a multiple of PairLen. It does not check
// the salt or the tag order, and does not allocate unless it fails.
func (l Layout) ParseRowKey(key []byte) (salt, metric []byte, baseTime uint32, tags []byte, err error) {
	// Fields are read directly: calling the helper methods on the value
	// receiver copies l through memory and costs more than the parse.
	m := l.SaltWidth + l.MetricWidth
	prefix, pair := m+TimestampBytes, l.TagKWidth+l.TagVWidth
	if l.SaltWidth < 0 || l.MetricWidth <= 0 || pair <= 0 {
		return nil, nil, 0, nil, l.invalidLayoutError()
	}
	if len(key) < prefix || uint(len(key)-prefix)%uint(pair) != 0 {
		return nil, nil, 0, nil, l.rowKeyLengthError(len(key))
	}
	salt = key[:l.SaltWidth:l.SaltWidth]
	metric = key[l.SaltWidth:m:m]
	baseTime = binary.BigEndian.Uint32(key[m:prefix])
	tags = key[prefix:len(key):len(key)]
	return salt, metric, baseTime, tags, nil
}

// The errors of ParseRowKey are built out of line to keep its frame small.

//go:noinline
func (l Layout) invalidLayoutError() error {
	return fmt.Errorf("%w: layout %+v", ErrInvalidLayout, l)
}

//go:noinline
func (l Layout) rowKeyLengthError(n int) error {
	return fmt.Errorf("%w: %d bytes, want %d (salt %d + metric %d + base time %d) plus a multiple of %d (tag pairs)",
		ErrMalformedRowKey, n, l.PrefixLen(), l.SaltWidth, l.MetricWidth, TimestampBytes, l.PairLen())
}

// SplitMs splits a Unix timestamp in milliseconds into the row's base time
// (seconds, rounded down to the hour) and the millisecond offset within that
// hour (0..3,599,999). It returns an error wrapping [ErrTimestampRange] for a
// negative timestamp or one whose seconds do not fit in 32 bits.
func SplitMs(t int64) (baseTime, offsetMs uint32, err error) {
	if t < 0 || t/1000 > math.MaxUint32 {
		return 0, 0, fmt.Errorf("%w: %d ms (row keys hold 0..%d s)", ErrTimestampRange, t, uint32(math.MaxUint32))
	}
	sec := t / 1000
	base := sec - sec%MaxTimespan
	return uint32(base), uint32(t - base*1000), nil
}
