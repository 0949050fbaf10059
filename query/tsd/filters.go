package tsd

import (
	"fmt"
	"strings"

	"github.com/grafana/regexp"
)

// matcher is a compiled filter: its tag key and whether a value matches.
type matcher struct {
	f     Filter
	match func(v string) bool
}

// compileFilter builds the matcher of f as a TSD's filter classes match
// (TagVLiteralOrFilter, TagVWildcardFilter, TagVRegexFilter and their
// case-insensitive and negated forms), with their messages for an
// expression they refuse.
func compileFilter(f Filter) (matcher, error) {
	m := matcher{f: f}
	switch f.Type {
	case "literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or":
		fold := strings.HasPrefix(f.Type, "i") || strings.HasPrefix(f.Type, "not_i")
		set, err := literals(f.Expr, fold)
		if err != nil {
			return m, err
		}
		neg := strings.HasPrefix(f.Type, "not_")
		m.match = func(v string) bool {
			if fold {
				v = strings.ToLower(v)
			}
			return set[v] != neg
		}
	case "wildcard", "iwildcard":
		match, err := wildcard(f.Expr, f.Type == "iwildcard")
		if err != nil {
			return m, err
		}
		m.match = match
	case "regexp":
		re, err := regexp.Compile(f.Expr)
		if err != nil {
			return m, &Error{Message: fmt.Sprintf("Invalid regular expression %q: %v", f.Expr, err)}
		}
		m.match = re.MatchString // find(), not anchored
	default:
		return m, &Error{Message: "Could not find a tag value filter of the type: " + f.Type}
	}
	return m, nil
}

// CheckFilter reports what a TSD says of f when it builds it from a
// request (its filter class's constructor refusing the expression, or an
// unknown type), nil when it builds.
func CheckFilter(f Filter) error {
	_, err := compileFilter(f)
	return err
}

// literals is a literal_or's values: split on '|' (trailing empty ones
// dropped, as Java's split does), lowercased when fold.
func literals(expr string, fold bool) (map[string]bool, error) {
	if expr == "" {
		return nil, &Error{Message: "Filter cannot be null or empty"}
	}
	if expr == "|" {
		return nil, &Error{Message: "Filter must contain more than just a pipe"}
	}
	parts := strings.Split(expr, "|")
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	set := make(map[string]bool, len(parts))
	for _, p := range parts {
		if fold {
			p = strings.ToLower(p)
		}
		set[p] = true
	}
	return set, nil
}

// literalValues returns a case-sensitive literal_or's values, which a TSD
// resolves to UIDs before it scans (an unknown one fails the query).
func (f Filter) literalValues() []string {
	if f.Type != "literal_or" {
		return nil
	}
	set, err := literals(f.Expr, false)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	return out
}

// wildcard is TagVWildcardFilter's match: the expression's leading and
// trailing asterisks say whether the value may have anything before and
// after; the parts between asterisks must appear in order, each searched
// from the sum of the lengths of the parts before it (the TSD's index,
// not the end of the last part found).
func wildcard(expr string, fold bool) (func(string) bool, error) {
	if expr == "" {
		return nil, &Error{Message: "Filter cannot be null or empty"}
	}
	actual := expr
	if fold {
		actual = strings.ToLower(expr)
	}
	if !strings.Contains(actual, "*") {
		return nil, &Error{Message: "Filter must contain an asterisk"}
	}
	postfix := actual[0] == '*'
	for len(actual) >= 2 && actual[0] == '*' {
		actual = actual[1:]
	}
	prefix := actual[len(actual)-1] == '*'
	for len(actual) >= 2 && actual[len(actual)-1] == '*' {
		actual = actual[:len(actual)-1]
	}
	components := []string{actual}
	if strings.IndexByte(actual, '*') > 0 {
		components = strings.Split(actual, "*")
	}
	any := len(components) == 1 && components[0] == "*"
	return func(v string) bool {
		if any {
			return true
		}
		if fold {
			v = strings.ToLower(v)
		}
		if postfix && !prefix && !strings.HasSuffix(v, components[len(components)-1]) {
			return false
		}
		if prefix && !postfix && !strings.HasPrefix(v, components[0]) {
			return false
		}
		idx := 0
		for _, c := range components {
			if c != "" && (idx > len(v) || !strings.Contains(v[idx:], c)) {
				return false
			}
			idx += len(c)
		}
		return true
	}, nil
}
