package archtest

import (
	"os"
	"path/filepath"
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

// pkg is one package of the module: its imports of the module's
// packages, relative to the module, and of others, by its production
// files (imports, external) and by its test files (testImports,
// testExternal); its directory and the names of its production and test
// files in it.
type pkg struct {
	imports, external         []string
	testImports, testExternal []string
	dir                       string
	goFiles, testFiles        []string
}

// TestArchitectureTable fails when ARCHITECTURE.md's package table and
// the module's packages disagree.
func TestArchitectureTable(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", archPath))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(text))
	if err != nil {
		t.Fatalf("%s: %v", archPath, err)
	}
	for _, p := range check(rows, modulePackages(t)) {
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
	runBroken(t, clean, func(g map[string]pkg) []string { return check(rows, g) }, []broken[map[string]pkg]{
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
	})
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
			wantOne(t, check(rows, graph), tc.want)
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
