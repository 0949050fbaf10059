package query

import (
	"bytes"
	"slices"

	"github.com/promhbase/promhbase/mapping"
)

// RowMatcher returns RowRegex(layout, cs) as a function of the row key, for
// stores that filter rows in process (store.ScanRequest.RowMatch): a key
// matches when it is the prefix and whole tag pairs, and the constraints,
// in order, match pairs in increasing positions (tagk equal, tagv one of
// the values, or any when there are none). Taking for each constraint the
// first pair after the last one taken is as good as any choice, so one
// pass over the pairs decides. nil when there are no constraints, or when
// a UID is not of the layout's width (the regex then decides).
//
// A regex costs a backtracking search a row (and the key's re-encoding as
// Latin-1): about 1.2 µs a row in a 10 000-series read; this costs a
// compare a tag pair.
func RowMatcher(layout mapping.Layout, cs []tagConstraint) func(key []byte) bool {
	if len(cs) == 0 {
		return nil
	}
	kw, vw := layout.TagKWidth, layout.TagVWidth
	for _, c := range cs {
		if len(c.tagk) != kw {
			return nil
		}
		for _, v := range c.values {
			if len(v) != vw {
				return nil
			}
		}
	}
	prefix, pair := layout.PrefixLen(), layout.PairLen()
	return func(key []byte) bool {
		if len(key) < prefix || (len(key)-prefix)%pair != 0 {
			return false
		}
		p := prefix
		for _, c := range cs {
			for {
				if p+pair > len(key) {
					return false
				}
				k, v := key[p:p+kw], key[p+kw:p+pair]
				p += pair
				if bytes.Equal(k, c.tagk) && anyEqual(c.values, v) {
					break
				}
			}
		}
		return true
	}
}

// anyEqual reports whether v is one of values; true when there are none.
func anyEqual(values [][]byte, v []byte) bool {
	if len(values) == 0 {
		return true
	}
	for _, x := range values {
		if bytes.Equal(x, v) {
			return true
		}
	}
	return false
}

// RowSeeker returns the store.ScanRequest.RowSeek of RowMatcher(layout,
// cs): for a refused key, the first key after it that may match, found
// at the first constrained tag that goes wrong. Row keys have their tags
// sorted by tag key, each once (OpenTSDB's and promhbase's writers sort
// them); a pair whose tag key comes after a required one that is not
// there, or a required tag with a value not allowed, rules out every key
// that shares what comes before it:
//
//   - a value not allowed: the next allowed value of that tag, or past
//     every key with that tag there;
//   - a required tag missing (a greater tag key in its place): past every
//     key that shares the pairs before it (the next hour's rows when it
//     is the first pair).
//
// A key that lacks a required tag at its end may still precede keys that
// match (the tag appended): no skip. nil when RowMatcher is nil.
func RowSeeker(layout mapping.Layout, cs []tagConstraint) func(dst, key []byte) []byte {
	if RowMatcher(layout, cs) == nil {
		return nil
	}
	// Each constraint's values in increasing order.
	sorted := make([][][]byte, len(cs))
	for i, c := range cs {
		sorted[i] = slices.SortedFunc(slices.Values(c.values), bytes.Compare)
	}
	kw := layout.TagKWidth
	prefix, pair := layout.PrefixLen(), layout.PairLen()
	return func(dst, key []byte) []byte {
		if len(key) < prefix || (len(key)-prefix)%pair != 0 {
			return nil
		}
		ci := 0
		for p := prefix; p+pair <= len(key) && ci < len(cs); p += pair {
			k, v := key[p:p+kw], key[p+kw:p+pair]
			switch c := bytes.Compare(k, cs[ci].tagk); {
			case c < 0:
				continue // a tag no matcher constrains
			case c > 0:
				// The required tag is not in its place: nothing after the
				// pairs before it can have it.
				return appendSuccessor(dst, key[:p])
			}
			vals := sorted[ci]
			if len(vals) == 0 {
				ci++
				continue
			}
			i, found := slices.BinarySearchFunc(vals, v, bytes.Compare)
			if found {
				ci++
				continue
			}
			if i < len(vals) {
				return append(append(append(dst, key[:p]...), k...), vals[i]...)
			}
			return appendSuccessor(dst, key[:p+kw])
		}
		return nil
	}
}

// appendSuccessor appends to dst the first key after every key that
// starts with prefix (prefix incremented as a big-endian number, cut
// after the byte that took the carry), or returns nil when there is none.
func appendSuccessor(dst, prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xFF {
			dst = append(dst, prefix[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return nil
}
