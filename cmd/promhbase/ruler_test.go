package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/rules"
	"go.yaml.in/yaml/v3"

	"github.com/promhbase/promhbase/jobs/ruler"
	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
)

// rulerStorageFlags returns storageFlags and, on HBase, the flags of
// every other table serve opens (exemplars, series index, HA, rules)
// named for the test alone, all created (create-tables) and dropped when
// the test ends: two tests' rulers never share a rules table.
func rulerStorageFlags(t *testing.T, bin string) []string {
	t.Helper()
	flags := storageFlags(t)
	if testbackend.Name() != "hbase" {
		return flags
	}
	sfx := strings.TrimPrefix(flagValue(flags, "hbase.table.data"), "tsdb_cli_")
	var extra []string
	for _, kind := range []string{"exemplar", "meta", "index", "ha", "rules"} {
		name := "tsdb-" + kind + "_cli_" + sfx
		flags = append(flags, "--hbase.table."+kind+"="+name)
		extra = append(extra, name)
	}
	createTestTables(t, bin, flags)
	t.Cleanup(func() {
		st := testbackend.NewHBaseStore(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, extra...); err != nil {
			t.Errorf("drop the test tables: %v", err)
		}
	})
	return flags
}

// httpDo sends a request as tenant org (none when empty) with a body of
// content type ctype (none when empty) and the header pairs kv, and
// returns its status and body.
func httpDo(t *testing.T, method, url, org, ctype string, body []byte, kv ...string) (int, string) {
	t.Helper()
	h := map[string]string{tenant.Header: org, "Content-Type": ctype}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	code, b, _ := testhttp.Do(t, testhttp.Request{Method: method, URL: url, Body: body, Header: h})
	return code, string(b)
}

// postGroup posts one rule group's YAML to namespace ns as tenant org
// and fails the test unless it is accepted (202).
func postGroup(t *testing.T, base, org, ns, yaml string) {
	t.Helper()
	code, body := httpDo(t, http.MethodPost, base+"/prometheus/config/v1/rules/"+url.PathEscape(ns), org, "application/yaml", []byte(yaml))
	if code != http.StatusAccepted {
		t.Fatalf("post the group to %s as %q: %d %s", ns, org, code, body)
	}
}

// samplesByKey reads the samples of the series match selects between
// start and end (Unix ms) through /api/v1/export as tenant org: by the
// series' labels (labels.Labels.String), value by timestamp.
func samplesByKey(t *testing.T, base, org, match string, start, end int64) map[string]map[int64]float64 {
	t.Helper()
	q := url.Values{"match[]": {match}, "start": {fmtSeconds(start)}, "end": {fmtSeconds(end)}}
	code, body := httpDo(t, http.MethodGet, base+"/api/v1/export?"+q.Encode(), org, "", nil)
	if code != http.StatusOK {
		t.Fatalf("export %s: %d %s", match, code, body)
	}
	out := map[string]map[int64]float64{}
	for _, line := range parseExport(t, "export "+match, body) {
		k := labels.FromMap(line.Metric).String()
		m := out[k]
		if m == nil {
			m = map[int64]float64{}
			out[k] = m
		}
		for i, ts := range line.Timestamps {
			if _, dup := m[ts]; dup {
				t.Errorf("export %s: series %s has timestamp %d twice", match, k, ts)
			}
			m[ts] = line.Values[i]
		}
	}
	return out
}

// fmtSeconds formats Unix ms as the seconds the HTTP APIs take.
func fmtSeconds(ms int64) string { return fmt.Sprintf("%d.%03d", ms/1000, ms%1000) }

// getRules reads /api/v1/rules as tenant org.
func getRules(t *testing.T, base, org string) promjson.RulesAnswer {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+"/api/v1/rules", org, "", nil)
	var r promjson.RulesAnswer
	if err := json.Unmarshal([]byte(body), &r); code != http.StatusOK || err != nil || r.Status != "success" {
		t.Fatalf("/api/v1/rules as %q: %d %v %s", org, code, err, body)
	}
	return r
}

// ruleEvaluations returns prometheus_rule_evaluations_total of serve at
// base by rule group ("namespace;group"), from its /metrics.
func ruleEvaluations(t *testing.T, base string) map[string]float64 {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+"/metrics", "", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, "prometheus_rule_evaluations_total{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `rule_group="`)
		g, _, _ := strings.Cut(rest, `"`)
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[g] += v
	}
	return out
}

// metricValue returns the sum of the samples of metric name in the
// /metrics of serve at base.
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+"/metrics", "", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	sum := 0.0
	for line := range strings.SplitSeq(body, "\n") {
		if line == name || strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("/metrics line %q: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

// leaseHolder is who holds a group's lease, as its lease row says.
type leaseHolder struct {
	pid  int   // the holder's process (its token is host:pid:random)
	exp  int64 // the lease's expiry, Unix ms
	last int64 // r:last: the group's last evaluation, Unix ms
}

// TestRulerFailover: two serve replicas with the ruler on, over the same
// HBase tables (the embedded store's directory is locked by the one
// process that opens it, so two replicas need HBase), share four rule
// groups; SIGKILL of one moves its groups to the other within the lease
// time plus a poll interval (the lease rows say who holds each group),
// and every group's recorded series steps exactly one evaluation
// interval across the kill: no timestamp missing (the survivor makes up
// the evaluations the killed one missed), none evaluated twice beyond
// the one evaluation the killed replica may have made without recording
// it (prometheus_rule_evaluations_total of both replicas against the
// samples).
func TestRulerFailover(t *testing.T) {
	// Serial: the leases' expiry and the evaluations around the kill are
	// the subject, and beside the package's other tests the groups' samples
	// missed the span the test wants (the leases moved under the load).
	if testbackend.Name() != "hbase" {
		// make test runs this package on HBase too (HBASE_TEST_PKGS).
		t.Skip("two replicas on one store need HBase (the embedded store's directory is locked by the process that opens it): PROMHBASE_TEST_BACKEND=hbase runs this test")
	}
	bin := promhbaseBinary(t)
	flags := rulerStorageFlags(t, bin)
	const (
		lease     = 3 * time.Second
		pollEvery = time.Second
		interval  = time.Second
		ns        = "failover"
		record    = "ruler_failover_test"
	)
	rflags := append([]string{"--ruler.enabled", "--ruler.lease-duration=" + lease.String(), "--ruler.poll-interval=" + pollEvery.String(),
		"--ruler.evaluation-interval=" + interval.String()}, flags...)
	a, baseA := startServe(t, bin, rflags...)
	b, baseB := startServe(t, bin, rflags...)
	pidA, pidB := a.Cmd.Process.Pid, b.Cmd.Process.Pid
	groups := []string{"g0", "g1", "g2", "g3"}
	for _, g := range groups {
		postGroup(t, baseA, "", ns, fmt.Sprintf("name: %s\nrules:\n- record: %s\n  expr: vector(1)\n  labels:\n    group: %s\n", g, record, g))
	}

	st := testbackend.NewHBaseStore(t)
	rulesTable := flagValue(flags, "hbase.table.rules")
	holders := func() map[string]leaseHolder {
		t.Helper()
		out := map[string]leaseHolder{}
		for _, g := range groups {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			row, err := st.Get(ctx, rulesTable, ruler.AppendKey(nil, ruler.RowKindLease, ns, g), ruler.Family)
			cancel()
			if err != nil {
				t.Fatalf("read the lease row of %s: %v", g, err)
			}
			var h leaseHolder
			for _, c := range row.Cells {
				switch string(c.Qualifier) {
				case ruler.QualLease:
					if len(c.Value) > 8 {
						h.exp = int64(binary.BigEndian.Uint64(c.Value))
						if parts := strings.Split(string(c.Value[8:]), ":"); len(parts) >= 3 {
							h.pid, _ = strconv.Atoi(parts[len(parts)-2])
						}
					}
				case ruler.QualLast:
					if len(c.Value) == 8 {
						h.last = int64(binary.BigEndian.Uint64(c.Value))
					}
				}
			}
			out[g] = h
		}
		return out
	}
	// waitHeld polls the lease rows until held says they are as wanted,
	// failing the test after limit.
	waitHeld := func(what string, limit time.Duration, held func(map[string]leaseHolder) bool) map[string]leaseHolder {
		t.Helper()
		var h map[string]leaseHolder
		poll.Until(t, limit, 50*time.Millisecond, what, func() (bool, string) {
			h = holders()
			return held(h), fmt.Sprintf("lease rows %+v (replicas %d, %d)", h, pidA, pidB)
		})
		return h
	}

	// Steady state: two groups each, every group evaluated for a while:
	// its first r:last seen at least 2 intervals before its latest, so
	// that its samples begin 2 intervals before the kill (a group's first
	// evaluation may come late on a loaded machine).
	start := time.Now()
	firstLast := map[string]int64{}
	waitHeld("two groups held by each replica, each evaluated for 3 intervals", 30*time.Second, func(h map[string]leaseHolder) bool {
		n := map[int]int{}
		for g, x := range h {
			if x.last > 0 && firstLast[g] == 0 {
				firstLast[g] = x.last
			}
			if x.exp <= time.Now().UnixMilli() || x.last < start.Add(3*interval).UnixMilli() ||
				x.last < firstLast[g]+2*interval.Milliseconds() {
				return false
			}
			n[x.pid]++
		}
		return n[pidA] == 2 && n[pidB] == 2
	})
	before := holders()
	evalsA := ruleEvaluations(t, baseA)
	if err := a.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = a.Wait()
	after := waitHeld("every group held by the survivor", lease+pollEvery+5*time.Second, func(h map[string]leaseHolder) bool {
		for _, x := range h {
			if x.pid != pidB || x.exp <= time.Now().UnixMilli() {
				return false
			}
		}
		return true
	})
	moved := time.Since(killed)
	t.Logf("groups of the killed replica %d (%v) moved to %d in %s", pidA, before, pidB, moved.Round(time.Millisecond))
	// The killed replica's last renewal was before the kill: its leases
	// expire within lease of it, and the survivor looks every poll
	// interval (plus a sync's store round trips, within 3 s: make test
	// runs this beside every other suite on 2 cores, where they once took
	// over 500 ms).
	if limit := lease + pollEvery + 3*time.Second; moved > limit {
		t.Errorf("groups moved %s after the kill, more than lease + poll interval (%s)", moved, limit)
	}
	// Let the survivor evaluate every group a few more intervals.
	waitHeld("every group evaluated 3 intervals after the move", 10*time.Second, func(h map[string]leaseHolder) bool {
		for _, x := range h {
			if x.last < killed.Add(moved+3*interval).UnixMilli() {
				return false
			}
		}
		return true
	})
	evalsB := ruleEvaluations(t, baseB)
	// The kill left a gap of more than an interval: the survivor made up
	// the evaluations missed in it.
	if caught := metricValue(t, baseB, "promhbase_ruler_evaluations_caught_up_total"); moved > 2*interval && caught < 1 {
		t.Errorf("promhbase_ruler_evaluations_caught_up_total of the survivor is %v after a gap of %s", caught, moved)
	} else {
		t.Logf("evaluations caught up by the survivor: %v", caught)
	}
	stopServe(t, b)

	// A third process, ruler off, reads the series back.
	c, baseC := startServe(t, bin, flags...)
	got := samplesByKey(t, baseC, "", `{__name__="`+record+`"}`, start.Add(-time.Minute).UnixMilli(), time.Now().Add(time.Minute).UnixMilli())
	stopServe(t, c)
	for _, g := range groups {
		t.Run(g, func(t *testing.T) {
			key := labels.FromStrings("__name__", record, "group", g).String()
			samples := got[key]
			ts := make([]int64, 0, len(samples))
			for k, v := range samples {
				ts = append(ts, k)
				if v != 1 {
					t.Errorf("sample at %d is %v, want 1 (a stale marker written?)", k, v)
				}
			}
			slices.Sort(ts)
			if len(ts) < 2 || ts[0] > killed.Add(-2*interval).UnixMilli() || ts[len(ts)-1] < killed.Add(moved+2*interval).UnixMilli() {
				t.Fatalf("%d samples from %d to %d do not span the kill at %d (moved after %s)", len(ts), ts[0], ts[len(ts)-1], killed.UnixMilli(), moved)
			}
			for i := 1; i < len(ts); i++ {
				if d := ts[i] - ts[i-1]; d != interval.Milliseconds() {
					t.Errorf("samples at %d and %d: %d ms apart, want %d (kill at %d, moved after %s)", ts[i-1], ts[i], d, interval.Milliseconds(), killed.UnixMilli(), moved)
				}
			}
			// Every evaluation writes its one sample: the evaluations
			// counted (the killed replica's up to its last scrape, at
			// most one more before the kill; the survivor's up to its
			// scrape, at most one more before it stopped) against the
			// timestamps written.
			rg := ns + ";" + g
			counted := evalsA[rg] + evalsB[rg]
			t.Logf("%d samples, %v evaluations by %d then %d by %d; holder before %d, after %d", len(ts), evalsA[rg], pidA, int(evalsB[rg]), pidB, before[g].pid, after[g].pid)
			if doubled := counted - float64(len(ts)); doubled > 1 {
				t.Errorf("%v evaluations for %d timestamps: %v evaluated twice, want at most 1", counted, len(ts), doubled)
			}
			if float64(len(ts)) > counted+2 {
				t.Errorf("%d timestamps written by %v evaluations (and at most 2 more not counted)", len(ts), counted)
			}
		})
	}
}

// vecSample is a series of an instant query's answer.
type vecSample struct {
	metric labels.Labels
	value  float64
}

// instantVector runs an instant query as tenant org at ts (Unix ms) and
// returns its series; it fails the test unless the answer is a vector.
func instantVector(t *testing.T, base, org, expr string, ts int64) []vecSample {
	t.Helper()
	q := url.Values{"query": {expr}, "time": {fmtSeconds(ts)}}
	code, body := httpDo(t, http.MethodGet, base+"/api/v1/query?"+q.Encode(), org, "", nil)
	result, err := parseVector(body)
	if code != http.StatusOK || err != nil {
		t.Fatalf("query %s at %d as %q: %d %v %s", expr, ts, org, code, err, body)
	}
	out := make([]vecSample, 0, len(result))
	for _, s := range result {
		v, err := strconv.ParseFloat(s.ValueString(), 64)
		if err != nil {
			t.Fatalf("query %s at %d: value %v: %v", expr, ts, s.Value[1], err)
		}
		out = append(out, vecSample{labels.FromMap(s.Metric), v})
	}
	return out
}

// backfillRule is a recording rule of TestRulesBackfill.
type backfillRule struct {
	record, expr string
	labels       map[string]string // the rule's own
}

// backfillGroup is a rule group of TestRulesBackfill.
type backfillGroup struct {
	name     string
	interval time.Duration
	offset   time.Duration     // query_offset: evaluations at the aligned timestamps less it
	labels   map[string]string // the group's, on every rule's results
	rules    []backfillRule
}

// yaml is the group in Prometheus's rule-file format.
func (g backfillGroup) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ninterval: %s\n", g.name, model.Duration(g.interval))
	if g.offset != 0 {
		fmt.Fprintf(&b, "query_offset: %s\n", model.Duration(g.offset))
	}
	writeLabels := func(indent string, m map[string]string) {
		if len(m) == 0 {
			return
		}
		fmt.Fprintf(&b, "%slabels:\n", indent)
		for k, v := range m {
			fmt.Fprintf(&b, "%s  %s: %q\n", indent, k, v)
		}
	}
	writeLabels("", g.labels)
	b.WriteString("rules:\n")
	for _, r := range g.rules {
		fmt.Fprintf(&b, "- record: %s\n  expr: %q\n", r.record, r.expr)
		writeLabels("  ", r.labels)
	}
	return b.String()
}

// TestRulesBackfill: `promhbase rules backfill` over 7 days of samples (a
// counter and a gauge, a few series each, one a minute) writes, for each
// recording rule of two groups (intervals 1h and 5m; rate, sum by,
// avg_over_time; group and rule labels), a sample at each of the group's
// aligned evaluation timestamps in the range (rules.Group.EvalTimestamp
// of the group as the live ruler loads it: its namespace the file) and
// at no other, each of the value an instant query of the rule's
// expression at that timestamp answers: what a live evaluation writes.
func TestRulesBackfill(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := rulerStorageFlags(t, bin)
	const ns = "backfill"
	groups := []backfillGroup{
		{name: "hourly", interval: time.Hour, labels: map[string]string{"source": "backfill"}, rules: []backfillRule{
			{record: "job:ruler_bf_requests:rate5m", expr: `sum by (job) (rate(ruler_bf_requests_total[5m]))`},
			{record: "instance:ruler_bf_requests:rate5m", expr: `rate(ruler_bf_requests_total[5m])`, labels: map[string]string{"rule": "per-instance"}},
			{record: "instance:ruler_bf_temperature:avg1h", expr: `avg_over_time(ruler_bf_temperature[1h])`},
			// An earlier rule's results, as backfilled.
			{record: "job:ruler_bf_requests:rate5m_x2", expr: `job:ruler_bf_requests:rate5m * 2`},
		}},
		{name: "five-minutely", interval: 5 * time.Minute, rules: []backfillRule{
			{record: "ruler_bf_requests:sum_rate5m", expr: `sum(rate(ruler_bf_requests_total[5m]))`},
		}},
		{name: "offset", interval: time.Hour, offset: 2 * time.Minute, rules: []backfillRule{
			{record: "ruler_bf_temperature:max_avg10m", expr: `max(avg_over_time(ruler_bf_temperature[10m]))`},
		}},
	}

	// 7 days and an hour of samples, one a minute, up to 10 minutes ago.
	now := time.Now()
	dataEnd := now.Add(-10 * time.Minute).Truncate(time.Minute).UnixMilli()
	dataStart := dataEnd - (7*24+1)*time.Hour.Milliseconds()
	type seriesDef struct {
		lbls  []prompb.Label
		value func(step int) float64
	}
	var defs []seriesDef
	for i, inst := range []struct{ job, instance string }{{"api", "a"}, {"api", "b"}, {"web", "a"}} {
		defs = append(defs, seriesDef{
			lbls: []prompb.Label{{Name: "__name__", Value: "ruler_bf_requests_total"}, {Name: "job", Value: inst.job}, {Name: "instance", Value: inst.instance}},
			// A counter with a reset every 3000 steps.
			value: func(step int) float64 { s := step % 3000; return float64(s*(i+2)) + float64(s%7)*0.5 },
		})
	}
	for i, inst := range []string{"a", "b"} {
		defs = append(defs, seriesDef{
			lbls:  []prompb.Label{{Name: "__name__", Value: "ruler_bf_temperature"}, {Name: "instance", Value: inst}},
			value: func(step int) float64 { return 20 + 5*math.Sin(float64(step)/97) + float64(i) + float64(step%13)/8 },
		})
	}
	serveFlags := append([]string{"--ruler.enabled", "--limits.ingestion-rate=0", "--limits.new-series-rate=0", "--limits.max-active-series=0",
		"--limits.max-series-per-request=0"}, flags...)
	srv, base := startServe(t, bin, serveFlags...)
	writeStart := time.Now()
	steps := int((dataEnd - dataStart) / time.Minute.Milliseconds())
	for lo := 0; lo <= steps; lo += 2000 {
		var series []prompb.TimeSeries
		for _, d := range defs {
			ts := prompb.TimeSeries{Labels: d.lbls}
			for s := lo; s <= min(lo+1999, steps); s++ {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: dataStart + int64(s)*time.Minute.Milliseconds(), Value: d.value(s)})
			}
			series = append(series, ts)
		}
		remoteWrite(t, base, series)
	}
	for _, g := range groups {
		postGroup(t, base, "", ns, g.yaml())
	}
	stopServe(t, srv)
	t.Logf("%d samples of %d series written in %s", (steps+1)*len(defs), len(defs), time.Since(writeStart).Round(time.Millisecond))

	from, to := now.Add(-7*24*time.Hour).UnixMilli(), now.Add(-30*time.Minute).UnixMilli()
	bfStart := time.Now()
	out, err := run(t, bin, append([]string{"rules", "backfill", "--start=" + strconv.FormatInt(from, 10), "--end=" + strconv.FormatInt(to, 10)}, flags...)...)
	if err != nil || !strings.Contains(out, "backfilled 6 recording rules of 3 groups") {
		t.Fatalf("rules backfill: %v\n%s", err, out)
	}
	t.Logf("rules backfill took %s: %s", time.Since(bfStart).Round(time.Millisecond), strings.TrimSpace(out))

	srv, base = startServe(t, bin, flags...)
	defer stopServe(t, srv)
	checkStart := time.Now()
	queries := 0
	for _, g := range groups {
		// The group as the live ruler loads it: the namespace is its file.
		rg := rules.NewGroup(rules.GroupOptions{Name: g.name, File: ns, Interval: g.interval, Opts: &rules.ManagerOptions{Metrics: rules.NewGroupMetrics(nil)}})
		var aligned []int64
		first := rg.EvalTimestamp(time.UnixMilli(from).UnixNano())
		if first.UnixMilli() < from {
			first = first.Add(g.interval)
		}
		// In milliseconds, the samples' precision (as the backfill).
		for at := first; at.UnixMilli() <= to; at = at.Add(g.interval) {
			aligned = append(aligned, at.Add(-g.offset).UnixMilli())
		}
		for _, r := range g.rules {
			t.Run(g.name+"/"+r.record, func(t *testing.T) {
				got := samplesByKey(t, base, "", `{__name__="`+r.record+`"}`, from-24*time.Hour.Milliseconds(), now.UnixMilli())
				// Every sample at an aligned timestamp of the range.
				for k, samples := range got {
					for ts := range samples {
						if _, ok := slices.BinarySearch(aligned, ts); !ok {
							t.Errorf("%s: sample at %d, not an aligned evaluation timestamp of %s in [%d, %d]", k, ts, g.name, from, to)
						}
					}
				}
				// At each aligned timestamp, a sample of each series the
				// expression gives, of its value.
				extra := labels.FromMap(g.labels)
				for _, ts := range aligned {
					want := instantVector(t, base, "", r.expr, ts)
					queries++
					if len(want) == 0 {
						t.Fatalf("%s at %d answers no series: the data does not cover the range", r.expr, ts)
					}
					n := 0
					for _, w := range want {
						v := w.value
						b := labels.NewBuilder(w.metric)
						extra.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
						for ln, lv := range r.labels {
							b.Set(ln, lv)
						}
						b.Set("__name__", r.record)
						rk := b.Labels().String()
						gv, ok := got[rk][ts]
						switch {
						case !ok:
							t.Errorf("%s: no sample at the aligned timestamp %d (want %v)", rk, ts, v)
						case math.Float64bits(gv) != math.Float64bits(v):
							t.Errorf("%s at %d: %v backfilled, %v evaluated live (%s)", rk, ts, gv, v, r.expr)
						}
					}
					for _, samples := range got {
						if _, ok := samples[ts]; ok {
							n++
						}
					}
					if n != len(want) {
						t.Errorf("%d series backfilled at %d, the expression gives %d", n, ts, len(want))
					}
				}
				t.Logf("%d series, %d aligned timestamps", len(got), len(aligned))
			})
		}
	}
	t.Logf("%d instant queries checked in %s", queries, time.Since(checkStart).Round(time.Millisecond))
}

// configGroups parses the configuration API's YAML answer to a GET of
// the rules: rule namespace -> group name -> the records and alerts of
// its rules.
func configGroups(t *testing.T, body string) map[string]map[string][]string {
	t.Helper()
	var m map[string][]struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
		} `yaml:"rules"`
	}
	if err := yaml.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("rules YAML: %v\n%s", err, body)
	}
	out := map[string]map[string][]string{}
	for ns, gs := range m {
		out[ns] = map[string][]string{}
		for _, g := range gs {
			var names []string
			for _, r := range g.Rules {
				names = append(names, r.Record+r.Alert)
			}
			out[ns][g.Name] = names
		}
	}
	return out
}

// TestRulerTenants: with tenants on, the ruler configuration API keeps
// each tenant's rule groups apart (the same namespace and group name in
// two tenants; another tenant's namespace and group not seen), each
// tenant's recording rule is evaluated over its own data and written
// into it (sum() of each tenant's series), /api/v1/rules lists each
// tenant's groups alone, buildinfo answers without a tenant,
// ruler_max_rule_groups_per_tenant and ruler_max_rules_per_rule_group of
// --runtime-config.file hold one tenant (400 naming the limit) and not
// another, and bad rule groups (YAML, PromQL syntax, an unknown
// function, a body too large) are refused naming the problem with the
// tenant's rules unchanged.
func TestRulerTenants(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	sfx := tenantSuffix()
	limited, free := "ruler-a-"+sfx, "ruler-b-"+sfx
	dropTenants(t, limited, free)
	runtimeFile := filepath.Join(t.TempDir(), "runtime.yaml")
	if err := os.WriteFile(runtimeFile, fmt.Appendf(nil, "overrides:\n  %s:\n    ruler_max_rule_groups_per_tenant: 2\n    ruler_max_rules_per_rule_group: 2\n", limited), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, base := startServe(t, bin, append([]string{"--auth.multitenancy-enabled", "--tenant.create-on-first-write", "--runtime-config.file=" + runtimeFile,
		"--ruler.enabled", "--ruler.poll-interval=1s", "--ruler.lease-duration=3s", "--ruler.evaluation-interval=1s"}, flags...)...)
	defer stopServe(t, srv)
	rulesURL := base + "/prometheus/config/v1/rules"

	t.Run("without a tenant", func(t *testing.T) {
		for _, p := range []string{"/api/v1/status/buildinfo", "/prometheus/api/v1/status/buildinfo"} {
			if code, body := httpDo(t, http.MethodGet, base+p, "", "", nil); code != http.StatusOK || !strings.Contains(body, `"application":"Grafana Mimir"`) {
				t.Errorf("GET %s without %s: %d %s", p, tenant.Header, code, body)
			}
		}
		if code, body := httpDo(t, http.MethodGet, rulesURL, "", "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET the rules without %s: %d %s, want 401", tenant.Header, code, body)
		}
	})

	// Each tenant's series of ruler_tenant_metric, and their sum.
	values := map[string][]float64{limited: {1, 2}, free: {10, 20, 30}}
	sums := map[string]float64{limited: 3, free: 60}
	written := time.Now().UnixMilli()
	for id, vs := range values {
		var series []prompb.TimeSeries
		for i, v := range vs {
			series = append(series, prompb.TimeSeries{
				Labels:  []prompb.Label{{Name: "__name__", Value: "ruler_tenant_metric"}, {Name: "i", Value: strconv.Itoa(i)}},
				Samples: []prompb.Sample{{Timestamp: written, Value: v}}})
		}
		if code, body := tenantRequest(t, http.MethodPost, base+"/api/v1/write", id, promremote.WriteBody(t, series...)); code != http.StatusNoContent {
			t.Fatalf("write as %s: %d %s", id, code, body)
		}
	}
	// The same namespace and group in both tenants, and a namespace of
	// each tenant's own.
	const sumGroup = "name: sums\nrules:\n- record: ruler_tenant_sum\n  expr: sum(ruler_tenant_metric)\n"
	own := map[string]string{limited: "only-limited", free: "only-free"}
	for _, id := range []string{limited, free} {
		postGroup(t, base, id, "shared", sumGroup)
		postGroup(t, base, id, own[id], "name: own\nrules:\n- record: ruler_tenant_one\n  expr: vector(1)\n")
	}
	want := func(id string) map[string]map[string][]string {
		return map[string]map[string][]string{"shared": {"sums": {"ruler_tenant_sum"}}, own[id]: {"own": {"ruler_tenant_one"}}}
	}

	t.Run("config API per tenant", func(t *testing.T) {
		for _, id := range []string{limited, free} {
			other := own[map[string]string{limited: free, free: limited}[id]]
			code, body := httpDo(t, http.MethodGet, rulesURL, id, "", nil)
			if got := configGroups(t, body); code != http.StatusOK || !reflect.DeepEqual(got, want(id)) {
				t.Errorf("GET the rules as %s: %d %v, want %v", id, code, got, want(id))
			}
			if code, body := httpDo(t, http.MethodGet, rulesURL+"/"+other, id, "", nil); code != http.StatusOK || len(configGroups(t, body)) != 0 {
				t.Errorf("GET the other tenant's namespace %s as %s: %d %s, want 200 and none", other, id, code, body)
			}
			if code, body := httpDo(t, http.MethodGet, rulesURL+"/"+other+"/own", id, "", nil); code != http.StatusNotFound {
				t.Errorf("GET the other tenant's group as %s: %d %s, want 404", id, code, body)
			}
		}
	})

	t.Run("evaluated per tenant", func(t *testing.T) {
		// Poll /api/v1/rules until both of each tenant's groups have
		// been evaluated without error, twice at least.
		deadline := time.Now().Add(30 * time.Second)
		for _, id := range []string{limited, free} {
			poll.Until(t, time.Until(deadline), 100*time.Millisecond, "both groups of "+id+" listed and evaluated", func() (bool, string) {
				r := getRules(t, base, id)
				got := map[string]map[string][]string{}
				evaluated := 0
				for _, g := range r.Data.Groups {
					if got[g.File] == nil {
						got[g.File] = map[string][]string{}
					}
					for _, rule := range g.Rules {
						got[g.File][g.Name] = append(got[g.File][g.Name], rule.Name)
						if rule.Health == "ok" && g.LastEvaluation.UnixMilli() > written+time.Second.Milliseconds() {
							evaluated++
						}
					}
				}
				// Before the ruler's first poll of the groups it lists
				// none; never another tenant's.
				listed := reflect.DeepEqual(got, want(id))
				return listed && evaluated == 2, fmt.Sprintf("/api/v1/rules as %s lists %v (want %v), %d of 2 rules evaluated: %+v", id, got, want(id), evaluated, r)
			})
		}
		// Three evaluations of each tenant's sum at least, every one of
		// its own series' sum: another tenant's evaluations written
		// into it would show their sum.
		for _, id := range []string{limited, free} {
			key := labels.FromStrings("__name__", "ruler_tenant_sum").String()
			var got map[string]map[int64]float64
			// Until three are written, or the deadline passed: then the
			// check below says what there is.
			_ = poll.Wait(t.Context(), time.Until(deadline), 100*time.Millisecond, "evaluated three times", func() (bool, string, error) {
				got = samplesByKey(t, base, id, `{__name__="ruler_tenant_sum"}`, written, time.Now().Add(time.Minute).UnixMilli())
				return len(got[key]) >= 3, "", nil
			})
			if len(got) != 1 || len(got[key]) < 3 {
				t.Fatalf("ruler_tenant_sum of %s: %v, want one series of 3 samples at least", id, got)
			}
			for ts, v := range got[key] {
				if v != sums[id] {
					t.Errorf("ruler_tenant_sum of %s at %d is %v, want %v (its own series' sum)", id, ts, v, sums[id])
				}
			}
			t.Logf("%s: %d evaluations of sum() written, each %v", id, len(got[key]), sums[id])
		}
	})

	t.Run("limits", func(t *testing.T) {
		threeRules := "name: %s\nrules:\n- record: ruler_tenant_r1\n  expr: vector(1)\n- record: ruler_tenant_r2\n  expr: vector(2)\n- record: ruler_tenant_r3\n  expr: vector(3)\n"
		oneRule := "name: %s\nrules:\n- record: ruler_tenant_r1\n  expr: vector(1)\n"
		for _, tc := range []struct {
			name, id, ns, body string
			wantCode           int
			wantErr            string
		}{
			{"third group over the limit", limited, "more", fmt.Sprintf(oneRule, "third"), http.StatusBadRequest, "per-user rule groups limit (limit: 2 actual: 3) exceeded"},
			{"three rules over the limit", limited, own[limited], fmt.Sprintf(threeRules, "own"), http.StatusBadRequest, "per-user rules per rule group limit (limit: 2 actual: 3) exceeded"},
			{"third group, no limit", free, "more", fmt.Sprintf(oneRule, "third"), http.StatusAccepted, ""},
			{"three rules, no limit", free, "more", fmt.Sprintf(threeRules, "fourth"), http.StatusAccepted, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, before := httpDo(t, http.MethodGet, rulesURL, tc.id, "", nil)
				code, body := httpDo(t, http.MethodPost, rulesURL+"/"+tc.ns, tc.id, "application/yaml", []byte(tc.body))
				if code != tc.wantCode || !strings.Contains(body, tc.wantErr) {
					t.Fatalf("POST as %s: %d %s, want %d %q", tc.id, code, body, tc.wantCode, tc.wantErr)
				}
				_, after := httpDo(t, http.MethodGet, rulesURL, tc.id, "", nil)
				if changed := before != after; changed != (tc.wantCode == http.StatusAccepted) {
					t.Errorf("rules of %s changed: %v; before:\n%s\nafter:\n%s", tc.id, changed, before, after)
				}
			})
		}
	})

	t.Run("bad rule groups", func(t *testing.T) {
		big := "name: big\nrules:\n" + strings.Repeat("- record: ruler_tenant_big\n  expr: vector(1)\n", 1<<20/40)
		for _, tc := range []struct {
			name, body string
			wantCode   int
			wantErr    string
		}{
			{"YAML syntax", "name: bad\nrules:\n- record: [x\n", http.StatusBadRequest, "unable to decode rule group"},
			{"PromQL syntax", "name: bad\nrules:\n- record: ruler_tenant_bad\n  expr: sum(ruler_tenant_metric\n", http.StatusBadRequest, "unclosed left parenthesis"},
			{"unknown function", "name: bad\nrules:\n- record: ruler_tenant_bad\n  expr: no_such_function(ruler_tenant_metric)\n", http.StatusBadRequest, `unknown function with name "no_such_function"`},
			{"invalid record name", "name: bad\nrules:\n- record: ''\n  expr: vector(1)\n", http.StatusBadRequest, "one of 'record' or 'alert' must be set"},
			// A body over the configuration API's 1 MiB: 400, as every
			// group that can never be stored.
			{"body too large", big, http.StatusBadRequest, fmt.Sprintf("rule group body larger than %d bytes", ruler.DefaultMaxRuleGroupBytes)},
			{"duplicate groups", "groups:\n- name: d\n  rules:\n  - record: x\n    expr: vector(1)\n- name: d\n  rules:\n  - record: y\n    expr: vector(1)\n",
				http.StatusBadRequest, `group names repeated in it: ["d"]`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, before := httpDo(t, http.MethodGet, rulesURL, free, "", nil)
				code, body := httpDo(t, http.MethodPost, rulesURL+"/shared", free, "application/yaml", []byte(tc.body))
				if code != tc.wantCode || !strings.Contains(body, tc.wantErr) {
					t.Errorf("POST: %d %s, want %d %q", code, body, tc.wantCode, tc.wantErr)
				}
				if _, after := httpDo(t, http.MethodGet, rulesURL, free, "", nil); before != after {
					t.Errorf("rules changed by a refused POST; before:\n%s\nafter:\n%s", before, after)
				}
			})
		}
	})
}
