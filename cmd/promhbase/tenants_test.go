package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/fixture"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

var tenantSeq atomic.Int64

// tenantSuffix returns digits unique to this process and call, for tenant
// IDs that no other test (or earlier run on the same HBase) uses.
func tenantSuffix() string {
	return fmt.Sprintf("%d%09d%d", os.Getpid(), time.Now().UnixNano()%1e9, tenantSeq.Add(1))
}

// runSplit runs the binary with args and returns its standard output and
// standard error apart (logs go to standard error), and its error.
func runSplit(t *testing.T, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// listTenants runs `promhbase tenants` and returns its lines.
func listTenants(t *testing.T, bin string, flags []string) []string {
	t.Helper()
	out, errOut, err := runSplit(t, bin, append([]string{"tenants"}, flags...)...)
	if err != nil {
		t.Fatalf("tenants: %v\n%s%s", err, out, errOut)
	}
	return strings.FieldsFunc(out, func(r rune) bool { return r == '\n' })
}

// tenantLines returns the lines `promhbase tenants` prints for ids:
// "ID\tnamespace", sorted.
func tenantLines(ids ...string) []string {
	var lines []string
	for _, id := range ids {
		lines = append(lines, id+"\t"+tenant.Namespace(id))
	}
	slices.Sort(lines)
	return lines
}

// dropTenants drops, when the test ends, the namespaces of the tenants
// ids and every table in them when the backend is HBase (the embedded
// store's namespaces go with its directory). Call it before anything
// creates them, so that a test failing half-way leaves nothing behind.
func dropTenants(t *testing.T, ids ...string) {
	t.Helper()
	if testbackend.Name() != "hbase" {
		return
	}
	st := testbackend.NewHBaseStore(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, id := range ids {
			ns := tenant.Namespace(id)
			m, err := st.ListNamespaceTables(ctx, ns)
			if err != nil {
				t.Errorf("list the tables of namespace %s: %v", ns, err)
				continue
			}
			tables, ok := m[ns]
			if !ok {
				continue // never created
			}
			drop := make([]string, len(tables))
			for i, tb := range tables {
				drop[i] = store.NamespacedTable(ns, tb)
			}
			if err := st.DropTables(ctx, drop...); err != nil {
				t.Errorf("drop the tables of tenant %q: %v", id, err)
			}
			if err := st.DropNamespace(ctx, ns); err != nil {
				t.Errorf("drop the namespace of tenant %q: %v", id, err)
			}
		}
	})
}

// flagValue returns the value of --name=... in flags, or "".
func flagValue(flags []string, name string) string {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestTenantsCreateTables: `create-tables --tenant` creates each tenant
// (HBase: its namespace and every table in it), `tenants` lists them with
// their namespaces, a second run leaves them alone, and an invalid ID
// fails naming it before anything is created.
func TestTenantsCreateTables(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	sfx := tenantSuffix()
	// One ID the namespace mapping escapes ('.' and '-'), one it does not.
	a, b, spared := "acme.prod-"+sfx, "beta"+sfx, "spared_"+sfx
	dropTenants(t, a, b, spared)
	hbaseBackend := testbackend.Name() == "hbase"

	for _, tc := range []struct {
		name       string
		args       []string
		wantErr    bool
		check      func(t *testing.T, stdout, stderr string)
		wantListed []string // what `tenants` lists afterwards
	}{
		{
			name: "create", args: []string{"create-tables", "--tenant", a, "--tenant=" + b},
			check: func(t *testing.T, stdout, _ string) {
				for _, id := range []string{a, b} {
					ns := tenant.Namespace(id)
					line := lineWith(stdout, fmt.Sprintf("tenant %s (namespace %s):", id, ns))
					if line == "" || !strings.Contains(line, "created") || strings.Contains(line, "already there") {
						t.Errorf("tenant %s not reported created:\n%s", id, stdout)
					}
					if hbaseBackend {
						for _, tb := range []string{flagValue(flags, "hbase.table.data"), flagValue(flags, "hbase.table.uid"), "tsdb-meta", "tsdb-index"} {
							if !strings.Contains(line, store.NamespacedTable(ns, tb)) {
								t.Errorf("tenant %s: table %s not reported:\n%s", id, store.NamespacedTable(ns, tb), line)
							}
						}
					}
				}
			},
			wantListed: tenantLines(a, b),
		},
		{
			name: "again", args: []string{"create-tables", "--tenant", b, "--tenant", a},
			check: func(t *testing.T, stdout, _ string) {
				for _, id := range []string{a, b} {
					line := lineWith(stdout, fmt.Sprintf("tenant %s (namespace %s):", id, tenant.Namespace(id)))
					if !strings.Contains(line, "already there, left alone") || strings.Contains(line, "created") {
						t.Errorf("tenant %s not reported left alone:\n%s", id, stdout)
					}
				}
			},
			wantListed: tenantLines(a, b),
		},
		{
			name: "slash", args: []string{"create-tables", "--tenant", spared, "--tenant", "a/b"}, wantErr: true,
			check:      invalidIDCheck("a/b", spared),
			wantListed: tenantLines(a, b),
		},
		{
			name: "dotdot", args: []string{"create-tables", "--tenant", "..", "--tenant", spared}, wantErr: true,
			check:      invalidIDCheck("..", spared),
			wantListed: tenantLines(a, b),
		},
		{
			name: "empty", args: []string{"create-tables", "--tenant=", "--tenant", spared}, wantErr: true,
			check:      invalidIDCheck("", spared),
			wantListed: tenantLines(a, b),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, err := runSplit(t, bin, append(tc.args, flags...)...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v\nstdout:\n%s\nstderr:\n%s", err, tc.wantErr, stdout, stderr)
			}
			t.Logf("%s: %s", strings.Join(tc.args, " "), time.Since(start).Round(time.Millisecond))
			tc.check(t, stdout, stderr)
			if got := listTenants(t, bin, flags); !slices.Equal(got, tc.wantListed) {
				t.Errorf("tenants lists %q, want %q", got, tc.wantListed)
			}
		})
	}
}

// lineWith returns the first line of s that contains sub, or "".
func lineWith(s, sub string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}

// invalidIDCheck checks create-tables' failure on the invalid ID bad: its
// error names the ID and says why, and nothing was created, not even the
// valid tenant spared named with it.
func invalidIDCheck(bad, spared string) func(t *testing.T, stdout, stderr string) {
	return func(t *testing.T, stdout, stderr string) {
		t.Helper()
		t.Logf("error: %s", strings.TrimSpace(stderr))
		for _, want := range []string{fmt.Sprintf("--tenant=%q", bad), "invalid tenant ID"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("error lacks %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stdout, spared) || strings.Contains(stdout, "created") {
			t.Errorf("create-tables created something before failing:\n%s", stdout)
		}
	}
}

// tenantRequest sends a request as tenant org (no X-Scope-OrgID when
// empty) and returns its status and body; a POST is a remote write's
// (protobuf, snappy).
func tenantRequest(t *testing.T, method, url, org string, body []byte) (int, string) {
	t.Helper()
	if method == http.MethodPost {
		return httpDo(t, method, url, org, "application/x-protobuf", body,
			"Content-Encoding", "snappy", "X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	return httpDo(t, method, url, org, "", body)
}

// writeBody is a remote write 1.0 request of one sample of
// tenant_cli_test{id=...} at ts.
func writeBody(t *testing.T, id string, ts int64) []byte {
	t.Helper()
	return promremote.WriteBody(t, prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "__name__", Value: "tenant_cli_test"}, {Name: "id", Value: id}},
		Samples: []prompb.Sample{{Timestamp: ts, Value: 1}},
	})
}

// queryPath is the instant query of tenant_cli_test at ts.
func queryPath(ts int64) string {
	return "/api/v1/query?" + url.Values{"query": {"tenant_cli_test"}, "time": {fmt.Sprintf("%.3f", float64(ts)/1000)}}.Encode()
}

// resultIDs returns the label id of every series of a query's JSON
// answer, or fails the test when it is not a successful vector.
func resultIDs(t *testing.T, body string) []string {
	t.Helper()
	result, err := parseVector(body)
	if err != nil {
		t.Fatalf("query answer %v: %s", err, body)
	}
	ids := []string{}
	for _, s := range result {
		ids = append(ids, s.Metric["id"])
	}
	return ids
}

// TestTenantsServe: serve --auth.multitenancy-enabled routes by
// X-Scope-OrgID: a created tenant writes and reads its data, a tenant not
// created may not write (400 naming it and create-tables) but reads as
// empty, a request without the header gets 401, health, readiness and
// metrics need none; with --tenant.create-on-first-write a new tenant's
// first write creates it.
func TestTenantsServe(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	ts := time.Now().Add(-time.Minute).UnixMilli()

	t.Run("created-only", func(t *testing.T) {
		t.Parallel() // its own store and tenants
		flags := storageFlags(t)
		sfx := tenantSuffix()
		created, absent := "team-a."+sfx, "ghost"+sfx
		dropTenants(t, created, absent)
		if out, errOut, err := runSplit(t, bin, append([]string{"create-tables", "--tenant", created}, flags...)...); err != nil {
			t.Fatalf("create-tables: %v\n%s%s", err, out, errOut)
		}
		srv, base := startServe(t, bin, append([]string{"--auth.multitenancy-enabled"}, flags...)...)
		for _, tc := range []struct {
			name, method, path, org string
			body                    []byte
			wantCode                int
			wantBody                []string // substrings of the answer
			wantIDs                 []string // a query's series, by label id
		}{
			{name: "write created", method: http.MethodPost, path: "/api/v1/write", org: created, body: writeBody(t, created, ts), wantCode: http.StatusNoContent},
			{name: "query created", method: http.MethodGet, path: queryPath(ts), org: created, wantCode: http.StatusOK, wantIDs: []string{created}},
			{name: "write not created", method: http.MethodPost, path: "/api/v1/write", org: absent, body: writeBody(t, absent, ts), wantCode: http.StatusBadRequest,
				wantBody: []string{fmt.Sprintf("%q", absent), "promhbase create-tables --tenant " + absent}},
			{name: "query not created", method: http.MethodGet, path: queryPath(ts), org: absent, wantCode: http.StatusOK, wantIDs: []string{}},
			{name: "write no org", method: http.MethodPost, path: "/api/v1/write", body: writeBody(t, "none", ts), wantCode: http.StatusUnauthorized, wantBody: []string{"no org id"}},
			{name: "query no org", method: http.MethodGet, path: queryPath(ts), wantCode: http.StatusUnauthorized, wantBody: []string{"no org id"}},
			{name: "query two tenants without federation", method: http.MethodGet, path: queryPath(ts), org: created + tenant.Separator + absent, wantCode: http.StatusBadRequest,
				wantBody: []string{"--tenant-federation.enabled"}},
			{name: "write invalid org", method: http.MethodPost, path: "/api/v1/write", org: "a/b", body: writeBody(t, "a/b", ts), wantCode: http.StatusBadRequest,
				wantBody: []string{"invalid tenant ID", `"a/b"`}},
			{name: "ready no org", method: http.MethodGet, path: "/-/ready", wantCode: http.StatusOK},
			{name: "healthy no org", method: http.MethodGet, path: "/-/healthy", wantCode: http.StatusOK},
			{name: "metrics no org", method: http.MethodGet, path: "/metrics", wantCode: http.StatusOK, wantBody: []string{"go_goroutines"}},
			{name: "query created again", method: http.MethodGet, path: queryPath(ts), org: created, wantCode: http.StatusOK, wantIDs: []string{created}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := tenantRequest(t, tc.method, base+tc.path, tc.org, tc.body)
				if code != tc.wantCode {
					t.Fatalf("%s %s as %q: %d, want %d: %s", tc.method, tc.path, tc.org, code, tc.wantCode, body)
				}
				if code >= 400 {
					t.Logf("%d: %s", code, strings.TrimSpace(body))
				}
				for _, w := range tc.wantBody {
					if !strings.Contains(body, w) {
						t.Errorf("answer lacks %q: %s", w, body)
					}
				}
				if tc.wantIDs != nil {
					if got := resultIDs(t, body); !slices.Equal(got, tc.wantIDs) {
						t.Errorf("series %q, want %q", got, tc.wantIDs)
					}
				}
			})
		}
		if testbackend.Name() == "hbase" {
			// A refused write created nothing.
			if got, want := listTenants(t, bin, flags), tenantLines(created); !slices.Equal(got, want) {
				t.Errorf("tenants lists %q, want %q", got, want)
			}
		}
		stopServe(t, srv)
		if got, want := listTenants(t, bin, flags), tenantLines(created); !slices.Equal(got, want) {
			t.Errorf("tenants lists %q after serve stopped, want %q", got, want)
		}
	})

	t.Run("create-on-first-write", func(t *testing.T) {
		t.Parallel() // its own store and tenants
		flags := storageFlags(t)
		fresh := "new-tenant_" + tenantSuffix()
		dropTenants(t, fresh)
		srv, base := startServe(t, bin, append([]string{"--auth.multitenancy-enabled", "--tenant.create-on-first-write"}, flags...)...)
		start := time.Now()
		if code, body := tenantRequest(t, http.MethodPost, base+"/api/v1/write", fresh, writeBody(t, fresh, ts)); code != http.StatusNoContent {
			t.Fatalf("first write of a new tenant: %d, want 204: %s", code, body)
		}
		t.Logf("first write of a new tenant (creates it): %s", time.Since(start).Round(time.Millisecond))
		if code, body := tenantRequest(t, http.MethodGet, base+queryPath(ts), fresh, nil); code != http.StatusOK {
			t.Errorf("query: %d: %s", code, body)
		} else if got := resultIDs(t, body); !slices.Equal(got, []string{fresh}) {
			t.Errorf("series %q, want [%q]", got, fresh)
		}
		if testbackend.Name() == "hbase" { // the embedded store's directory is locked while serve runs
			if got, want := listTenants(t, bin, flags), tenantLines(fresh); !slices.Equal(got, want) {
				t.Errorf("tenants lists %q while serving, want %q", got, want)
			}
		}
		stopServe(t, srv)
		if got, want := listTenants(t, bin, flags), tenantLines(fresh); !slices.Equal(got, want) {
			t.Errorf("tenants lists %q, want %q", got, want)
		}
	})
}

// TestTenantsRuntimeConfigErrors: serve refuses a runtime file that does
// not load, with tenants or without, naming the problem, instead of
// serving.
func TestTenantsRuntimeConfigErrors(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of serve's error
	}{
		{"a bad file without multitenancy", []string{"--runtime-config.file=" + file("badsingle.yaml", "overrides:\n  anonymous:\n    max_active_series: -1\n")},
			[]string{"max_active_series", "anonymous"}},
		{"invalid tenant in overrides", []string{"--auth.multitenancy-enabled", "--runtime-config.file=" + file("badid.yaml", "overrides:\n  a/b:\n    max_active_series: 10\n")},
			[]string{"invalid tenant ID", `"a/b"`}},
		{"invalid tenant of a login", []string{"--auth.multitenancy-enabled", "--runtime-config.file=" + file("baduser.yaml", "users:\n  alice: [\"..\"]\n")},
			[]string{"invalid tenant ID", `".."`, "alice"}},
		{"unknown limit", []string{"--auth.multitenancy-enabled", "--runtime-config.file=" + file("badkey.yaml", "overrides:\n  team-a:\n    max_bogus_series: 10\n")},
			[]string{"field max_bogus_series not found", "team-a"}},
		{"unknown top-level key", []string{"--auth.multitenancy-enabled", "--runtime-config.file=" + file("badtop.yaml", "limits:\n  max_active_series: 10\n")},
			[]string{"field limits not found"}},
		{"negative limit", []string{"--auth.multitenancy-enabled", "--runtime-config.file=" + file("negative.yaml", "overrides:\n  team-a:\n    max_active_series: -1\n")},
			[]string{"max_active_series", "team-a"}},
		{"missing file", []string{"--auth.multitenancy-enabled", "--runtime-config.file=" + filepath.Join(dir, "nope.yaml")},
			[]string{"nope.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := storageFlags(t)
			args := append([]string{"serve", "--web.listen-address=" + testproc.FreeAddr(t)}, tc.args...)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			start := time.Now()
			out, err := exec.CommandContext(ctx, bin, append(args, flags...)...).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("serve still running after %s: it accepted the flags\n%s", time.Since(start).Round(time.Second), out)
			}
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() == 0 {
				t.Fatalf("serve: %v, want a non-zero exit\n%s", err, out)
			}
			t.Logf("%v after %s: %s", err, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("serve's error lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "promhbase serving") {
				t.Errorf("serve started serving before it failed:\n%s", out)
			}
		})
	}
}

// TestRuntimeConfigSingleTenant: without tenants, the overrides of tenant
// anonymous in --runtime-config.file apply to the one server, as Mimir's
// no-auth tenant's do: its relabeling drops a metric at ingest, its
// blocked queries are refused; /runtime_config shows them; a changed
// file applies within a reload period, without a restart.
func TestRuntimeConfigSingleTenant(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	runtimeFile := filepath.Join(t.TempDir(), "runtime.yaml")
	write := func(body string) { t.Helper(); fixture.WriteAtomic(t, runtimeFile, body) }
	write("overrides:\n  anonymous:\n    blocked_queries: [{pattern: count(single_kept)}]\n    metric_relabel_configs:\n      - {source_labels: [__name__], regex: single_dropped, action: drop}\n")
	flags := storageFlags(t)
	createTestTables(t, bin, flags)
	srv, base := startServe(t, bin, append([]string{"--runtime-config.file=" + runtimeFile, "--runtime-config.reload-period=100ms"}, flags...)...)
	defer stopServe(t, srv)
	now := time.Now().UnixMilli()
	remoteWrite(t, base, []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "single_dropped"}}, Samples: []prompb.Sample{{Timestamp: now, Value: 1}}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "single_kept"}}, Samples: []prompb.Sample{{Timestamp: now, Value: 2}}}})
	if code, body := httpDo(t, http.MethodGet, base+"/api/v1/label/__name__/values", "", "", nil); code != http.StatusOK ||
		!strings.Contains(body, "single_kept") || strings.Contains(body, "single_dropped") {
		t.Errorf("metric names: %d %s, want single_kept only", code, body)
	}
	count := base + "/api/v1/query?query=count(single_kept)"
	if code, body := httpDo(t, http.MethodGet, count, "", "", nil); code != http.StatusBadRequest || !strings.Contains(body, "blocked by the cluster administrator") {
		t.Errorf("a blocked query: %d %s, want 400", code, body)
	}
	if code, body := httpDo(t, http.MethodGet, base+"/runtime_config?mode=diff", "", "", nil); code != http.StatusOK || !strings.Contains(body, "anonymous:") || !strings.Contains(body, "count(single_kept)") {
		t.Errorf("/runtime_config?mode=diff: %d %s", code, body)
	}
	write("overrides:\n  anonymous:\n    max_active_series: 1000000\n")
	poll.Until(t, 30*time.Second, 100*time.Millisecond, "the query answered once the block is removed", func() (bool, string) {
		code, body := httpDo(t, http.MethodGet, count, "", "", nil)
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
}
