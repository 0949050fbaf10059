package promapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
	"github.com/promhbase/promhbase/web/promapi"
)

// emptyQueryable is a store with no series: the ruler's endpoints read
// none.
type emptyQueryable struct{}

func (emptyQueryable) Querier(int64, int64) (storage.Querier, error) {
	return storage.NoopQuerier(), nil
}

func (emptyQueryable) ChunkQuerier(int64, int64) (storage.ChunkQuerier, error) {
	return storage.NoopChunkedQuerier(), nil
}

func (emptyQueryable) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return nil, nil
}

// ruler is a fixed RulesRetriever and AlertmanagerRetriever.
type ruler struct {
	groups []*rules.Group
	ams    []string
}

func (r ruler) RuleGroups() []*rules.Group { return r.groups }

func (r ruler) AlertingRules() []*rules.AlertingRule {
	var out []*rules.AlertingRule
	for _, g := range r.groups {
		out = append(out, g.AlertingRules()...)
	}
	return out
}

func (r ruler) Alertmanagers() []*url.URL {
	var out []*url.URL
	for _, s := range r.ams {
		u, _ := url.Parse(s)
		out = append(out, u)
	}
	return out
}

func (ruler) DroppedAlertmanagers() []*url.URL { return nil }

// evalAt is when the test's alerting rule was evaluated.
var evalAt = time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)

// testRuler returns two groups of tenant file "team-a": "api" with a
// firing alerting rule and a recording rule, and "node" with a recording
// rule; and one Alertmanager.
func testRuler(t *testing.T) ruler {
	t.Helper()
	mustParse := func(s string) parser.Expr {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	alert := rules.NewAlertingRule("HighErrorRate", mustParse(`rate(errors_total[5m]) > 1`), 0, 0,
		labels.FromStrings("severity", "page"), labels.FromStrings("summary", "errors are high"),
		labels.EmptyLabels(), "", false, nil)
	// One series above the threshold: with no hold, the alert fires at
	// its first evaluation.
	query := func(context.Context, string, time.Time) (promql.Vector, error) {
		return promql.Vector{{Metric: labels.FromStrings("job", "api"), F: 2, T: evalAt.UnixMilli()}}, nil
	}
	if _, err := alert.Eval(context.Background(), 0, evalAt, query, nil, 0); err != nil {
		t.Fatal(err)
	}
	// What a group's evaluation records after the rule's.
	alert.SetHealth(rules.HealthGood)
	alert.SetEvaluationTimestamp(evalAt)
	record := rules.NewRecordingRule("job:errors:rate5m", mustParse(`sum by (job) (rate(errors_total[5m]))`), labels.EmptyLabels())
	nodeRecord := rules.NewRecordingRule("instance:cpu:rate1m", mustParse(`rate(cpu_seconds_total[1m])`), labels.EmptyLabels())
	return ruler{
		groups: []*rules.Group{
			rules.NewGroup(rules.GroupOptions{Name: "api", File: "team-a", Interval: time.Minute, Rules: []rules.Rule{alert, record}}),
			rules.NewGroup(rules.GroupOptions{Name: "node", File: "team-a", Interval: 30 * time.Second, Rules: []rules.Rule{nodeRecord}}),
		},
		ams: []string{"http://127.0.0.1:9093/api/v2/alerts"},
	}
}

// newRulerAPI returns an API over an empty store with opts' ruler
// options.
func newRulerAPI(t *testing.T, opts promapi.Options) *promapi.API {
	t.Helper()
	opts.Queryable = emptyQueryable{}
	opts.Build = v1.PrometheusVersion{Version: "1.2.3", Revision: "abc123", Branch: "main", BuildUser: "ci@builder", BuildDate: "20261129-08:00:00", GoVersion: runtime.Version()}
	opts.Flags = map[string]string{"web.listen-address": ":9201"}
	api, err := promapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// grafanaGet sends req as Grafana's data source proxy sends it (its
// headers) and returns the status and the decoded JSON answer.
func grafanaGet(t *testing.T, h http.Handler, target string) (int, any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Accept", "application/json, text/plain, */*")
	req.Header.Set("User-Agent", "Grafana/12.0.0")
	req.Header.Set("X-Grafana-Org-Id", "1")
	req.Header.Set("X-Scope-OrgID", "team-a")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %d, not JSON: %s", target, rec.Code, body)
	}
	return rec.Code, v
}

// jsonOf decodes s, the JSON a test expects.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("expected JSON %s: %v", s, err)
	}
	return v
}

// field returns the value at path in v (objects' keys, arrays'
// indexes as ints).
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// grafanaCase is a request Grafana sends and what it must get.
type grafanaCase struct {
	name, target string
	code         int
	want         string // the whole answer; empty: see check
	check        func(t *testing.T, v any)
}

// run sends the case's request to h in a subtest and checks the answer.
func (tc grafanaCase) run(t *testing.T, h http.Handler) {
	t.Run(tc.name, func(t *testing.T) {
		code, got := grafanaGet(t, h, tc.target)
		if code != tc.code {
			t.Errorf("status %d, want %d: %v", code, tc.code, got)
		}
		if tc.want != "" && !reflect.DeepEqual(got, jsonOf(t, tc.want)) {
			t.Errorf("got  %v\nwant %s", got, tc.want)
		}
		if tc.check != nil {
			tc.check(t, got)
		}
	})
}

// TestRulerOff: with the ruler off the ruler's endpoints answer empty
// lists (never 404) to the requests Grafana sends, and buildinfo and
// flags answer as Prometheus's.
func TestRulerOff(t *testing.T) {
	api := newRulerAPI(t, promapi.Options{})
	for _, tc := range []grafanaCase{
		{name: "rules as Grafana's lotex proxy asks", target: "/api/v1/rules",
			code: 200, want: `{"status":"success","data":{"groups":[]}}`},
		{name: "rules with Grafana's list filters and paging",
			target: "/api/v1/rules?file%5B%5D=team-a&group%5B%5D=api&rule%5B%5D=HighErrorRate&exclude_alerts=true&group_limit=100",
			code:   200, want: `{"status":"success","data":{"groups":[]}}`},
		{name: "rules of one type", target: "/api/v1/rules?type=alert",
			code: 200, want: `{"status":"success","data":{"groups":[]}}`},
		{name: "rules of an unknown type", target: "/api/v1/rules?type=bogus", code: 400,
			want: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"type\": not supported value \"bogus\""}`},
		{name: "alerts", target: "/api/v1/alerts",
			code: 200, want: `{"status":"success","data":{"alerts":[]}}`},
		{name: "alertmanagers", target: "/api/v1/alertmanagers",
			code: 200, want: `{"status":"success","data":{"activeAlertmanagers":[],"droppedAlertmanagers":[]}}`},
		{name: "buildinfo as Prometheus's: no features, no application", target: "/api/v1/status/buildinfo", code: 200,
			check: func(t *testing.T, v any) {
				data, _ := field(v, "data").(map[string]any)
				if data["version"] != "1.2.3" || data["revision"] != "abc123" || data["branch"] != "main" || data["buildUser"] != "ci@builder" ||
					data["buildDate"] != "20261129-08:00:00" || data["goVersion"] != runtime.Version() {
					t.Errorf("data %v: want version 1.2.3, revision abc123, branch main, buildUser ci@builder, buildDate 20261129-08:00:00, goVersion %s", data, runtime.Version())
				}
				for _, k := range []string{"features", "application"} {
					if _, ok := data[k]; ok {
						t.Errorf("data has %q: Grafana would take promhbase for Mimir: %v", k, data)
					}
				}
			}},
		{name: "flags as Prometheus's", target: "/api/v1/status/flags",
			code: 200, want: `{"status":"success","data":{"web.listen-address":":9201"}}`},
	} {
		tc.run(t, api)
	}
}

// TestRulerOn: with the ruler and its configuration API on, buildinfo
// answers as Grafana Mimir's (Grafana enables its rule editor), flags
// answer 404 (Grafana does not take promhbase for a Thanos), and rules,
// alerts and Alertmanagers are the ruler's, filtered and paged by
// Prometheus's parameters.
func TestRulerOn(t *testing.T) {
	r := testRuler(t)
	api := newRulerAPI(t, promapi.Options{
		RulerConfigAPI: true,
		Rules:          func(context.Context) v1.RulesRetriever { return r },
		Alertmanagers:  func(context.Context) v1.AlertmanagerRetriever { return r },
	})
	groupNames := func(v any) []any {
		var out []any
		groups, _ := field(v, "data", "groups").([]any)
		for _, g := range groups {
			out = append(out, field(g, "name"))
		}
		return out
	}
	ruleNames := func(v any, g int) []any {
		var out []any
		rs, _ := field(v, "data", "groups", g, "rules").([]any)
		for _, r := range rs {
			out = append(out, field(r, "name"))
		}
		return out
	}
	for _, tc := range []grafanaCase{
		{name: "buildinfo as Grafana Mimir's", target: "/api/v1/status/buildinfo", code: 200,
			want: `{"status":"success","data":{"application":"Grafana Mimir","version":"1.2.3","revision":"abc123","branch":"main","goVersion":"` + runtime.Version() + `",` +
				`"features":{"ruler_config_api":"true","alertmanager_config_api":"false","query_sharding":"false","federated_rules":"false"}}}`},
		{name: "flags: 404, not a Thanos", target: "/api/v1/status/flags", code: 404,
			check: func(t *testing.T, v any) {
				if field(v, "status") != "error" || field(v, "errorType") != "not_found" {
					t.Errorf("got %v, want a not_found error", v)
				}
			}},
		{name: "every rule", target: "/api/v1/rules", code: 200,
			check: func(t *testing.T, v any) {
				if got := groupNames(v); !reflect.DeepEqual(got, []any{"api", "node"}) {
					t.Errorf("groups %v, want api, node", got)
				}
				g := field(v, "data", "groups", 0).(map[string]any)
				if g["file"] != "team-a" || g["interval"] != 60.0 {
					t.Errorf("group %v: want file team-a, interval 60", g)
				}
				alert := field(v, "data", "groups", 0, "rules", 0).(map[string]any)
				for k, want := range map[string]any{"type": "alerting", "name": "HighErrorRate", "query": "rate(errors_total[5m]) > 1",
					"state": "firing", "duration": 0.0, "health": "ok"} {
					if alert[k] != want {
						t.Errorf("alerting rule %s = %v, want %v", k, alert[k], want)
					}
				}
				if got := field(alert, "labels", "severity"); got != "page" {
					t.Errorf("alerting rule labels %v, want severity=page", alert["labels"])
				}
				if got := field(alert, "alerts", 0, "labels", "job"); got != "api" {
					t.Errorf("alerting rule alerts %v, want job=api's", alert["alerts"])
				}
				rec := field(v, "data", "groups", 0, "rules", 1).(map[string]any)
				if rec["type"] != "recording" || rec["name"] != "job:errors:rate5m" {
					t.Errorf("recording rule %v", rec)
				}
			}},
		{name: "recording rules only", target: "/api/v1/rules?type=record", code: 200,
			check: func(t *testing.T, v any) {
				if got := ruleNames(v, 0); !reflect.DeepEqual(got, []any{"job:errors:rate5m"}) {
					t.Errorf("api's rules %v, want the recording rule", got)
				}
			}},
		{name: "alerting rules only", target: "/api/v1/rules?type=alert", code: 200,
			check: func(t *testing.T, v any) {
				// Groups left without rules are left out, as Prometheus does.
				if got := groupNames(v); !reflect.DeepEqual(got, []any{"api"}) {
					t.Errorf("groups %v, want api", got)
				}
			}},
		{name: "by rule name and group", target: "/api/v1/rules?rule_name%5B%5D=instance:cpu:rate1m&rule_group%5B%5D=node&file%5B%5D=team-a", code: 200,
			check: func(t *testing.T, v any) {
				if got := groupNames(v); !reflect.DeepEqual(got, []any{"node"}) {
					t.Errorf("groups %v, want node", got)
				}
			}},
		{name: "without alerts", target: "/api/v1/rules?exclude_alerts=true", code: 200,
			check: func(t *testing.T, v any) {
				if a := field(v, "data", "groups", 0, "rules", 0, "alerts"); a != nil {
					t.Errorf("alerts %v, want none", a)
				}
			}},
		{name: "first page", target: "/api/v1/rules?group_limit=1", code: 200,
			check: func(t *testing.T, v any) {
				if got := groupNames(v); !reflect.DeepEqual(got, []any{"api"}) || field(v, "data", "groupNextToken") == nil {
					t.Errorf("groups %v, next token %v: want api and a token", got, field(v, "data", "groupNextToken"))
				}
			}},
		{name: "by label matcher", target: "/api/v1/rules?match%5B%5D=%7Bseverity%3D%22page%22%7D", code: 200,
			check: func(t *testing.T, v any) {
				if got := groupNames(v); !reflect.DeepEqual(got, []any{"api"}) || !reflect.DeepEqual(ruleNames(v, 0), []any{"HighErrorRate"}) {
					t.Errorf("groups %v, rules %v: want api's HighErrorRate", got, ruleNames(v, 0))
				}
			}},
		{name: "alerts", target: "/api/v1/alerts", code: 200,
			want: `{"status":"success","data":{"alerts":[{"labels":{"alertname":"HighErrorRate","job":"api","severity":"page"},` +
				`"annotations":{"summary":"errors are high"},"state":"firing","activeAt":"2024-01-01T12:00:00Z","value":"2e+00"}]}}`},
		{name: "alertmanagers", target: "/api/v1/alertmanagers", code: 200,
			want: `{"status":"success","data":{"activeAlertmanagers":[{"url":"http://127.0.0.1:9093/api/v2/alerts"}],"droppedAlertmanagers":[]}}`},
	} {
		tc.run(t, api)
	}
}

// TestRulerOffServed: through a whole server (web's routing), Grafana's
// calls at the root and below Mimir's /prometheus prefix answer as
// Prometheus's with the ruler off, never 404, except status/flags below
// the prefix, 404 as Mimir's.
func TestRulerOffServed(t *testing.T) {
	st, tb := testbackend.New(t)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{})
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/rules", 200, `{"status":"success","data":{"groups":[]}}`},
		{"/prometheus/api/v1/rules?group_limit=100", 200, `{"status":"success","data":{"groups":[]}}`},
		{"/api/v1/alerts", 200, `{"status":"success","data":{"alerts":[]}}`},
		{"/prometheus/api/v1/alerts", 200, `{"status":"success","data":{"alerts":[]}}`},
		{"/prometheus/api/v1/alertmanagers", 200, `{"status":"success","data":{"activeAlertmanagers":[],"droppedAlertmanagers":[]}}`},
		{"/prometheus/api/v1/status/buildinfo", 200, ""},
		{"/prometheus/api/v1/status/flags", 404, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.want != "" && !reflect.DeepEqual(jsonOf(t, string(body)), jsonOf(t, tc.want)) {
				t.Errorf("got  %s\nwant %s", body, tc.want)
			}
		})
	}
}
