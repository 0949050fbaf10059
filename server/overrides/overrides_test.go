package overrides

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/adapter/otlp"
)

var defaults = Limits{MaxLabelNamesPerSeries: 30, MaxSeriesPerRequest: 50000, NewSeriesRate: 100, NewSeriesBurst: 1000, MaxActiveSeries: 1000, MaxSamplesPerQuery: 5000}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(t *testing.T, c *Config)
		err        string
	}{
		{name: "empty file", yaml: "", check: func(t *testing.T, c *Config) {
			if len(c.Overrides) != 0 || len(c.Users) != 0 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "overrides keep the defaults they do not name", yaml: "overrides:\n  team-a:\n    max_active_series: 7\n    ingestion_rate: 10\n    ingestion_burst_size: 20\n",
			check: func(t *testing.T, c *Config) {
				want := defaults
				want.MaxActiveSeries, want.IngestionRate, want.IngestionBurst = 7, 10, 20
				if got := c.Overrides["team-a"]; !reflect.DeepEqual(got, want) {
					t.Errorf("team-a: %+v, want %+v", got, want)
				}
			}},
		{name: "a limit set to 0 turns it off", yaml: "overrides:\n  b:\n    max_active_series: 0\n", check: func(t *testing.T, c *Config) {
			if c.Overrides["b"].MaxActiveSeries != 0 || c.Overrides["b"].MaxLabelNamesPerSeries != 30 {
				t.Errorf("b: %+v", c.Overrides["b"])
			}
		}},
		{name: "users", yaml: "users:\n  alice: [team-a]\n  grafana: [team-a, team-b]\n", check: func(t *testing.T, c *Config) {
			if len(c.Users["grafana"]) != 2 || c.Users["alice"][0] != "team-a" {
				t.Errorf("users: %v", c.Users)
			}
		}},
		{name: "ruler limits by Mimir's names", yaml: "overrides:\n  a:\n    ruler_max_rule_groups_per_tenant: 70\n    ruler_max_rules_per_rule_group: 20\n",
			check: func(t *testing.T, c *Config) {
				want := defaults
				want.RulerMaxRuleGroupsPerTenant, want.RulerMaxRulesPerRuleGroup = 70, 20
				if got := c.Overrides["a"]; !reflect.DeepEqual(got, want) {
					t.Errorf("a: %+v, want %+v", got, want)
				}
			}},
		{name: "negative ruler limit", yaml: "overrides:\n  a:\n    ruler_max_rules_per_rule_group: -1\n", err: "ruler_max_rules_per_rule_group"},
		{name: "unknown limit", yaml: "overrides:\n  a:\n    max_series: 1\n", err: "max_series"},
		{name: "unknown key", yaml: "limits:\n  a: 1\n", err: "limits"},
		{name: "invalid tenant", yaml: "overrides:\n  \"a/b\":\n    max_active_series: 1\n", err: "a/b"},
		{name: "reserved tenant", yaml: "overrides:\n  \"..\":\n    max_active_series: 1\n", err: ".."},
		{name: "invalid tenant of a login", yaml: "users:\n  alice: [\"a b\"]\n", err: "alice"},
		{name: "login without tenants", yaml: "users:\n  alice: []\n", err: "alice"},
		{name: "negative limit", yaml: "overrides:\n  a:\n    max_active_series: -1\n", err: "max_active_series"},
		{name: "rate without burst", yaml: "overrides:\n  a:\n    ingestion_rate: 5\n", err: "ingestion_burst_size"},
		{name: "not YAML", yaml: "overrides: [\n", err: "yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), defaults)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// runtimeFile returns the path of a runtime configuration file in a
// temporary directory, and a function that writes it.
func runtimeFile(t *testing.T) (string, func(string)) {
	path := filepath.Join(t.TempDir(), "runtime.yaml")
	return path, func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReload: a changed file applies and tells the listeners; a broken
// one keeps the last good configuration and says so in the metrics.
func TestReload(t *testing.T) {
	path, write := runtimeFile(t)
	write("overrides:\n  a:\n    max_active_series: 5\n")
	reg := prometheus.NewRegistry()
	r, err := New(Options{Path: path, Defaults: defaults, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	r.OnChange(func() { changes++ })
	if got := r.Limits("a").MaxActiveSeries; got != 5 {
		t.Fatalf("a: %d, want 5", got)
	}
	if got := r.Limits("other"); !reflect.DeepEqual(got, defaults) {
		t.Fatalf("a tenant without overrides: %+v, want the defaults", got)
	}
	if changed, err := r.Reload(); changed || err != nil {
		t.Fatalf("unchanged file: changed %v, %v", changed, err)
	}
	write("overrides:\n  a:\n    max_active_series: 9\n")
	if changed, err := r.Reload(); !changed || err != nil || changes != 1 || r.Limits("a").MaxActiveSeries != 9 {
		t.Fatalf("changed file: changed %v, %v, %d listener calls, a=%d", changed, err, changes, r.Limits("a").MaxActiveSeries)
	}
	write("overrides:\n  a:\n    max_active_series: -3\n")
	if _, err := r.Reload(); err == nil {
		t.Fatal("a broken file reloaded")
	}
	if r.Limits("a").MaxActiveSeries != 9 || changes != 1 {
		t.Errorf("after a broken file: a=%d, %d listener calls; want the last good one", r.Limits("a").MaxActiveSeries, changes)
	}
	if v := testutil.ToFloat64(r.success); v != 0 {
		t.Errorf("last_reload_successful = %v after a broken file", v)
	}
	if _, err := New(Options{Path: path, Defaults: defaults}); err == nil {
		t.Error("New with a broken file succeeded")
	}
}

// FuzzParse: no input panics Parse, and what it accepts has valid limits.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "overrides:\n  a:\n    max_active_series: 5\n", "users:\n  u: [a, b]\n", "overrides: {a: {ingestion_rate: 1e309}}", "overrides: {\"\": {}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, defaults)
		if err != nil {
			return
		}
		for id, l := range c.Overrides {
			if err := l.validate(); err != nil {
				t.Errorf("tenant %q accepted with invalid limits: %v", id, err)
			}
		}
	})
}

// TestRunReloadsEveryPeriod: Run reads the file again once a period has
// passed, not before; a broken file is logged once however many periods
// it stays broken, and again once it changes. On synctest's clock: the
// periods pass without waiting.
func TestRunReloadsEveryPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path, write := runtimeFile(t)
		write("overrides:\n  a:\n    max_active_series: 5\n")
		var logs bytes.Buffer
		const period = time.Minute
		r, err := New(Options{Path: path, Period: period, Defaults: defaults, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()

		write("overrides:\n  a:\n    max_active_series: 9\n")
		time.Sleep(period - time.Second)
		synctest.Wait()
		if got := r.Limits("a").MaxActiveSeries; got != 5 {
			t.Fatalf("a=%d before a period passed, want 5", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := r.Limits("a").MaxActiveSeries; got != 9 {
			t.Fatalf("a=%d once a period passed, want 9", got)
		}

		write("overrides:\n  a:\n    max_active_series: -3\n")
		time.Sleep(3 * period)
		synctest.Wait()
		write("overrides:\n  a:\n    max_active_series: -4\n")
		time.Sleep(period)
		synctest.Wait()
		if n := strings.Count(logs.String(), "not reloaded"); n != 2 {
			t.Errorf("%d errors logged over 3 periods of one broken file and one of another, want 2:\n%s", n, logs.String())
		}
		if got := r.Limits("a").MaxActiveSeries; got != 9 {
			t.Errorf("a=%d after broken files, want the last good 9", got)
		}
		cancel()
		<-done
	})
}

// TestOTelLimits: a tenant's otel_* keys change its OTLP settings over the
// defaults (the flags'); a tenant without them keeps the defaults; an
// unknown strategy is refused.
func TestOTelLimits(t *testing.T) {
	base := otlp.DefaultConfig()
	base.PromoteAllResourceAttributes, base.IgnoreResourceAttributes = true, []string{"process.pid"}
	defaults := Limits{OTel: OTelLimitsOf(base)}
	c, err := Parse([]byte("overrides:\n  a:\n    otel_translation_strategy: NoTranslation\n    promote_otel_resource_attributes: k8s.pod.name, host.name\n"+
		"    otel_native_delta_ingestion: true\n  b:\n    max_active_series: 5\n"), defaults)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Overrides["a"].OTel.Config(base)
	if a.TranslationStrategy != "NoTranslation" || !slices.Equal(a.PromoteResourceAttributes, []string{"k8s.pod.name", "host.name"}) ||
		a.PromoteAllResourceAttributes || a.IgnoreResourceAttributes != nil || !a.NativeDelta || !a.LabelNameUnderscoreSanitization {
		t.Errorf("tenant a: %+v", a)
	}
	if b := c.Overrides["b"].OTel.Config(base); !reflect.DeepEqual(b, base) {
		t.Errorf("tenant b: %+v, want the defaults %+v", b, base)
	}
	if _, err := Parse([]byte("overrides:\n  a:\n    otel_translation_strategy: Dots\n"), defaults); err == nil || !strings.Contains(err.Error(), "Dots") {
		t.Errorf("unknown strategy: %v", err)
	}
}

// TestShow: /runtime_config's YAML: the defaults and every limit of each
// tenant; with diff, only what a tenant's overrides change (a relabel
// configuration among them).
func TestShow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runtime.yaml")
	body := "overrides:\n  a:\n    max_active_series: 7\n    max_query_lookback: 1d\n    metric_relabel_configs:\n      - regex: request_id\n        action: labeldrop\n  b:\n    max_samples_per_query: 5000\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Path: path, Defaults: defaults})
	if err != nil {
		t.Fatal(err)
	}
	var full, diff bytes.Buffer
	if err := r.Show(&full, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Show(&diff, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"defaults:\n", "    max_active_series: 7\n", "    max_label_names_per_series: 30\n", "    max_query_lookback: 1d\n", "action: labeldrop"} {
		if !strings.Contains(full.String(), want) {
			t.Errorf("full view lacks %q:\n%s", want, full.String())
		}
	}
	wantDiff := "overrides:\n  a:\n    max_active_series: 7\n    max_query_lookback: 1d\n    metric_relabel_configs:\n      - action: labeldrop\n        regex: request_id\n        replacement: $1\n        separator: ;\n  b: {}\n"
	if diff.String() != wantDiff {
		t.Errorf("diff view:\n%s\nwant\n%s", diff.String(), wantDiff)
	}
}
