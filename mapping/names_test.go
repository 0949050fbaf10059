package mapping

import (
	"fmt"
	"testing"
	"unicode/utf8"
)

func TestStoredName(t *testing.T) {
	for _, tc := range []struct {
		name, stored, legacy string // stored and legacy in hex
	}{
		{"cpu_usage", "6370755F7573616765", ""},
		{"café", "636166E9", "636166C3A9"},           // Latin-1, as OpenTSDB writes it
		{"zürich", "7AFC72696368", "7AC3BC72696368"}, // Latin-1
		{"Ã©", "C383C2A9", ""},                       // Latin-1 bytes C3 A9 would read as "é": UTF-8
		{"温度", "E6B8A9E5BAA6", ""},                   // beyond Latin-1: UTF-8
		{"a\u00A0b", "61A062", "61C2A062"},           // no-break space
		{"é温", "C3A9E6B8A9", ""},                     // mixed: UTF-8
		{"", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, legacy := StoredNames(tc.name)
			if got := fmt.Sprintf("%X", stored); got != tc.stored {
				t.Errorf("stored %s, want %s", got, tc.stored)
			}
			if got := fmt.Sprintf("%X", legacy); got != tc.legacy {
				t.Errorf("legacy %s, want %s", got, tc.legacy)
			}
			if back := NameFromStored([]byte(stored)); back != tc.name {
				t.Errorf("read back %q, want %q", back, tc.name)
			}
			if legacy != "" && NameFromStored([]byte(legacy)) != tc.name {
				t.Errorf("legacy form reads %q", NameFromStored([]byte(legacy)))
			}
		})
	}
	// Names OpenTSDB wrote in Latin-1 read as UTF-8.
	if got := NameFromStored([]byte("probe_tsd_caf\xe9")); got != "probe_tsd_café" || !utf8.ValidString(got) {
		t.Errorf("Latin-1 name reads %q", got)
	}
}

// FuzzStoredName: every UTF-8 name reads back unchanged from its stored
// form; every stored byte string reads as valid UTF-8, of the length
// NameLenFromStored tells.
func FuzzStoredName(f *testing.F) {
	for _, s := range []string{"café", "Ã©", "温度", "x", "\xff\xfe", "\u00ff\u0100"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, n := NameFromStored([]byte(s)), NameLenFromStored([]byte(s)); len(got) != n {
			t.Fatalf("stored %X reads as %d bytes, NameLenFromStored says %d", s, len(got), n)
		}
		if !utf8.ValidString(s) {
			if got := NameFromStored([]byte(s)); !utf8.ValidString(got) {
				t.Fatalf("stored %X reads as invalid UTF-8 %q", s, got)
			}
			return
		}
		stored, legacy := StoredNames(s)
		if back := NameFromStored([]byte(stored)); back != s {
			t.Fatalf("%q stored as %X reads back %q", s, stored, back)
		}
		if legacy != "" && legacy != s {
			t.Fatalf("%q: legacy form %X is not its UTF-8", s, legacy)
		}
	})
}
