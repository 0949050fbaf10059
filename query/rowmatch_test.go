package query

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/promhbase/promhbase/mapping"
)

// uidBytes are the bytes random UIDs and keys are drawn from: few, so that
// pairs collide, and those the regex quotes.
var uidBytes = []byte{0x00, 0x01, 'E', 'Q', '\\', 0x80, 0xff}

func randomUID(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = uidBytes[rng.IntN(len(uidBytes))]
	}
	return b
}

// randomCase returns constraints sorted by tagk and a key that is a prefix
// and pairs drawn from the constraints and at random, sometimes cut or
// lengthened by a byte.
func randomCase(rng *rand.Rand, lay mapping.Layout) ([]tagConstraint, []byte) {
	var cs []tagConstraint
	seen := map[string]bool{}
	for range 1 + rng.IntN(3) {
		k := randomUID(rng, lay.TagKWidth)
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		c := tagConstraint{tagk: k}
		for range rng.IntN(3) {
			c.values = append(c.values, randomUID(rng, lay.TagVWidth))
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b tagConstraint) int { return bytes.Compare(a.tagk, b.tagk) })
	key := randomUID(rng, lay.PrefixLen())
	for range rng.IntN(6) {
		if rng.IntN(2) == 0 {
			c := cs[rng.IntN(len(cs))]
			key = append(key, c.tagk...)
			if len(c.values) > 0 && rng.IntN(4) > 0 {
				key = append(key, c.values[rng.IntN(len(c.values))]...)
			} else {
				key = append(key, randomUID(rng, lay.TagVWidth)...)
			}
			continue
		}
		key = append(key, randomUID(rng, lay.PairLen())...)
	}
	switch rng.IntN(8) {
	case 0:
		key = key[:rng.IntN(len(key)+1)]
	case 1:
		key = append(key, uidBytes[rng.IntN(len(uidBytes))])
	}
	return cs, key
}

// checkRowMatcher compares RowMatcher with RowRegex on key.
func checkRowMatcher(t *testing.T, lay mapping.Layout, cs []tagConstraint, key []byte) {
	t.Helper()
	re := regexp.MustCompile(RowRegex(lay, cs))
	m := RowMatcher(lay, cs)
	if m == nil {
		t.Fatalf("no matcher for %+v", cs)
	}
	if got, want := m(key), re.MatchString(mapping.Latin1String(key)); got != want {
		t.Fatalf("key %x, constraints %x: matcher %v, regex %v (%s)", key, cs, got, want, RowRegex(lay, cs))
	}
}

// TestRowMatcher: the matcher keeps exactly the rows the regex keeps, for
// random constraints and keys (pairs of the constraints, near misses, cut
// keys) under two layouts, and is nil where the regex must decide.
func TestRowMatcher(t *testing.T) {
	layouts := []mapping.Layout{
		mapping.DefaultLayout(),
		{SaltWidth: 1, SaltBuckets: 20, MetricWidth: 2, TagKWidth: 1, TagVWidth: 4},
	}
	for _, lay := range layouts {
		t.Run(fmt.Sprintf("%+v", lay), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			matched := 0
			for range 20000 {
				cs, key := randomCase(rng, lay)
				checkRowMatcher(t, lay, cs, key)
				if RowMatcher(lay, cs)(key) {
					matched++
				}
			}
			if matched < 1000 {
				t.Fatalf("only %d of 20000 keys matched: the cases do not test matches", matched)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		lay := mapping.DefaultLayout()
		if RowMatcher(lay, nil) != nil {
			t.Error("a matcher without constraints")
		}
		if RowMatcher(lay, []tagConstraint{{tagk: []byte{1, 2}}}) != nil {
			t.Error("a matcher for a tagk of the wrong width")
		}
		if RowMatcher(lay, []tagConstraint{{tagk: []byte{1, 2, 3}, values: [][]byte{{1}}}}) != nil {
			t.Error("a matcher for a tagv of the wrong width")
		}
	})
}

func FuzzRowMatcher(f *testing.F) {
	f.Add(uint64(1), []byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2})
	f.Fuzz(func(t *testing.T, seed uint64, key []byte) {
		lay := mapping.DefaultLayout()
		cs, _ := randomCase(rand.New(rand.NewPCG(seed, seed>>1)), lay)
		checkRowMatcher(t, lay, cs, key)
	})
}

// BenchmarkRowFilter: a row of the harness's shape (ten tags) against the
// constraints of {job="node"}, by the regex (on the Latin-1 key, as the
// embedded store ran it) and by the matcher.
func BenchmarkRowFilter(b *testing.B) {
	lay := mapping.DefaultLayout()
	key := []byte{0, 0, 7, 0x65, 0x5f, 0x00, 0x00}
	for i := range 9 {
		key = append(key, 0, 0, byte(i+1), 0, 0, byte(i*7+1))
	}
	cs := []tagConstraint{{tagk: []byte{0, 0, 6}, values: [][]byte{{0, 0, 36}}}}
	re := regexp.MustCompile(RowRegex(lay, cs))
	m := RowMatcher(lay, cs)
	if !m(key) || !re.MatchString(mapping.Latin1String(key)) {
		b.Fatal("the key does not match")
	}
	b.Run("regex", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, c := range key {
				buf = utf8.AppendRune(buf, rune(c))
			}
			re.Match(buf)
		}
	})
	b.Run("matcher", func(b *testing.B) {
		for b.Loop() {
			m(key)
		}
	})
}

// TestRowSeeker: over every key of a small key space (two prefixes, up to
// four tags of sorted, distinct tag keys, each of three values), in key
// order, the seek key of each refused key is after it, and no key between
// the two is one RowMatcher keeps; keys with a seek key are counted, so
// that the test sees skips happen.
func TestRowSeeker(t *testing.T) {
	lay := mapping.Layout{SaltWidth: 0, SaltBuckets: 1, MetricWidth: 1, TagKWidth: 1, TagVWidth: 1}
	tagks := []byte{0x01, 0x02, 0x03, 0x04}
	tagvs := []byte{0x00, 0x7F, 0xFF}
	// Every key: prefix (metric, 4-byte hour), then a subset of tagks in
	// order, each with any value.
	var keys [][]byte
	var build func(prefix []byte, from int)
	build = func(key []byte, from int) {
		keys = append(keys, slices.Clone(key))
		for i := from; i < len(tagks); i++ {
			for _, v := range tagvs {
				build(append(slices.Clone(key), tagks[i], v), i+1)
			}
		}
	}
	for _, p := range [][]byte{{7, 0, 0, 0, 1}, {7, 0, 0, 0, 2}} {
		build(p, 0)
	}
	slices.SortFunc(keys, bytes.Compare)
	rng := rand.New(rand.NewPCG(8, 9))
	skips := 0
	for n := range 300 {
		var cs []tagConstraint
		for _, k := range tagks {
			if rng.IntN(2) == 0 {
				continue
			}
			c := tagConstraint{tagk: []byte{k}}
			for _, v := range tagvs {
				if rng.IntN(2) == 0 {
					c.values = append(c.values, []byte{v})
				}
			}
			cs = append(cs, c)
		}
		match, seek := RowMatcher(lay, cs), RowSeeker(lay, cs)
		if match == nil || seek == nil {
			if (match == nil) != (seek == nil) {
				t.Fatalf("case %d: matcher %v, seeker %v", n, match != nil, seek != nil)
			}
			continue
		}
		for i, k := range keys {
			if match(k) {
				continue
			}
			s := seek(nil, k)
			if s == nil {
				continue
			}
			if bytes.Compare(s, k) <= 0 {
				t.Fatalf("case %d %v: seek of %x is %x, not after it", n, cs, k, s)
			}
			for _, between := range keys[i+1:] {
				if bytes.Compare(between, s) >= 0 {
					break
				}
				if match(between) {
					t.Fatalf("case %d %v: seek of %x to %x skips %x, which matches", n, cs, k, s, between)
				}
				skips++
			}
		}
	}
	if skips == 0 {
		t.Fatal("no key was skipped")
	}
	t.Logf("%d keys skipped", skips)
}
