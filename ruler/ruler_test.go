package ruler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/stretchr/testify/require"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/testkit/testbackend"
	"github.com/promhbase/promhbase/testkit/teststack"
)

// rulesStore returns a store holding a fresh rules table, and its name.
func rulesStore(t *testing.T) (store.Store, string) {
	t.Helper()
	if testbackend.Name() == "hbase" {
		st := testbackend.NewHBaseStore(t)
		name := fmt.Sprintf("tsdb-rules_test_%d", time.Now().UnixNano())
		ctx := teststack.Context(t)
		_, err := st.CreateTable(ctx, hbase.TableSpec{Name: name, Families: map[string]map[string]string{Family: {}}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.DropTables(context.Background(), name) })
		return st, name
	}
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb-rules"}})
	require.NoError(t, err)
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
	require.NoError(t, err)
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
	require.NoError(e.t, err)
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
	require.NoError(e.t, err)
	defer qr.Close()
	res := qr.Exec(teststack.Context(e.t))
	require.NoError(e.t, res.Err)
	v, err := res.Vector()
	require.NoError(e.t, err)
	require.Len(e.t, v, 1, "%s at %s", q, at)
	return v[0].F
}

func recordGroup(name string, iv time.Duration) rulefmt.RuleGroup {
	return rulefmt.RuleGroup{Name: name, Interval: model.Duration(iv), Rules: []rulefmt.Rule{{Record: "rec:" + name, Expr: "sum(x)"}}}
}

func TestRecordingRulesAndBackfill(t *testing.T) {
	now := time.Now()
	e := newEnv(t, map[string][]rulefmt.RuleGroup{"ns": {recordGroup("g1", 500*time.Millisecond)}})
	e.writeData(now.Add(-time.Minute), now.Add(time.Minute), 3)
	_, stop := start(t, e.config(""))
	require.Eventually(t, func() bool { return len(e.samplesOf("rec:g1")) >= 4 }, 20*time.Second, 50*time.Millisecond)
	stop(false)
	live := e.samplesOf("rec:g1")
	t.Run("values equal instant queries", func(t *testing.T) {
		for ts, v := range live {
			require.InDelta(t, e.instant("sum(x)", time.UnixMilli(ts)), v, 1e-9, "at %d", ts)
		}
	})
	t.Run("r:last is the last evaluation", func(t *testing.T) {
		require.Equal(t, slices.Max(slices.Collect(mapsKeys(live))), e.last("ns", "g1"))
	})
	t.Run("backfill at the live timestamps", func(t *testing.T) {
		keys := slices.Sorted(mapsKeys(live))
		e.mu.Lock()
		e.written = nil
		e.mu.Unlock()
		st, err := Backfill(teststack.Context(t), e.groups, e.tenant(), BackfillOptions{From: time.UnixMilli(keys[0]), To: time.UnixMilli(keys[len(keys)-1]), StepsPerQuery: 2})
		require.NoError(t, err)
		require.Equal(t, 1, st.Rules)
		require.Equal(t, live, e.samplesOf("rec:g1"))
	})
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
	require.Eventually(t, func() bool {
		for _, ar := range r.Retriever("").AlertingRules() {
			for _, a := range ar.ActiveAlerts() {
				states = append(states, a.State)
				activeAt = a.ActiveAt
			}
		}
		return len(states) > 0 && states[len(states)-1] == rules.StateFiring && len(am.received()) > 0
	}, 20*time.Second, 50*time.Millisecond)
	t.Run("pending then firing", func(t *testing.T) {
		require.Equal(t, rules.StatePending, states[0])
	})
	t.Run("sent to the alertmanager", func(t *testing.T) {
		a := am.received()[0]
		require.Equal(t, map[string]any{"alertname": "XHigh", "i": "2", "severity": "page"}, a["labels"])
		require.Equal(t, map[string]any{"summary": "2 is high"}, a["annotations"])
		sa, err := time.Parse(time.RFC3339Nano, a["startsAt"].(string))
		require.NoError(t, err)
		require.True(t, sa.After(activeAt), "startsAt %s after activeAt %s", sa, activeAt)
	})
	t.Run("ALERTS written", func(t *testing.T) {
		require.NotEmpty(t, e.samplesOf("ALERTS"))
		require.NotEmpty(t, e.samplesOf("ALERTS_FOR_STATE"))
	})
	// Prometheus restores `for` state at second precision (the last
	// ALERTS_FOR_STATE sample's second against activeAt's): firing a
	// full second longer, the restore sees it as firing.
	time.Sleep(time.Second + 100*time.Millisecond)
	stop(false)
	t.Run("for state restored after a restart", func(t *testing.T) {
		r2, _ := start(t, e.config(""))
		require.Eventually(t, func() bool {
			for _, ar := range r2.Retriever("").AlertingRules() {
				if ar.Restored() {
					for _, a := range ar.ActiveAlerts() {
						return a.ActiveAt.Unix() == activeAt.Unix()
					}
				}
			}
			return false
		}, 20*time.Second, 50*time.Millisecond)
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
	held := func(r *Ruler) int {
		n := 0
		for _, g := range r.Retriever("").RuleGroups() {
			if g.GetLastEvaluation().After(time.Time{}) {
				n++
			}
		}
		return n
	}
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
	t.Run("each group held by exactly one", func(t *testing.T) {
		require.Eventually(t, func() bool { return heldNow(r1) == 2 && heldNow(r2) == 2 }, 20*time.Second, 50*time.Millisecond)
		_ = held
	})
	// Let both evaluate a while, then kill r1 (its leases stay).
	time.Sleep(4 * iv)
	stop1(true)
	t.Run("taken over after the lease expires", func(t *testing.T) {
		require.Eventually(t, func() bool { return heldNow(r2) == 4 }, 20*time.Second, 50*time.Millisecond)
		time.Sleep(4 * iv)
	})
	t.Run("no gap and nothing twice", func(t *testing.T) {
		for _, name := range []string{"g1", "g2", "g3", "g4"} {
			e.mu.Lock()
			var tss []int64
			for _, s := range e.written {
				if nameOf(s.Labels) == "rec:"+name {
					for _, p := range s.Samples {
						tss = append(tss, p.Timestamp)
					}
				}
			}
			e.mu.Unlock()
			slices.Sort(tss)
			require.NotEmpty(t, tss, name)
			for i := 1; i < len(tss); i++ {
				require.Equal(t, iv.Milliseconds(), tss[i]-tss[i-1], "%s: evaluations at %d and %d", name, tss[i-1], tss[i])
			}
		}
	})
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
