// Package ui_test opens the web UI's pages in a real headless Chromium
// (Debian's, tools/scripts/chromium.sh; test/testkit/testbrowser) against a running
// `promhbase serve` with data and a firing alert, and checks what a
// person sees: the query typed and run with Enter, the graph drawn, the
// table's values those of the API, the cardinality explorer's top metric
// and its click-through, the status page's numbers, the firing alert, the
// rules; no console errors. It does so plainly, below a route prefix,
// with basic auth, and for a tenant. Screenshots go to a folder it names
// in its log; with -update the plain server's replace docs/ui/*.png.
package ui_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"golang.org/x/crypto/bcrypt"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testbrowser"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

var update = flag.Bool("update", false, "write the plain server's screenshots to docs/ui/")

// bound is the longest any one step in the browser may take.
const bound = 30 * time.Second

// The test's rules: an alert that fires at once on the data written.
const rules = `name: ui
interval: 1s
rules:
  - alert: UIRoomHot
    expr: ui_temperature > 30
    labels:
      severity: page
    annotations:
      summary: 'the {{ $labels.room }} is at {{ $value }} degrees'
  - record: code:ui_requests:rate5m
    expr: sum by (code) (rate(ui_requests_total[5m]))
`

// query is what the test types on the query page.
const query = `sum by (code) (rate(ui_requests_total[5m]))`

// site is a running promhbase as a client of the test reaches it.
type site struct {
	base    string            // http://host:port, and the route prefix
	headers map[string]string // on every request: the login, the tenant
	// browser are the headers the browser sends (the login); tenant is
	// the tenant picked on the page.
	browser map[string]string
	tenant  string
}

// do sends a request to the site and returns its status and body.
func (s site) do(t *testing.T, method, path, ctype string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// variant is a way of serving the UI the test checks.
type variant struct {
	name string
	// args are serve's flags besides the listen address, the backend and
	// the ruler's; they get the address.
	args func(t *testing.T, addr string) []string
	// site is how the test and the browser reach it.
	site func(addr string) site
	// all: every page checked and shot, not only the query page and the
	// cardinality explorer.
	all bool
}

func TestUI(t *testing.T) {
	chrome := testbrowser.Chromium(t, testproc.Root(t, "tools/scripts/chromium.sh"))
	bin := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	shots := os.Getenv("PROMHBASE_UI_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "promhbase-ui-screenshots")
	}
	t.Logf("screenshots in %s", shots)
	plain := func(addr string) site { return site{base: "http://" + addr} }
	const user, password = "ui", "s3cret pass"
	login := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
	for _, v := range []variant{
		{name: "plain", args: func(*testing.T, string) []string { return nil }, site: plain, all: true},
		{name: "route prefix",
			args: func(_ *testing.T, addr string) []string {
				return []string{"--web.external-url=http://" + addr + "/promhbase/"}
			},
			site: func(addr string) site { return site{base: "http://" + addr + "/promhbase"} }},
		{name: "basic auth",
			args: func(t *testing.T, _ string) []string {
				return []string{"--web.config.file=" + webConfig(t, user, password)}
			},
			site: func(addr string) site { return site{base: "http://" + addr, headers: login, browser: login} }},
		{name: "tenant",
			args: func(*testing.T, string) []string {
				return []string{"--auth.multitenancy-enabled", "--tenant.create-on-first-write"}
			},
			site: func(addr string) site {
				return site{base: "http://" + addr, headers: map[string]string{"X-Scope-OrgID": "team-a"}, tenant: "team-a"}
			}, all: true},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := filepath.Join(shots, strings.ReplaceAll(v.name, " ", "-"))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			s := start(t, bin, v)
			writeData(t, s)
			b := testbrowser.Start(t, chrome, testbrowser.Options{Headers: s.browser})
			checkQueryPage(t, b, s, dir)
			checkCardinality(t, b, s, dir)
			if v.all {
				checkStatus(t, b, s, dir)
				checkAlertsAndRules(t, b, s, dir)
				checkFlags(t, b, s, dir)
			}
			if errs := b.Errors(); len(errs) > 0 {
				t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
			}
			if *update && v.name == "plain" {
				copyShots(t, dir, testproc.Root(t, "docs/ui"))
			}
		})
	}
}

// webConfig writes a web configuration with the basic-auth user user and
// returns its path.
func webConfig(t *testing.T, user, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(path, fmt.Appendf(nil, "basic_auth_users:\n  %s: '%s'\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// start starts serve as v asks, with the ruler on (every group evaluated
// each second), and waits until it is ready.
func start(t *testing.T, bin string, v variant) site {
	t.Helper()
	addr := testproc.FreeAddr(t)
	args := append([]string{"serve", "--web.listen-address=" + addr, "--ruler.enabled", "--ruler.poll-interval=1s",
		"--ruler.evaluation-interval=1s"}, testbackend.ServeFlags(t)...)
	args = append(args, v.args(t, addr)...)
	p := testproc.Start(t, "promhbase", exec.Command(bin, args...), filepath.Join(t.TempDir(), "promhbase.log"), 40)
	s := v.site(addr)
	poll.Until(t, 2*time.Minute, 50*time.Millisecond, "ready", func() (bool, string) {
		select {
		case <-p.Exited():
			t.Fatalf("promhbase exited:\n%s", p.Log())
		default:
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.base+"/-/ready", nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range s.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return s
}

// writeData writes half an hour of samples up to now, a sample each 15
// seconds: request counters of three instances and two codes, a lab's
// temperature over 30 (the alert fires), and ui_big, 25 series (the
// cardinality's top metric); then the rules, and waits until the alert
// fires.
func writeData(t *testing.T, s site) {
	t.Helper()
	now := time.Now().Unix()
	var body bytes.Buffer
	for ts := now - 1800; ts <= now; ts += 15 {
		k := (ts - now + 1800) / 15
		for i := range 3 {
			fmt.Fprintf(&body, "ui_requests_total{job=\"api\",instance=\"i%d\",code=\"200\"} %d %d\n", i, k*int64(10*(i+1)), ts*1000)
			fmt.Fprintf(&body, "ui_requests_total{job=\"api\",instance=\"i%d\",code=\"500\"} %d %d\n", i, k*int64(i+1), ts*1000)
		}
		fmt.Fprintf(&body, "ui_temperature{room=\"lab\"} %g %d\n", 31+float64(k%4)/4, ts*1000)
		for j := range 25 {
			fmt.Fprintf(&body, "ui_big{k=\"%d\"} %d %d\n", j, j, ts*1000)
		}
	}
	if code, msg := s.do(t, http.MethodPost, "/api/v1/import/prometheus", "text/plain", body.Bytes()); code != http.StatusNoContent {
		t.Fatalf("import: %d %s", code, msg)
	}
	if code, msg := s.do(t, http.MethodPost, "/config/v1/rules/ui", "application/yaml", []byte(rules)); code != http.StatusAccepted {
		t.Fatalf("rules: %d %s", code, msg)
	}
	poll.Until(t, time.Minute, 100*time.Millisecond, "the alert firing", func() (bool, string) {
		_, b := s.do(t, http.MethodGet, "/api/v1/alerts", "", nil)
		return bytes.Contains(b, []byte(`"state":"firing"`)), string(b)
	})
}

// open navigates to the page path (relative to the site's base) and
// waits until its script has drawn it.
func open(t *testing.T, b *testbrowser.Browser, s site, path string) {
	t.Helper()
	u := s.base + "/" + path
	if s.tenant != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "tenant=" + url.QueryEscape(s.tenant)
	}
	b.Run(t, bound, "open "+u, chromedp.Navigate(u), chromedp.Poll[chromedp.Void](`document.body.dataset.ready === '1'`))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *testbrowser.Browser, expr string) T {
	t.Helper()
	return testbrowser.Value(t, b, bound, expr, chromedp.Evaluate[T](expr))
}

// fmtMetric formats a label set as the page does: the name, then the
// other labels in name order.
func fmtMetric(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "__name__" {
			parts = append(parts, k+"="+strconv.Quote(m[k]))
		}
	}
	if len(parts) == 0 && m["__name__"] != "" {
		return m["__name__"]
	}
	return m["__name__"] + "{" + strings.Join(parts, ", ") + "}"
}

// seriesPixels counts the graph canvas's pixels in the first series'
// colour (#1f77b4): the line uPlot drew.
const seriesPixels = `(() => {
  const c = document.querySelector('#graph canvas');
  if (!c) return -1;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i+3] > 200 && Math.abs(d[i] - 0x1f) < 30 && Math.abs(d[i+1] - 0x77) < 30 && Math.abs(d[i+2] - 0xb4) < 30) n++;
  }
  return n;
})()`

func checkQueryPage(t *testing.T, b *testbrowser.Browser, s site, dir string) {
	t.Helper()
	// The root redirects to the query page, below the prefix too.
	b.Run(t, bound, "open the root", chromedp.Navigate(s.base+"/"), chromedp.Poll[chromedp.Void](`document.body.dataset.ready === '1'`))
	if loc := eval[string](t, b, `location.pathname`); !strings.HasSuffix(s.base+"/graph", loc) {
		t.Errorf("the root led to %s, want %s/graph", loc, s.base)
	}
	open(t, b, s, "graph")
	if s.tenant != "" {
		if picked := eval[string](t, b, `document.querySelector('#tenant-box').hidden ? '(hidden)' : document.querySelector('#tenant').value`); picked != s.tenant {
			t.Errorf("the tenant picker shows %q, want %q", picked, s.tenant)
		}
	}
	paint := eval[float64](t, b, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime`)
	t.Logf("query page: first contentful paint after %.0f ms", paint)
	b.Run(t, bound, "type the query and press Enter",
		chromedp.WaitVisible(chromedp.CSS("#expr")),
		chromedp.SendKeys(chromedp.CSS("#expr"), query+kb.Enter),
		chromedp.Poll[chromedp.Void](`document.querySelector('#graph').dataset.state === 'drawn' && document.querySelector('#result-table') !== null`))
	if n := eval[int](t, b, seriesPixels); n < 50 {
		t.Errorf("the graph's canvas has %d pixels of the first series' colour, want a line", n)
	}
	if n := eval[string](t, b, `document.querySelector('#graph').dataset.series`); n != "2" {
		t.Errorf("the graph drew %s series, want 2", n)
	}
	legend := eval[string](t, b, `document.querySelector('#graph .u-legend').textContent`)
	for _, want := range []string{`{code="200"}`, `{code="500"}`} {
		if !strings.Contains(legend, want) {
			t.Errorf("the legend %q lacks %s", legend, want)
		}
	}
	if res := eval[string](t, b, `document.querySelector('#resolution').textContent`); res == "" {
		t.Error("no resolution shown")
	}
	if h := eval[string](t, b, `localStorage.getItem('promhbase.history') || ''`); !strings.Contains(h, "ui_requests_total") {
		t.Errorf("history %q lacks the query", h)
	}
	// The table shows the API's answer at the time it names.
	at := eval[string](t, b, `document.querySelector('#result-table').dataset.time`)
	rows := eval[[][2]string](t, b, `[...document.querySelectorAll('#result-table tbody tr')].map(r => [r.querySelector('.metric').textContent, r.querySelector('.value').textContent])`)
	code, body := s.do(t, http.MethodPost, "/api/v1/query", "application/x-www-form-urlencoded",
		[]byte(url.Values{"query": {query}, "time": {at}}.Encode()))
	a, err := promjson.Decode(bytes.NewReader(body))
	if err != nil || code != http.StatusOK {
		t.Fatalf("query at %s: %d %s %v", at, code, body, err)
	}
	vec, err := a.Vector()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, sr := range vec {
		want[fmtMetric(sr.Metric)] = sr.ValueString()
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r[0]] = r[1]
	}
	if len(want) != 2 || !maps.Equal(got, want) {
		t.Errorf("the table %v, the API's answer %v", got, want)
	}
	b.Screenshot(t, dir, "graph")

	// Stacked: drawn again from the same answer.
	b.Run(t, bound, "stack the graph", chromedp.Click(chromedp.CSS("#stacked")),
		chromedp.Poll[chromedp.Void](`document.querySelector('#graph').dataset.state === 'drawn'`))
	if n := eval[int](t, b, seriesPixels); n < 50 {
		t.Errorf("stacked, the graph's canvas has %d pixels of the first series' colour", n)
	}
	// An error as the API gives it (the browser logs the 400 answers).
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	b.Run(t, bound, "run a bad query",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#expr').value = ''`),
		chromedp.SendKeys(chromedp.CSS("#expr"), "sum(("+kb.Enter),
		chromedp.Poll[chromedp.Void](`document.querySelector('#messages .error') !== null`))
	if msg := eval[string](t, b, `document.querySelector('#messages .error').textContent`); !strings.Contains(msg, "bad_data") {
		t.Errorf("error shown %q, want the API's bad_data", msg)
	}
	for _, e := range b.Take() {
		if !strings.Contains(e, "status of 400") || !strings.Contains(e, "/api/v1/query") {
			t.Errorf("console error besides the bad query's 400s: %s", e)
		}
	}
}

func checkCardinality(t *testing.T, b *testbrowser.Browser, s site, dir string) {
	t.Helper()
	open(t, b, s, "tsdb-status")
	b.Run(t, bound, "wait for the counts", chromedp.Poll[chromedp.Void](`document.querySelector('#cardinality').dataset.state === 'done'`))
	_, body := s.do(t, http.MethodGet, "/api/v1/status/tsdb?limit=10", "", nil)
	var api struct {
		Data struct {
			ByMetric []struct {
				Name  string `json:"name"`
				Value uint64 `json:"value"`
			} `json:"seriesCountByMetricName"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &api); err != nil || len(api.Data.ByMetric) == 0 {
		t.Fatalf("status/tsdb: %s %v", body, err)
	}
	top := eval[[2]string](t, b, `(r => [r.querySelector('.name').textContent, r.querySelector('.count').textContent])(document.querySelector('#by-metric tbody tr'))`)
	if top[0] != "ui_big" || top[0] != api.Data.ByMetric[0].Name || top[1] != strconv.FormatUint(api.Data.ByMetric[0].Value, 10) {
		t.Errorf("top metric %v, the API's %+v, want ui_big", top, api.Data.ByMetric[0])
	}
	b.Screenshot(t, dir, "tsdb-status")
	// A click narrows to the metric.
	b.Run(t, bound, "click the top metric", chromedp.Click(chromedp.CSS("#by-metric tbody tr a")),
		chromedp.Poll[chromedp.Void](`document.querySelector('#cardinality').dataset.state === 'done' && document.querySelector('#match').value !== ''`))
	if m := eval[string](t, b, `document.querySelector('#match').value`); m != `{__name__="ui_big"}` {
		t.Errorf("match[] %q after the click", m)
	}
	if n := eval[string](t, b, `document.querySelector('#total-series').textContent`); n != "25" {
		t.Errorf("%s series of ui_big, want 25", n)
	}
}

func checkStatus(t *testing.T, b *testbrowser.Browser, s site, dir string) {
	t.Helper()
	open(t, b, s, "status")
	_, body := s.do(t, http.MethodGet, "/api/v1/status/buildinfo", "", nil)
	var build struct {
		Data struct {
			Version string `json:"version"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &build); err != nil {
		t.Fatal(err)
	}
	text := func(key string) string {
		return eval[string](t, b, `(document.querySelector('[data-key="`+key+`"]') || {textContent: '(none)'}).textContent`)
	}
	if v := text("version"); v != build.Data.Version {
		t.Errorf("version %q, buildinfo's %q", v, build.Data.Version)
	}
	if n, err := strconv.Atoi(strings.ReplaceAll(text("goroutines"), ",", "")); err != nil || n < 10 {
		t.Errorf("goroutines %q", text("goroutines"))
	}
	if n, err := strconv.Atoi(text("gomaxprocs")); err != nil || n < 1 {
		t.Errorf("GOMAXPROCS %q", text("gomaxprocs"))
	}
	for key, want := range map[string]string{"ready": "promhbase is ready", "backend": testbackend.Name(), "memory": "iB"} {
		if got := text(key); !strings.Contains(got, want) {
			t.Errorf("%s %q, want %q in it", key, got, want)
		}
	}
	if testbackend.Name() == "embedded" {
		for key, want := range map[string]string{"read-only": "writable", "free-bytes": "iB", "row-buffer": "rows"} {
			if got := text(key); !strings.Contains(got, want) {
				t.Errorf("%s %q, want %q in it", key, got, want)
			}
		}
	}
	b.Screenshot(t, dir, "status")
}

func checkAlertsAndRules(t *testing.T, b *testbrowser.Browser, s site, dir string) {
	t.Helper()
	open(t, b, s, "alerts")
	firing := eval[[]string](t, b, `[...document.querySelectorAll('#alerts-table tr.rule[data-state="firing"] .name')].map(e => e.textContent)`)
	if !slices.Contains(firing, "UIRoomHot") {
		t.Errorf("firing alerts listed %q, want UIRoomHot", firing)
	}
	if l := eval[string](t, b, `document.querySelector('#alerts-table tbody').textContent`); !strings.Contains(l, `room="lab"`) || !strings.Contains(l, "ago") {
		t.Errorf("the alert's row %q lacks its labels or its active since", l)
	}
	b.Screenshot(t, dir, "alerts")
	open(t, b, s, "rules")
	r := eval[string](t, b, `document.querySelector('#rules').textContent`)
	for _, want := range []string{"UIRoomHot", "code:ui_requests:rate5m", "ok"} {
		if !strings.Contains(r, want) {
			t.Errorf("the rules page lacks %q", want)
		}
	}
	b.Screenshot(t, dir, "rules")
}

func checkFlags(t *testing.T, b *testbrowser.Browser, s site, dir string) {
	t.Helper()
	open(t, b, s, "flags")
	if f := eval[string](t, b, `document.querySelector('#flags').textContent`); !strings.Contains(f, "--web.listen-address") || !strings.Contains(f, "--ruler.enabled") {
		t.Errorf("the flags page lacks serve's flags: %.300s", f)
	}
	b.Screenshot(t, dir, "flags")
}

// copyShots copies the PNGs of dir into docs.
func copyShots(t *testing.T, dir, docs string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.png"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no screenshots in %s: %v", dir, err)
	}
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
