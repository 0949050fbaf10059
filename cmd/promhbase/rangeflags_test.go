package main

import (
	"strings"
	"testing"
)

// TestRangeFlags: every command with a time range takes --start/--end
// and, for scripts written before, the hidden --from/--to; the commands
// that need a start refuse a command line with neither.
func TestRangeFlags(t *testing.T) {
	ranges := func(c *commands) map[string][2]*string {
		return map[string][2]*string{
			"scan":    {&c.scan.start, &c.scan.end},
			"delete":  {&c.delete.start, &c.delete.end},
			"compact": {&c.compact.start, &c.compact.end},
			"rollup":  {&c.rollup.start, &c.rollup.end},
			"reindex": {&c.reindex.start, &c.reindex.end},
		}
	}
	// The arguments each command needs besides its range.
	needs := map[string][]string{"scan": {"some.metric"}, "delete": {"--match=up"}}
	for _, cmd := range []string{"scan", "delete", "compact", "rollup", "reindex"} {
		for _, spelling := range [][2]string{{"start", "end"}, {"from", "to"}} {
			t.Run(cmd+" --"+spelling[0]+" --"+spelling[1], func(t *testing.T) {
				app, c := newApp()
				args := append([]string{cmd}, needs[cmd]...)
				args = append(args, "--"+spelling[0]+"=1292148000", "--"+spelling[1]+"=2010-12-12T11:59:59Z")
				if _, err := app.Parse(args); err != nil {
					t.Fatalf("%s: %v", strings.Join(args, " "), err)
				}
				r := ranges(c)[cmd]
				if *r[0] != "1292148000" || *r[1] != "2010-12-12T11:59:59Z" {
					t.Errorf("%s: range %q to %q", strings.Join(args, " "), *r[0], *r[1])
				}
			})
		}
		t.Run(cmd+" without a range", func(t *testing.T) {
			app, c := newApp()
			args := append([]string{cmd}, needs[cmd]...)
			_, err := app.Parse(args)
			required := cmd == "compact" || cmd == "rollup" || cmd == "reindex"
			switch {
			case required && (err == nil || !strings.Contains(err.Error(), "--start")):
				t.Errorf("%s: error %v, want one naming --start", strings.Join(args, " "), err)
			case !required && err != nil:
				t.Errorf("%s: %v", strings.Join(args, " "), err)
			case cmd == "scan" && c.scan.start != "0":
				t.Errorf("scan's default start %q, want 0", c.scan.start)
			}
		})
	}
}
