package ruler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testlog"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// rulesStore returns a store holding a fresh rules table, and its name.
func rulesStore(t *testing.T) (store.Store, string) {
	t.Helper()
	if testbackend.Name() == "hbase" {
		st := testbackend.NewHBaseStore(t)
		name := fmt.Sprintf("tsdb-rules_test_%d", time.Now().UnixNano())
		ctx := teststack.Context(t)
		_, err := st.CreateTable(ctx, hbase.TableSpec{Name: name, Families: map[string]map[string]string{Family: {}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.DropTables(context.Background(), name) })
		return st, name
	}
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb-rules"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, "tsdb-rules"
}

// fakeGroups is a GroupStore in memory.
type fakeGroups struct {
	mu sync.Mutex
	gs map[string][]rulefmt.RuleGroup
}

func (f *fakeGroups) ListGroups(context.Context) (map[string][]rulefmt.RuleGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]rulefmt.RuleGroup{}
	for k, v := range f.gs {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

func (f *fakeGroups) GetGroup(context.Context, string, string) (rulefmt.RuleGroup, error) {
	return rulefmt.RuleGroup{}, ErrGroupNotFound
}
func (f *fakeGroups) SetGroup(context.Context, string, rulefmt.RuleGroup) error { return nil }
func (f *fakeGroups) DeleteGroup(context.Context, string, string) error         { return nil }
func (f *fakeGroups) DeleteNamespace(context.Context, string) error             { return nil }

// env is a write and read path, a rules table and groups.
type env struct {
	t      *testing.T
	stack  *teststack.Stack
	rst    store.Store
	table  string
	groups *fakeGroups
	engine *promql.Engine

	mu      sync.Mutex
	written []prompb.TimeSeries // every series the rulers wrote
	// log holds the rulers' warnings (a failed evaluation says why),
	// printed by a test that finds r:last and the samples apart.
	log testlog.Buffer
}

func newEnv(t *testing.T, gs map[string][]rulefmt.RuleGroup) *env {
	t.Helper()
	rst, table := rulesStore(t)
	e := &env{t: t, stack: teststack.New(t, teststack.Options{}), rst: rst, table: table, groups: &fakeGroups{gs: gs},
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})}
	return e
}

func (e *env) tenant() Tenant {
	return Tenant{Engine: e.engine, Queryable: e.stack.Querier.Storage(), Write: func(ctx context.Context, body []byte) error {
		var req prompb.WriteRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return err
		}
		e.mu.Lock()
		e.written = append(e.written, req.Timeseries...)
		e.mu.Unlock()
		_, err := e.stack.Writer.Write(ctx, body, false)
		return err
	}}
}

func (e *env) config(am string) Config {
	c := Config{
		Tenants: func(context.Context) ([]string, error) { return []string{""}, nil },
		Rules:   func(string) (GroupStore, store.Store) { return e.groups, e.rst },
		Table:   e.table,
		Tenant:  func(context.Context, string) (Tenant, error) { return e.tenant(), nil },
		// Small: the tests wait for evaluations at these intervals.
		PollInterval: 200 * time.Millisecond, LeaseDuration: 3 * time.Second, ForGracePeriod: time.Millisecond,
		NotificationTimeout: time.Second, ResendDelay: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&e.log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if am != "" {
		c.AlertmanagerURLs = []string{am}
	}
	return c
}

// start runs a Ruler; the returned stop hands its leases back unless
// kill, which stops it as a killed process would stop (leases held).
func start(t *testing.T, cfg Config) (*Ruler, func(kill bool)) {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	var once sync.Once
	stop := func(kill bool) {
		once.Do(func() {
			r.noRelease = kill
			cancel()
			<-done
		})
	}
	t.Cleanup(func() { stop(false) })
	return r, stop
}

// writeSeries writes x{i=...} with value i*t_seconds every second over
// [from, to].
func (e *env) writeData(from, to time.Time, n int) {
	var ts []prompb.TimeSeries
	for i := 1; i <= n; i++ {
		s := prompb.TimeSeries{Labels: teststack.Labels("x", "i", strconv.Itoa(i))}
		for at := from.Truncate(time.Second); !at.After(to); at = at.Add(time.Second) {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: at.UnixMilli(), Value: float64(i) * float64(at.Unix()%1000)})
		}
		ts = append(ts, s)
	}
	e.stack.Write(ts...)
}

// last reads r:last of a group.
func (e *env) last(ns, group string) int64 {
	l := newGroupLease(e.rst, e.table, ns, group, nil, time.Second, time.Now)
	v, err := l.last(teststack.Context(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// samplesOf returns the timestamps and values of the series named name
// that the rulers wrote, by timestamp.
func (e *env) samplesOf(name string) map[int64]float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[int64]float64{}
	for _, s := range e.written {
		if nameOf(s.Labels) != name {
			continue
		}
		for _, p := range s.Samples {
			out[p.Timestamp] += p.Value
		}
	}
	return out
}

// instant evaluates q at t with the env's engine.
func (e *env) instant(q string, at time.Time) float64 {
	qr, err := e.engine.NewInstantQuery(teststack.Context(e.t), e.stack.Querier.Storage(), nil, q, at)
	if err != nil {
		e.t.Fatal(err)
	}
	defer qr.Close()
	res := qr.Exec(teststack.Context(e.t))
	if res.Err != nil {
		e.t.Fatal(res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		e.t.Fatal(err)
	}
	if len(v) != 1 {
		e.t.Fatalf("%s at %s: %d samples, want 1: %v", q, at, len(v), v)
	}
	return v[0].F
}

func recordGroup(name string, iv time.Duration) rulefmt.RuleGroup {
	return rulefmt.RuleGroup{Name: name, Interval: model.Duration(iv), Rules: []rulefmt.Rule{{Record: "rec:" + name, Expr: "sum(x)"}}}
}

// Not parallel: on HBase under a full make test's load it once found
// r:last two evaluations ahead of the samples written (docs/development.md,
// "Seen once under load"); it runs before the package's parallel tests.
func TestRecordingRulesAndBackfill(t *testing.T) {
	now := time.Now()
	e := newEnv(t, map[string][]rulefmt.RuleGroup{"ns": {recordGroup("g1", 500*time.Millisecond)}})
	e.writeData(now.Add(-time.Minute), now.Add(time.Minute), 3)
	_, stop := start(t, e.config(""))
	poll.Until(t, 20*time.Second, 50*time.Millisecond, "g1 evaluated 4 times", func() (bool, string) {
		n := len(e.samplesOf("rec:g1"))
		return n >= 4, fmt.Sprintf("%d evaluations", n)
	})
	stop(false)
	live := e.samplesOf("rec:g1")
	t.Run("values equal instant queries", func(t *testing.T) {
		for ts, v := range live {
			if want := e.instant("sum(x)", time.UnixMilli(ts)); math.Abs(want-v) > 1e-9 {
				t.Errorf("at %d: recorded %v, instant query %v", ts, v, want)
			}
		}
	})
	t.Run("r:last is the last evaluation", func(t *testing.T) {
		if got, want := e.last("ns", "g1"), slices.Max(slices.Collect(mapsKeys(live))); got != want {
			t.Errorf("r:last = %d, want the last evaluation %d; the rulers' warnings:\n%s", got, want, e.log.String())
		}
	})
	// From the first to the last live timestamp, and to the one before:
	// an odd and an even count, so that with 2 steps a query one way and
	// the other begins at the end (an aligned timestamp has nanoseconds,
	// the end milliseconds: the end's evaluation is in range).
	keys := slices.Sorted(mapsKeys(live))
	for _, n := range []int{len(keys), len(keys) - 1} {
		t.Run(fmt.Sprintf("backfill at the first %d live timestamps", n), func(t *testing.T) {
			e.mu.Lock()
			e.written = nil
			e.mu.Unlock()
			st, err := Backfill(teststack.Context(t), e.groups, e.tenant(), BackfillOptions{From: time.UnixMilli(keys[0]), To: time.UnixMilli(keys[n-1]), StepsPerQuery: 2})
			if err != nil {
				t.Fatal(err)
			}
			if st.Rules != 1 {
				t.Errorf("backfilled %d rules, want 1", st.Rules)
			}
			want := map[int64]float64{}
			for _, k := range keys[:n] {
				want[k] = live[k]
			}
			if got := e.samplesOf("rec:g1"); !reflect.DeepEqual(got, want) {
				t.Errorf("backfilled %v, want the live evaluations %v", got, want)
			}
		})
	}
}

// fakeAM is an Alertmanager's /api/v2/alerts.
type fakeAM struct {
	mu     sync.Mutex
	alerts []map[string]any
}

func (f *fakeAM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var as []map[string]any
	if r.URL.Path == "/api/v2/alerts" && json.Unmarshal(b, &as) == nil {
		f.mu.Lock()
		f.alerts = append(f.alerts, as...)
		f.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

func (f *fakeAM) received() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.alerts)
}

func TestAlertingRule(t *testing.T) {
	now := time.Now()
	g := rulefmt.RuleGroup{Name: "alerts", Interval: model.Duration(300 * time.Millisecond), Rules: []rulefmt.Rule{{
		Alert: "XHigh", Expr: `x{i="2"} > 0`, For: model.Duration(1500 * time.Millisecond),
		Labels: map[string]string{"severity": "page"}, Annotations: map[string]string{"summary": "{{ $labels.i }} is high"},
	}}}
	e := newEnv(t, map[string][]rulefmt.RuleGroup{"ns": {g}})
	e.writeData(now.Add(-time.Minute), now.Add(2*time.Minute), 2)
	am := &fakeAM{}
	srv := httptest.NewServer(am)
	defer srv.Close()
	r, stop := start(t, e.config(srv.URL))
	var states []rules.AlertState
	var activeAt time.Time
	poll.Until(t, 20*time.Second, 50*time.Millisecond, "the alert firing and sent", func() (bool, string) {
		for _, ar := range r.Retriever("").AlertingRules() {
			for _, a := range ar.ActiveAlerts() {
				states = append(states, a.State)
				activeAt = a.ActiveAt
			}
		}
		return len(states) > 0 && states[len(states)-1] == rules.StateFiring && len(am.received()) > 0, fmt.Sprintf("states %v, %d alerts sent", states, len(am.received()))
	})
	t.Run("pending then firing", func(t *testing.T) {
		if states[0] != rules.StatePending {
			t.Errorf("first state %s, want %s", states[0], rules.StatePending)
		}
	})
	t.Run("sent to the alertmanager", func(t *testing.T) {
		a := am.received()[0]
		if want := map[string]any{"alertname": "XHigh", "i": "2", "severity": "page"}; !reflect.DeepEqual(a["labels"], want) {
			t.Errorf("labels %v, want %v", a["labels"], want)
		}
		if want := map[string]any{"summary": "2 is high"}; !reflect.DeepEqual(a["annotations"], want) {
			t.Errorf("annotations %v, want %v", a["annotations"], want)
		}
		sa, err := time.Parse(time.RFC3339Nano, a["startsAt"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if !sa.After(activeAt) {
			t.Errorf("startsAt %s not after activeAt %s", sa, activeAt)
		}
	})
	t.Run("ALERTS written", func(t *testing.T) {
		for _, name := range []string{"ALERTS", "ALERTS_FOR_STATE"} {
			if len(e.samplesOf(name)) == 0 {
				t.Errorf("no %s written", name)
			}
		}
	})
	// Prometheus restores `for` state at second precision (the last
	// ALERTS_FOR_STATE sample's second against activeAt's): firing a
	// second longer than `for`, the restore sees it as firing.
	poll.Until(t, 20*time.Second, 50*time.Millisecond, "ALERTS_FOR_STATE written `for` after activeAt at second precision", func() (bool, string) {
		last := slices.Max(append(slices.Collect(mapsKeys(e.samplesOf("ALERTS_FOR_STATE"))), 0))
		return time.Unix(last/1000, 0).Sub(time.Unix(activeAt.Unix(), 0)) >= time.Duration(g.Rules[0].For), fmt.Sprintf("last at %d, activeAt %s", last, activeAt)
	})
	stop(false)
	t.Run("for state restored after a restart", func(t *testing.T) {
		r2, _ := start(t, e.config(""))
		poll.Until(t, 20*time.Second, 50*time.Millisecond, "the alert restored with its activeAt", func() (bool, string) {
			for _, ar := range r2.Retriever("").AlertingRules() {
				if ar.Restored() {
					for _, a := range ar.ActiveAlerts() {
						return a.ActiveAt.Unix() == activeAt.Unix(), fmt.Sprintf("restored activeAt %s, want %s", a.ActiveAt, activeAt)
					}
				}
			}
			return false, "not restored"
		})
	})
}

func TestTwoRulersTakeOver(t *testing.T) {
	now := time.Now()
	const iv = 400 * time.Millisecond
	gs := map[string][]rulefmt.RuleGroup{"a": {recordGroup("g1", iv), recordGroup("g2", iv)}, "b": {recordGroup("g3", iv), recordGroup("g4", iv)}}
	e := newEnv(t, gs)
	e.writeData(now.Add(-time.Minute), now.Add(2*time.Minute), 1)
	r1, stop1 := start(t, e.config(""))
	r2, _ := start(t, e.config(""))
	heldNow := func(r *Ruler) int {
		r.mu.Lock()
		ts := r.tenants[""]
		r.mu.Unlock()
		if ts == nil {
			return 0
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return len(ts.leases)
	}
	names := []string{"g1", "g2", "g3", "g4"}
	counts := func() map[string]int {
		m := map[string]int{}
		for _, name := range names {
			m[name] = len(e.evaluations("rec:" + name))
		}
		return m
	}
	// evaluatedSince says whether every group has n evaluations after
	// those counted in before, and the counts it found.
	evaluatedSince := func(before map[string]int, n int) (bool, string) {
		now := counts()
		for _, name := range names {
			if now[name] < before[name]+n {
				return false, fmt.Sprintf("evaluations %v, before %v", now, before)
			}
		}
		return true, ""
	}
	t.Run("each group held by exactly one", func(t *testing.T) {
		poll.Until(t, 20*time.Second, 50*time.Millisecond, "two groups held by each ruler", func() (bool, string) {
			return heldNow(r1) == 2 && heldNow(r2) == 2, fmt.Sprintf("held %d and %d", heldNow(r1), heldNow(r2))
		})
	})
	// Let both evaluate a while, then kill r1 (its leases stay).
	poll.Until(t, 20*time.Second, 50*time.Millisecond, "every group evaluated twice", func() (bool, string) { return evaluatedSince(nil, 2) })
	stop1(true)
	t.Run("taken over after the lease expires", func(t *testing.T) {
		poll.Until(t, 20*time.Second, 50*time.Millisecond, "all four groups held by the second ruler", func() (bool, string) { return heldNow(r2) == 4, fmt.Sprintf("held %d", heldNow(r2)) })
		taken := counts()
		poll.Until(t, 20*time.Second, 50*time.Millisecond, "every group evaluated twice after the takeover", func() (bool, string) { return evaluatedSince(taken, 2) })
	})
	// An evaluation the kill (or a lease that expired under load) cut
	// between its append and its r:last is made again by the next holder:
	// the same sample written twice, which the store keeps once. Never a
	// gap, never two values at one timestamp.
	t.Run("no gap and nothing twice", func(t *testing.T) {
		for _, name := range names {
			ps := e.evaluationSamples("rec:" + name)
			if len(ps) == 0 {
				t.Fatalf("%s: no evaluations", name)
			}
			again := 0
			for i := 1; i < len(ps); i++ {
				if ps[i].Timestamp == ps[i-1].Timestamp {
					again++
					if math.Float64bits(ps[i].Value) != math.Float64bits(ps[i-1].Value) {
						t.Errorf("%s: two values at %d: %v and %v", name, ps[i].Timestamp, ps[i-1].Value, ps[i].Value)
					}
					continue
				}
				if d := ps[i].Timestamp - ps[i-1].Timestamp; d != iv.Milliseconds() {
					t.Errorf("%s: evaluations at %d and %d, %d ms apart, want %d", name, ps[i-1].Timestamp, ps[i].Timestamp, d, iv.Milliseconds())
				}
			}
			if again > 0 {
				t.Logf("%s: %d evaluations made again by the next holder (the same samples)", name, again)
			}
		}
	})
}

// evaluationSamples returns the samples of the series named name that the
// rulers wrote, by timestamp, each as many times as written.
func (e *env) evaluationSamples(name string) []prompb.Sample {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ps []prompb.Sample
	for _, s := range e.written {
		if nameOf(s.Labels) == name {
			ps = append(ps, s.Samples...)
		}
	}
	slices.SortStableFunc(ps, func(a, b prompb.Sample) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	return ps
}

// evaluations returns the timestamps of the samples of the series named
// name that the rulers wrote, sorted, each as many times as written.
func (e *env) evaluations(name string) []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var tss []int64
	for _, s := range e.written {
		if nameOf(s.Labels) == name {
			for _, p := range s.Samples {
				tss = append(tss, p.Timestamp)
			}
		}
	}
	slices.Sort(tss)
	return tss
}

func mapsKeys(m map[int64]float64) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func nameOf(ls []prompb.Label) string {
	for _, l := range ls {
		if l.Name == "__name__" {
			return l.Value
		}
	}
	return ""
}

// TestFailedWriteMadeUp: an evaluation whose samples the store refused
// (two writes in a row fail, as a loaded HBase's may) is not recorded in
// r:last, and the next iterations make it up: the recorded rule's samples
// have no gap.
func TestFailedWriteMadeUp(t *testing.T) {
	now := time.Now()
	const iv = 300 * time.Millisecond
	e := newEnv(t, map[string][]rulefmt.RuleGroup{"ns": {recordGroup("g1", iv)}})
	e.writeData(now.Add(-time.Minute), now.Add(time.Minute), 1)
	var writes atomic.Int64
	cfg := e.config("")
	cfg.Tenant = func(context.Context, string) (Tenant, error) {
		tn := e.tenant()
		write := tn.Write
		tn.Write = func(ctx context.Context, body []byte) error {
			if n := writes.Add(1); n == 3 || n == 4 {
				return fmt.Errorf("write %d: %w", n, store.ErrUnavailable)
			}
			return write(ctx, body)
		}
		return tn, nil
	}
	_, stop := start(t, cfg)
	poll.Until(t, 20*time.Second, 50*time.Millisecond, "g1 evaluated 8 times after the failures", func() (bool, string) {
		n := len(e.samplesOf("rec:g1"))
		return writes.Load() > 4 && n >= 8, fmt.Sprintf("%d evaluations, %d writes", n, writes.Load())
	})
	stop(false)
	keys := slices.Sorted(mapsKeys(e.samplesOf("rec:g1")))
	for i := 1; i < len(keys); i++ {
		if d := keys[i] - keys[i-1]; d != iv.Milliseconds() {
			t.Errorf("evaluations at %d and %d, %d ms apart, want %d (the failed ones made up)", keys[i-1], keys[i], d, iv.Milliseconds())
		}
	}
}
