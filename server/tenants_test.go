package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/server/overrides"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// flakyScans fails the scans of tables of a namespace while fail is
// above zero, counting down.
type flakyScans struct {
	store.Store
	fail atomic.Int32
}

// As passes the optional interfaces of the store underneath on, so that
// the tenants' stacks take the paths they take in serve.
func (f *flakyScans) As(target any) bool { return store.Forward(f.Store, target) }

func (f *flakyScans) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if strings.Contains(req.Table, ":") && f.fail.Add(-1) >= 0 {
		return failedScan{}
	}
	return f.Store.Scan(ctx, req)
}

type failedScan struct{}

func (failedScan) Next() bool     { return false }
func (failedScan) Row() store.Row { return store.Row{} }
func (failedScan) Err() error     { return fmt.Errorf("scan: %w", store.ErrUnavailable) }
func (failedScan) Close() error   { return nil }

// newTenants returns a multi-tenant server over an embedded store with
// the tenants ids created, its store's scans of tenants' tables failing
// the first fail times.
func newTenants(t *testing.T, fail int32, ids ...string) (*Tenants, *flakyScans) {
	t.Helper()
	return newTenantsWith(t, fail, func(*TenantsConfig) {}, ids...)
}

// newTenantsWith is newTenants with the TenantsConfig changed by set.
func newTenantsWith(t *testing.T, fail int32, set func(*TenantsConfig), ids ...string) (*Tenants, *flakyScans) {
	t.Helper()
	all := []string{"tsdb", "tsdb-uid", "tsdb-exemplar", "tsdb-meta", "tsdb-index"}
	emb, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: all})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	for _, id := range ids {
		if _, err := emb.CreateNamespace(t.Context(), tenant.Namespace(id)); err != nil {
			t.Fatal(err)
		}
	}
	st := &flakyScans{Store: emb}
	st.fail.Store(fail)
	for _, typ := range store.Optional() {
		_, want := store.Lookup(emb, typ)
		if _, got := store.Lookup(st, typ); got != want {
			t.Fatalf("flakyScans over the embedded store has %v: %v, the store: %v", typ, got, want)
		}
	}
	_, cfg := newConfig(t, all...)
	cfg.Mapper = nil
	cfg.Registerer = prometheus.NewRegistry()
	rt, err := overrides.New(overrides.Options{Defaults: overrides.FromConfig(cfg.Limits, 0)})
	if err != nil {
		t.Fatal(err)
	}
	tc := TenantsConfig{Runtime: rt,
		NewMapper: func(view store.Store, reg prometheus.Registerer) (*series.Mapper, error) {
			uids, err := uid.NewUIDs(view, cfg.Layout, uid.UIDOptions{Table: "tsdb-uid", Registerer: reg})
			if err != nil {
				return nil, err
			}
			return series.NewMapper(uids, cfg.Layout, 0), nil
		}}
	set(&tc)
	ts, err := NewTenants(st, cfg, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Start())
	return ts, st
}

func get(h http.Handler, org, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if org != "" {
		req.Header.Set(tenant.Header, org)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestTenantOpenRetried: an opening that failed (the store unavailable)
// answers 503 with Retry-After and leaves nothing that stops the next
// one: its metrics are registered again.
func TestTenantOpenRetried(t *testing.T) {
	ts, _ := newTenants(t, 1, "acme")
	if rec := get(ts, "acme", "/api/v1/labels"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("first request, the store failing: %d %v %s, want 503 with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	if rec := get(ts, "acme", "/api/v1/labels"); rec.Code != http.StatusOK {
		t.Fatalf("second request: %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestTenantsNotCreatedLeaveNothing: asking for many tenants that do not
// exist answers as for empty ones and keeps no state per ID.
func TestTenantsNotCreatedLeaveNothing(t *testing.T) {
	ts, _ := newTenants(t, 0)
	for i := range 500 {
		if rec := get(ts, fmt.Sprintf("nobody-%d", i), "/api/v1/labels"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"data":[]`) {
			t.Fatalf("tenant not created: %d %s", rec.Code, rec.Body)
		}
	}
	ts.mu.RLock()
	n, m := len(ts.opening), len(ts.servers)
	ts.mu.RUnlock()
	if n != 0 || m != 0 {
		t.Errorf("%d openings and %d servers kept after reads of tenants not created", n, m)
	}
}

// TestIdentify: the statuses of naming a tenant.
func TestIdentify(t *testing.T) {
	ts, _ := newTenants(t, 0, "acme")
	for _, tc := range []struct {
		name string
		hdrs []string
		want int
	}{
		{"none", nil, http.StatusUnauthorized},
		{"empty", []string{""}, http.StatusUnauthorized},
		{"two headers", []string{"acme", "acme"}, http.StatusBadRequest},
		{"invalid", []string{"a/b"}, http.StatusBadRequest},
		{"too long", []string{strings.Repeat("a", 151)}, http.StatusBadRequest},
		{"several without federation", []string{"acme|b"}, http.StatusBadRequest},
		{"one", []string{"acme"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/labels", nil)
			for _, h := range tc.hdrs {
				req.Header.Add(tenant.Header, h)
			}
			rec := httptest.NewRecorder()
			ts.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("%d %s, want %d", rec.Code, rec.Body, tc.want)
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", tenant.ErrNoID), tenant.ErrNoID) || statusOf(tenant.ErrNoID) != http.StatusUnauthorized {
		t.Error("no org id is not 401")
	}
}

// TestMaxFederated: a federated read of more tenants than
// MaxFederated gets 400 before any tenant is opened.
func TestMaxFederated(t *testing.T) {
	ts, _ := newTenantsWith(t, 0, func(tc *TenantsConfig) { tc.Federation, tc.MaxFederated = true, 2 }, "a", "b", "c")
	for _, tc := range []struct {
		org  string
		want int
	}{{"a|b", http.StatusOK}, {"a|b|c", http.StatusBadRequest}} {
		if rec := get(ts, tc.org, "/api/v1/labels"); rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.org, rec.Code, rec.Body, tc.want)
		}
	}
	if got := ts.Open(); len(got) != 2 {
		t.Errorf("tenants opened: %q, want a and b only", got)
	}
}
