package mixin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// ruleFiles are the mixin's rule files, relative to this directory.
var ruleFiles = []string{"rules.yaml", "alerts.yaml"}

// runbooks is the runbooks page every alert links into.
const runbooks = "../../docs/runbooks.md"

// parseRules returns the groups of file, parsed and validated by
// Prometheus's own rulefmt (every expression through its PromQL parser).
func parseRules(t *testing.T, file string) *rulefmt.RuleGroups {
	t.Helper()
	rgs, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", file, err)
	}
	if rgs == nil {
		t.Fatalf("%s: no rule groups", file)
	}
	return rgs
}

// anchors returns the GitHub anchors of the level-2 headings of the
// markdown file.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}

// TestRules: the rule files parse and validate with Prometheus's rulefmt,
// every expression parses with its PromQL parser, and every alert has a
// severity, a summary, a description and a runbook_url whose anchor is a
// section of docs/runbooks.md.
func TestRules(t *testing.T) {
	sections := anchors(t, runbooks)
	p := parser.NewParser(parser.Options{})
	alerts := 0
	for _, file := range ruleFiles {
		for _, g := range parseRules(t, file).Groups {
			for _, r := range g.Rules {
				name := r.Record + r.Alert
				t.Run(file+"/"+name, func(t *testing.T) {
					if _, err := p.ParseExpr(r.Expr); err != nil {
						t.Errorf("expression: %v", err)
					}
					if r.Alert == "" {
						return
					}
					alerts++
					switch r.Labels["severity"] {
					case "critical", "warning":
					default:
						t.Errorf("severity %q, want critical or warning", r.Labels["severity"])
					}
					for _, a := range []string{"summary", "description", "runbook_url"} {
						if r.Annotations[a] == "" {
							t.Errorf("no %s annotation", a)
						}
					}
					_, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "/docs/runbooks.md#")
					if !ok || !sections[anchor] {
						t.Errorf("runbook_url %q: no section #%s in %s", r.Annotations["runbook_url"], anchor, runbooks)
					}
				})
			}
		}
	}
	if alerts < 20 {
		t.Errorf("%d alerts, want at least 20", alerts)
	}
}

// unitTests is the part of promtool's unit test file the test reads.
type unitTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name  string `yaml:"name"`
		Cases []struct {
			Alert     string           `yaml:"alertname"`
			EvalTime  model.Duration   `yaml:"eval_time"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestAlertsFire runs promtool's unit tests of the alerts
// (alerts_test.yaml: Prometheus's rule evaluation over generated series),
// after checking that they cover every alert twice: a case where it
// fires, after its `for`, and one where it stays silent. promtool is
// tools/scripts/promtool.sh's; under CI=true a missing one fails the test.
func TestAlertsFire(t *testing.T) {
	b, err := os.ReadFile("alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ut unitTests
	if err := yaml.Unmarshal(b, &ut); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range ut.Tests {
		for _, c := range tc.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alert] = true
			} else {
				silent[c.Alert] = true
			}
		}
	}
	for _, g := range parseRules(t, "alerts.yaml").Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !fires[r.Alert] || !silent[r.Alert] {
				t.Errorf("alerts_test.yaml: %s has a firing case: %v, a silent one: %v; want both", r.Alert, fires[r.Alert], silent[r.Alert])
			}
			if r.For > 0 && fires[r.Alert] && !coversFor(ut, r.Alert) {
				t.Errorf("alerts_test.yaml: %s fires before its for: %s in no case, or no silent case before it", r.Alert, time.Duration(r.For))
			}
		}
	}
	promtool := testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/promtool.sh"), "promtool")
	for _, args := range [][]string{append([]string{"check", "rules"}, ruleFiles...), {"test", "rules", "alerts_test.yaml"}} {
		out, err := exec.CommandContext(t.Context(), promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
		}
	}
}

// coversFor reports whether alert has a silent case at an evaluation
// time before a firing case's, so that the firing one shows `for`
// passing rather than an alert that fires at once.
func coversFor(ut unitTests, alert string) bool {
	for _, tc := range ut.Tests {
		var first, silentBefore model.Duration = -1, -1
		for _, c := range tc.Cases {
			if c.Alert != alert {
				continue
			}
			if len(c.ExpAlerts) > 0 && (first < 0 || c.EvalTime < first) {
				first = c.EvalTime
			}
			if len(c.ExpAlerts) == 0 && (silentBefore < 0 || c.EvalTime < silentBefore) {
				silentBefore = c.EvalTime
			}
		}
		if first >= 0 && silentBefore >= 0 && silentBefore < first {
			return true
		}
	}
	return false
}

// dashboard is the part of a Grafana dashboard the lint reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Name, Type string
			Query      any
		}
	}
	Panels []panel
}

type panel struct {
	Type, Title string
	Datasource  *struct{ Type, UID string }
	FieldConfig struct {
		Defaults struct{ Unit string }
	}
	Targets []struct {
		Datasource *struct{ Type, UID string }
		Expr       string
	}
	Panels []panel // a collapsed row's
}

// expand replaces the dashboard's variables in expr by values that parse:
// $__rate_interval by rateWindow (so that the lint tells its windows from
// others), the other intervals by a minute, the selectors' variables by
// ".+".
func expand(expr string) string {
	return strings.NewReplacer("$__rate_interval", rateWindow.String(), "$__interval", "1m", "$__range", "1h",
		"${job}", ".+", "$job", ".+", "${instance}", ".+", "$instance", ".+").Replace(expr)
}

// rateWindow is what expand puts for $__rate_interval: a window no panel
// writes by hand.
const rateWindow = 7*time.Minute + 7*time.Second

// rateFuncs are the functions whose window must be $__rate_interval.
var rateFuncs = map[string]bool{"rate": true, "irate": true, "increase": true}

// TestDashboard lints dashboard.json: a datasource variable of type
// prometheus and a job and an instance variable; every panel but a row
// with the datasource variable, a unit and a query; every query parses
// after its variables are expanded, and its rate, irate and increase
// windows are $__rate_interval.
func TestDashboard(t *testing.T) {
	var d dashboard
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "datasource" && v.Query != "prometheus" {
			t.Errorf("variable %s: query %v, want prometheus", v.Name, v.Query)
		}
	}
	if vars["datasource"] != "datasource" || vars["job"] != "query" || vars["instance"] != "query" {
		t.Errorf("variables %v: want datasource (a datasource), job and instance (queries)", vars)
	}
	p := parser.NewParser(parser.Options{})
	templated := func(ds *struct{ Type, UID string }) bool {
		return ds != nil && ds.Type == "prometheus" && (ds.UID == "${datasource}" || ds.UID == "$datasource")
	}
	n := 0
	for _, pn := range allPanels(d.Panels) {
		if pn.Type == "row" {
			continue
		}
		n++
		t.Run(pn.Title, func(t *testing.T) {
			if !templated(pn.Datasource) {
				t.Errorf("datasource %+v, want the datasource variable", pn.Datasource)
			}
			if pn.FieldConfig.Defaults.Unit == "" {
				t.Error("no unit")
			}
			if len(pn.Targets) == 0 {
				t.Error("no query")
			}
			for _, tg := range pn.Targets {
				if !templated(tg.Datasource) {
					t.Errorf("query %q: datasource %+v, want the datasource variable", tg.Expr, tg.Datasource)
				}
				expr, err := p.ParseExpr(expand(tg.Expr))
				if err != nil {
					t.Errorf("query %q: %v", tg.Expr, err)
					continue
				}
				parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
					if c, ok := node.(*parser.Call); ok && rateFuncs[c.Func.Name] {
						if m, ok := c.Args[0].(*parser.MatrixSelector); ok && m.Range != rateWindow {
							t.Errorf("query %q: %s over %s, want $__rate_interval", tg.Expr, c.Func.Name, m.Range)
						}
					}
					return nil
				})
			}
		})
	}
	if n < 30 {
		t.Errorf("%d panels, want at least 30", n)
	}
}

// allPanels returns panels and those of their collapsed rows.
func allPanels(panels []panel) []panel {
	var out []panel
	for _, p := range panels {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestMetricNames: every metric the rules and the dashboard name is one
// promhbase exposes (testdata/metrics.txt) or a recording rule of
// rules.yaml.
func TestMetricNames(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			known[line] = true
		}
	}
	var exprs []string
	for _, file := range ruleFiles {
		for _, g := range parseRules(t, file).Groups {
			for _, r := range g.Rules {
				exprs = append(exprs, r.Expr)
				if r.Record != "" {
					known[r.Record] = true
				}
			}
		}
	}
	var d dashboard
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		t.Fatal(err)
	}
	for _, pn := range allPanels(d.Panels) {
		for _, tg := range pn.Targets {
			exprs = append(exprs, expand(tg.Expr))
		}
	}
	p := parser.NewParser(parser.Options{})
	for _, e := range exprs {
		expr, err := p.ParseExpr(e)
		if err != nil {
			t.Errorf("%q: %v", e, err)
			continue
		}
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if !known[name] && !known[base] {
				t.Errorf("%q names %s, which promhbase does not expose (testdata/metrics.txt)", e, name)
			}
			return nil
		})
	}
}
