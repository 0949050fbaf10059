package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the module path; packages are named relative to it.
const module = "github.com/promhbase/promhbase"

// archPath is the map, relative to the repository root.
const archPath = "ARCHITECTURE.md"

// listTags are the build tags whose files go list reads too: the fault
// and cluster tests only add files, so with them every package is seen.
const listTags = "faults,cluster"

// row is one row of the package table.
type row struct {
	line int      // in the file, from 1
	pkgs []string // patterns of the first column, braces expanded
	// The "may import" column: below ("everything below"), anything, the
	// listed patterns, and stdOnly: "standard library" and no other words.
	below, anything, stdOnly bool
	may                      []string
}

// pkg is one package of the module: its imports (production files only)
// of the module's packages, relative to the module, and of others.
type pkg struct {
	imports, external []string
}

// TestArchitectureTable fails when ARCHITECTURE.md's package table and
// the module's packages disagree.
func TestArchitectureTable(t *testing.T) {
	root := filepath.Join("..", "..")
	text, err := os.ReadFile(filepath.Join(root, archPath))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(text))
	if err != nil {
		t.Fatalf("%s: %v", archPath, err)
	}
	pkgs, err := goList(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s; want the whole module", len(pkgs), module)
	}
	for _, p := range check(rows, pkgs) {
		t.Errorf("%s: %s", archPath, p)
	}
}

// TestCheck runs the checks over a synthetic table and import graph: the
// clean graph passes, and each broken one fails with its own complaint.
func TestCheck(t *testing.T) {
	const table = "# map\n\n" +
		"| package | owns | may import |\n" +
		"| --- | --- | --- |\n" +
		"| `t/...` | test harnesses | anything |\n" +
		"| `cmd/x` | the command, `a\\|b` | everything below |\n" +
		"| `a` | a | `b`, `c` (a remark), `d/e`, Prometheus's storage |\n" +
		"| `b`, `d/{e,f}` | b | `c` |\n" +
		"| `c` | c | standard library |\n" +
		"| `g` | g | standard library, client_golang |\n" +
		"\nafter the table\n"
	rows, err := parseTable(table)
	if err != nil {
		t.Fatal(err)
	}
	clean := func() map[string]pkg {
		return map[string]pkg{
			"t/h":     {imports: []string{"cmd/x", "a", "t/h/sub"}},
			"t/h/sub": {},
			"cmd/x":   {imports: []string{"a", "d/f"}, external: []string{"github.com/alecthomas/kingpin/v2"}},
			"a":       {imports: []string{"b", "c", "d/e"}, external: []string{"github.com/prometheus/prometheus/storage"}},
			"b":       {imports: []string{"c"}},
			"d/e":     {imports: []string{"d/f"}},
			"d/f":     {},
			"c":       {external: []string{"fmt", "net/http"}},
			"g":       {external: []string{"github.com/prometheus/client_golang/prometheus"}},
		}
	}
	for _, tc := range []struct {
		name       string
		breakGraph func(map[string]pkg)
		want       string // a part of the one complaint; "" for none
	}{
		{"clean", func(map[string]pkg) {}, ""},
		{"import outside the column", func(g map[string]pkg) { g["b"] = pkg{imports: []string{"c", "g"}} },
			"b imports g, which its row (line 8) does not allow"},
		{"import of a higher row", func(g map[string]pkg) { g["c"] = pkg{imports: []string{"b"}} },
			"c (line 9) imports b of a higher row (line 8)"},
		{"test-only package imported", func(g map[string]pkg) { g["cmd/x"] = pkg{imports: []string{"t/h/sub"}} },
			"cmd/x (line 6) imports t/h/sub of a higher row (line 5)"},
		{"package in no row", func(g map[string]pkg) { g["z"] = pkg{} }, "package z is in no row"},
		{"row of no package", func(g map[string]pkg) {
			delete(g, "d/f")
			g["cmd/x"] = pkg{imports: []string{"a"}}
			g["d/e"] = pkg{}
		}, "line 8 names d/f, which is no package of the module"},
		{"outside the standard library", func(g map[string]pkg) { g["c"] = pkg{external: []string{"fmt", "github.com/x/y"}} },
			"c imports github.com/x/y, but its row (line 9) says standard library"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := clean()
			tc.breakGraph(g)
			got := check(rows, g)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("complaints about a clean graph: %q", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("complaints %q; want one with %q", got, tc.want)
			}
		})
	}
}

// TestCheckTable: complaints about the table itself, whatever the code.
func TestCheckTable(t *testing.T) {
	graph := map[string]pkg{"a": {}, "b": {}}
	for _, tc := range []struct {
		name, table, want string
	}{
		{"two rows of one package", "| `a` | x | anything |\n| `a/...` | y | anything |\n| `b` | z | anything |\n",
			"package a is in the rows of lines 3 and 4"},
		{"may import a higher row", "| `a` | x | anything |\n| `b` | y | `a` |\n", "line 4 may import a, which is in a higher row (line 3)"},
		{"may import no package", "| `a` | x | `c` |\n| `b` | y | anything |\n", "line 3 may import c, which is no package of the module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := parseTable("| package | owns | may import |\n| --- | --- | --- |\n" + tc.table)
			if err != nil {
				t.Fatal(err)
			}
			got := check(rows, graph)
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Errorf("complaints %q; want one with %q", got, tc.want)
			}
		})
	}
}

func TestParseTableErrors(t *testing.T) {
	const head = "| package | owns | may import |\n| --- | --- | --- |\n"
	for _, tc := range []struct{ name, text, want string }{
		{"no table", "# map\n", "no package table"},
		{"two columns", head + "| `a` | x |\n", "line 3: 2 columns"},
		{"no package", head + "| a | x | anything |\n", "line 3: no package"},
		{"open brace", head + "| `a/{b,c` | x | anything |\n", "unbalanced braces"},
		{"empty column", head + "| `a` | x |  |\n", "line 3: empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTable(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one with %q", err, tc.want)
			}
		})
	}
}

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

// goList returns the packages of the module in the repository at root,
// by their path relative to the module ("." for its root), with their
// production imports.
func goList(root string) (map[string]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-tags", listTags, "-json=ImportPath,Imports,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %w\n%s", root, err, stderr.Bytes())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		name, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		var q pkg
		for _, imp := range p.Imports {
			if rel, ok := relative(imp); ok {
				q.imports = append(q.imports, rel)
			} else {
				q.external = append(q.external, imp)
			}
		}
		pkgs[name] = q
	}
	return pkgs, nil
}

// relative returns the path of a package of the module relative to it.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}
