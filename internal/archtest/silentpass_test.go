package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestNoSilentPass fails for every test (a Test function, or a subtest's
// func(t *testing.T)) that leaves before it checks anything, by a return
// in an if statement that asks about the environment (the backend, a
// variable, -short) or that comes first in its body, without calling a
// method of t: such a test reports PASS having run nothing (on the other
// backend, without a binary). It must say SKIP with its reason (t.Skip),
// or fail. A return after the test has checked something is its own
// business.
func TestNoSilentPass(t *testing.T) {
	pkgs := modulePackages(t)
	for _, name := range sortedKeys(pkgs) {
		p := pkgs[name]
		for _, file := range p.testFiles {
			got, err := silentPasses(filepath.Join(p.dir, file))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, c := range got {
				t.Errorf("%s/%s", name, c)
			}
		}
	}
}

// silentPasses parses the Go test file path and returns each early return
// of a test that calls no method of its *testing.T first, as
// "file:line name: ...".
func silentPasses(path string) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var out []string
	check := func(name string, typ *ast.FuncType, body *ast.BlockStmt) {
		tv := testingT(typ)
		if tv == "" || body == nil {
			return
		}
		first := true
		for _, st := range body.List {
			if isSetup(st, tv) {
				continue
			}
			ifs, ok := st.(*ast.IfStmt)
			wasFirst := first
			first = false
			if !ok || !(wasFirst || asksEnvironment(ifs.Cond)) || !endsInReturn(ifs.Body) || callsOn(ifs.Body, tv) {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s: returns having run nothing and passes; call %s.Skip with the reason",
				where(fset, ifs.Pos()), name, tv))
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch f := n.(type) {
		case *ast.FuncDecl:
			if len(f.Name.Name) >= 4 && f.Name.Name[:4] == "Test" && f.Recv == nil {
				check(f.Name.Name, f.Type, f.Body)
			}
		case *ast.FuncLit:
			check("a subtest", f.Type, f.Body)
		}
		return true
	})
	return out, nil
}

// testingT returns the name of typ's only parameter when it is a
// *testing.T, else "".
func testingT(typ *ast.FuncType) string {
	if typ.Params == nil || len(typ.Params.List) != 1 || len(typ.Params.List[0].Names) != 1 {
		return ""
	}
	star, ok := typ.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return ""
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "testing" {
		return ""
	}
	return typ.Params.List[0].Names[0].Name
}

// isSetup reports whether st is a call of tv.Parallel or tv.Helper, which
// check nothing.
func isSetup(st ast.Stmt, tv string) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == tv && (sel.Sel.Name == "Parallel" || sel.Sel.Name == "Helper")
}

// asksEnvironment reports whether cond mentions the test backend
// (package testbackend), an environment variable (os.Getenv, os.LookupEnv)
// or testing.Short.
func asksEnvironment(cond ast.Expr) bool {
	found := false
	ast.Inspect(cond, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return !found
		}
		if id, ok := sel.X.(*ast.Ident); ok {
			switch {
			case id.Name == "testbackend",
				id.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv"),
				id.Name == "testing" && sel.Sel.Name == "Short":
				found = true
			}
		}
		return !found
	})
	return found
}

// endsInReturn reports whether block's last statement is a return.
func endsInReturn(block *ast.BlockStmt) bool {
	if len(block.List) == 0 {
		return false
	}
	_, ok := block.List[len(block.List)-1].(*ast.ReturnStmt)
	return ok
}

// callsOn reports whether block calls a method of the variable tv (t.Skip,
// t.Fatal, t.Error, ...) or passes tv to a function (a helper that fails
// or skips).
func callsOn(block *ast.BlockStmt, tv string) bool {
	found := false
	ast.Inspect(block, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == tv && sel.Sel.Name != "Log" && sel.Sel.Name != "Logf" {
				found = true
			}
		}
		for _, a := range call.Args {
			if id, ok := a.(*ast.Ident); ok && id.Name == tv {
				found = true
			}
		}
		return !found
	})
	return found
}

func TestSilentPasses(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string
	}{
		{"skips", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif x() {\n\t\tt.Skip(\"why\")\n\t}\n}\n", ""},
		{"logs and returns", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif x() {\n\t\tt.Log(\"why\")\n\t\treturn\n\t}\n}\n", "TestA: returns having run nothing"},
		{"returns", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif x() {\n\t\treturn\n\t}\n}\n", "TestA: returns having run nothing"},
		{"subtest returns", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tt.Run(\"x\", func(t *testing.T) {\n\t\tif x() {\n\t\t\treturn\n\t\t}\n\t})\n}\n", "a subtest: returns having run nothing"},
		{"after a check", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tcheck(t)\n\tif x() {\n\t\treturn\n\t}\n}\n", ""},
		{"backend, after setup", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tcheck(t)\n\tif testbackend.Name() != \"hbase\" {\n\t\treturn\n\t}\n}\n", "TestA: returns having run nothing"},
		{"after parallel", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tt.Parallel()\n\tif x() {\n\t\treturn\n\t}\n}\n", "TestA: returns having run nothing"},
		{"fails", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif err := x(); err != nil {\n\t\tt.Error(err)\n\t\treturn\n\t}\n}\n", ""},
		{"helper", "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif x() {\n\t\tcheck(t)\n\t\treturn\n\t}\n}\n", ""},
		{"a helper of t is not a test", "package p\n\nimport \"testing\"\n\nfunc setup(t *testing.T) {\n\tif x() {\n\t\treturn\n\t}\n}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p_test.go")
			write(t, path, tc.src)
			got, err := silentPasses(path)
			if err != nil {
				t.Fatal(err)
			}
			wantOne(t, got, tc.want)
		})
	}
}
