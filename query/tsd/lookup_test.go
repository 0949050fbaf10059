package tsd

import (
	"strings"
	"testing"

	"github.com/promhbase/promhbase/mapping"
)

// quoted renders a pattern of lookupRegex with its UID bytes as \xHH,
// as ../shared/notes/opentsdb-meta.md writes TimeSeriesLookup's.
func quoted(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r < 0x20 || r >= 0x7f {
			b.WriteString(`\x`)
			b.WriteString(strings.ToUpper(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15])))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestLookupRegex: the patterns getRowKeyRegex builds (the notes' worked
// examples, from the 2.4.1 jar), their quirks kept.
func TestLookupRegex(t *testing.T) {
	id := func(n byte) []byte { return []byte{0, 0, n} }
	unsalted := mapping.Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 3, SaltBuckets: 1}
	salted := mapping.Layout{SaltWidth: 1, SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
	for _, tc := range []struct {
		name   string
		layout mapping.Layout
		pairs  []lookupPair
		meta   bool
		key    string
	}{
		{"meta pair", unsalted, []lookupPair{{id(1), id(2)}}, true,
			`(?s)^.{3}(?:.{6})*(?:\Q\x00\x00\x01\x00\x00\x02\E)(?:.{6})*$`},
		{"data pair", unsalted, []lookupPair{{id(1), id(2)}}, false,
			`(?s)^.{3}(?:.{4})(?:.{6})*(?:\Q\x00\x00\x01\x00\x00\x02\E)(?:.{6})*$`},
		{"data pair salted", salted, []lookupPair{{id(1), id(2)}}, false,
			`(?s)^.{4}(?:.{4})(?:.{6})*(?:\Q\x00\x00\x01\x00\x00\x02\E)(?:.{6})*$`},
		{"meta values alone: ungrouped", unsalted, []lookupPair{{nil, id(2)}, {nil, id(4)}}, true,
			`(?s)^.{3}(?:.{6})*(?:.{3})\Q\x00\x00\x02\E|(?:.{3})\Q\x00\x00\x04\E(?:.{6})*$`},
		{"meta key alone", unsalted, []lookupPair{{id(1), nil}}, true,
			`(?s)^.{3}(?:.{6})*(?:\Q\x00\x00\x01\E(?:.{3}))(?:.{6})*$`},
		{"meta one key, two values", unsalted, []lookupPair{{id(1), id(2)}, {id(1), id(3)}}, true,
			`(?s)^.{3}(?:.{6})*(?:\Q\x00\x00\x01\x00\x00\x02\E|\Q\x00\x00\x01\x00\x00\x03\E)(?:.{6})*$`},
		{"meta a key alone covers its pairs", unsalted, []lookupPair{{id(1), nil}, {id(1), id(2)}}, true,
			`(?s)^.{3}(?:.{6})*(?:\Q\x00\x00\x01\E(?:.{3}))(?:.{6})*$`},
		{"meta a value and a pair: the pair alone", unsalted, []lookupPair{{nil, id(9)}, {id(1), id(2)}}, true,
			`(?s)^.{3}(?:.{6})*(?:\Q\x00\x00\x01\x00\x00\x02\E)(?:.{6})*$`},
		{"a UID holding \\E", unsalted, []lookupPair{{[]byte{'\\', 'E', 0}, id(2)}}, true,
			`(?s)^.{3}(?:.{6})*(?:\Q\E\\E\Q\x00\x00\x00\x02\E)(?:.{6})*$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := lookupRegex(tc.layout, tc.pairs, tc.meta)
			if got := quoted(key); got != tc.key {
				t.Errorf("row key regex\n got %s\nwant %s", got, tc.key)
			}
			if _, err := compileLatin1(key); err != nil {
				t.Errorf("Go's regexp refuses %q: %v", key, err)
			}
		})
	}
}

// TestLookupMatch: the patterns keep the TSUIDs the TSD keeps, bytes
// above 0x7F and a UID holding "\E" included, and the ungrouped
// alternation's false positive too.
func TestLookupMatch(t *testing.T) {
	l := mapping.Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 3, SaltBuckets: 1}
	tsuid := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	m, k1, v2, k3, v4 := []byte{0, 0, 1}, []byte{0, 0, 1}, []byte{0xff, 0x80, 2}, []byte{0, 0, 3}, []byte{'\\', 'E', 4}
	for _, tc := range []struct {
		name  string
		pairs []lookupPair
		key   []byte
		want  bool
	}{
		{"pair present", []lookupPair{{k1, v2}}, tsuid(m, k1, v2, k3, v4), true},
		{"pair second", []lookupPair{{k3, v4}}, tsuid(m, k1, v2, k3, v4), true},
		{"pair absent", []lookupPair{{k3, v2}}, tsuid(m, k1, v2, k3, v4), false},
		{"value misaligned", []lookupPair{{nil, []byte{0x80, 2, 0}}}, tsuid(m, k1, v2, k3, v4), false},
		{"key alone", []lookupPair{{k3, nil}}, tsuid(m, k1, v2, k3, v4), true},
		{"two values, either", []lookupPair{{nil, v2}, {nil, []byte{9, 9, 9}}}, tsuid(m, k1, v2), true},
		// ^...v9 | v4...$: the second alternative is unanchored at the
		// start, so a v4 anywhere in a tag value's place ending a TSUID
		// of any shape matches.
		{"ungrouped alternation", []lookupPair{{nil, []byte{9, 9, 9}}, {nil, v4}}, tsuid([]byte{7}, m, k3, v4), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := lookupRegex(l, tc.pairs, true)
			re, err := compileLatin1(key)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := matchLatin1(re, tc.key, nil); got != tc.want {
				t.Errorf("%s on %x: %v, want %v", quoted(key), tc.key, got, tc.want)
			}
		})
	}
}

// TestNextUID: the stop key of a metric's range, none for the largest
// UID of a width.
func TestNextUID(t *testing.T) {
	for _, tc := range []struct {
		id   []byte
		next []byte
		ok   bool
	}{
		{[]byte{0, 0, 1}, []byte{0, 0, 2}, true},
		{[]byte{0, 0, 0xff}, []byte{0, 1, 0}, true},
		{[]byte{0xff, 0xff, 0xfd}, []byte{0xff, 0xff, 0xfe}, true},
		{[]byte{0xff, 0xff, 0xfe}, nil, false},
		{[]byte{0xff, 0xff, 0xff}, nil, false},
	} {
		next, ok := nextUID(tc.id)
		if ok != tc.ok || string(next) != string(tc.next) {
			t.Errorf("nextUID(%x) = %x, %v; want %x, %v", tc.id, next, ok, tc.next, tc.ok)
		}
	}
}
