package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/prompb"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// The ruler test's settings: every group is evaluated each second; the
// alert waits rulerFor; the external URL and labels are the same for
// promhbase's ruler and for Prometheus.
const (
	rulerInterval    = time.Second
	rulerFor         = 3 * time.Second
	rulerExternalURL = "http://ruler.example:9090"
	rulerCluster     = "e2e-ruler"
)

// rulerRecording is the recording group, as one group's YAML (what the
// configuration API takes): rates summed by labels, a rule reading the
// previous rule's output, a quantile of a classic histogram, an average
// over time with a rule label, an increase summed without a label.
const rulerRecording = `name: e2e-recording
interval: 1s
rules:
  - record: job_code:e2e_requests:rate15s
    expr: sum by (job, code) (rate(e2e_requests_total[15s]))
  - record: job:e2e_requests_errors:ratio_rate15s
    expr: sum by (job) (job_code:e2e_requests:rate15s{code="500"}) / sum by (job) (job_code:e2e_requests:rate15s)
  - record: job:e2e_latency_seconds:p90_rate15s
    expr: histogram_quantile(0.9, sum by (job, le) (rate(e2e_latency_seconds_bucket[15s])))
  - record: room:e2e_temperature:avg_over_time20s
    expr: avg_over_time(e2e_temperature[20s])
    labels:
      source: e2e
  - record: instance:e2e_requests:increase10s
    expr: sum without (code) (increase(e2e_requests_total[10s]))
`

// rulerAlerting is the alerting group: a rule with `for`, a templated
// label and annotations reading $labels, $value, $externalLabels and
// $externalURL.
const rulerAlerting = `name: e2e-alerting
interval: 1s
rules:
  - alert: E2ERoomHot
    expr: e2e_temperature > 30
    for: 3s
    labels:
      severity: page
      owner: '{{ $labels.room }}-team'
    annotations:
      summary: '{{ $labels.room }} is at {{ $value }} degrees'
      description: 'cluster {{ $externalLabels.cluster }}: {{ printf "%.2f" $value }} > 30, see {{ $externalURL }}'
`

// recordingRules returns the rules of rulerRecording.
func recordingRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	var g rulefmt.RuleGroup
	if err := yaml.Unmarshal([]byte(rulerRecording), &g); err != nil {
		t.Fatal(err)
	}
	return g.Rules
}

// configRuler is the reference Prometheus: the test's rule file, alerts to
// its own Alertmanager, the same external labels as promhbase's ruler;
// no scrapes (its data comes through its remote-write receiver).
var configRuler = template.Must(template.New("ruler").Parse(`global:
  evaluation_interval: 1s
  external_labels:
    cluster: ` + rulerCluster + `
rule_files:
  - '{{.Rules}}'
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['{{.Alertmanager}}']
`))

// rulerTimeline is the test's data: a sample a second from start to end
// (Unix ms, inclusive); the lab's temperature is over 30 from hotFrom
// until before hotTo.
type rulerTimeline struct {
	start, end     int64
	hotFrom, hotTo int64
}

// labTemperature is the lab's temperature at the k-th sample (time t).
func (tl rulerTimeline) labTemperature(k int, t int64) float64 {
	if t >= tl.hotFrom && t < tl.hotTo {
		return 30.5 + 0.25*float64(k%4)
	}
	return 20 + 0.1*float64(k%5)
}

// series returns the test's samples: request counters of three instances
// and two codes (one counter reset), a classic latency histogram of each
// instance, the temperatures of two rooms.
func (tl rulerTimeline) series() []prompb.TimeSeries {
	var out []prompb.TimeSeries
	add := func(ls []prompb.Label, v func(k int, t int64) float64) {
		ts := prompb.TimeSeries{Labels: ls}
		for k, t := 0, tl.start; t <= tl.end; k, t = k+1, t+1000 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: v(k, t)})
		}
		out = append(out, ts)
	}
	// cumulative returns a counter of the increments inc(k), reset to
	// its increment at reset (-1: never).
	cumulative := func(inc func(k int) float64, reset int) func(int, int64) float64 {
		sums := map[int]float64{}
		return func(k int, _ int64) float64 {
			if k == reset {
				sums[k] = inc(k)
				return sums[k]
			}
			if k == 0 {
				sums[k] = 100 + inc(k)
				return sums[k]
			}
			sums[k] = sums[k-1] + inc(k)
			return sums[k]
		}
	}
	resetAt := int((tl.hotFrom-tl.start)/1000) + 2
	for i, inst := range []string{"i1", "i2", "i3"} {
		reset := -1
		if i == 1 {
			reset = resetAt
		}
		add(lbl("__name__", "e2e_requests_total", "job", "api", "instance", inst, "code", "200"),
			cumulative(func(k int) float64 { return float64((k*7+i*3)%11 + 1) }, reset))
		add(lbl("__name__", "e2e_requests_total", "job", "api", "instance", inst, "code", "500"),
			cumulative(func(k int) float64 {
				if (k*3+i)%4 == 0 {
					return 1
				}
				return 0
			}, -1))
		incs := []func(k int) float64{
			func(k int) float64 { return float64((k + i) % 3) },
			func(k int) float64 { return float64((k*2 + i) % 4) },
			func(k int) float64 { return float64((k + 2*i) % 3) },
			func(int) float64 { return 1 },
			func(k int) float64 { return float64(k % 2) },
		}
		for j, le := range []string{"0.1", "0.25", "0.5", "1", "+Inf"} {
			add(lbl("__name__", "e2e_latency_seconds_bucket", "job", "api", "instance", inst, "le", le),
				cumulative(func(k int) float64 {
					var n float64
					for _, f := range incs[:j+1] {
						n += f(k)
					}
					return n
				}, -1))
		}
	}
	add(lbl("__name__", "e2e_temperature", "room", "lab"), tl.labTemperature)
	add(lbl("__name__", "e2e_temperature", "room", "office"), func(k int, _ int64) float64 { return 21 + 0.5*float64(k%3) })
	return out
}

// startRulerPromhbase starts `promhbase serve` on the test's backend with
// the ruler on: groups polled each second, alerts to am, the test's
// external URL and labels.
func startRulerPromhbase(t *testing.T, bin, am string) promAPI {
	t.Helper()
	storage := testbackend.ServeFlags(t)
	_, base := testproc.StartServe(t, bin, "promhbase", 60, append([]string{
		"--ruler.enabled",
		"--ruler.poll-interval=" + rulerInterval.String(),
		"--ruler.evaluation-interval=" + rulerInterval.String(),
		"--ruler.alertmanager-url=" + am,
		"--ruler.external.url=" + rulerExternalURL,
		"--ruler.external.labels=cluster=" + rulerCluster,
	}, storage...)...)
	return promAPI{name: "promhbase", base: base, client: &http.Client{Timeout: time.Minute}}
}

// ruleGroups answers /api/v1/rules.
func (p promAPI) ruleGroups(ctx context.Context) ([]promjson.RuleGroup, error) {
	var data struct {
		Groups []promjson.RuleGroup `json:"groups"`
	}
	err := p.getData(ctx, "/api/v1/rules", url.Values{}, &data)
	return data.Groups, err
}

// apiAlert is an alert of /api/v1/alerts.
type apiAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// alerts answers /api/v1/alerts.
func (p promAPI) alerts(ctx context.Context) ([]apiAlert, error) {
	var data struct {
		Alerts []apiAlert `json:"alerts"`
	}
	err := p.getData(ctx, "/api/v1/alerts", url.Values{}, &data)
	return data.Alerts, err
}

// instant evaluates expr at t (Unix ms) and returns each series' value
// keyed by its label set as a recording rule named name with the labels
// extra would record it (name "": the label set as answered, extra
// added).
func (p promAPI) instant(ctx context.Context, expr string, t int64, name string, extra map[string]string) (map[string]float64, error) {
	var data struct {
		ResultType string      `json:"resultType"`
		Result     []apiSeries `json:"result"`
	}
	if err := p.getData(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {formatTime(time.UnixMilli(t))}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: %s at %d: result type %s", p.name, expr, t, data.ResultType)
	}
	out := map[string]float64{}
	for _, s := range data.Result {
		m := maps.Clone(s.Metric)
		maps.Copy(m, extra)
		if name != "" {
			m["__name__"] = name
		}
		pts, err := parsePoints([][2]json.RawMessage{*s.Value})
		if err != nil {
			return nil, err
		}
		out[labels.FromMap(m).String()] = pts[0].v
	}
	return out, nil
}

// rawSamples returns the samples of the series sel selects with
// timestamps in [from, to] (Unix ms): series key -> timestamp -> value.
func (p promAPI) rawSamples(ctx context.Context, sel string, from, to int64) (map[string]map[int64]float64, error) {
	var data struct {
		ResultType string      `json:"resultType"`
		Result     []apiSeries `json:"result"`
	}
	expr := fmt.Sprintf("%s[%dms]", sel, to-from+1)
	if err := p.getData(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {formatTime(time.UnixMilli(to))}}, &data); err != nil {
		return nil, err
	}
	out := map[string]map[int64]float64{}
	for _, s := range data.Result {
		pts, err := parsePoints(s.Values)
		if err != nil {
			return nil, err
		}
		m := map[int64]float64{}
		for _, pt := range pts {
			if pt.t >= from && pt.t <= to {
				m[pt.t] = pt.v
			}
		}
		if len(m) > 0 {
			out[labels.FromMap(s.Metric).String()] = m
		}
	}
	return out, nil
}

// byTime turns series key -> timestamp -> value into timestamp -> series
// key -> value.
func byTime(s map[string]map[int64]float64) map[int64]map[string]float64 {
	out := map[int64]map[string]float64{}
	for key, pts := range s {
		for t, v := range pts {
			if out[t] == nil {
				out[t] = map[string]float64{}
			}
			out[t][key] = v
		}
	}
	return out
}

// groupsEvaluated reports whether api lists both of the test's groups in
// namespace (file) ns, healthy, evaluated at or after since.
func groupsEvaluated(ctx context.Context, api promAPI, ns string, since time.Time) (bool, string) {
	gs, err := api.ruleGroups(ctx)
	if err != nil {
		return false, err.Error()
	}
	n := 0
	for _, g := range gs {
		if g.File != ns || g.LastEvaluation.Before(since) {
			continue
		}
		for _, r := range g.Rules {
			if r.Health != "ok" {
				return false, fmt.Sprintf("%s: group %s rule %s: health %s %s", api.name, g.Name, r.Name, r.Health, r.LastError)
			}
		}
		n++
	}
	return n == 2, fmt.Sprintf("%s: %+v", api.name, gs)
}

// postRuleGroup posts one group's YAML to promhbase's ruler configuration
// API under namespace ns.
func postRuleGroup(t *testing.T, base, ns, group string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/prometheus/config/v1/rules/"+url.PathEscape(ns), strings.NewReader(group))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST rule group to namespace %q: HTTP %d: %s", ns, resp.StatusCode, body)
	}
}

// ruleFile returns a rule file of the groups (each one group's YAML).
func ruleFile(groups ...string) []byte {
	var b bytes.Buffer
	b.WriteString("groups:\n")
	for _, g := range groups {
		for i, line := range strings.Split(strings.TrimRight(g, "\n"), "\n") {
			if i == 0 {
				b.WriteString("  - " + line + "\n")
			} else {
				b.WriteString("    " + line + "\n")
			}
		}
	}
	return b.Bytes()
}

// TestRuler proves promhbase's ruler against a real Prometheus evaluating
// the same rule file over the same samples, each sending alerts to a real
// Alertmanager of its own (built from its pinned Go module):
//
//   - the rule groups are posted to promhbase under the namespace that is
//     the rule file's name in Prometheus, so that both evaluate each group
//     at the same timestamps (a group's offset in the interval is a hash of
//     its name and file); both must evaluate at the same timestamps;
//   - every sample of every recorded series in promhbase at T equals
//     Prometheus's instant evaluation of the rule's expression at T, and
//     every sample Prometheus recorded at T equals promhbase's evaluation at
//     T, the same series on both sides, floats bit for bit;
//   - ALERTS and ALERTS_FOR_STATE hold the same samples on both;
//   - the alert becomes pending at the first evaluation that sees the hot
//     sample, fires `for` later (not earlier, within one interval), and
//     /api/v1/alerts, each Alertmanager's alerts and webhook notifications
//     (firing, then resolved at the first evaluation after the hot
//     samples) agree exactly: labels (the templated one, the external
//     label), annotations ($labels, $value, $externalLabels,
//     $externalURL, their expected text), startsAt, endsAt, generatorURL.
//
// The samples are written once, into both, a minute past the end of the
// test: an evaluation at T sees exactly the samples at or before T
// whatever the moment it runs, so that values are deterministic.
func TestRuler(t *testing.T) {
	t.Parallel()
	began := time.Now()
	bin := testproc.BuildBinary(t, testproc.Root(t, "cmd/promhbase"))
	promBin := prometheusBinary(t)
	amBin := testproc.AlertmanagerBinary(t, testproc.Root(t, "tools/scripts/alertmanager.sh"))
	ctx := t.Context()

	amP := testproc.StartAlertmanager(t, amBin) // promhbase's
	amR := testproc.StartAlertmanager(t, amBin) // Prometheus's
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rulesPath, ruleFile(rulerRecording, rulerAlerting), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, promBin, "prometheus", configRuler, func(string) map[string]string {
		return map[string]string{"Rules": rulesPath, "Alertmanager": strings.TrimPrefix(amR.URL, "http://")}
	}, "--web.enable-remote-write-receiver", "--web.external-url="+rulerExternalURL)
	ph := startRulerPromhbase(t, bin, amP.URL)
	t.Logf("backend %s; promhbase %s, Prometheus %s, Alertmanagers %s (promhbase's) %s (Prometheus's); started in %s",
		testbackend.Name(), ph.base, prom.base, amP.URL, amR.URL, time.Since(began).Round(time.Millisecond))

	// The namespace is the name Prometheus gives the rule file.
	var ns string
	poll.Until(t, 30*time.Second, 100*time.Millisecond, "Prometheus loads the rule file", func() (bool, string) {
		gs, err := prom.api.ruleGroups(ctx)
		if err != nil || len(gs) != 2 {
			return false, fmt.Sprintf("%+v %v", gs, err)
		}
		ns = gs[0].File
		return true, ""
	})
	posted := time.Now()
	postRuleGroup(t, ph.base, ns, rulerRecording)
	postRuleGroup(t, ph.base, ns, rulerAlerting)
	for _, api := range []promAPI{ph, prom.api} {
		poll.Until(t, 30*time.Second, 100*time.Millisecond, api.name+" evaluates both groups", func() (bool, string) {
			return groupsEvaluated(ctx, api, ns, posted)
		})
	}

	// The data: two minutes back, a minute ahead; the lab hot from 8 s
	// to 16 s ahead.
	now := time.Now().Truncate(time.Second).UnixMilli()
	tl := rulerTimeline{start: now - 120_000, end: now + 60_000, hotFrom: now + 8000, hotTo: now + 16000}
	series := tl.series()
	if err := remoteWrite(ctx, ph.base, series); err != nil {
		t.Fatalf("data into promhbase: %v", err)
	}
	if err := remoteWrite(ctx, prom.base, series); err != nil {
		t.Fatalf("data into Prometheus: %v", err)
	}
	// Evaluations at T after this saw every sample at or before T.
	from := time.Now().UnixMilli() + 1
	if from >= tl.hotFrom-int64(rulerInterval/time.Millisecond) {
		t.Fatalf("writing the data took until %s, past the lab's heat at %s", time.UnixMilli(from), time.UnixMilli(tl.hotFrom))
	}
	t.Logf("data: %d series, %s .. %s; lab hot %s .. %s; compared from %s", len(series),
		fmtMs(tl.start), fmtMs(tl.end), fmtMs(tl.hotFrom), fmtMs(tl.hotTo), fmtMs(from))

	// The alert fires on both: compare /api/v1/alerts while it does.
	var firing [2]apiAlert
	poll.Until(t, 30*time.Second, 100*time.Millisecond, "both fire E2ERoomHot", func() (bool, string) {
		var states []string
		for i, api := range []promAPI{ph, prom.api} {
			as, err := api.alerts(ctx)
			if err != nil {
				return false, err.Error()
			}
			states = append(states, fmt.Sprintf("%s %+v", api.name, as))
			if len(as) != 1 || as[0].State != "firing" {
				return false, strings.Join(states, "; ")
			}
			firing[i] = as[0]
		}
		return true, ""
	})
	if !equalAPIAlerts(firing[0], firing[1]) {
		t.Errorf("/api/v1/alerts: promhbase %+v, Prometheus %+v", firing[0], firing[1])
	}
	activeAt := firing[1].ActiveAt
	// The comparison drops the metric name; the rule adds its labels.
	wantLabels := map[string]string{"alertname": "E2ERoomHot", "room": "lab", "severity": "page", "owner": "lab-team"}
	if !maps.Equal(firing[0].Labels, wantLabels) {
		t.Errorf("promhbase's alert labels %v, want %v", firing[0].Labels, wantLabels)
	}
	if a := activeAt.UnixMilli(); a < tl.hotFrom || a >= tl.hotFrom+rulerInterval.Milliseconds() {
		t.Errorf("active at %s, want the first evaluation at or after %s", activeAt, fmtMs(tl.hotFrom))
	}

	// Each Alertmanager holds the alert as its ruler sent it.
	var held [2]testproc.GettableAlert
	for i, am := range []*testproc.Alertmanager{amP, amR} {
		as := am.WaitAlerts(t, 30*time.Second, func(as []testproc.GettableAlert) bool { return len(as) == 1 })
		held[i] = as[0]
	}
	fired := held[1].StartsAt
	wantAnn := rulerAnnotations(tl, fired)
	wantLabels["cluster"] = rulerCluster
	for i, who := range []string{"promhbase's", "Prometheus's"} {
		a := held[i]
		if !maps.Equal(a.Labels, wantLabels) || !maps.Equal(a.Annotations, wantAnn) {
			t.Errorf("%s Alertmanager: labels %v annotations %v, want %v %v", who, a.Labels, a.Annotations, wantLabels, wantAnn)
		}
		if !strings.HasPrefix(a.GeneratorURL, rulerExternalURL+"/graph?g0.expr=") {
			t.Errorf("%s Alertmanager: generator URL %s", who, a.GeneratorURL)
		}
	}
	if p, r := held[0], held[1]; !p.StartsAt.Equal(r.StartsAt) || !p.EndsAt.Equal(r.EndsAt) || p.GeneratorURL != r.GeneratorURL {
		t.Errorf("Alertmanagers: promhbase's alert starts %s ends %s %s; Prometheus's starts %s ends %s %s",
			p.StartsAt, p.EndsAt, p.GeneratorURL, r.StartsAt, r.EndsAt, r.GeneratorURL)
	}
	// Alertmanager keeps milliseconds; /api/v1/alerts has nanoseconds.
	if d := time.Duration(held[0].StartsAt.UnixMilli()-activeAt.UnixMilli()) * time.Millisecond; d < rulerFor || d >= rulerFor+rulerInterval {
		t.Errorf("fired %s after it became pending (at %s), want %s within an interval", d, activeAt, rulerFor)
	}

	// Both webhooks hear it fire, then resolve.
	var hooks [2][2]testproc.WebhookAlert
	for i, am := range []*testproc.Alertmanager{amP, amR} {
		for j, status := range []string{"firing", "resolved"} {
			m := am.WaitNotification(t, 30*time.Second, func(m testproc.WebhookMessage) bool {
				return m.Status == status && len(m.Alerts) == 1 && m.Alerts[0].Labels["alertname"] == "E2ERoomHot"
			})
			hooks[i][j] = m.Alerts[0]
		}
	}
	for j := range 2 {
		p, r := hooks[0][j], hooks[1][j]
		if !maps.Equal(p.Labels, r.Labels) || !maps.Equal(p.Annotations, r.Annotations) || !p.StartsAt.Equal(r.StartsAt) ||
			!p.EndsAt.Equal(r.EndsAt) || p.GeneratorURL != r.GeneratorURL || p.Status != r.Status {
			t.Errorf("webhook notifications differ:\npromhbase's  %+v\nPrometheus's %+v", p, r)
		}
	}
	resolved := hooks[1][1].EndsAt
	if e := resolved.UnixMilli(); e < tl.hotTo || e >= tl.hotTo+rulerInterval.Milliseconds() {
		t.Errorf("resolved at %s, want the first evaluation at or after %s", resolved, fmtMs(tl.hotTo))
	}
	t.Logf("E2ERoomHot: pending %s, firing %s, resolved %s; annotations %v", activeAt.Format(time.StampMilli),
		fired.Format(time.StampMilli), resolved.Format(time.StampMilli), wantAnn)

	// The recorded series, up to a few evaluations after the resolution.
	to := resolved.UnixMilli() + 3*rulerInterval.Milliseconds()
	for _, api := range []promAPI{ph, prom.api} {
		poll.Until(t, 30*time.Second, 100*time.Millisecond, api.name+" evaluates past the resolution", func() (bool, string) {
			gs, err := api.ruleGroups(ctx)
			if err != nil {
				return false, err.Error()
			}
			for _, g := range gs {
				if g.LastEvaluation.UnixMilli() < to {
					return false, fmt.Sprintf("group %s last evaluated %s", g.Name, g.LastEvaluation)
				}
			}
			return len(gs) == 2, fmt.Sprintf("%+v", gs)
		})
	}
	compared := 0
	for _, rule := range recordingRules(t) {
		compared += compareRecorded(t, ph, prom.api, rule.Record, rule.Expr, rule.Labels, from, to)
	}
	for _, sel := range []string{`ALERTS{alertname="E2ERoomHot"}`, `ALERTS_FOR_STATE{alertname="E2ERoomHot"}`} {
		compared += compareRaw(t, ph, prom.api, sel, from, to)
	}
	checkAlertSeries(t, ph, activeAt, fired, resolved, from, to)
	t.Logf("%d samples compared, %s .. %s; test took %s", compared, fmtMs(from), fmtMs(to), time.Since(began).Round(time.Millisecond))
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.StampMilli) }

// equalAPIAlerts reports whether two alerts of /api/v1/alerts agree.
func equalAPIAlerts(a, b apiAlert) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) && a.State == b.State &&
		a.ActiveAt.Equal(b.ActiveAt) && a.Value == b.Value
}

// rulerAnnotations returns the annotations E2ERoomHot has when it fires
// at fired: $value is the lab's last sample at or before then.
func rulerAnnotations(tl rulerTimeline, fired time.Time) map[string]string {
	k := int((fired.UnixMilli() - tl.start) / 1000)
	v := tl.labTemperature(k, tl.start+int64(k)*1000)
	return map[string]string{
		"summary":     fmt.Sprintf("lab is at %v degrees", v),
		"description": fmt.Sprintf("cluster %s: %.2f > 30, see %s", rulerCluster, v, rulerExternalURL),
	}
}

// compareRecorded compares the series of record (a recording rule of
// expr with labels) on promhbase and on Prometheus at the timestamps in
// [from, to]: both evaluated at the same timestamps, and each one's
// samples at T are the other's evaluation of expr at T (the same series,
// the same float bits). It returns the samples compared.
func compareRecorded(t *testing.T, ph, prom promAPI, record, expr string, extra map[string]string, from, to int64) int {
	t.Helper()
	ctx := t.Context()
	apis := []promAPI{ph, prom}
	var recorded [2]map[int64]map[string]float64
	for i, api := range apis {
		raw, err := api.rawSamples(ctx, record, from, to)
		if err != nil {
			t.Fatal(err)
		}
		recorded[i] = byTime(raw)
	}
	pts, rts := slices.Sorted(maps.Keys(recorded[0])), slices.Sorted(maps.Keys(recorded[1]))
	if !slices.Equal(pts, rts) {
		t.Errorf("%s: evaluated at %v on promhbase, at %v on Prometheus", record, pts, rts)
	}
	if len(pts) < 10 {
		t.Errorf("%s: only %d evaluations on promhbase in %s .. %s", record, len(pts), fmtMs(from), fmtMs(to))
	}
	n := 0
	defer func() { t.Logf("%s: %d evaluations, %d samples compared", record, len(pts), n) }()
	for i, api := range apis {
		other := apis[1-i]
		for _, ts := range slices.Sorted(maps.Keys(recorded[i])) {
			got := recorded[i][ts]
			want, err := other.instant(ctx, expr, ts, record, extra)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range slices.Sorted(maps.Keys(want)) {
				v, ok := got[key]
				switch {
				case !ok:
					t.Errorf("%s at %s: %s recorded no %s; %s evaluates %v", record, fmtMs(ts), api.name, key, other.name, want[key])
				case !sameValue(v, want[key]):
					t.Errorf("%s at %s: %s recorded %s = %v; %s evaluates %v", record, fmtMs(ts), api.name, key, v, other.name, want[key])
				default:
					n++
				}
			}
			for key, v := range got {
				if _, ok := want[key]; !ok {
					t.Errorf("%s at %s: %s recorded %s = %v; %s evaluates no such series", record, fmtMs(ts), api.name, key, v, other.name)
				}
			}
		}
	}
	return n
}

// compareRaw compares the samples sel selects on promhbase and on
// Prometheus in [from, to]: the same series, timestamps and float bits.
func compareRaw(t *testing.T, ph, prom promAPI, sel string, from, to int64) int {
	t.Helper()
	var got [2]map[string]map[int64]float64
	for i, api := range []promAPI{ph, prom} {
		raw, err := api.rawSamples(t.Context(), sel, from, to)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = raw
	}
	n := 0
	for _, key := range slices.Sorted(maps.Keys(got[1])) {
		r, p := got[1][key], got[0][key]
		if len(p) != len(r) {
			t.Errorf("%s: %s has %d samples on promhbase %v, %d on Prometheus %v", sel, key, len(p), p, len(r), r)
			continue
		}
		for ts, v := range r {
			if pv, ok := p[ts]; !ok || !sameValue(pv, v) {
				t.Errorf("%s: %s at %s: promhbase %v (present %v), Prometheus %v", sel, key, fmtMs(ts), pv, ok, v)
				continue
			}
			n++
		}
	}
	for key := range got[0] {
		if _, ok := got[1][key]; !ok {
			t.Errorf("%s: %s on promhbase only: %v", sel, key, got[0][key])
		}
	}
	return n
}

// checkAlertSeries checks promhbase's ALERTS and ALERTS_FOR_STATE of the
// lab: pending from activeAt until before fired, firing from fired until
// before resolved, the `for` state holding activeAt's second throughout.
func checkAlertSeries(t *testing.T, ph promAPI, activeAt, fired, resolved time.Time, from, to int64) {
	t.Helper()
	ctx := t.Context()
	check := func(sel string, lo, hi time.Time, want float64) {
		raw, err := ph.rawSamples(ctx, sel, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != 1 {
			t.Errorf("%s: %d series, want 1: %v", sel, len(raw), raw)
			return
		}
		for _, pts := range raw {
			ts := slices.Sorted(maps.Keys(pts))
			if len(ts) == 0 || ts[0] != lo.UnixMilli() || ts[len(ts)-1] >= hi.UnixMilli() || ts[len(ts)-1] < hi.UnixMilli()-rulerInterval.Milliseconds() {
				t.Errorf("%s: samples at %v, want from %d until before %d", sel, ts, lo.UnixMilli(), hi.UnixMilli())
			}
			for _, v := range pts {
				if v != want {
					t.Errorf("%s: value %v, want %v", sel, v, want)
					break
				}
			}
		}
	}
	check(`ALERTS{alertname="E2ERoomHot",alertstate="pending"}`, activeAt, fired, 1)
	check(`ALERTS{alertname="E2ERoomHot",alertstate="firing"}`, fired, resolved, 1)
	check(`ALERTS_FOR_STATE{alertname="E2ERoomHot"}`, activeAt, resolved, float64(activeAt.Unix()))
}
