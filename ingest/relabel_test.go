package ingest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/ingest/relabelmemo"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// relabelConfigs parses Prometheus relabel configurations from YAML, as
// the runtime configuration holds them.
func relabelConfigs(t *testing.T, y string) []*relabel.Config {
	t.Helper()
	cfgs, err := relabelmemo.ParseConfigs([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfgs
}

// uidRows counts the rows of the UID table: a name assigned a UID adds
// two (forward and reverse).
func uidRows(s *teststack.Stack) int { return len(s.Keys(s.Tables.UID)) }

// TestRelabel: metric_relabel_configs drop, rewrite and hash series
// before they are resolved: a dropped series is not stored, gets no UID
// (the UID table's rows unchanged) and is counted as relabel_drop, with
// no error; a series relabeled to no metric name or no label is refused
// (a *RejectError naming it) while the rest is written.
func TestRelabel(t *testing.T) {
	s := teststack.New(t, teststack.Options{})
	s.Writer.SetRelabel(relabelConfigs(t, `
- source_labels: [__name__]
  regex: debug_.*
  action: drop
- regex: request_id
  action: labeldrop
- source_labels: [env]
  regex: staging
  target_label: env
  replacement: stage
- source_labels: [instance]
  modulus: 4
  target_label: shard
  action: hashmod
- source_labels: [__name__]
  regex: nameless
  target_label: __name__
  replacement: ""
`))
	before := uidRows(s)
	res, err := s.TryWrite(
		at(1, "debug_heap", "job", "x", "secret_value", "never-stored"),
		at(2, "up", "job", "a", "request_id", "r-17", "env", "staging", "instance", "h1:9090"),
		at(3, "up", "job", "b", "instance", "h2:9090"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 2 || res.Rejected["relabel_drop"] != 1 {
		t.Errorf("result %+v, want 2 written and 1 relabel_drop", res)
	}
	// hashmod is Prometheus's: md5 of the value, mod 4.
	want := relabelled(t, []string{"h1:9090", "h2:9090"})
	want = "{__name__=\"up\", env=\"stage\", instance=\"h1:9090\", job=\"a\", shard=\"" + want[:1] + "\"} 2\n" +
		"{__name__=\"up\", instance=\"h2:9090\", job=\"b\", shard=\"" + want[1:] + "\"} 3\n"
	if got := stored(s); got != want {
		t.Errorf("stored:\n%swant\n%s", got, want)
	}
	// Only names of the kept series got UIDs: up, job, a, b, env, stage,
	// instance, the two instances, shard and the shards (one or two).
	after := uidRows(s)
	for _, name := range []string{"debug_heap", "secret_value", "never-stored", "request_id", "r-17", "staging"} {
		if _, ok := s.UIDs.CachedID(0, []byte(name)); ok {
			t.Errorf("metric name %q got a UID", name)
		}
	}
	if res, err := s.TryWrite(at(4, "debug_other", "job", "y", "fresh_label", "v")); err != nil || res.Rejected["relabel_drop"] != 1 {
		t.Errorf("a dropped series only: %+v, %v", res, err)
	}
	if got := uidRows(s); got != after {
		t.Errorf("a dropped series changed the UID table: %d rows, were %d (before any write %d)", got, after, before)
	}

	_, err = s.TryWrite(at(5, "nameless", "job", "n"), at(6, "up", "job", "c", "instance", "h1:9090"))
	var rej *ingest.RejectError
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "no metric name") || !strings.Contains(err.Error(), `__name__="nameless"`) {
		t.Fatalf("a series left without a name: %v, want a *RejectError naming it", err)
	}
	if got := stored(s); !strings.Contains(got, `job="c"`) {
		t.Errorf("the rest of the request was not written:\n%s", got)
	}
}

// relabelled returns the shard hashmod 4 gives each instance, as
// Prometheus's relabel package computes it.
func relabelled(t *testing.T, instances []string) string {
	t.Helper()
	cfgs := relabelConfigs(t, "- source_labels: [instance]\n  modulus: 4\n  target_label: shard\n  action: hashmod\n")
	var out string
	for _, in := range instances {
		b := labels.NewBuilder(labels.FromStrings("instance", in))
		relabel.ProcessBuilder(b, cfgs...)
		out += b.Get("shard")
	}
	return out
}

// TestRelabelChange: a relabel configuration replaced takes effect for
// the series already cached (their next write is relabeled anew), and
// removed, series are stored as sent again.
func TestRelabelChange(t *testing.T) {
	s := teststack.New(t, teststack.Options{})
	s.Writer.SetRelabel(relabelConfigs(t, "- target_label: env\n  replacement: one\n"))
	s.Write(at(1, "m", "job", "a"))
	// The same configuration parsed again (a reload of another tenant's
	// change) keeps the cache.
	epoch := s.Mapper.SeriesEpoch()
	s.Writer.SetRelabel(relabelConfigs(t, "- target_label: env\n  replacement: one\n"))
	if got := s.Mapper.SeriesEpoch(); got != epoch {
		t.Errorf("an equal configuration emptied the series cache: epoch %d -> %d", epoch, got)
	}
	s.Writer.SetRelabel(relabelConfigs(t, "- target_label: env\n  replacement: two\n"))
	s.Write(at(2, "m", "job", "a"))
	s.Writer.SetRelabel(nil)
	s.Write(at(3, "m", "job", "a"))
	want := "{__name__=\"m\", env=\"one\", job=\"a\"} 1\n{__name__=\"m\", env=\"two\", job=\"a\"} 2\n{__name__=\"m\", job=\"a\"} 3\n"
	if got := stored(s); got != want {
		t.Errorf("stored:\n%swant\n%s", got, want)
	}
}

// TestSeriesPerMetric: with max_global_series_per_metric 3, a metric's
// fourth series is refused (400 naming the limit, the metric and the
// series) while its three keep writing and other metrics write new
// series; two windows later the metric's series not written since no
// longer count.
func TestSeriesPerMetric(t *testing.T) {
	now := time.Unix(1700000000, 0)
	cfg := limits.DefaultConfig()
	cfg.MaxSeriesPerMetric = 3
	lim, err := limits.New(cfg, mapping.DefaultLayout(), prometheus.NewRegistry(), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	s := teststack.New(t, teststack.Options{Ingest: func(o *ingest.Options) { o.Limits = lim }})
	s.Write(at(1, "m", "i", "1"), at(1, "m", "i", "2"), at(1, "m", "i", "3"))
	res, err := s.TryWrite(at(2, "m", "i", "1"), at(2, "m", "i", "4"), at(2, "other", "i", "4"), at(2, "m", "i", "2"))
	var rej *ingest.RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("the fourth series: %v, want a *RejectError", err)
	}
	for _, want := range []string{"per-metric series limit of 3 exceeded", `metric "m"`, `i="4"`, "max_global_series_per_metric"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if res.Samples != 3 || res.Rejected[limits.ReasonSeriesPerMetric] != 1 {
		t.Errorf("result %+v, want 3 written, 1 refused", res)
	}
	// The same fourth series in a request of its own: still refused; the
	// known ones pass.
	if _, err := s.TryWrite(at(3, "m", "i", "4")); err == nil {
		t.Error("the fourth series passed on its own")
	}
	s.Write(at(3, "m", "i", "3"))
	// Series 1 and 2 not written for two windows, 3 written in between.
	now = now.Add(limits.ActiveSeriesWindow)
	s.Write(at(4, "m", "i", "3"))
	now = now.Add(limits.ActiveSeriesWindow)
	s.Write(at(5, "m", "i", "3"))
	if res, err := s.TryWrite(at(6, "m", "i", "4"), at(6, "m", "i", "5")); err != nil || res.Samples != 2 {
		t.Errorf("after the old series aged out: %+v, %v, want both new series written", res, err)
	}
	if _, err := s.TryWrite(at(7, "m", "i", "6")); err == nil {
		t.Error("a fourth series passed after the window")
	}
}
