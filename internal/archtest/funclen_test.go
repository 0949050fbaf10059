package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a product function may be, from its func
// line to its closing brace, unless the last line of its doc comment
// starts with longMark and says why (a decoder of a format's sections in
// order, a hot loop whose calls would cost).
const (
	maxFuncLines = 120
	longMark     = "// long:"
)

// notProduct reports whether a package is outside the rule: the test and
// lab rows of ARCHITECTURE.md's table.
func notProduct(name string) bool {
	for _, prefix := range []string{"test", "tools", "internal/archtest"} {
		if name == prefix || strings.HasPrefix(name, prefix+"/") {
			return true
		}
	}
	return false
}

// TestFunctionLength fails for every function of a product package's
// production files longer than maxFuncLines without a longMark line: a
// hub reads as the list of its named phases.
func TestFunctionLength(t *testing.T) {
	pkgs := modulePackages(t)
	for _, name := range sortedKeys(pkgs) {
		if notProduct(name) {
			continue
		}
		p := pkgs[name]
		for _, file := range p.goFiles {
			got, err := longFunctions(filepath.Join(p.dir, file), maxFuncLines)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, c := range got {
				t.Errorf("%s/%s", name, c)
			}
		}
	}
}

// longFunctions parses the Go file path and returns each function longer
// than max lines whose doc comment does not end in a longMark line, as
// "file:line name: n lines".
func longFunctions(path string, max int) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var out []string
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n <= max || markedLong(fn.Doc) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: %d lines (at most %d, or a %q line saying why)",
			where(fset, fn.Pos()), fn.Name.Name, n, max, longMark))
	}
	return out, nil
}

// markedLong reports whether the last line of doc starts with longMark.
func markedLong(doc *ast.CommentGroup) bool {
	return doc != nil && strings.HasPrefix(doc.List[len(doc.List)-1].Text, longMark)
}

func TestLongFunctions(t *testing.T) {
	body := strings.Repeat("\t_ = 0\n", 8)
	for _, tc := range []struct {
		name, src string
		want      string
	}{
		{"short", "package p\n\nfunc f() {\n" + body + "}\n", ""},
		{"long", "package p\n\n// f is long.\nfunc f() {\n" + body + body + "}\n", "f: 18 lines"},
		{"long, marked", "package p\n\n// f is long.\n// long: a decoder of sections in order.\nfunc f() {\n" + body + body + "}\n", ""},
		{"long, mark not last", "package p\n\n// long: a decoder.\n// f is long.\nfunc f() {\n" + body + body + "}\n", "f: 18 lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.go")
			write(t, path, tc.src)
			got, err := longFunctions(path, 10)
			if err != nil {
				t.Fatal(err)
			}
			wantOne(t, got, tc.want)
		})
	}
}
