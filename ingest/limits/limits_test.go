package limits

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func lbls(kv ...string) (out []mapping.Label) {
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, mapping.Label{Name: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return out
}

// manyLabels is a series named metric with n labels, __name__ included.
func manyLabels(metric string, n int) []mapping.Label {
	kv := []string{"__name__", metric}
	for i := 1; i < n; i++ {
		kv = append(kv, fmt.Sprintf("l%05d", i), "v")
	}
	return lbls(kv...)
}

func TestCheckSeries(t *testing.T) {
	l, err := New(DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		lbls   []mapping.Label
		reason string
		msg    []string // substrings of the error
	}{
		{"ok", lbls("__name__", "up", "job", "a"), "", nil},
		{"30 labels", manyLabels("thirty", 30), "", nil},
		{"31 labels", manyLabels("thirtyone", 31), ReasonLabelNames,
			[]string{`__name__="thirtyone"`, "31 labels", "--limits.max-label-names-per-series=30", "21 more"}},
		{"name 1024", lbls("__name__", "m", strings.Repeat("n", 1024), "v"), "", nil},
		{"name 1025", lbls("__name__", "longname", strings.Repeat("n", 1025), "v"), ReasonLabelNameLength,
			[]string{`__name__="longname"`, "1025 bytes", "--limits.max-label-name-length=1024"}},
		{"value 2048", lbls("__name__", "m", "l", strings.Repeat("v", 2048)), "", nil},
		{"value 2049", lbls("__name__", "longvalue", "l", strings.Repeat("v", 2049)), ReasonLabelValueLength,
			[]string{`__name__="longvalue"`, "2049 bytes", `label "l"`, "--limits.max-label-value-length=2048"}},
		{"metric name 2049", lbls("__name__", strings.Repeat("m", 2049)), ReasonLabelValueLength,
			[]string{"2049 bytes", `label "__name__"`}},
		{"10000 labels", manyLabels("wide", 10_000), ReasonRowKey,
			[]string{"9999 tag pairs", "60001-byte row key", "32767", `__name__="wide"`, "9990 more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, err := l.CheckSeries(tc.lbls)
			if reason != tc.reason {
				t.Fatalf("reason %q, want %q (err %v)", reason, tc.reason, err)
			}
			if (err == nil) != (tc.reason == "") {
				t.Fatalf("err %v", err)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrSeriesLimit) && !errors.Is(err, mapping.ErrRowKeyTooLong) {
				t.Errorf("%v wraps neither ErrSeriesLimit nor ErrRowKeyTooLong", err)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error lacks %q: %v", m, err)
				}
			}
			if len(err.Error()) > 1200 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

// TestRowKeyBoundWithoutLimits: with every limit off the row key is still
// bounded, at the exact number of pairs that fits.
func TestRowKeyBoundWithoutLimits(t *testing.T) {
	layout := mapping.DefaultLayout()
	l, err := New(Config{}, layout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fit := (mapping.MaxRowKeyBytes - layout.PrefixLen()) / layout.PairLen()
	if reason, err := l.CheckSeries(manyLabels("fits", fit+1)); err != nil {
		t.Fatalf("%d tag pairs (%d bytes): %s %v", fit, layout.RowKeyLen(fit), reason, err)
	}
	if reason, _ := l.CheckSeries(manyLabels("over", fit+2)); reason != ReasonRowKey {
		t.Fatalf("%d tag pairs: reason %q", fit+1, reason)
	}
}

func TestCheckRequest(t *testing.T) {
	l, _ := New(DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	if err := l.CheckRequest(50_000); err != nil {
		t.Fatal(err)
	}
	err := l.CheckRequest(50_001)
	if !errors.Is(err, ErrTooManySeries) || !strings.Contains(err.Error(), "--limits.max-series-per-request=50000") {
		t.Fatalf("got %v", err)
	}
}

// admitter is one of the two token buckets' Admit methods.
type admitter struct {
	name  string
	cfg   Config // rate 5/s, burst 10
	admit func(l *Limits, n int) error
	flag  string // named by the RateLimitError
}

var admitters = []admitter{
	{"new series", Config{NewSeriesRate: 5, NewSeriesBurst: 10}, (*Limits).AdmitNew, "--limits.new-series-rate"},
	{"samples", Config{IngestionRate: 5, IngestionBurst: 10}, (*Limits).AdmitSamples, "--limits.ingestion-rate"},
}

// step admits n and checks the answer: admitted (wantRetry 0) or a
// RateLimitError naming the bucket's flag with Retry-After wantRetry.
func (a admitter) step(t *testing.T, l *Limits, n int, wantRetry time.Duration) {
	t.Helper()
	err := a.admit(l, n)
	var rl *RateLimitError
	switch {
	case wantRetry == 0 && err != nil:
		t.Fatalf("admit %d: %v", n, err)
	case wantRetry == 0:
	case !errors.As(err, &rl):
		t.Fatalf("admit %d: %v, want a RateLimitError", n, err)
	case rl.RetryAfter != wantRetry:
		t.Fatalf("admit %d: retry after %s, want %s", n, rl.RetryAfter, wantRetry)
	case !strings.Contains(err.Error(), a.flag) || !strings.HasPrefix(err.Error(), fmt.Sprint(n)+" "):
		t.Fatalf("admit %d: %q names neither %d nor %s", n, err, n, a.flag)
	}
}

// TestAdmit: both token buckets refill at their rate up to their burst,
// go into debt for a request larger than what they hold, and refuse while
// empty or in debt.
func TestAdmit(t *testing.T) {
	for _, a := range admitters {
		t.Run(a.name, func(t *testing.T) {
			clk := newClock()
			l, err := New(a.cfg, mapping.DefaultLayout(), nil, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			a.step(t, l, 10, 0)          // the burst
			a.step(t, l, 1, time.Second) // empty: 1 token takes 0.2 s, rounded up to 1 s
			clk.add(time.Second)         // 5 tokens
			a.step(t, l, 100, 0)         // more than the burst passes, into debt (-95)
			a.step(t, l, 1, 19*time.Second)
			clk.add(19 * time.Second) // -95 + 95 = 0: still empty
			a.step(t, l, 1, time.Second)
			clk.add(time.Hour) // refilled to the burst, not beyond
			a.step(t, l, 10, 0)
			a.step(t, l, 1, time.Second)
			a.step(t, l, 0, 0) // nothing to admit: never limited
		})
	}
}

// TestAdmitOff: a rate of 0 admits everything; the other bucket is not
// touched.
func TestAdmitOff(t *testing.T) {
	clk := newClock()
	l, err := New(Config{NewSeriesRate: 1, NewSeriesBurst: 1}, mapping.DefaultLayout(), nil, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := l.AdmitSamples(1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AdmitNew(1); err != nil {
		t.Fatalf("the new-series bucket after samples: %v", err)
	}
}

func TestRateLimitErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  RateLimitError
		want string
	}{
		{RateLimitError{NewSeries: 3, RetryAfter: 2 * time.Second}, "3 new series exceed --limits.new-series-rate (token bucket empty); retry after 2s"},
		{RateLimitError{Samples: 2000, RetryAfter: time.Second}, "2000 samples exceed --limits.ingestion-rate (token bucket empty); retry after 1s"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{NewSeriesRate: -1}, {NewSeriesRate: 1}, {NewSeriesBurst: -1}, {NewSeriesRate: math.NaN(), NewSeriesBurst: 1},
		{IngestionRate: -1}, {IngestionRate: 1}, {IngestionBurst: -1}, {IngestionRate: math.Inf(1), IngestionBurst: 1},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			if _, err := New(c, mapping.DefaultLayout(), nil, nil); err == nil {
				t.Error("New accepted it")
			}
			l, err := New(DefaultConfig(), mapping.DefaultLayout(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SetConfig(c); err == nil {
				t.Error("SetConfig accepted it")
			}
			if l.Config() != DefaultConfig() {
				t.Errorf("a refused SetConfig changed the config to %+v", l.Config())
			}
		})
	}
	for _, c := range []Config{{}, DefaultConfig(), {IngestionRate: 0.5, IngestionBurst: 1}, {IngestionBurst: 7}} {
		if _, err := New(c, mapping.DefaultLayout(), nil, nil); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestSetConfig: each check applies the config set last.
func TestSetConfig(t *testing.T) {
	twenty := manyLabels("twenty", 20)
	for _, tc := range []struct {
		name  string
		cfg   Config
		check func(l *Limits) error
		// refused under cfg, admitted under cfg after raise.
		raise func(cfg *Config)
	}{
		{"label names", Config{MaxLabelNamesPerSeries: 10},
			func(l *Limits) error { _, err := l.CheckSeries(twenty); return err },
			func(c *Config) { c.MaxLabelNamesPerSeries = 40 }},
		{"label value length", Config{MaxLabelValueLength: 5},
			func(l *Limits) error { _, err := l.CheckSeries(twenty); return err },
			func(c *Config) { c.MaxLabelValueLength = 0 }},
		{"series per request", Config{MaxSeriesPerRequest: 100},
			func(l *Limits) error { return l.CheckRequest(101) },
			func(c *Config) { c.MaxSeriesPerRequest = 101 }},
		{"active series", Config{MaxActiveSeries: 1},
			func(l *Limits) error {
				l.Sketch().Add(series(1))
				return l.CheckActive()
			},
			func(c *Config) { c.MaxActiveSeries = 1000 }},
		{"ingestion rate", Config{IngestionRate: 1, IngestionBurst: 1},
			func(l *Limits) error { return l.AdmitSamples(2) },
			func(c *Config) { c.IngestionRate = 0 }},
		{"new-series rate", Config{NewSeriesRate: 1, NewSeriesBurst: 1},
			func(l *Limits) error { return l.AdmitNew(2) },
			func(c *Config) { c.NewSeriesRate = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			l, err := New(Config{}, mapping.DefaultLayout(), nil, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.check(l); err != nil {
				t.Fatalf("without limits: %v", err)
			}
			clk.add(2 * time.Second) // past the active-series estimate's cache
			if err := l.SetConfig(tc.cfg); err != nil {
				t.Fatal(err)
			}
			// Twice: a bucket admits one request into debt.
			if err1, err2 := tc.check(l), tc.check(l); err1 == nil && err2 == nil {
				t.Fatalf("%+v: admitted", tc.cfg)
			}
			raised := tc.cfg
			tc.raise(&raised)
			if err := l.SetConfig(raised); err != nil {
				t.Fatal(err)
			}
			if got := l.Config(); got != raised {
				t.Fatalf("Config() = %+v, want %+v", got, raised)
			}
			if err := tc.check(l); err != nil {
				t.Fatalf("%+v: %v", raised, err)
			}
		})
	}
}

// TestSetConfigBuckets: a new config keeps each bucket's tokens or debt,
// refilled at the old rate until the change and cut to a smaller burst; a
// bucket whose limit was off starts full.
func TestSetConfigBuckets(t *testing.T) {
	for _, a := range admitters {
		t.Run(a.name, func(t *testing.T) {
			clk := newClock()
			l, err := New(a.cfg, mapping.DefaultLayout(), nil, clk.now) // 5/s, 10
			if err != nil {
				t.Fatal(err)
			}
			set := func(rate float64, burst int) {
				t.Helper()
				cfg := a.cfg
				if cfg.IngestionRate > 0 {
					cfg.IngestionRate, cfg.IngestionBurst = rate, burst
				} else {
					cfg.NewSeriesRate, cfg.NewSeriesBurst = rate, burst
				}
				if err := l.SetConfig(cfg); err != nil {
					t.Fatal(err)
				}
			}
			a.step(t, l, 10, 0) // empty
			set(5, 100)         // a larger burst adds no tokens
			a.step(t, l, 1, time.Second)
			clk.add(time.Second) // 5 tokens at the old rate...
			set(1, 100)          // ... kept at the new one
			a.step(t, l, 5, 0)
			a.step(t, l, 1, time.Second)
			clk.add(time.Hour) // full: 100
			set(5, 10)         // cut to 10
			a.step(t, l, 10, 0)
			a.step(t, l, 1, time.Second)
			clk.add(time.Second)
			a.step(t, l, 45, 0) // 5 - 45: debt of 40
			set(20, 10)         // kept: 41 tokens at 20/s is 2.05 s
			a.step(t, l, 1, 2*time.Second)
			set(0, 0) // off: everything passes
			a.step(t, l, 1000, 0)
			set(5, 10) // on again: full
			a.step(t, l, 10, 0)
			a.step(t, l, 1, time.Second)
		})
	}
}

// TestSetConfigGauge: promhbase_limits shows the limits in force.
func TestSetConfigGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	l, err := New(DefaultConfig(), mapping.DefaultLayout(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := func(limit string, v float64) {
		t.Helper()
		if got := testproc.GatherSum(t, reg, "promhbase_limits", "limit", limit); got != v {
			t.Fatalf("promhbase_limits{limit=%q} = %v, want %v", limit, got, v)
		}
	}
	want("max_label_names_per_series", 30)
	want("ingestion_rate", 0)
	want("ingestion_burst_size", 200_000)
	want("new_series_rate", 50_000)
	want("max_row_key_bytes", mapping.MaxRowKeyBytes)
	cfg := DefaultConfig()
	cfg.MaxLabelNamesPerSeries, cfg.IngestionRate, cfg.IngestionBurst, cfg.NewSeriesRate = 12, 1000, 5000, 0
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	want("max_label_names_per_series", 12)
	want("ingestion_rate", 1000)
	want("ingestion_burst_size", 5000)
	want("new_series_rate", 0)
	want("max_row_key_bytes", mapping.MaxRowKeyBytes)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	// As /metrics shows it.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP promhbase_limits The write limits in force, by limit (0: none).
# TYPE promhbase_limits gauge
promhbase_limits{limit="ingestion_burst_size"} 5000
promhbase_limits{limit="ingestion_rate"} 1000
promhbase_limits{limit="max_active_series"} 1e+07
promhbase_limits{limit="max_label_name_length"} 1024
promhbase_limits{limit="max_label_names_per_series"} 12
promhbase_limits{limit="max_label_value_length"} 2048
promhbase_limits{limit="max_row_key_bytes"} 32767
promhbase_limits{limit="max_series_per_metric"} 0
promhbase_limits{limit="max_series_per_request"} 50000
promhbase_limits{limit="new_series_burst"} 2e+06
promhbase_limits{limit="new_series_rate"} 0
`), "promhbase_limits"); err != nil {
		t.Fatal(err)
	}
}

// TestSetConfigConcurrent: configs set while every check runs (a test for
// -race); each check and Config see one config or the other, whole.
func TestSetConfigConcurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := Config{MaxLabelNamesPerSeries: 10, MaxSeriesPerRequest: 10, IngestionRate: 1e9, IngestionBurst: 1e9, NewSeriesRate: 1e9, NewSeriesBurst: 1e9, MaxActiveSeries: 1e9}
	b := Config{MaxLabelNamesPerSeries: 40, MaxSeriesPerRequest: 40, IngestionRate: 1e6, IngestionBurst: 1e6, NewSeriesRate: 1e6, NewSeriesBurst: 1e6, MaxActiveSeries: 1e8}
	l, err := New(a, mapping.DefaultLayout(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	twenty := manyLabels("twenty", 20)
	const rounds = 2000
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	run(func(i int) error {
		if i%2 == 0 {
			return l.SetConfig(b)
		}
		return l.SetConfig(a)
	})
	run(func(int) error {
		if reason, err := l.CheckSeries(twenty); err != nil && reason != ReasonLabelNames {
			return err
		}
		if err := l.CheckRequest(20); err != nil && !errors.Is(err, ErrTooManySeries) {
			return err
		}
		return l.CheckActive()
	})
	run(func(i int) error {
		l.Sketch().Add(series(i))
		if err := l.AdmitSamples(100); err != nil {
			return err
		}
		return l.AdmitNew(1)
	})
	run(func(int) error {
		if c := l.Config(); c != a && c != b {
			return fmt.Errorf("a config of neither: %+v", c)
		}
		_, err := reg.Gather()
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// series returns the hash of the i-th synthetic series, as
// series.Series.Hash makes it.
func series(i int) uint64 {
	return xxhash.Sum64([]byte{0, 0, 1, 0, 0, 1, byte(i >> 16), byte(i >> 8), byte(i)})
}

func TestActiveSeries(t *testing.T) {
	clk := newClock()
	reg := prometheus.NewRegistry()
	l, err := New(Config{MaxActiveSeries: 50_000}, mapping.DefaultLayout(), reg, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 100, 10_000, 49_000} {
		sk := l.Sketch()
		for i := range n {
			sk.Add(series(i))
			sk.Add(series(i)) // twice: counted once
		}
		clk.add(2 * time.Second) // past the estimate's cache
		got := testproc.GatherSum(t, reg, "promhbase_active_series")
		t.Logf("%d series: estimate %.0f", n, got)
		if d := got - float64(n); d > 0.03*float64(n)+1 || d < -0.03*float64(n)-1 {
			t.Errorf("%d series: estimate %.0f", n, got)
		}
		if err := l.CheckActive(); err != nil {
			t.Fatalf("%d series: %v", n, err)
		}
	}
	sk := l.Sketch()
	for i := range 60_000 {
		sk.Add(series(i))
	}
	clk.add(2 * time.Second)
	err = l.CheckActive()
	if !errors.Is(err, ErrSeriesLimit) || !strings.Contains(err.Error(), "--limits.max-active-series=50000") {
		t.Fatalf("60000 series: %v", err)
	}
	// One window later they still count; two windows later they are gone.
	clk.add(ActiveSeriesWindow)
	if err := l.CheckActive(); err == nil {
		t.Fatal("one window later: no longer at the limit")
	}
	clk.add(ActiveSeriesWindow)
	if err := l.CheckActive(); err != nil {
		t.Fatalf("two windows later: %v", err)
	}
	if got := testproc.GatherSum(t, reg, "promhbase_active_series"); got != 0 {
		t.Fatalf("two windows later: estimate %.0f", got)
	}
}

func TestSketchAddAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	l, _ := New(DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	sk := l.Sketch()
	h := series(7)
	if n := testing.AllocsPerRun(100, func() { sk.Add(h) }); n != 0 {
		t.Fatalf("Add allocates %.1f times", n)
	}
}

// BenchmarkSketchAdd: one active-series mark, done for every series of
// every write request.
func BenchmarkSketchAdd(b *testing.B) {
	l, _ := New(DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	sk := l.Sketch()
	hashes := make([]uint64, 4096)
	for i := range hashes {
		hashes[i] = series(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sk.Add(hashes[i&4095])
		i++
	}
}

// BenchmarkCheckSeries: the per-series limits of a new series of 12
// labels.
func BenchmarkCheckSeries(b *testing.B) {
	l, _ := New(DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	s := manyLabels("bench", 12)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.CheckSeries(s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAdmitAllocs: the checks of a request's admitted path do not
// allocate.
func TestAdmitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	cfg := DefaultConfig()
	cfg.IngestionRate, cfg.IngestionBurst = 1e12, 1e12
	l, _ := New(cfg, mapping.DefaultLayout(), nil, nil)
	s := manyLabels("allocs", 12)
	for name, fn := range map[string]func(){
		"CheckSeries":  func() { _, _ = l.CheckSeries(s) },
		"CheckRequest": func() { _ = l.CheckRequest(2000) },
		"AdmitSamples": func() { _ = l.AdmitSamples(2000) },
		"AdmitNew":     func() { _ = l.AdmitNew(1) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s allocates %.1f times", name, n)
		}
	}
}

// BenchmarkAdmitSamples: the ingestion rate of one request of 2000
// samples, once per write request; "off" is the default (no rate).
//
//	go test -run '^$' -bench AdmitSamples -count 6 ./ingest/limits | tee bench.txt
func BenchmarkAdmitSamples(b *testing.B) {
	for _, bc := range []struct {
		name string
		rate float64
	}{{"off", 0}, {"on", 1e12}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.IngestionRate, cfg.IngestionBurst = bc.rate, 1e12
			l, err := New(cfg, mapping.DefaultLayout(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := l.AdmitSamples(2000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestActiveSeriesEstimateLarge: the estimate stays within 3 % where the
// raw HyperLogLog estimate takes over from linear counting, and at the
// default limit.
func TestActiveSeriesEstimateLarge(t *testing.T) {
	clk := newClock()
	l, err := New(Config{}, mapping.DefaultLayout(), nil, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	sk, added := l.Sketch(), 0
	for _, n := range []int{150_000, 200_000, 300_000, 1_000_000} {
		for ; added < n; added++ {
			sk.Add(series(added))
		}
		clk.add(2 * time.Second)
		got := l.active.estimate(clk.now())
		t.Logf("%d series: estimate %d (%+.2f %%)", n, got, 100*float64(got-int64(n))/float64(n))
		if d := float64(got - int64(n)); d > 0.03*float64(n) || d < -0.03*float64(n) {
			t.Errorf("%d series: estimate %d", n, got)
		}
	}
}
