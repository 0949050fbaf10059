package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testuid"
)

// newConfig opens an embedded store holding tables and returns a Config
// over it with every feature on.
func newConfig(t *testing.T, tables ...string) (store.Store, Config) {
	t.Helper()
	st := testuid.StoreWith(t, tables...)
	layout := mapping.DefaultLayout()
	uids := testuid.UIDs(t, st, layout)
	return st, Config{
		Layout:        layout,
		Tables:        Tables{Data: "tsdb", UID: "tsdb-uid", Exemplar: "tsdb-exemplar", Meta: "tsdb-meta", Index: "tsdb-index"},
		Mapper:        series.NewMapper(uids, layout, 0),
		Limits:        limits.DefaultConfig(),
		ExemplarSlots: 720,
		Index:         IndexConfig{Enabled: true, Query: true},
		Compaction:    CompactionConfig{Enabled: true, Concurrency: 1},
	}
}

// TestNewChecksTables: a table the Config asks for that does not exist is
// named in the error, with the way out.
func TestNewChecksTables(t *testing.T) {
	all := []string{"tsdb", "tsdb-uid", "tsdb-exemplar", "tsdb-meta", "tsdb-index"}
	for _, tc := range []struct {
		missing, want string
	}{
		{"tsdb-exemplar", `exemplar table "tsdb-exemplar" does not exist`},
		{"tsdb-meta", `series index table "tsdb-meta" does not exist`},
		{"tsdb-index", `series index table "tsdb-index" does not exist`},
	} {
		t.Run(tc.missing, func(t *testing.T) {
			var tables []string
			for _, tb := range all {
				if tb != tc.missing {
					tables = append(tables, tb)
				}
			}
			st, cfg := newConfig(t, tables...)
			_, err := New(context.Background(), st, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "create-tables") {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("too many exemplar slots", func(t *testing.T) {
		st, cfg := newConfig(t, all...)
		cfg.ExemplarSlots = mapping.MaxExemplarSlots + 1
		if _, err := New(context.Background(), st, cfg); err == nil {
			t.Fatal("no error")
		}
	})
}

// TestServerServes: a wired server answers readiness, a remote write and
// the query API, and Run returns once its context ends.
func TestServerServes(t *testing.T) {
	st, cfg := newConfig(t, "tsdb", "tsdb-uid", "tsdb-exemplar", "tsdb-meta", "tsdb-index")
	s, err := New(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := s.Start()
	defer stop()
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/-/ready", http.StatusOK},
		{http.MethodGet, "/api/v1/labels", http.StatusOK},
		{http.MethodPost, "/api/v1/write", http.StatusBadRequest}, // an empty body is no snappy block
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader("")))
		if rec.Code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.want)
		}
	}
}
