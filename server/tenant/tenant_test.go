package tenant

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"team-a", true},
		{"Prod.EU", true},
		{"a_b!*'()", true},
		{strings.Repeat("x", MaxIDLength), true},
		{strings.Repeat("x", MaxIDLength+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"__mimir_cluster", false},
		{"a/b", false},
		{"a b", false},
		{"a\tb", false},
		{"a|b", false},
		{"a:b", false},
		{"é", false},
		{"a\x00b", false},
		{strings.Repeat("-", 82), true},
		{strings.Repeat("-", 83), false}, // its namespace would pass 250 characters
	} {
		err := ValidateID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, not ErrInvalidID", tc.id, err)
		}
	}
}

func TestParseOrgID(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want []string
		err  error
	}{
		{"a", []string{"a"}, nil},
		{"b|a", []string{"a", "b"}, nil},
		{"a|a|b", []string{"a", "b"}, nil},
		{"", nil, ErrNoID},
		{"a|", nil, ErrInvalidID},
		{"a||b", nil, ErrInvalidID},
		{"a|b c", nil, ErrInvalidID},
	} {
		got, err := ParseOrgID(tc.v)
		if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
			t.Errorf("ParseOrgID(%q) = %v, %v; want %v, %v", tc.v, got, err, tc.want, tc.err)
		}
	}
}

func TestNamespace(t *testing.T) {
	for id, ns := range map[string]string{
		"team-a":   "t_team_2da",
		"Prod.EU":  "t_Prod_2eEU",
		"a_b":      "t_a_5fb",
		"default":  "t_default",
		"hbase":    "t_hbase",
		"!*'()":    "t__21_2a_27_28_29",
		"0":        "t_0",
		"A-._Z":    "t_A_2d_2e_5fZ",
		"x(1)'y'*": "t_x_281_29_27y_27_2a",
	} {
		if got := Namespace(id); got != ns {
			t.Errorf("Namespace(%q) = %q, want %q", id, got, ns)
		}
		back, err := IDFromNamespace(ns)
		if err != nil || back != id {
			t.Errorf("IDFromNamespace(%q) = %q, %v; want %q", ns, back, err, id)
		}
	}
	for _, ns := range []string{"default", "hbase", "t_", "t_a_2", "t_a_zz", "t_a_2D", "t_a_20b", "t_a_7c", "tx_a", "t_a-b"} {
		if id, err := IDFromNamespace(ns); err == nil {
			t.Errorf("IDFromNamespace(%q) = %q, want an error", ns, id)
		}
	}
}

// FuzzNamespace: a valid ID maps to a namespace of HBase's characters,
// within MaxNamespaceLength, that maps back to it; IDFromNamespace never
// panics and accepts only canonical names.
func FuzzNamespace(f *testing.F) {
	for _, s := range []string{"team-a", "a_b", "t_a_5fb", ".", "!*'()", "t__21"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateID(s) == nil {
			ns := Namespace(s)
			if len(ns) > MaxNamespaceLength {
				t.Fatalf("%q: namespace of %d characters", s, len(ns))
			}
			for i := 0; i < len(ns); i++ {
				if !alnum(ns[i]) && ns[i] != '_' {
					t.Fatalf("%q: namespace %q has %q", s, ns, ns[i])
				}
			}
			if back, err := IDFromNamespace(ns); err != nil || back != s {
				t.Fatalf("%q -> %q -> %q, %v", s, ns, back, err)
			}
		}
		if id, err := IDFromNamespace(s); err == nil && Namespace(id) != s {
			t.Fatalf("IDFromNamespace(%q) = %q, whose namespace is %q", s, id, Namespace(id))
		}
	})
}
