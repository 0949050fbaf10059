package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var updateFlagDocs = flag.Bool("update", false, "rewrite "+flagDocsPath+" from the flag definitions (TestFlagDocs)")

// repoFile is path (relative to the repository root) seen from this
// package's directory, where go test runs its tests.
func repoFile(path string) string {
	return filepath.Join("..", "..", filepath.FromSlash(path))
}

// TestFlagDocs fails when docs/flags.md is not what the flag definitions
// render; with -update it rewrites the file.
func TestFlagDocs(t *testing.T) {
	app, _ := newApp()
	got := flagDocs(app)
	path := repoFile(flagDocsPath)
	if *updateFlagDocs {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", flagDocsPath)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v\ngenerate %s with: %s", err, flagDocsPath, flagDocsRegenerate)
	}
	if string(want) == got {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	line := 0
	for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
		line++
	}
	at := func(ls []string) string {
		if line < len(ls) {
			return ls[line]
		}
		return "(end of file)"
	}
	t.Fatalf("%s differs from the flags defined in cmd/promhbase; regenerate it with\n\t%s\nfirst difference, line %d:\n\tfile: %s\n\tcode: %s",
		flagDocsPath, flagDocsRegenerate, line+1, at(wl), at(gl))
}

// TestFlagDocsDeterministic renders the reference on a "different
// machine" (processor count, working, home and temporary directories) and
// wants the same text, so that docs/flags.md does not depend on where it
// was generated.
func TestFlagDocsDeterministic(t *testing.T) {
	app, _ := newApp()
	want := flagDocs(app)

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 3))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	t.Chdir(t.TempDir())
	app, _ = newApp()
	if got := flagDocs(app); got != want {
		t.Errorf("the flag reference depends on the machine; give the flag an entry in flagDocDefaults\nhere:\n%s\nelsewhere:\n%s", want, got)
	}

	// Parsing adds kingpin's help command; the reference leaves it out.
	app, _ = newApp()
	if _, err := app.Parse([]string{"uid", "fsck"}); err != nil {
		t.Fatal(err)
	}
	if got := flagDocs(app); got != want {
		t.Errorf("the flag reference changes once the command line is parsed:\n%s", got)
	}
}

func TestFlagDocsCell(t *testing.T) {
	for in, want := range map[string]string{
		"a | b":                     `a \| b`,
		"one\n  line":               "one line",
		"__name__ and data_table":   `\_\_name\_\_ and data_table`,
		"`__name__` <x> `<y>`":      "`__name__` &lt;x&gt; `<y>`",
		"host:port[,host:port...].": "host:port[,host:port...].",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	if got := anchor("promhbase create-tables"); got != "promhbase-create-tables" {
		t.Errorf("anchor: %q", got)
	}
}
