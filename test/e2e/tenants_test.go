package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/fixture"
	"github.com/promhbase/promhbase/test/testkit/otlpgen"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// tenantClient sends requests as one tenant (X-Scope-OrgID) or login.
type tenantClient struct {
	t      *testing.T
	base   string
	org    string // X-Scope-OrgID; empty: none
	user   string // basic-auth login; empty: none
	passwd string
}

func (c tenantClient) do(method, path string, body []byte, hdr map[string]string) (int, []byte) {
	c.t.Helper()
	h := map[string]string{tenant.Header: c.org}
	for k, v := range hdr {
		h[k] = v
	}
	code, b, _ := testhttp.Do(c.t, testhttp.Request{Method: method, URL: c.base + path, Body: body, Header: h, User: c.user, Password: c.passwd})
	return code, b
}

// write sends a remote write 1.0 request and returns its status.
func (c tenantClient) write(req *prompb.WriteRequest) (int, string) {
	c.t.Helper()
	code, b := c.do("POST", "/api/v1/write", promremote.MustBody(c.t, req), map[string]string{
		"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Write-Version": "0.1.0"})
	return code, string(b)
}

// read sends a remote read (SAMPLES) of one query and returns the series
// it answered, as label strings with their values, or the status.
func (c tenantClient) read(ms ...*prompb.LabelMatcher) (int, []string) {
	c.t.Helper()
	body := promremote.MustBody(c.t, &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: t0 - 3600_000, EndTimestampMs: t0 + 3600_000, Matchers: ms}}})
	code, b := c.do("POST", "/api/v1/read", body, map[string]string{
		"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Read-Version": "0.1.0"})
	if code != http.StatusOK {
		return code, []string{string(b)}
	}
	var resp prompb.ReadResponse
	if err := promremote.Decode(b, &resp); err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, r := range resp.Results {
		for _, ts := range r.Timeseries {
			var sb strings.Builder
			for _, l := range ts.Labels {
				fmt.Fprintf(&sb, "%s=%s,", l.Name, l.Value)
			}
			for _, s := range ts.Samples {
				fmt.Fprintf(&sb, " %g", s.Value)
			}
			out = append(out, sb.String())
		}
	}
	slices.Sort(out)
	return code, out
}

// api sends a GET to the query API and returns its status and its data
// as compact JSON.
func (c tenantClient) api(path string, params url.Values) (int, string) {
	c.t.Helper()
	code, b := c.do("GET", path+"?"+params.Encode(), nil, nil)
	var r struct {
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return code, string(b)
	}
	if r.Error != "" {
		return code, "error: " + r.Error
	}
	return code, string(r.Data)
}

// metricOf is the name of the metric of tenant id's own: only_ and the
// ID, other bytes than letters and digits as _.
func metricOf(id string) string {
	b := []byte("only_" + id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// tenantSeries is a tenant's test data: a metric both tenants have, one
// of its own with a label name of its own, metadata and an exemplar.
func tenantSeries(id string, v float64) *prompb.WriteRequest {
	own := metricOf(id)
	return &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			{Labels: lbl("__name__", "shared_metric", "job", "j"), Samples: []prompb.Sample{{Timestamp: t0, Value: v}}},
			{Labels: lbl("__name__", own, "job", "j", "label_"+own, "x"), Samples: []prompb.Sample{{Timestamp: t0, Value: v + 1}},
				Exemplars: []prompb.Exemplar{{Labels: lbl("trace_id", "trace_"+own), Value: v + 1, Timestamp: t0}}},
		},
		Metadata: []prompb.MetricMetadata{{MetricFamilyName: own, Type: prompb.MetricMetadata_GAUGE, Help: "help of " + own}},
	}
}

// TestTenantIsolation writes two tenants' data, then asks every endpoint
// in every way as one tenant and checks that it sees its own data and
// nothing of the other's: by metric name, by regex, without a metric
// name, through label and metadata listings, exemplars and deletes, and
// that errors and statuses do not depend on the other's data.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	sfx := fmt.Sprint(time.Now().UnixNano() % 1e9)
	a, b := "team-a."+sfx, "team_b!"+sfx // IDs with bytes the namespace mapping escapes
	runtime := filepath.Join(t.TempDir(), "runtime.yaml")
	if err := os.WriteFile(runtime, fmt.Appendf(nil, "users:\n  alice: [%q]\n  grafana: [%q, %q]\n", a, a, b), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{EnableAdmin: true, Tenants: &testserver.TenantOptions{
		Federation: true, AutoCreate: true, RuntimeFile: runtime,
		BasicAuthUsers: map[string]string{"alice": "pa", "grafana": "pg", "bob": "pb"}}})
	ca, cb := tenantClient{t: t, base: srv.URL, org: a}, tenantClient{t: t, base: srv.URL, org: b}
	for _, w := range []struct {
		c tenantClient
		v float64
	}{{ca, 10}, {cb, 20}} {
		if code, msg := w.c.write(tenantSeries(w.c.org, w.v)); code != http.StatusNoContent {
			t.Fatalf("write as %s: %d %s", w.c.org, code, msg)
		}
	}
	nameA, nameB := metricOf(a), metricOf(b)
	eq := func(n, v string) *prompb.LabelMatcher {
		return &prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: n, Value: v}
	}
	re := func(n, v string) *prompb.LabelMatcher {
		return &prompb.LabelMatcher{Type: prompb.LabelMatcher_RE, Name: n, Value: v}
	}

	t.Run("remote read", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			ms   []*prompb.LabelMatcher
			want []string
		}{
			{"by name", []*prompb.LabelMatcher{eq("__name__", "shared_metric")}, []string{"__name__=shared_metric,job=j, 10"}},
			{"other's name", []*prompb.LabelMatcher{eq("__name__", nameB)}, nil},
			{"name regex", []*prompb.LabelMatcher{re("__name__", ".+")}, []string{
				"__name__=" + nameA + ",job=j,label_" + nameA + "=x, 11", "__name__=shared_metric,job=j, 10"}},
			{"no name", []*prompb.LabelMatcher{eq("job", "j")}, []string{
				"__name__=" + nameA + ",job=j,label_" + nameA + "=x, 11", "__name__=shared_metric,job=j, 10"}},
			{"other's label", []*prompb.LabelMatcher{re("label_"+nameB, ".+")}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, got := ca.read(tc.ms...)
				if code != http.StatusOK || !slices.Equal(got, tc.want) {
					t.Errorf("as %s: %d %q, want %q", a, code, got, tc.want)
				}
			})
		}
	})

	t.Run("query API", func(t *testing.T) {
		at := apiTime(t0 + 1000)
		rng := url.Values{"start": {apiTime(t0)}, "end": {apiTime(t0 + 60_000)}}
		for _, tc := range []struct {
			name, path string
			params     url.Values
			want       string // a substring of A's answer
			absent     []string
		}{
			{"instant by name", "/api/v1/query", url.Values{"query": {"shared_metric"}, "time": {at}}, `"10"`, []string{`"20"`}},
			{"instant regex", "/api/v1/query", url.Values{"query": {`{__name__=~".+"}`}, "time": {at}}, nameA, []string{nameB, `"20"`, `"21"`}},
			{"count all", "/api/v1/query", url.Values{"query": {`count({__name__=~".+"})`}, "time": {at}}, `"2"`, nil},
			{"other's metric", "/api/v1/query", url.Values{"query": {nameB}, "time": {at}}, `"result":[]`, nil},
			{"range", "/api/v1/query_range", url.Values{"query": {`{job="j"}`}, "start": rng["start"], "end": rng["end"], "step": {"15"}}, nameA, []string{nameB}},
			{"series", "/api/v1/series", url.Values{"match[]": {`{__name__=~".+"}`}, "start": rng["start"], "end": rng["end"]}, nameA, []string{nameB}},
			{"labels", "/api/v1/labels", url.Values{}, "label_" + nameA, []string{"label_" + nameB}},
			{"labels matched", "/api/v1/labels", url.Values{"match[]": {`{job="j"}`}}, "label_" + nameA, []string{"label_" + nameB}},
			{"names", "/api/v1/label/__name__/values", url.Values{}, nameA, []string{nameB}},
			{"other's label values", "/api/v1/label/label_" + nameB + "/values", url.Values{}, `[]`, nil},
			{"metadata", "/api/v1/metadata", url.Values{}, "help of " + nameA, []string{nameB}},
			{"other's metadata", "/api/v1/metadata", url.Values{"metric": {nameB}}, `{}`, nil},
			{"exemplars", "/api/v1/query_exemplars", url.Values{"query": {`{job="j"}`}, "start": rng["start"], "end": rng["end"]}, "trace_" + nameA, []string{nameB}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, got := ca.api(tc.path, tc.params)
				if code != http.StatusOK || !strings.Contains(got, tc.want) {
					t.Errorf("as %s: %d %s, want %s", a, code, got, tc.want)
				}
				for _, x := range tc.absent {
					if strings.Contains(got, x) {
						t.Errorf("as %s: %s shows %q of the other tenant", a, got, x)
					}
				}
			})
		}
	})

	t.Run("no inference by errors", func(t *testing.T) {
		// The same malformed or over-limit question about B's metric
		// and about a metric nobody has must answer alike.
		for _, q := range []string{"%s{", "rate(%s[1m]", "%s[5m]"} {
			c1, b1 := ca.api("/api/v1/query", url.Values{"query": {fmt.Sprintf(q, nameB)}})
			nobody := strings.Repeat("z", len(nameB)) // the same length: the same error positions
			c2, b2 := ca.api("/api/v1/query", url.Values{"query": {fmt.Sprintf(q, nobody)}})
			b1 = strings.ReplaceAll(b1, nameB, "X")
			b2 = strings.ReplaceAll(b2, nobody, "X")
			if c1 != c2 || b1 != b2 {
				t.Errorf("query %q: B's metric answered %d %s, a metric of no one %d %s", q, c1, b1, c2, b2)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		code, _ := ca.do("POST", "/api/v1/admin/tsdb/delete_series?"+url.Values{"match[]": {`{job="j"}`}, "start": {apiTime(t0 - 1000)}, "end": {apiTime(t0 + 1000)}}.Encode(), nil, nil)
		if code != http.StatusNoContent {
			t.Fatalf("delete as A: %d", code)
		}
		if _, got := ca.read(eq("job", "j")); len(got) != 0 {
			t.Errorf("A's series after A's delete: %q", got)
		}
		if _, got := cb.read(eq("job", "j")); len(got) != 2 {
			t.Errorf("B's series after A's delete: %q, want both", got)
		}
		// Written again for the tests below.
		if code, msg := ca.write(tenantSeries(a, 10)); code != http.StatusNoContent {
			t.Fatalf("write as %s: %d %s", a, code, msg)
		}
	})

	t.Run("federation", func(t *testing.T) {
		fed := tenantClient{t: t, base: srv.URL, org: b + "|" + a}
		at := apiTime(t0 + 1000)
		code, got := fed.api("/api/v1/query", url.Values{"query": {"shared_metric"}, "time": {at}})
		if code != http.StatusOK || !strings.Contains(got, `"__tenant_id__":"`+a+`"`) || !strings.Contains(got, `"__tenant_id__":"`+b+`"`) {
			t.Errorf("a|b: %d %s, want both tenants' series", code, got)
		}
		code, got = fed.api("/api/v1/query", url.Values{"query": {fmt.Sprintf(`shared_metric{__tenant_id__=%q}`, b)}, "time": {at}})
		if code != http.StatusOK || strings.Contains(got, `"`+a+`"`) || !strings.Contains(got, `"20"`) {
			t.Errorf("a|b choosing b: %d %s", code, got)
		}
		code, got = fed.api("/api/v1/label/__tenant_id__/values", url.Values{})
		if want := fmt.Sprintf("[%q,%q]", a, b); code != http.StatusOK || got != want {
			t.Errorf("__tenant_id__ values: %d %s, want %s", code, got, want)
		}
		if code, msg := fed.write(tenantSeries(a, 1)); code != http.StatusBadRequest || !strings.Contains(msg, "multiple org IDs") {
			t.Errorf("write as a|b: %d %s, want 400", code, msg)
		}
		if code, _ := fed.read(eq("job", "j")); code != http.StatusBadRequest {
			t.Errorf("remote read as a|b: %d, want 400", code)
		}
		// A series' own __tenant_id__ is kept as original___tenant_id__.
		own := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: lbl("__name__", "with_tenant_label", "__tenant_id__", "mine"), Samples: []prompb.Sample{{Timestamp: t0, Value: 3}}}}}
		if code, msg := ca.write(own); code != http.StatusNoContent {
			t.Fatalf("write: %d %s", code, msg)
		}
		code, got = fed.api("/api/v1/query", url.Values{"query": {`with_tenant_label{original___tenant_id__="mine"}`}, "time": {at}})
		if code != http.StatusOK || !strings.Contains(got, `"original___tenant_id__":"mine"`) || !strings.Contains(got, `"__tenant_id__":"`+a+`"`) {
			t.Errorf("own __tenant_id__: %d %s", code, got)
		}
	})

	t.Run("logins", func(t *testing.T) {
		at := apiTime(t0 + 1000)
		q := url.Values{"query": {"shared_metric"}, "time": {at}}
		for _, tc := range []struct {
			name, user, pass, org string
			code                  int
			want                  string
		}{
			{"mapped login, no header", "alice", "pa", "", 200, `"10"`},
			{"mapped login names its tenant", "alice", "pa", a, 200, `"10"`},
			{"mapped login names another", "alice", "pa", b, 403, "may not use"},
			{"mapped login names both", "alice", "pa", a + "|" + b, 403, "may not use"},
			{"login of two tenants, no header", "grafana", "pg", "", 401, "no org id"},
			{"login of two tenants names one", "grafana", "pg", b, 200, `"20"`},
			{"unmapped login is its own tenant", "bob", "pb", "", 200, `"result":[]`},
			{"unmapped login names another", "bob", "pb", a, 403, "may not use"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := tenantClient{t: t, base: srv.URL, org: tc.org, user: tc.user, passwd: tc.pass}
				code, got := c.api("/api/v1/query", q)
				if code != tc.code || !strings.Contains(got, tc.want) {
					t.Errorf("%d %s, want %d with %q", code, got, tc.code, tc.want)
				}
			})
		}
	})

	t.Run("tenant-free endpoints", func(t *testing.T) {
		none := tenantClient{t: t, base: srv.URL}
		for _, p := range []string{"/-/healthy", "/-/ready", "/metrics", "/"} {
			// /-/ready answers 503 while the store takes longer than
			// adapter.ReadyTimeout (800 ms), as a loaded test HBase can:
			// a readiness probe asks again, and so does this.
			var code int
			var body []byte
			poll.Until(t, time.Minute, 200*time.Millisecond, "GET "+p+" without a tenant answers 200", func() (bool, string) {
				code, body = none.do("GET", p, nil, nil)
				return code == http.StatusOK || p != "/-/ready", fmt.Sprintf("%d %s", code, body)
			})
			if code != http.StatusOK {
				t.Errorf("GET %s without a tenant: %d %s", p, code, body)
			}
		}
		_, m := none.do("GET", "/metrics", nil, nil)
		if !strings.Contains(string(m), fmt.Sprintf(`tenant=%q`, a)) {
			t.Errorf("/metrics has no series labelled tenant=%q", a)
		}
		if code, body := none.do("GET", "/api/v1/query?query=up", nil, nil); code != http.StatusUnauthorized || !strings.Contains(string(body), "no org id") {
			t.Errorf("query without a tenant: %d %s, want 401 no org id", code, body)
		}
	})

	t.Run("bad IDs refused before the store", func(t *testing.T) {
		bad := []string{"../tsdb", "a/b", "a b", "a\tb", "t_x:tsdb", "ns:tsdb", ".", "..", strings.Repeat("x", 151), "a%2Fb", "__mimir_cluster", "a|"}
		for _, id := range bad {
			c := tenantClient{t: t, base: srv.URL, org: id}
			if code, msg := c.write(tenantSeries("bad", 1)); code != http.StatusBadRequest {
				t.Errorf("write as %q: %d %s, want 400", id, code, msg)
			}
			if code, _ := c.api("/api/v1/query", url.Values{"query": {"shared_metric"}}); code != http.StatusBadRequest {
				t.Errorf("query as %q: %d, want 400", id, code)
			}
		}
		// None of them reached the store: no namespace but the good
		// tenants' was made.
		for _, ns := range namespaces(t, st) {
			id, err := tenant.IDFromNamespace(ns)
			if err == nil && slices.Contains(bad, id) {
				t.Errorf("namespace %s of bad ID %q exists", ns, id)
			}
		}
	})
}

// namespaces returns the namespaces the store holds tenants in.
func namespaces(t *testing.T, st store.Store) []string {
	t.Helper()
	switch s := st.(type) {
	case *embedded.Store:
		return s.Namespaces()
	case *hbase.Store:
		m, err := s.ListNamespaceTables(t.Context(), tenant.NamespacePrefix)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for ns := range m {
			out = append(out, ns)
		}
		return out
	}
	t.Fatalf("store %T", st)
	return nil
}

// TestTenantLimits: a tenant at its series limit (its runtime
// override) gets 400 for new series while another writes freely, and a
// raised limit applies without a restart.
func TestTenantLimits(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	sfx := fmt.Sprint(time.Now().UnixNano() % 1e9)
	limited, free, slow := "limited-"+sfx, "free-"+sfx, "slow-"+sfx
	runtime := filepath.Join(t.TempDir(), "runtime.yaml")
	writeRuntime := func(maxActive int) {
		t.Helper()
		body := fmt.Sprintf("overrides:\n  %q:\n    max_active_series: %d\n    max_series_per_request: 500\n  %q:\n    ingestion_rate: 1\n    ingestion_burst_size: 1\n", limited, maxActive, slow)
		fixture.WriteAtomic(t, runtime, body)
	}
	writeRuntime(10)
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Tenants: &testserver.TenantOptions{
		AutoCreate: true, RuntimeFile: runtime, ReloadPeriod: 50 * time.Millisecond}})
	batch := func(prefix string, from, n int) *prompb.WriteRequest {
		req := &prompb.WriteRequest{}
		for i := from; i < from+n; i++ {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: lbl("__name__", "lim_metric", "i", fmt.Sprintf("%s%05d", prefix, i)),
				Samples: []prompb.Sample{{Timestamp: t0, Value: float64(i)}}})
		}
		return req
	}
	cl, cf := tenantClient{t: t, base: srv.URL, org: limited}, tenantClient{t: t, base: srv.URL, org: free}
	if code, msg := cl.write(batch("a", 0, 20)); code != http.StatusNoContent {
		t.Fatalf("first write of the limited tenant (under its limit): %d %s", code, msg)
	}
	// The active-series estimate is cached for a second: the server's
	// clock must move past it (a write to find out would add series).
	time.Sleep(1100 * time.Millisecond)
	if code, msg := cl.write(batch("b", 0, 20)); code != http.StatusBadRequest || !strings.Contains(msg, "max-active-series") {
		t.Fatalf("limited tenant past its limit: %d %s, want 400", code, msg)
	}
	if code, msg := cl.write(batch("c", 0, 600)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("limited tenant's request of 600 series (its max_series_per_request 500): %d %s, want 413", code, msg)
	}
	for i := range 5 {
		if code, msg := cf.write(batch("f", i*200, 200)); code != http.StatusNoContent {
			t.Fatalf("the other tenant, request %d: %d %s", i, code, msg)
		}
	}
	if code, msg := cf.write(batch("g", 0, 600)); code != http.StatusNoContent {
		t.Errorf("the other tenant's request of 600 series: %d %s, want 204", code, msg)
	}
	// A tenant past its ingestion rate gets 429; the others do not.
	cs := tenantClient{t: t, base: srv.URL, org: slow}
	if code, msg := cs.write(batch("s", 0, 10)); code != http.StatusNoContent {
		t.Fatalf("slow tenant's first request (the bucket full): %d %s", code, msg)
	}
	if code, msg := cs.write(batch("s", 0, 10)); code != http.StatusTooManyRequests || !strings.Contains(msg, "ingestion") {
		t.Errorf("slow tenant past its ingestion rate: %d %s, want 429", code, msg)
	}
	if code, msg := cf.write(batch("f", 0, 200)); code != http.StatusNoContent {
		t.Errorf("the other tenant meanwhile: %d %s, want 204", code, msg)
	}
	writeRuntime(1000)
	poll.Until(t, 10*time.Second, 50*time.Millisecond, "accepted once the limit is raised in the runtime file", func() (bool, string) {
		code, msg := cl.write(batch("b", 0, 20))
		return code == http.StatusNoContent, fmt.Sprintf("%d %s", code, msg)
	})
	code, got := cf.api("/api/v1/query", url.Values{"query": {"count(lim_metric)"}, "time": {apiTime(t0 + 1000)}})
	if code != http.StatusOK || !strings.Contains(got, `"1600"`) {
		t.Errorf("the other tenant's series: %d %s, want 1600", code, got)
	}
}

// TestTenantOTLP: the OTLP translation is a tenant's: one whose runtime
// overrides keep UTF-8 names and promote host.name gets its series so;
// another, without overrides, gets the flags' (Prometheus's default)
// names, from the same request.
func TestTenantOTLP(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.New(t)
	sfx := fmt.Sprint(time.Now().UnixNano() % 1e9)
	dotted, plain := "dotted-"+sfx, "plain-"+sfx
	runtime := filepath.Join(t.TempDir(), "runtime.yaml")
	body := fmt.Sprintf("overrides:\n  %q:\n    otel_translation_strategy: NoUTF8EscapingWithSuffixes\n    promote_otel_resource_attributes: host.name\n", dotted)
	if err := os.WriteFile(runtime, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{Tenants: &testserver.TenantOptions{
		AutoCreate: true, RuntimeFile: runtime}})
	md := pmetric.NewMetrics()
	ms := otlpgen.Resource(md, map[string]any{"service.name": "svc", "host.name": "h1"})
	otlpgen.Gauge(ms, "queue.depth", "By", otlpgen.Point{T: time.UnixMilli(t0), V: 3})
	req, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	for org, want := range map[string]string{
		dotted: `"__name__":"queue.depth_bytes","host.name":"h1","job":"svc"`,
		plain:  `"__name__":"queue_depth_bytes","job":"svc"`,
	} {
		c := tenantClient{t: t, base: srv.URL, org: org}
		if code, msg := c.do("POST", "/otlp/v1/metrics", req, map[string]string{"Content-Type": "application/x-protobuf"}); code != http.StatusOK {
			t.Fatalf("tenant %s: OTLP write: %d %s", org, code, msg)
		}
		code, got := c.api("/api/v1/series", url.Values{"match[]": {`{__name__=~"queue.*"}`}, "start": {apiTime(t0 - 1000)}, "end": {apiTime(t0 + 1000)}})
		if code != http.StatusOK || !strings.Contains(got, "{"+want+"}") {
			t.Errorf("tenant %s: series %d %s, want {%s}", org, code, got, want)
		}
	}
}

// TestTenantHA: HA pairs of two tenants with the same cluster name have
// elections of their own, and the tracker's metrics carry each tenant.
// The failover timeout is an hour: the test is not of failover, and under
// a loaded HBase the writes can lie more than a short timeout apart, which
// would rightly elect the other replica.
func TestTenantHA(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithHA(t)
	sfx := fmt.Sprint(time.Now().UnixNano() % 1e9)
	a, b := "ha-a-"+sfx, "ha-b-"+sfx
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{
		HA: &server.HAConfig{Enabled: true, Config: hatracker.Config{ClusterLabel: "cluster", ReplicaLabel: "__replica__",
			FailoverTimeout: time.Hour, UpdateTimeout: 15 * time.Second, UpdateTimeoutJitterMax: time.Second, MaxClusters: 10}},
		Tenants: &testserver.TenantOptions{AutoCreate: true}})
	write := func(org, replica string, v float64) int {
		t.Helper()
		c := tenantClient{t: t, base: srv.URL, org: org}
		code, msg := c.write(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
			Labels: lbl("__name__", "ha_metric", "__replica__", replica, "cluster", "pair"), Samples: []prompb.Sample{{Timestamp: t0, Value: v}}}}})
		if code != http.StatusNoContent && code != http.StatusAccepted {
			t.Fatalf("write as %s from %s: %d %s", org, replica, code, msg)
		}
		return code
	}
	for _, tc := range []struct {
		org, replica string
		want         int
	}{{a, "r1", 204}, {b, "r2", 204}, {a, "r2", 202}, {b, "r1", 202}, {a, "r1", 204}} {
		if got := write(tc.org, tc.replica, 1); got != tc.want {
			t.Errorf("tenant %s, replica %s: %d, want %d", tc.org, tc.replica, got, tc.want)
		}
	}
	_, m := tenantClient{t: t, base: srv.URL}.do("GET", "/metrics", nil, nil)
	for _, want := range []string{
		fmt.Sprintf(`promhbase_ha_tracker_elected_replica{cluster="pair",replica="r1",tenant=%q} 1`, a),
		fmt.Sprintf(`promhbase_ha_tracker_elected_replica{cluster="pair",replica="r2",tenant=%q} 1`, b),
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
