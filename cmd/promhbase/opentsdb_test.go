package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestServeOpenTSDB: serve with --opentsdb.listen-address takes telnet
// put lines and HTTP /api/put on that port (and /api/put on its web
// port), with tenants: telnet lines and HTTP requests without
// X-Scope-OrgID into --opentsdb.tenant, the others into theirs; the
// points are read back by PromQL in each tenant, and found by
// /api/search/lookup.
func TestServeOpenTSDB(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	tsdTenant := "tsd-" + strings.ReplaceAll(t.Name(), "/", "-")
	other := "tsd-other"
	dropTenants(t, tsdTenant, other)
	srv, base := startServe(t, bin, append([]string{"--opentsdb.listen-address=127.0.0.1:0", "--opentsdb.tenant=" + tsdTenant,
		"--opentsdb.auto-create-metrics", "--auth.multitenancy-enabled", "--tenant.create-on-first-write"}, flags...)...)
	addr, err := srv.LoggedAddress(t.Context(), time.Minute, "OpenTSDB port serving")
	if err != nil {
		t.Fatalf("no OpenTSDB port: %v\n%s", err, srv.Log())
	}
	now := time.Now().Unix()
	ts := func(ago int64) string { return fmt.Sprint(now - ago) }

	// Telnet: two points stored, one refused, answered in the TSD's words.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "put tsd.cpu "+ts(60)+" 1 host=a\nput tsd.cpu "+ts(30)+" 2.5 host=a\nput tsd.cpu x 1 host=a\nversion\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	first, err := br.ReadString('\n')
	if err != nil || first != "put: invalid value: Invalid character 'x' in x\n" {
		t.Fatalf("telnet answer %q, %v", first, err)
	}
	if v, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(v, "net.opentsdb.tools promhbase-") {
		t.Fatalf("version %q, %v", v, err)
	}
	// HTTP on the port without a tenant: --opentsdb.tenant's; with one:
	// that tenant's; on the web port: X-Scope-OrgID's.
	body := `{"metric":"tsd.mem","timestamp":` + ts(20) + `,"value":7,"tags":{"host":"a"}}`
	for _, tc := range []struct{ url, org string }{{"http://" + addr + "/api/put", ""}, {"http://" + addr + "/api/put", other}, {base + "/api/put", other}} {
		code, answer := httpDo(t, http.MethodPost, tc.url, tc.org, "application/json", []byte(body))
		if code != http.StatusNoContent {
			t.Fatalf("%s (%q): %d %s", tc.url, tc.org, code, answer)
		}
	}
	// PromQL in each tenant.
	for _, tc := range []struct{ org, query, want string }{
		{tsdTenant, `{__name__="tsd.cpu"}`, "2.5"}, {tsdTenant, `{__name__="tsd.mem"}`, "7"},
		{other, `{__name__="tsd.mem"}`, "7"}, {other, `count({__name__="tsd.cpu"})`, ""},
	} {
		q := tc.query
		code, answer := httpDo(t, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(q), tc.org, "", nil)
		var res struct {
			Data struct {
				Result []struct{ Value []any }
			}
		}
		if code != http.StatusOK || json.Unmarshal([]byte(answer), &res) != nil {
			t.Fatalf("%s in %s: %d %s", q, tc.org, code, answer)
		}
		got := ""
		if len(res.Data.Result) == 1 {
			got, _ = res.Data.Result[0].Value[1].(string)
		}
		if got != tc.want {
			t.Errorf("%s in %s: %q, want %q (%s)", q, tc.org, got, tc.want, answer)
		}
	}
	// /api/suggest in each tenant: its own names only; /api/version
	// stamped with this binary's build.
	for _, tc := range []struct{ url, org, want string }{
		{"http://" + addr + "/api/suggest?type=metrics&q=tsd", "", `["tsd.cpu","tsd.mem"]`},
		{"http://" + addr + "/api/suggest?type=metrics&q=tsd", other, `["tsd.mem"]`},
		{base + "/api/suggest?type=tagv", other, `["a"]`},
	} {
		if code, answer := httpDo(t, http.MethodGet, tc.url, tc.org, "", nil); code != http.StatusOK || answer != tc.want {
			t.Errorf("%s (%q): %d %s, want %s", tc.url, tc.org, code, answer, tc.want)
		}
	}
	// /api/search/lookup in each tenant: the series of its own TSMeta
	// rows, which the series index writes on both stores.
	for _, tc := range []struct{ url, org, want string }{
		{"http://" + addr + "/api/search/lookup?m=tsd.cpu", "", `"metric":"tsd.cpu","tags":{"host":"a"}}],"startIndex":0,"totalResults":1}`},
		{"http://" + addr + "/api/search/lookup?m=" + url.QueryEscape("{host=a}"), other, `"metric":"tsd.mem","tags":{"host":"a"}}],"startIndex":0,"totalResults":1}`},
		{base + "/api/search/lookup?m=tsd.cpu", other, `{"error":{"code":404,"message":"Unable to resolve one or more UIDs","details":"No such name for 'metrics': 'tsd.cpu'"}}`},
	} {
		if _, answer := httpDo(t, http.MethodGet, tc.url, tc.org, "", nil); !strings.HasSuffix(answer, tc.want) {
			t.Errorf("%s (%q): %s, want one ending %s", tc.url, tc.org, answer, tc.want)
		}
	}
	// /api/query: the telnet points, a TSD's answer (the integer written
	// as a double while the float after it is held).
	q := `{"start":` + ts(100) + `,"queries":[{"aggregator":"sum","metric":"tsd.cpu","tags":{"host":"*"}}]}`
	want := `[{"metric":"tsd.cpu","tags":{"host":"a"},"aggregateTags":[],"dps":{"` + ts(60) + `":1.0,"` + ts(30) + `":2.5}}]`
	if code, answer := httpDo(t, http.MethodPost, "http://"+addr+"/api/query", "", "application/json", []byte(q)); code != http.StatusOK || answer != want {
		t.Errorf("/api/query: %d %s, want %s", code, answer, want)
	}
	if code, answer := httpDo(t, http.MethodGet, "http://"+addr+"/api/version", "", "", nil); code != http.StatusOK ||
		!strings.Contains(answer, `"repo":"github.com/promhbase/promhbase"`) {
		t.Errorf("/api/version: %d %s", code, answer)
	}
	stopServe(t, srv)
}
