package promapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/store"
)

// noData is a Queryable with nothing in it: the admin endpoints do not
// read through it.
type noData struct{}

func (noData) Querier(int64, int64) (storage.Querier, error) { return storage.NoopQuerier(), nil }
func (noData) ChunkQuerier(int64, int64) (storage.ChunkQuerier, error) {
	return storage.NoopChunkedQuerier(), nil
}
func (noData) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) { return nil, nil }

// recordingAdmin records the deletes it is asked for.
type recordingAdmin struct {
	mu        sync.Mutex
	deletes   []string
	cleans    int
	snapshots []string
	fail      error // what Snapshot answers
}

func (r *recordingAdmin) Snapshot(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshots = append(r.snapshots, name)
	return r.fail
}

func (r *recordingAdmin) DeleteSeries(_ context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.String() + ";")
	}
	r.deletes = append(r.deletes, b.String()+" "+itoa(mint)+" "+itoa(maxt))
	return nil
}

func (r *recordingAdmin) CleanTombstones(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleans++
	return nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestAdminAPI: delete_series and clean_tombstones answer as Prometheus
// 3.15's (web/api/v1): 204 on success, 400 bad_data for no match[], a bad
// selector or a bad time, 500 unavailable while the admin API is off; no
// selector is deleted when any of the request's is bad.
func TestAdminAPI(t *testing.T) {
	for _, tc := range []struct {
		name       string
		enable     bool
		method     string
		path       string
		form       url.Values
		wantCode   int
		wantBody   string // substring of the answer
		wantDelete []string
		wantCleans int
		wantSnaps  int
		fail       error
	}{
		{name: "off", method: "POST", path: "/api/v1/admin/tsdb/delete_series", form: url.Values{"match[]": {"up"}},
			wantCode: 500, wantBody: `{"status":"error","errorType":"unavailable","error":"admin APIs disabled"}`},
		{name: "off clean", method: "POST", path: "/api/v1/admin/tsdb/clean_tombstones",
			wantCode: 500, wantBody: `"errorType":"unavailable"`},
		{name: "no match", enable: true, method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			wantCode: 400, wantBody: `{"status":"error","errorType":"bad_data","error":"no match[] parameter provided"}`},
		{name: "bad matcher", enable: true, method: "POST", path: "/api/v1/admin/tsdb/delete_series", form: url.Values{"match[]": {"up{"}},
			wantCode: 400, wantBody: `"errorType":"bad_data","error":"invalid parameter \"match[]\": `},
		{name: "good then bad matcher deletes nothing", enable: true, method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			form: url.Values{"match[]": {"up", "{job=~\"(\"}"}}, wantCode: 400, wantBody: `"bad_data"`},
		{name: "bad start", enable: true, method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			form: url.Values{"match[]": {"up"}, "start": {"yesterday"}}, wantCode: 400, wantBody: `invalid parameter \"start\"`},
		{name: "bad end", enable: true, method: "PUT", path: "/api/v1/admin/tsdb/delete_series",
			form: url.Values{"match[]": {"up"}, "end": {"x"}}, wantCode: 400, wantBody: `invalid parameter \"end\"`},
		{name: "range", enable: true, method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			form:     url.Values{"match[]": {`up{job="a"}`, `{__name__=~"x.*"}`}, "start": {"100.5"}, "end": {"1970-01-01T00:03:20Z"}},
			wantCode: 204, wantDelete: []string{`job="a";__name__="up"; 100500 200000`, `__name__=~"x.*"; 100500 200000`}},
		{name: "match everything", enable: true, method: "PUT", path: "/api/v1/admin/tsdb/delete_series",
			form: url.Values{"match[]": {`{job=~".*"}`}, "start": {"1"}, "end": {"2"}}, wantCode: 204,
			wantDelete: []string{`job=~".*"; 1000 2000`}},
		{name: "clean", enable: true, method: "POST", path: "/api/v1/admin/tsdb/clean_tombstones", wantCode: 204, wantCleans: 1},
		{name: "snapshot", enable: true, method: "POST", path: "/api/v1/admin/tsdb/snapshot", wantCode: 200,
			wantBody: `{"status":"success","data":{"name":"2`, wantSnaps: 1},
		{name: "snapshot skip_head", enable: true, method: "PUT", path: "/api/v1/admin/tsdb/snapshot", form: url.Values{"skip_head": {"true"}},
			wantCode: 200, wantBody: `"name":"`, wantSnaps: 1},
		{name: "snapshot bad skip_head", enable: true, method: "POST", path: "/api/v1/admin/tsdb/snapshot", form: url.Values{"skip_head": {"maybe"}},
			wantCode: 400, wantBody: `invalid parameter \"skip_head\"`},
		{name: "snapshot off", method: "POST", path: "/api/v1/admin/tsdb/snapshot", wantCode: 500, wantBody: `"admin APIs disabled"`},
		{name: "snapshot store down", enable: true, method: "POST", path: "/api/v1/admin/tsdb/snapshot", fail: fmt.Errorf("x: %w", store.ErrUnavailable),
			wantCode: 503, wantBody: `"errorType":"unavailable"`, wantSnaps: 1},
		{name: "snapshot fails", enable: true, method: "POST", path: "/api/v1/admin/tsdb/snapshot", fail: errors.New("disk full"),
			wantCode: 500, wantBody: `create snapshot: disk full`, wantSnaps: 1},
		{name: "get not allowed", enable: true, method: "GET", path: "/api/v1/admin/tsdb/delete_series?match[]=up", wantCode: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := &recordingAdmin{fail: tc.fail}
			api, err := New(Options{Queryable: noData{}, EnableAdmin: tc.enable, Admin: adm})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Result().Body)
			if rec.Code != tc.wantCode || !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("%s %s: %d %s, want %d and %q", tc.method, tc.path, rec.Code, body, tc.wantCode, tc.wantBody)
			}
			if tc.wantCode == http.StatusNoContent && len(body) != 0 {
				t.Errorf("204 with a body: %q", body)
			}
			if strings.Join(adm.deletes, "|") != strings.Join(tc.wantDelete, "|") {
				t.Errorf("deletes %q, want %q", adm.deletes, tc.wantDelete)
			}
			if len(adm.snapshots) != tc.wantSnaps {
				t.Errorf("snapshots %q, want %d", adm.snapshots, tc.wantSnaps)
			}
			if tc.wantCode == http.StatusOK && !strings.Contains(string(body), adm.snapshots[0]) {
				t.Errorf("answer %s does not name snapshot %q", body, adm.snapshots[0])
			}
			if adm.cleans != tc.wantCleans {
				t.Errorf("cleans %d, want %d", adm.cleans, tc.wantCleans)
			}
		})
	}
}
