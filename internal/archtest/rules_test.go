package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leakExempt returns the packages that start goroutines and have no tests
// of their own, each with the reason their goroutines are leak-checked
// elsewhere. An entry that no longer applies is a complaint.
func leakExempt() map[string]string {
	return map[string]string{
		"test/testkit/testzk": "a fake ZooKeeper for tests, with none of its own: its goroutines run in " +
			"store/hbase's and cmd/promhbase's tests, whose TestMains check for leaks",
	}
}

// testifyPath is the import path prefix of testify, which the module's
// tests do not use: they say what they check with the testing package.
const testifyPath = "github.com/stretchr/testify"

// leakFacts is what the leak rule needs of one package.
type leakFacts struct {
	goStmt   string // "file:line" where a production file starts a goroutine; "" for none
	hasTests bool   // the package has _test.go files
	testMain string // "file:line" of its TestMain; "" for none
	verifies bool   // its TestMain calls VerifyTestMain
}

// TestLeakChecked fails for every package of the module whose production
// files start goroutines (a go statement, or a call x.Go(f) as of
// sync.WaitGroup and errgroup.Group) and whose tests do not check for
// leaked goroutines: a func TestMain calling VerifyTestMain
// (test/testkit/testleak's, or goleak's under internal/).
func TestLeakChecked(t *testing.T) {
	pkgs := modulePackages(t)
	facts := map[string]leakFacts{}
	for name, p := range pkgs {
		f, err := leakFactsOf(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		facts[name] = f
	}
	for _, c := range leakComplaints(facts, leakExempt()) {
		t.Error(c)
	}
}

// TestNoTestify fails for every package whose files, production or test,
// import testify.
func TestNoTestify(t *testing.T) {
	for _, c := range testifyComplaints(modulePackages(t)) {
		t.Error(c)
	}
}

// TestInternalSelfContained fails for every package under internal/
// whose files, production or test, import a package of the module outside
// internal/: the libraries there sit below every other package.
func TestInternalSelfContained(t *testing.T) {
	for _, c := range internalComplaints(modulePackages(t)) {
		t.Error(c)
	}
}

// modulePackages returns the packages of the module, as goList lists
// them from the repository root.
func modulePackages(t *testing.T) map[string]pkg {
	t.Helper()
	pkgs, err := goList(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s; want the whole module", len(pkgs), module)
	}
	return pkgs
}

// leakFactsOf parses the files of p: where its production files first
// start a goroutine, and the TestMain of its test files.
func leakFactsOf(p pkg) (leakFacts, error) {
	fset := token.NewFileSet()
	f := leakFacts{hasTests: len(p.testFiles) > 0}
	for _, name := range p.goFiles {
		file, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return leakFacts{}, fmt.Errorf("parse %s: %w", name, err)
		}
		if pos, ok := firstGoroutine(file); ok && f.goStmt == "" {
			f.goStmt = where(fset, pos)
		}
	}
	for _, name := range p.testFiles {
		file, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return leakFacts{}, fmt.Errorf("parse %s: %w", name, err)
		}
		if fn := testMain(file); fn != nil {
			f.testMain = where(fset, fn.Pos())
			f.verifies = callsVerifyTestMain(fn.Body)
		}
	}
	return f, nil
}

// where is pos as "file:line", the file by its base name.
func where(fset *token.FileSet, pos token.Pos) string {
	p := fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// firstGoroutine returns the position of the first go statement in file,
// or of the first call of a method Go of one argument (wg.Go(f), as
// sync.WaitGroup and errgroup.Group start goroutines).
func firstGoroutine(file *ast.File) (token.Pos, bool) {
	var pos token.Pos
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			pos = n.Pos()
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" && len(n.Args) == 1 {
				pos = n.Pos()
			}
		}
		return pos == token.NoPos
	})
	return pos, pos != token.NoPos
}

// testMain returns file's func TestMain (no receiver), or nil.
func testMain(file *ast.File) *ast.FuncDecl {
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "TestMain" && fn.Body != nil {
			return fn
		}
	}
	return nil
}

// callsVerifyTestMain reports whether body calls a function named
// VerifyTestMain (x.VerifyTestMain or, dot-imported, VerifyTestMain).
func callsVerifyTestMain(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			found = found || fun.Sel.Name == "VerifyTestMain"
		case *ast.Ident:
			found = found || fun.Name == "VerifyTestMain"
		}
		return !found
	})
	return found
}

// leakComplaints returns, in package order, what each package that starts
// goroutines lacks for its leak check, and the entries of exempt that do
// not apply.
func leakComplaints(facts map[string]leakFacts, exempt map[string]string) []string {
	var out []string
	complain := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, name := range sortedKeys(facts) {
		f := facts[name]
		_, exempted := exempt[name]
		switch {
		case f.goStmt == "" || f.verifies:
			if exempted {
				complain("%s is exempt from the leak check, but it starts no goroutine or checks for leaks itself: drop it from leakExempt", name)
			}
		case !f.hasTests:
			if !exempted {
				complain("%s starts goroutines (%s) and has no tests: it lacks a _test.go with a TestMain calling VerifyTestMain (or an entry in leakExempt with the reason)", name, f.goStmt)
			}
		case exempted:
			complain("%s is exempt from the leak check, but it has tests: it lacks a TestMain calling VerifyTestMain, and the exemption goes", name)
		case f.testMain == "":
			complain("%s starts goroutines (%s) and lacks a TestMain: add one calling testleak.VerifyTestMain (goleak.VerifyTestMain under internal/)", name, f.goStmt)
		default:
			complain("%s starts goroutines (%s) and its TestMain (%s) lacks a call of VerifyTestMain", name, f.goStmt, f.testMain)
		}
	}
	for _, name := range sortedKeys(exempt) {
		if _, ok := facts[name]; !ok {
			complain("leakExempt names %s, which is no package of the module", name)
		}
	}
	return out
}

// testifyComplaints names every package whose files import testify.
func testifyComplaints(pkgs map[string]pkg) []string {
	var out []string
	for _, name := range sortedKeys(pkgs) {
		p := pkgs[name]
		for _, imp := range slices.Concat(p.external, p.testExternal) {
			if imp == testifyPath || strings.HasPrefix(imp, testifyPath+"/") {
				out = append(out, fmt.Sprintf("%s imports %s: tests use the testing package alone", name, imp))
			}
		}
	}
	return out
}

// internalComplaints names every import of a package under internal/, by
// its production or test files, of a package of the module outside it.
func internalComplaints(pkgs map[string]pkg) []string {
	var out []string
	for _, name := range sortedKeys(pkgs) {
		if !matches("internal/...", name) {
			continue
		}
		p := pkgs[name]
		for _, imp := range slices.Concat(p.imports, p.testImports) {
			if !matches("internal/...", imp) {
				out = append(out, fmt.Sprintf("%s imports %s, which is outside internal/", name, imp))
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestLeakFactsOf parses production and test files of a package written
// for the test: each case's go statement and TestMain found or not.
func TestLeakFactsOf(t *testing.T) {
	for _, tc := range []struct {
		name, prod, test string
		want             leakFacts
	}{
		{"no goroutine, no TestMain", "package p\nfunc f() { g := func() {}; g() }\n", "package p\nfunc TestX() {}\n",
			leakFacts{hasTests: true}},
		{"goroutine, leak-checked", "package p\n\nfunc f() {\n\tgo f()\n}\n",
			"package p\n\nfunc TestMain(m *testing.M) { testleak.VerifyTestMain(m) }\n",
			leakFacts{goStmt: "p.go:4", hasTests: true, testMain: "p_test.go:3", verifies: true}},
		{"goroutine in a closure, TestMain without the check", "package p\nvar f = func() { go func() {}() }\n",
			"package p\nfunc TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n",
			leakFacts{goStmt: "p.go:2", hasTests: true, testMain: "p_test.go:2"}},
		{"a method named TestMain is none", "package p\nfunc f() { go f() }\n",
			"package p\nfunc (s) TestMain(m *testing.M) { goleak.VerifyTestMain(m) }\n",
			leakFacts{goStmt: "p.go:2", hasTests: true}},
		{"goroutine, no tests", "package p\nfunc f() { go f() }\n", "",
			leakFacts{goStmt: "p.go:2"}},
		{"goroutine of a WaitGroup", "package p\n\nfunc f(wg *sync.WaitGroup) {\n\twg.Go(func() {})\n}\n",
			"package p\nfunc TestMain(m *testing.M) {\n\tgoleak.VerifyTestMain(m, opts...)\n}\n",
			leakFacts{goStmt: "p.go:4", hasTests: true, testMain: "p_test.go:2", verifies: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := pkg{dir: dir, goFiles: []string{"p.go"}}
			write(t, filepath.Join(dir, "p.go"), tc.prod)
			if tc.test != "" {
				p.testFiles = []string{"p_test.go"}
				write(t, filepath.Join(dir, "p_test.go"), tc.test)
			}
			got, err := leakFactsOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("leakFactsOf = %+v; want %+v", got, tc.want)
			}
		})
	}
}

// TestLeakComplaints: a package leak-checked, exempt or without goroutines
// passes; each lack is one complaint naming the package and what it lacks.
func TestLeakComplaints(t *testing.T) {
	exempt := map[string]string{"lib": "its goroutines run in user's tests"}
	clean := func() map[string]leakFacts {
		return map[string]leakFacts{
			"checked":  {goStmt: "a.go:3", hasTests: true, testMain: "leak_test.go:9", verifies: true},
			"quiet":    {hasTests: true},
			"untested": {},
			"lib":      {goStmt: "lib.go:7"},
		}
	}
	check := func(f map[string]leakFacts) []string { return leakComplaints(f, exempt) }
	runBroken(t, clean, check, []broken[map[string]leakFacts]{
		{"clean", func(map[string]leakFacts) {}, ""},
		{"no TestMain", func(f map[string]leakFacts) { f["quiet"] = leakFacts{goStmt: "q.go:1", hasTests: true} },
			"quiet starts goroutines (q.go:1) and lacks a TestMain"},
		{"TestMain without the check", func(f map[string]leakFacts) {
			f["checked"] = leakFacts{goStmt: "a.go:3", hasTests: true, testMain: "leak_test.go:9"}
		}, "checked starts goroutines (a.go:3) and its TestMain (leak_test.go:9) lacks a call of VerifyTestMain"},
		{"no tests, not exempt", func(f map[string]leakFacts) { f["untested"] = leakFacts{goStmt: "u.go:2"} },
			"untested starts goroutines (u.go:2) and has no tests"},
		{"exempt package with tests", func(f map[string]leakFacts) { f["lib"] = leakFacts{goStmt: "lib.go:7", hasTests: true} },
			"lib is exempt from the leak check, but it has tests"},
		{"exemption of a quiet package", func(f map[string]leakFacts) { f["lib"] = leakFacts{} },
			"lib is exempt from the leak check, but it starts no goroutine"},
		{"exemption of no package", func(f map[string]leakFacts) { delete(f, "lib") },
			"leakExempt names lib, which is no package"},
	})
}

// TestImportRules: testify anywhere, and a module package outside
// internal/ imported from under it, each by production or test files.
func TestImportRules(t *testing.T) {
	clean := func() map[string]pkg {
		return map[string]pkg{
			"internal/a":     {imports: []string{"internal/b"}, external: []string{"fmt"}, testImports: []string{"internal/a"}},
			"internal/b":     {testExternal: []string{"go.uber.org/goleak"}},
			"top":            {imports: []string{"internal/a"}, testImports: []string{"test/testkit/x"}},
			"test/testkit/x": {imports: []string{"top"}},
		}
	}
	t.Run("testify", func(t *testing.T) {
		runBroken(t, clean, testifyComplaints, []broken[map[string]pkg]{
			{"clean", func(map[string]pkg) {}, ""},
			{"in tests", func(g map[string]pkg) {
				g["top"] = pkg{testExternal: []string{"github.com/stretchr/testify/require"}}
			}, "top imports github.com/stretchr/testify/require"},
			{"in production", func(g map[string]pkg) {
				g["test/testkit/x"] = pkg{external: []string{"github.com/stretchr/testify"}}
			}, "test/testkit/x imports github.com/stretchr/testify:"},
		})
	})
	t.Run("internal", func(t *testing.T) {
		runBroken(t, clean, internalComplaints, []broken[map[string]pkg]{
			{"clean", func(map[string]pkg) {}, ""},
			{"imports up", func(g map[string]pkg) { g["internal/b"] = pkg{imports: []string{"top"}} },
				"internal/b imports top, which is outside internal/"},
			{"tests import up", func(g map[string]pkg) { g["internal/a"] = pkg{testImports: []string{"test/testkit/x"}} },
				"internal/a imports test/testkit/x, which is outside internal/"},
		})
	})
}

// broken is a case of a check run over a clean input that the case
// breaks: want is a part of the one complaint the check then makes, ""
// for none.
type broken[T any] struct {
	name    string
	breakIt func(T)
	want    string
}

// runBroken runs check over clean(), broken by each case in turn.
func runBroken[T any](t *testing.T, clean func() T, check func(T) []string, cases []broken[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := clean()
			tc.breakIt(in)
			wantOne(t, check(in), tc.want)
		})
	}
}

// wantOne fails unless got is empty (want "") or holds one complaint
// containing want.
func wantOne(t *testing.T, got []string, want string) {
	t.Helper()
	switch {
	case want == "" && len(got) > 0:
		t.Errorf("complaints about a clean case: %q", got)
	case want != "" && (len(got) != 1 || !strings.Contains(got[0], want)):
		t.Errorf("complaints %q; want one with %q", got, want)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// durabilityVerbs are the store's optional interfaces that say how a
// backend makes writes durable: only package store (store.Write,
// store.WriteDeferred, store.Sync) and the backends use them, so that no
// caller knows how each backend commits.
var durabilityVerbs = []string{"DeferredPutter", "BulkPutter", "Syncer"}

// TestDurabilityInStore fails for every production file outside store/
// that names one of durabilityVerbs of package store.
func TestDurabilityInStore(t *testing.T) {
	pkgs := modulePackages(t)
	for _, name := range sortedKeys(pkgs) {
		if name == "store" || strings.HasPrefix(name, "store/") {
			continue
		}
		p := pkgs[name]
		for _, file := range p.goFiles {
			path := filepath.Join(p.dir, file)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "store" && slices.Contains(durabilityVerbs, sel.Sel.Name) {
					t.Errorf("%s/%s names store.%s: write through store.Write, store.WriteDeferred or store.Sync", name, file, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
