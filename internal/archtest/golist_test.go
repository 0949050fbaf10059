package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// goList returns the packages of the module in the repository at root,
// by their path relative to the module ("." for its root), with their
// imports (production and test files apart) and their files.
func goList(root string) (map[string]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-tags", listTags,
		"-json=ImportPath,Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %w\n%s", root, err, stderr.Bytes())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir                              string
			GoFiles, CgoFiles, TestGoFiles, XTestGoFiles []string
			Imports, TestImports, XTestImports           []string
			Error                                        *struct{ Err string }
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		name, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		q := pkg{
			dir:       p.Dir,
			goFiles:   append(p.GoFiles, p.CgoFiles...),
			testFiles: append(p.TestGoFiles, p.XTestGoFiles...),
		}
		q.imports, q.external = split(p.Imports)
		q.testImports, q.testExternal = split(append(p.TestImports, p.XTestImports...))
		pkgs[name] = q
	}
	return pkgs, nil
}

// split parts import paths into the module's packages, relative to it,
// and the others.
func split(paths []string) (module, others []string) {
	for _, imp := range paths {
		if rel, ok := relative(imp); ok {
			module = append(module, rel)
		} else {
			others = append(others, imp)
		}
	}
	return module, others
}

// relative returns the path of a package of the module relative to it.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}
