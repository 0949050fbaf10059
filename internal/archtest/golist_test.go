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
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
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
