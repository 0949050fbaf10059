package limits

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
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

func TestAdmitNew(t *testing.T) {
	clk := newClock()
	l, err := New(Config{NewSeriesRate: 5, NewSeriesBurst: 10}, mapping.DefaultLayout(), nil, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	step := func(n int, wantRetry time.Duration) {
		t.Helper()
		err := l.AdmitNew(n)
		var rl *RateLimitError
		switch {
		case wantRetry == 0 && err != nil:
			t.Fatalf("admit %d: %v", n, err)
		case wantRetry != 0 && !errors.As(err, &rl):
			t.Fatalf("admit %d: %v, want a RateLimitError", n, err)
		case wantRetry != 0 && rl.RetryAfter != wantRetry:
			t.Fatalf("admit %d: retry after %s, want %s", n, rl.RetryAfter, wantRetry)
		}
	}
	step(10, 0)               // the burst
	step(1, time.Second)      // empty: 1 token takes 0.2 s, rounded up to 1 s
	clk.add(time.Second)      // 5 tokens
	step(100, 0)              // more than the burst passes, into debt (-95)
	step(1, 19*time.Second)   // (1+95)/5 = 19.2 s
	clk.add(19 * time.Second) // -95 + 95 = 0: still empty
	step(1, time.Second)
	clk.add(time.Hour) // refilled to the burst, not beyond
	step(10, 0)
	step(1, time.Second)
	step(0, 0) // no new series: never limited
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{{NewSeriesRate: -1}, {NewSeriesRate: 1}, {NewSeriesBurst: -1}} {
		if _, err := New(c, mapping.DefaultLayout(), nil, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
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
		got := gauge(t, reg, "promhbase_active_series")
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
	if got := gauge(t, reg, "promhbase_active_series"); got != 0 {
		t.Fatalf("two windows later: estimate %.0f", got)
	}
}

// gauge returns the value of the gauge name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
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
