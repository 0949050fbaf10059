package ruler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// accepted is Mimir's 202 body (pkg/ruler/api.go respondAccepted).
const accepted = `{"status":"success","data":null,"errorType":"","error":""}`

// grafanaGroup is the body Grafana's server posts for a group edited in
// its data-source-managed rule editor: its PostableRuleGroupConfig
// re-encoded by yaml.v3 (pkg/services/ngalert/api/lotex_ruler.go
// RoutePostNameRulesConfig), four-space indents and all.
const grafanaGroup = `name: cpu
interval: 1m
rules:
    - alert: HighCPU
      expr: rate(node_cpu_seconds_total{mode!="idle"}[5m]) > 0.9
      for: 5m
      labels:
        severity: warning
      annotations:
        summary: CPU of {{ $labels.instance }} is at {{ $value | humanizePercentage }}
    - record: instance:cpu:rate5m
      expr: sum by (instance) (rate(node_cpu_seconds_total[5m]))
`

// grafanaRuleGroup is what Grafana's server decodes a GET's YAML into,
// strictly (yamlExtractor: KnownFields), its GettableRuleGroupConfig's
// fields: an answer with any other field fails Grafana's rule list.
type grafanaRuleGroup struct {
	Name                          string         `yaml:"name"`
	Interval                      string         `yaml:"interval,omitempty"`
	SourceTenants                 []string       `yaml:"source_tenants,omitempty"`
	EvaluationDelay               string         `yaml:"evaluation_delay,omitempty"`
	QueryOffset                   string         `yaml:"query_offset,omitempty"`
	AlignEvaluationTimeOnInterval bool           `yaml:"align_evaluation_time_on_interval,omitempty"`
	Limit                         int            `yaml:"limit,omitempty"`
	Rules                         []grafanaRules `yaml:"rules"`
}

type grafanaRules struct {
	Record        string            `yaml:"record,omitempty"`
	Alert         string            `yaml:"alert,omitempty"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty"`
}

// strictDecode decodes b into v refusing unknown fields, as Grafana.
func strictDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("Grafana could not decode %q: %v", b, err)
	}
}

// apiRig is a ConfigAPI over a RuleStore of the test backend.
type apiRig struct {
	h   http.Handler
	rs  *ruler.RuleStore
	lim *ruler.Limits
}

func newAPIRig(t *testing.T, opts ruler.ConfigAPIOptions) *apiRig {
	t.Helper()
	st, tb := testbackend.NewWithRules(t)
	r := &apiRig{rs: ruler.NewRuleStore(st, ruler.RuleStoreOptions{Table: tb.Rules}), lim: &ruler.Limits{}}
	r.h = ruler.NewConfigAPI(r.storeFunc, opts)
	return r
}

// storeFunc is the rig's ConfigAPI StoreFunc: its RuleStore and limits.
func (r *apiRig) storeFunc(*http.Request) (ruler.GroupStore, ruler.Limits, error) {
	return r.rs, *r.lim, nil
}

// empty deletes every stored group.
func (r *apiRig) empty(t *testing.T) {
	t.Helper()
	all, err := r.rs.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for ns := range all {
		if err := r.rs.DeleteNamespace(context.Background(), ns); err != nil {
			t.Fatalf("delete namespace %q: %v", ns, err)
		}
	}
}

// do sends a request and returns the answer's status, content type and
// body.
func (r *apiRig) do(t *testing.T, method, target, body string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
}

// stored returns every stored group as "namespace/group", sorted.
func (r *apiRig) stored(t *testing.T) []string {
	t.Helper()
	all, err := r.rs.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return groupNames(all)
}

// TestConfigAPIGrafana replays the requests Grafana's data-source-managed
// rule editor makes through its server (lotex_ruler.go: the data
// source's URL, /config/v1/rules for the mimir subtype, ?subtype=mimir
// kept, names as encodeURIComponent wrote them), in order.
func TestConfigAPIGrafana(t *testing.T) {
	t.Parallel()
	r := newAPIRig(t, ruler.ConfigAPIOptions{})
	for _, prefix := range []string{"", "/prometheus"} {
		t.Run("prefix "+prefix, func(t *testing.T) {
			base := prefix + "/config/v1/rules"
			ns, nsEsc := "team a/node", "team%20a%2Fnode"
			for _, step := range []struct {
				name, method, target, body string
				code                       int
				ctype, want                string // want: the body exactly, or "" to check below
			}{
				{"rules of an empty tenant", "GET", base + "?subtype=mimir", "", 200, "application/yaml", "{}\n"},
				{"a namespace with no groups", "GET", base + "/" + nsEsc + "?subtype=mimir", "", 200, "application/yaml", "{}\n"},
				{"a group not there", "GET", base + "/" + nsEsc + "/cpu?subtype=mimir", "", 404, "text/plain; charset=utf-8", "group does not exist\n"},
				{"save the group", "POST", base + "/" + nsEsc + "?subtype=mimir", grafanaGroup, 202, "application/json", accepted},
				{"the group", "GET", base + "/" + nsEsc + "/cpu?subtype=mimir", "", 200, "application/yaml", ""},
				{"the namespace", "GET", base + "/" + nsEsc + "?subtype=mimir", "", 200, "application/yaml", ""},
				{"every rule", "GET", base + "?subtype=mimir", "", 200, "application/yaml", ""},
				{"delete the group", "DELETE", base + "/" + nsEsc + "/cpu?subtype=mimir", "", 202, "application/json", accepted},
				{"delete it again", "DELETE", base + "/" + nsEsc + "/cpu?subtype=mimir", "", 404, "text/plain; charset=utf-8", "group does not exist\n"},
				{"save it again", "POST", base + "/" + nsEsc + "?subtype=mimir", grafanaGroup, 202, "application/json", accepted},
				{"delete the namespace", "DELETE", base + "/" + nsEsc + "?subtype=mimir", "", 202, "application/json", accepted},
				{"delete it again", "DELETE", base + "/" + nsEsc + "?subtype=mimir", "", 404, "text/plain; charset=utf-8", "group namespace does not exist\n"},
			} {
				t.Run(step.name, func(t *testing.T) {
					code, ctype, body := r.do(t, step.method, step.target, step.body)
					if code != step.code || ctype != step.ctype {
						t.Fatalf("%s %s: %d %q %q, want %d %q", step.method, step.target, code, ctype, body, step.code, step.ctype)
					}
					if step.want != "" && body != step.want {
						t.Fatalf("body %q, want %q", body, step.want)
					}
					switch step.name {
					case "the group":
						var g grafanaRuleGroup
						strictDecode(t, []byte(body), &g)
						if g.Name != "cpu" || g.Interval != "1m" || len(g.Rules) != 2 || g.Rules[0].For != "5m" ||
							g.Rules[0].Annotations["summary"] != "CPU of {{ $labels.instance }} is at {{ $value | humanizePercentage }}" {
							t.Errorf("group %+v", g)
						}
					case "the namespace", "every rule":
						var m map[string][]grafanaRuleGroup
						strictDecode(t, []byte(body), &m)
						if len(m) != 1 || len(m[ns]) != 1 || m[ns][0].Name != "cpu" {
							t.Errorf("rules %+v, want namespace %q with group cpu", m, ns)
						}
					}
				})
			}
		})
	}
}

// TestConfigAPIPost: what a POST stores, and every way it is refused
// (400 naming the problem, a body too large too) with nothing stored.
func TestConfigAPIPost(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		bomb += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	bomb += "name: g\nrules: *k\n" // 10^10 rules, if the aliases were expanded
	// One rig for every case, the cases one after another: each starts
	// from a store checked empty and empties it when it ends, so what a
	// case finds stored is what its own POST stored, as with a rig of
	// its own (a table per case cost HBase ~6 s each).
	r := newAPIRig(t, ruler.ConfigAPIOptions{})
	for _, tc := range []struct {
		name, target, body string
		code               int
		want               []string // substrings of the answer's body
		stored             []string // the groups then stored
		max                int64    // ConfigAPIOptions.MaxBodyBytes
	}{
		{name: "YAML", body: "name: g\nrules:\n  - record: a:b\n    expr: sum(up)\n", code: 202, want: []string{accepted}, stored: []string{"ns/g"}},
		{name: "JSON, as YAML's subset", body: `{"name":"g","interval":"30s","rules":[{"alert":"A","expr":"up == 0","for":"1m","labels":{"s":"x"}}]}`,
			code: 202, stored: []string{"ns/g"}},
		{name: "unknown fields are ignored, as Mimir's", body: "name: g\nsource_tenants: [a]\nrules:\n  - record: a\n    expr: up\n    grafana_alert: {}\n", code: 202, stored: []string{"ns/g"}},
		{name: "UTF-8 record and label names", body: "name: g\nrules:\n  - record: \"métrique.total\"\n    expr: up\n    labels: {\"é\": x}\n", code: 202, stored: []string{"ns/g"}},
		{name: "not YAML", body: "name: [\n", code: 400, want: []string{"unable to decode rule group"}},
		{name: "a key twice", body: "name: g\nname: h\nrules: []\n", code: 400, want: []string{"unable to decode rule group", "already defined"}},
		{name: "invalid UTF-8", body: "name: g\xff\nrules:\n  - record: a\n    expr: up\n", code: 400, want: []string{"unable to decode rule group"}},
		{name: "deep nesting", body: deep, code: 400, want: []string{"unable to decode rule group"}},
		{name: "alias bomb", body: bomb, code: 400, want: []string{"unable to decode rule group"}},
		{name: "empty body", body: "", code: 400, want: []string{"rule group name must not be empty"}},
		{name: "a rule file, not a group", body: "groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up\n", code: 400,
			want: []string{"invalid rules configuration: a rule file of 1 groups, not a rule group"}},
		{name: "a rule file with a group twice", body: "groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up\n  - name: h\n    rules: []\n  - name: g\n    rules: []\n", code: 400,
			want: []string{`group names repeated in it: ["g"]`}},
		{name: "no rules", body: "name: g\nrules: []\n", code: 400, want: []string{"invalid rules configuration: rule group 'g' has no rules"}},
		{name: "group name with 0x00", body: "name: \"g\\0\"\nrules:\n  - record: a\n    expr: up\n", code: 400, want: []string{"0x00"}},
		{name: "unknown function", body: "name: g\nrules:\n  - record: a\n    expr: nosuchfunc(up)\n", code: 400,
			want: []string{`group "g", rule 1, "a"`, "could not parse expression", "unknown function"}},
		{name: "every problem named", body: "name: g\nrules:\n  - record: \"a{b}\"\n    expr: up\n  - alert: A\n    record: r\n    expr: \"\"\n", code: 400,
			want: []string{"braces present in the recording rule name", `rule 2`, "only one of 'record' and 'alert' must be set", "field 'expr' must be set"}},
		{name: "annotation in a recording rule", body: "name: g\nrules:\n  - record: a\n    expr: up\n    annotations: {x: y}\n", code: 400,
			want: []string{"invalid field 'annotations' in recording rule"}},
		{name: "__name__ label", body: "name: g\nrules:\n  - alert: A\n    expr: up\n    labels: {__name__: x}\n", code: 400, want: []string{"invalid label name: __name__"}},
		{name: "bad template", body: "name: g\nrules:\n  - alert: A\n    expr: up\n    annotations: {s: \"{{ .Labels\"}\n", code: 400, want: []string{`annotation "s"`}},
		{name: "bad group label", body: "name: g\nlabels: {__name__: x}\nrules:\n  - record: a\n    expr: up\n", code: 400, want: []string{"invalid label name: __name__"}},
		{name: "too large", body: "name: g\nrules:\n  - record: a\n    expr: up\n#" + strings.Repeat("x", 2000), code: 400, want: []string{"larger than 1024 bytes"}, max: 1024},
		{name: "namespace with 0x00", target: "/config/v1/rules/a%00b", body: "name: g\nrules:\n  - record: a\n    expr: up\n", code: 400,
			want: []string{`"status":"error"`, `"errorType":"bad_data"`, "0x00"}},
		{name: "namespace not UTF-8", target: "/config/v1/rules/a%FF", body: "name: g\nrules:\n  - record: a\n    expr: up\n", code: 400, want: []string{"UTF-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.h = ruler.NewConfigAPI(r.storeFunc, ruler.ConfigAPIOptions{MaxBodyBytes: tc.max})
			if got := r.stored(t); len(got) != 0 {
				t.Fatalf("stored %q before the POST, want nothing", got)
			}
			t.Cleanup(func() { r.empty(t) })
			target := tc.target
			if target == "" {
				target = "/config/v1/rules/ns"
			}
			code, _, body := r.do(t, "POST", target, tc.body)
			if code != tc.code {
				t.Fatalf("%d %q, want %d", code, body, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("answer %q does not name %q", body, w)
				}
			}
			if got := r.stored(t); strings.Join(got, ",") != strings.Join(tc.stored, ",") {
				t.Errorf("stored %q, want %q", got, tc.stored)
			}
		})
	}
}

// TestConfigAPILimits: Mimir's per-tenant limits, its messages; a group
// that replaces one does not count twice.
func TestConfigAPILimits(t *testing.T) {
	t.Parallel()
	r := newAPIRig(t, ruler.ConfigAPIOptions{})
	*r.lim = ruler.Limits{MaxRuleGroupsPerTenant: 2, MaxRulesPerRuleGroup: 2}
	rules := func(name string, n int) string {
		s := "name: " + name + "\nrules:\n"
		for i := range n {
			s += fmt.Sprintf("  - record: r%d\n    expr: up\n", i)
		}
		return s
	}
	for _, tc := range []struct {
		name, ns, body string
		code           int
		want           string
	}{
		{"rules at the limit", "a", rules("g1", 2), 202, accepted},
		{"one rule too many", "a", rules("g2", 3), 400, "per-user rules per rule group limit (limit: 2 actual: 3) exceeded\n"},
		{"second group", "b", rules("g1", 1), 202, accepted},
		{"third group", "b", rules("g3", 1), 400, "per-user rule groups limit (limit: 2 actual: 3) exceeded\n"},
		{"replacing a group at the limit", "b", rules("g1", 2), 202, accepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := r.do(t, "POST", "/config/v1/rules/"+tc.ns, tc.body)
			if code != tc.code || body != tc.want {
				t.Fatalf("%d %q, want %d %q", code, body, tc.code, tc.want)
			}
		})
	}
	if got := strings.Join(r.stored(t), ","); got != "a/g1,b/g1" {
		t.Errorf("stored %s", got)
	}
}

// TestConfigAPIRoutes: methods and paths the API does not answer.
func TestConfigAPIRoutes(t *testing.T) {
	t.Parallel()
	r := newAPIRig(t, ruler.ConfigAPIOptions{})
	for _, tc := range []struct {
		name, method, target string
		code                 int
		allow                string
	}{
		{"PUT on a namespace", "PUT", "/config/v1/rules/ns", 405, "GET, POST, DELETE"},
		{"POST on a group", "POST", "/config/v1/rules/ns/g", 405, "GET, DELETE"},
		{"DELETE on the list", "DELETE", "/config/v1/rules", 405, "GET"},
		{"three segments", "GET", "/config/v1/rules/a/b/c", 404, ""},
		{"trailing slash", "GET", "/config/v1/rules/", 404, ""},
		{"empty namespace", "GET", "/config/v1/rules//g", 404, ""},
		{"another path", "GET", "/config/v1/rulesx", 404, ""},
		{"another prefix", "GET", "/mimir/config/v1/rules", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r.h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.code || rec.Header().Get("Allow") != tc.allow {
				t.Fatalf("%d Allow %q, want %d %q", rec.Code, rec.Header().Get("Allow"), tc.code, tc.allow)
			}
		})
	}
}

// failingStore is a GroupStore whose every call fails with err.
type failingStore struct{ err error }

func (f failingStore) ListGroups(context.Context) (map[string][]rulefmt.RuleGroup, error) {
	return nil, f.err
}

func (f failingStore) GetGroup(context.Context, string, string) (rulefmt.RuleGroup, error) {
	return rulefmt.RuleGroup{}, f.err
}
func (f failingStore) SetGroup(context.Context, string, rulefmt.RuleGroup) error { return f.err }
func (f failingStore) DeleteGroup(context.Context, string, string) error         { return f.err }
func (f failingStore) DeleteNamespace(context.Context, string) error             { return f.err }

// TestConfigAPIStoreErrors: a store that fails answers 500 with Mimir's
// JSON error body, 503 when it may pass later; so does a request whose
// tenant's store cannot be had.
func TestConfigAPIStoreErrors(t *testing.T) {
	t.Parallel()
	valid := "name: g\nrules:\n  - record: a\n    expr: up\n"
	for _, tc := range []struct {
		name     string
		storeErr error // from the store's calls
		funcErr  error // from the StoreFunc
		code     int
		errType  string
	}{
		{"store down", fmt.Errorf("get: %w", store.ErrUnavailable), nil, 503, "unavailable"},
		{"store broken", errors.New("disk on fire"), nil, 500, "server_error"},
		{"tenant's store not had", nil, errors.New("no tenant"), 500, "server_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ruler.NewConfigAPI(func(*http.Request) (ruler.GroupStore, ruler.Limits, error) {
				return failingStore{tc.storeErr}, ruler.Limits{MaxRuleGroupsPerTenant: 5}, tc.funcErr
			}, ruler.ConfigAPIOptions{})
			for _, req := range [][3]string{
				{"GET", "/config/v1/rules", ""}, {"GET", "/config/v1/rules/ns", ""}, {"GET", "/config/v1/rules/ns/g", ""},
				{"POST", "/config/v1/rules/ns", valid}, {"DELETE", "/config/v1/rules/ns/g", ""}, {"DELETE", "/config/v1/rules/ns", ""},
			} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(req[0], req[1], strings.NewReader(req[2])))
				want := fmt.Sprintf(`"status":"error","data":null,"errorType":%q`, tc.errType)
				if rec.Code != tc.code || !strings.Contains(rec.Body.String(), want) || rec.Header().Get("Content-Type") != "application/json" {
					t.Errorf("%s %s: %d %q, want %d with %s", req[0], req[1], rec.Code, rec.Body.String(), tc.code, want)
				}
			}
		})
	}
}
