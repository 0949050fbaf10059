package main

// The disk command's promhbase variants: more promhbase processes, with
// other serve flags or GOMAXPROCS, serving the same queries.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// promhbaseVariant is one promhbase process started for the queries over
// the loaded data: its name in the report (added to the system's:
// "promhbase (embedded, GOMAXPROCS=1)"), extra serve flags and the
// GOMAXPROCS of its environment (0: inherited).
type promhbaseVariant struct {
	name       string
	flags      []string
	gomaxprocs int
}

// env is the variant's process environment (nil: inherited).
func (v promhbaseVariant) env() []string {
	if v.gomaxprocs == 0 {
		return nil
	}
	return append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", v.gomaxprocs))
}

// parseVariants makes the variants of --promhbase.gomaxprocs (each
// named GOMAXPROCS=N), then of --promhbase.variant, in order. A
// variant is NAME:ITEMS, or ITEMS alone (then named by them), where
// ITEMS are comma-separated serve flags (--query.engine=prometheus) and
// GOMAXPROCS=N. No variants: nil.
func parseVariants(gomaxprocs []int, specs []string) ([]promhbaseVariant, error) {
	var vs []promhbaseVariant
	for _, n := range gomaxprocs {
		if n < 1 {
			return nil, fmt.Errorf("--promhbase.gomaxprocs=%d: want at least 1", n)
		}
		vs = append(vs, promhbaseVariant{name: fmt.Sprintf("GOMAXPROCS=%d", n), gomaxprocs: n})
	}
	for _, spec := range specs {
		name, items := "", spec
		if !strings.HasPrefix(spec, "--") && !strings.HasPrefix(spec, "GOMAXPROCS=") {
			var ok bool
			if name, items, ok = strings.Cut(spec, ":"); !ok || strings.TrimSpace(name) == "" {
				return nil, fmt.Errorf("--promhbase.variant=%q: want NAME:FLAGS or FLAGS (serve flags starting with --, or GOMAXPROCS=N, separated by commas)", spec)
			}
			name = strings.TrimSpace(name)
		}
		var v promhbaseVariant
		var named []string
		for _, it := range strings.Split(items, ",") {
			it = strings.TrimSpace(it)
			switch {
			case it == "":
				continue
			case strings.HasPrefix(it, "GOMAXPROCS="):
				n, err := strconv.Atoi(strings.TrimPrefix(it, "GOMAXPROCS="))
				if err != nil || n < 1 {
					return nil, fmt.Errorf("--promhbase.variant=%q: %q: want GOMAXPROCS=N, N at least 1", spec, it)
				}
				v.gomaxprocs = n
			case strings.HasPrefix(it, "--") && len(it) > 2:
				v.flags = append(v.flags, it)
			default:
				return nil, fmt.Errorf("--promhbase.variant=%q: %q is neither a flag (--name=value) nor GOMAXPROCS=N", spec, it)
			}
			named = append(named, it)
		}
		v.name = name
		if v.name == "" {
			if len(named) == 0 {
				return nil, fmt.Errorf("--promhbase.variant=%q: empty", spec)
			}
			v.name = strings.Join(named, " ")
		}
		vs = append(vs, v)
	}
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v.name] {
			return nil, fmt.Errorf("two promhbase variants named %q", v.name)
		}
		seen[v.name] = true
	}
	return vs, nil
}

// variantName names a variant's row: the system's name with the
// variant's inside its parentheses ("promhbase (embedded, GOMAXPROCS=1)").
func variantName(system string, v promhbaseVariant) string {
	if v.name == "" {
		return system
	}
	if base, ok := strings.CutSuffix(system, ")"); ok && strings.Contains(base, "(") {
		return base + ", " + v.name + ")"
	}
	return system + " (" + v.name + ")"
}
