package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// configHA is one Prometheus of an HA pair: it scrapes the exporter every
// second and remote-writes with the pair's external labels, with remote
// write 1.0 or 2.0.
var configHA = template.Must(template.New("HA").Parse(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  external_labels:
    cluster: pair
    __replica__: {{.Replica}}
scrape_configs:
  - job_name: exporter
    static_configs:
      - targets: ['{{.Exporter}}']
remote_write:
  - url: '{{.WriteURL}}'
    protobuf_message: {{.Protocol}}
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
`))

// HA tracker timings of the test: Mimir's, scaled down. The failover
// timeout must outlast the restart of promhbase the test makes (stop,
// start, ready, and the senders' next retry), or the replica that sends
// first after it is elected, rightly; under CI's load a restart on HBase
// took 8.4 s (7 s of it reaching HBase).
const (
	haFailover = 20 * time.Second
	haUpdate   = time.Second
	haJitter   = 500 * time.Millisecond
	haScrape   = time.Second
)

// front is a reverse proxy in front of a promhbase process that may be
// restarted on another port: its senders keep one URL.
type front struct {
	url    string
	target atomic.Pointer[url.URL]
}

func newFront(t *testing.T) *front {
	t.Helper()
	f := &front{}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		if u := f.target.Load(); u != nil {
			r.SetURL(u)
		}
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// haProcess is a `promhbase serve` with the HA tracker on.
type haProcess struct {
	proc *testproc.Process
	base string
}

func startHAPromhbase(t *testing.T, bin, name string, storage []string) *haProcess {
	t.Helper()
	proc, base := testproc.StartServe(t, bin, name, 40, append([]string{
		"--ha-tracker.enable",
		"--ha-tracker.failover-timeout=" + haFailover.String(),
		"--ha-tracker.update-timeout=" + haUpdate.String(),
		"--ha-tracker.update-timeout-jitter-max=" + haJitter.String(),
	}, storage...)...)
	return &haProcess{proc: proc, base: base}
}

// haElection is one election on /distributor/ha_tracker.
type haElection struct {
	Cluster        string `json:"cluster"`
	Replica        string `json:"replica"`
	ElectedChanges int64  `json:"elected_changes"`
}

func elections(t *testing.T, base string) []haElection {
	t.Helper()
	resp, err := http.Get(base + "/distributor/ha_tracker?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Elections []haElection `json:"elections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatalf("ha tracker page: HTTP %d: %v", resp.StatusCode, err)
	}
	return page.Elections
}

// elected returns the elected replica of the test's cluster ("" none yet).
func elected(t *testing.T, base string) (string, int64) {
	t.Helper()
	for _, e := range elections(t, base) {
		if e.Cluster == "pair" {
			return e.Replica, e.ElectedChanges
		}
	}
	return "", 0
}

// TestHAPair: two real Prometheus servers, an HA pair (same cluster label,
// replicas p1 and p2; one sends remote write 1.0, the other 2.0), scrape
// the same exporter and remote-write into promhbase with the HA tracker
// on: one process on the embedded store, two processes (one a replica) on
// HBase. Only the elected replica's samples are stored, without the
// replica label; a restart of promhbase keeps the election; the elected
// Prometheus killed, the other takes over within the failover timeout; the
// stored samples equal the elected Prometheus's own before the kill and
// the survivor's after the takeover, and the gap between them is short.
func TestHAPair(t *testing.T) {
	t.Parallel()
	bin := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	promBin := prometheusBinary(t)
	storage := testbackend.ServeFlags(t)
	exp := startExporter(t, 0)

	procs := []*haProcess{startHAPromhbase(t, bin, "promhbase-1", storage)}
	if testbackend.Name() == "hbase" {
		procs = append(procs, startHAPromhbase(t, bin, "promhbase-2", storage))
	}
	fronts := []*front{newFront(t), newFront(t)}
	for i, f := range fronts {
		u, _ := url.Parse(procs[i%len(procs)].base)
		f.target.Store(u)
	}
	began := time.Now()
	proms := map[string]*promProcess{}
	for i, name := range []string{"p1", "p2"} {
		proto := []string{"prometheus.WriteRequest", "io.prometheus.write.v2.Request"}[i]
		proms[name] = startPrometheus(t, promBin, name, configHA, func(string) map[string]string {
			return map[string]string{"Replica": name, "Exporter": exp.host, "WriteURL": fronts[i].url + "/api/v1/write", "Protocol": proto}
		})
	}
	// The subject is an election that holds while both replicas send
	// for a while: wall time passes, then no change may have happened.
	time.Sleep(12 * time.Second)
	first, changes := elected(t, procs[0].base)
	if first == "" || changes != 0 {
		t.Fatalf("after 12 s the elected replica is %q (%d changes)", first, changes)
	}
	t.Logf("elected: %s", first)

	// A restart of promhbase (the one process on the embedded store, the
	// first of two on HBase) keeps the election.
	stopped := time.Now()
	procs[0].proc.Stop()
	procs[0] = startHAPromhbase(t, bin, "promhbase-1-again", storage)
	t.Logf("promhbase restarted in %s (failover timeout %s)", time.Since(stopped).Round(time.Millisecond), haFailover)
	u, _ := url.Parse(procs[0].base)
	fronts[0].target.Store(u)
	if len(procs) == 1 {
		fronts[1].target.Store(u)
	}
	// Both replicas send to the restarted process for a while: the
	// election must have held through it.
	time.Sleep(8 * time.Second)
	if again, changes := elected(t, procs[0].base); again != first || changes != 0 {
		t.Fatalf("after the restart the elected replica is %q (%d changes), was %q", again, changes, first)
	}

	// Kill the elected Prometheus; the other takes over. What it scraped
	// is read first.
	other := map[string]string{"p1": "p2", "p2": "p1"}[first]
	window := fmt.Sprintf("%ds", int(time.Since(began).Seconds())+60)
	before := haSamples(t, proms[first].api, `{job="exporter"}[`+window+`]`, time.Now())
	killed := time.Now()
	if err := syscall.Kill(-proms[first].proc.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-proms[first].proc.Exited()
	var took time.Duration
	poll.Until(t, haFailover+10*time.Second, 100*time.Millisecond, other+" elected after "+first+" was killed", func() (bool, string) {
		r, _ := elected(t, procs[len(procs)-1].base)
		took = time.Since(killed)
		return r == other, "elected " + r
	})
	t.Logf("%s killed; %s elected %s later (failover timeout %s, scrape interval %s)", first, other, took.Round(time.Millisecond), haFailover, haScrape)
	if took > haFailover+haScrape+time.Second {
		t.Errorf("the takeover took %s, more than the failover timeout plus a scrape interval and a batch deadline", took)
	}
	// The survivor scrapes and sends alone for a while: its samples
	// after the takeover are the subject of the checks below.
	time.Sleep(10 * time.Second)
	end := time.Now()

	// What promhbase stored, by series without the cluster label, and
	// what each Prometheus scraped.
	window = fmt.Sprintf("%ds", int(end.Sub(began).Seconds())+60)
	stored := haSamples(t, promAPI{name: "promhbase", base: procs[0].base, client: http.DefaultClient}, `{job="exporter"}[`+window+`]`, end, "cluster")
	survivor := haSamples(t, proms[other].api, `{job="exporter"}[`+window+`]`, end)
	if len(stored) == 0 || len(survivor) == 0 {
		t.Fatalf("%d series stored, %d in %s", len(stored), len(survivor), other)
	}
	for _, m := range []string{`count({__replica__!=""})`, `count({cluster!="pair", job="exporter"})`} {
		res, err := (promAPI{name: "promhbase", base: procs[0].base, client: http.DefaultClient}).query(t.Context(), promQuery{expr: m, at: end})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.series) != 0 {
			t.Errorf("%s: %v, want nothing", m, res.series)
		}
	}

	// Before the kill (less the last seconds, which the killed one may
	// have scraped and not sent) the stored samples are exactly the
	// elected Prometheus's; after the takeover (plus a batch deadline)
	// exactly the survivor's; and nowhere closer than half a scrape
	// interval, as two replicas' samples would be.
	until := killed.Add(-3 * time.Second).UnixMilli()
	from, to := killed.Add(took+2*time.Second).UnixMilli(), end.Add(-3*time.Second).UnixMilli()
	in := func(pts []point, lo, hi int64) []point {
		var out []point
		for _, p := range pts {
			if p.t >= lo && p.t <= hi {
				out = append(out, p)
			}
		}
		return out
	}
	worstGap := time.Duration(0)
	compared := 0
	for key, pts := range stored {
		if got, want := in(pts, 0, until), in(before[key], 0, until); !slices.Equal(got, want) {
			t.Errorf("%s before the kill: stored %d samples %v, %s scraped %d: %v", key, len(got), got, first, len(want), want)
		}
		if got, want := in(pts, from, to), in(survivor[key], from, to); !slices.Equal(got, want) {
			t.Errorf("%s after the takeover: stored %d samples %v, %s scraped %d: %v", key, len(got), got, other, len(want), want)
		}
		compared += len(in(pts, 0, until)) + len(in(pts, from, to))
		for i := 1; i < len(pts); i++ {
			gap := time.Duration(pts[i].t-pts[i-1].t) * time.Millisecond
			if gap < haScrape/2 {
				t.Errorf("%s: samples at %d and %d, %s apart: two replicas' samples interleave", key, pts[i-1].t, pts[i].t, gap)
			}
			worstGap = max(worstGap, gap)
		}
	}
	if len(stored) != len(before) || len(stored) != len(survivor) {
		t.Errorf("%d series stored, %s scraped %d, %s %d", len(stored), first, len(before), other, len(survivor))
	}
	t.Logf("%d series stored, %d samples compared with the Prometheus that was elected; the longest gap between two stored samples of a series: %s", len(stored), compared, worstGap)
	// The gap at the failover: the failover timeout, what the killed
	// replica scraped but had not sent (its batch deadline), and a scrape
	// interval.
	if worstGap > haFailover+2*haScrape+time.Second {
		t.Errorf("a gap of %s in the stored data", worstGap)
	}
}

// haSamples runs an instant query of a range selector and returns its
// float samples by series, each key without the labels drop.
func haSamples(t *testing.T, api promAPI, expr string, at time.Time, drop ...string) map[string][]point {
	t.Helper()
	form := url.Values{"query": {expr}, "time": {formatTime(at)}}
	resp, err := api.client.PostForm(api.base+"/api/v1/query", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r, err := promjson.Decode(resp.Body)
	if err != nil || r.Status != "success" {
		t.Fatalf("%s: %s: HTTP %d %v %s", api.name, expr, resp.StatusCode, err, r.Error)
	}
	out := map[string][]point{}
	for _, s := range r.Data.Result {
		for _, d := range drop {
			delete(s.Metric, d)
		}
		pts, err := parsePoints(s.Values)
		if err != nil {
			t.Fatalf("%s: %v", api.name, err)
		}
		out[labels.FromMap(s.Metric).String()] = pts
	}
	return out
}
