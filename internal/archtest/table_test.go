package archtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// parseTable reads the package table of text: the table whose header is
// "| package | owns | may import |", up to the first line that is not a
// table row.
func parseTable(text string) ([]row, error) {
	lines := strings.Split(text, "\n")
	start := slices.IndexFunc(lines, func(l string) bool {
		c := cells(l)
		return len(c) == 3 && c[0] == "package" && c[1] == "owns" && c[2] == "may import"
	})
	if start < 0 {
		return nil, errors.New(`no package table ("| package | owns | may import |")`)
	}
	var rows []row
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		r, err := parseRow(i+1, lines[i])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func parseRow(line int, text string) (row, error) {
	c := cells(text)
	if len(c) != 3 {
		return row{}, fmt.Errorf("%d columns, want 3", len(c))
	}
	r := row{line: line}
	var err error
	if r.pkgs, err = patterns(c[0]); err != nil {
		return row{}, err
	}
	if len(r.pkgs) == 0 {
		return row{}, errors.New("no package in backquotes in the first column")
	}
	if c[2] == "" {
		return row{}, errors.New(`empty "may import" column`)
	}
	std, notes := false, 0
	for _, item := range splitOutside(dropRemarks(c[2]), ',') {
		item = strings.TrimSpace(item)
		switch {
		case strings.Contains(item, "`"):
			ps, err := patterns(item)
			if err != nil {
				return row{}, err
			}
			r.may = append(r.may, ps...)
		case item == "everything below":
			r.below = true
		case item == "anything":
			r.anything = true
		case item == "standard library":
			std = true
		case item != "":
			notes++
		}
	}
	r.stdOnly = std && notes == 0
	return r, nil
}

// cells splits a table line at its unescaped "|"s and trims each cell.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	var out []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return out
}

// dropRemarks removes the parenthesized remarks outside backquotes.
func dropRemarks(s string) string {
	var b strings.Builder
	quoted, depth := false, 0
	for _, c := range s {
		switch {
		case c == '`' && depth == 0:
			quoted = !quoted
		case c == '(' && !quoted:
			depth++
			continue
		case c == ')' && !quoted && depth > 0:
			depth--
			continue
		}
		if depth == 0 {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// splitOutside splits s at sep outside backquotes.
func splitOutside(s string, sep rune) []string {
	var out []string
	quoted, from := false, 0
	for i, c := range s {
		switch {
		case c == '`':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[from:i])
			from = i + 1
		}
	}
	return append(out, s[from:])
}

// patterns returns the package patterns in backquotes in s, brace groups
// expanded.
func patterns(s string) ([]string, error) {
	var out []string
	parts := strings.Split(s, "`")
	for i := 1; i < len(parts); i += 2 {
		ps, err := expand(parts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// expand expands the one brace group of p: "a/{b,c}" is a/b and a/c.
func expand(p string) ([]string, error) {
	open, end := strings.IndexByte(p, '{'), strings.IndexByte(p, '}')
	switch {
	case open < 0 && end < 0:
		return []string{p}, nil
	case open < 0 || end < open || strings.Count(p, "{") != 1 || strings.Count(p, "}") != 1:
		return nil, fmt.Errorf("%q: unbalanced braces", p)
	}
	var out []string
	for _, alt := range strings.Split(p[open+1:end], ",") {
		out = append(out, p[:open]+strings.TrimSpace(alt)+p[end+1:])
	}
	return out, nil
}

// matches reports whether package p is pattern's: the same path, or with
// pattern "x/...", x or a package below it.
func matches(pattern, p string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	return p == pattern
}

func matchesAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return matches(pat, p) })
}

// standard reports whether import path p is of Go's standard library:
// its first element has no dot, as the go command decides.
func standard(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

// check returns the complaints about rows against the packages of the
// module: packages in no row or several, rows naming no package, imports
// a row's column does not allow, imports of a higher row.
func check(rows []row, pkgs map[string]pkg) []string {
	var out []string
	complain := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	names := slices.Sorted(func(yield func(string) bool) {
		for p := range pkgs {
			if !yield(p) {
				return
			}
		}
	})
	rowOf := map[string]int{}
	for _, p := range names {
		var in []int
		for i, r := range rows {
			if matchesAny(r.pkgs, p) {
				in = append(in, i)
			}
		}
		switch len(in) {
		case 0:
			complain("package %s is in no row of the table", p)
		case 1:
			rowOf[p] = in[0]
		default:
			complain("package %s is in the rows of lines %d and %d", p, rows[in[0]].line, rows[in[1]].line)
		}
	}
	for i, r := range rows {
		for _, pat := range r.pkgs {
			if !slices.ContainsFunc(names, func(p string) bool { return matches(pat, p) }) {
				complain("the row of line %d names %s, which is no package of the module", r.line, pat)
			}
		}
		for _, pat := range r.may {
			var at []int
			for _, p := range names {
				if j, ok := rowOf[p]; ok && matches(pat, p) {
					at = append(at, j)
				}
			}
			switch {
			case len(at) == 0:
				complain("the row of line %d may import %s, which is no package of the module", r.line, pat)
			case slices.Min(at) < i:
				complain("the row of line %d may import %s, which is in a higher row (line %d)", r.line, pat, rows[slices.Min(at)].line)
			}
		}
	}
	for _, p := range names {
		i, ok := rowOf[p]
		if !ok {
			continue
		}
		r := rows[i]
		for _, imp := range pkgs[p].imports {
			j, ok := rowOf[imp]
			switch {
			case !ok:
				// Complained about above.
			case j < i:
				complain("%s (line %d) imports %s of a higher row (line %d)", p, r.line, imp, rows[j].line)
			case j == i || r.anything || r.below || matchesAny(r.may, imp):
			default:
				complain("%s imports %s, which its row (line %d) does not allow", p, imp, r.line)
			}
		}
		if r.stdOnly {
			for _, imp := range pkgs[p].external {
				if !standard(imp) {
					complain("%s imports %s, but its row (line %d) says standard library", p, imp, r.line)
				}
			}
		}
	}
	return out
}
