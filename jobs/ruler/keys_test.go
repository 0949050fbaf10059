package ruler_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/promhbase/promhbase/jobs/ruler"
)

// TestKeyGolden freezes the rules table's row keys (jobs/ruler/doc.go): a
// change here changes the bytes every stored group lives under.
func TestKeyGolden(t *testing.T) {
	for _, tc := range []struct {
		name          string
		kind          byte
		namespace     string
		group, golden string
	}{
		{"group row", ruler.RowKindGroup, "ns", "grp",
			"67" + // 'g': the group's row
				"6e73" + // namespace "ns"
				"00" + // separator
				"677270"}, // group "grp", to the key's end
		{"lease row", ruler.RowKindLease, "ns", "grp",
			"6c" + // 'l': the lease's row
				"6e73" + "00" + "677270"},
		{"UTF-8 and a slash", ruler.RowKindGroup, "a/é", "x y",
			"67" +
				"612fc3a9" + // "a/é": '/' kept, é as its two UTF-8 bytes
				"00" +
				"782079"}, // "x y"
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := ruler.AppendKey([]byte{0xff}, tc.kind, tc.namespace, tc.group)
			if got := hex.EncodeToString(key); got != "ff"+tc.golden {
				t.Fatalf("key %s, want ff%s (appended after dst's byte)", got, tc.golden)
			}
			kind, ns, g, err := ruler.ParseKey(key[1:])
			if err != nil {
				t.Fatal(err)
			}
			if kind != tc.kind || ns != tc.namespace || g != tc.group {
				t.Errorf("parsed %q %q %q, want %q %q %q", kind, ns, g, tc.kind, tc.namespace, tc.group)
			}
			prefix := ruler.AppendNamespacePrefix(nil, tc.kind, tc.namespace)
			if !strings.HasPrefix(string(key[1:]), string(prefix)) {
				t.Errorf("key %x does not start with its namespace prefix %x", key[1:], prefix)
			}
		})
	}
}

// TestKeyOrder: a namespace's rows are contiguous and in group order,
// also when one namespace is a prefix of another.
func TestKeyOrder(t *testing.T) {
	keys := []string{
		string(ruler.AppendKey(nil, ruler.RowKindGroup, "a", "x")),
		string(ruler.AppendKey(nil, ruler.RowKindGroup, "a", "y")),
		string(ruler.AppendKey(nil, ruler.RowKindGroup, "ab", "a")),
		string(ruler.AppendKey(nil, ruler.RowKindLease, "a", "a")),
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("key %x sorts before key %x", keys[i], keys[i-1])
		}
	}
}

func TestParseKeyErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		err  string
	}{
		{"empty", "", "fewer than 4"},
		{"too short", "g\x00a", "fewer than 4"},
		{"unknown kind", "x" + "ns\x00g", "neither"},
		{"member row", "m" + "tokn", "neither"},
		{"no separator", "g" + "nsgrp", "no 0x00"},
		{"empty namespace", "g" + "\x00grp", "namespace is empty"},
		{"empty group", "g" + "ns\x00", "group is empty"},
		{"second separator", "g" + "ns\x00g\x00h", "0x00"},
		{"invalid UTF-8", "g" + "n\xff\x00g", "UTF-8"},
		{"name too long", "g" + strings.Repeat("n", ruler.MaxNameBytes+1) + "\x00g", "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := ruler.ParseKey([]byte(tc.key))
			if !errors.Is(err, ruler.ErrInvalidKey) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want ErrInvalidKey naming %q", err, tc.err)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		ok      bool
	}{
		{"plain", "my-rules", true},
		{"slash and spaces", "team a/alerts", true},
		{"unicode", "règles ✓", true},
		{"longest", strings.Repeat("x", ruler.MaxNameBytes), true},
		{"empty", "", false},
		{"0x00", "a\x00b", false},
		{"invalid UTF-8", "a\xc3", false},
		{"too long", strings.Repeat("x", ruler.MaxNameBytes+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ruler.CheckName("namespace", tc.s)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ruler.ErrInvalidName)) {
				t.Fatalf("CheckName(%q): %v, want ok=%v", tc.s, err, tc.ok)
			}
		})
	}
}

// FuzzParseKey: the decoder never panics, refuses what AppendKey cannot
// make, and what it accepts AppendKey makes again byte for byte.
func FuzzParseKey(f *testing.F) {
	f.Add([]byte("gns\x00grp"))
	f.Add([]byte("lns\x00grp"))
	f.Add([]byte("g\x00\x00\x00"))
	f.Add([]byte("g\xff\x00\xfe"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, key []byte) {
		kind, ns, g, err := ruler.ParseKey(key)
		if err != nil {
			if !errors.Is(err, ruler.ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
			return
		}
		if ruler.CheckName("namespace", ns) != nil || ruler.CheckName("group", g) != nil || !utf8.ValidString(ns+g) {
			t.Fatalf("accepted names %q, %q that CheckName refuses", ns, g)
		}
		if again := ruler.AppendKey(nil, kind, ns, g); string(again) != string(key) {
			t.Fatalf("key %x decodes to %q %q %q, which encode to %x", key, kind, ns, g, again)
		}
	})
}
