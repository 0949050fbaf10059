package testproc

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/promhbase/promhbase/test/testkit/poll"
)

// MetricSample is one sample of a /metrics page: a counter's, gauge's or
// untyped metric's (histograms and summaries are left out).
type MetricSample struct {
	Labels map[string]string
	Value  float64
}

// MetricPage is a parsed /metrics page, by metric name.
type MetricPage map[string][]MetricSample

// FetchMetrics reads and parses the /metrics page of the process serving
// at base (http://host:port).
func FetchMetrics(ctx context.Context, base string) (MetricPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s/metrics: %w", base, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bufio.NewReader(resp.Body))
	if err != nil {
		return nil, fmt.Errorf("parse %s/metrics: %w", base, err)
	}
	page := MetricPage{}
	for _, mf := range mfs {
		page.add(mf)
	}
	return page, nil
}

// GatherSum gathers g's metrics in process and returns the Sum of name's
// samples whose labels match (name, value pairs); it fails t when g
// fails or no sample matches.
func GatherSum(t testing.TB, g prometheus.Gatherer, name string, match ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	page := MetricPage{}
	for _, mf := range mfs {
		page.add(mf)
	}
	if !page.Has(name, match...) {
		t.Fatalf("no metric %s%q gathered", name, match)
	}
	return page.Sum(name, match...)
}

// add puts the counter, gauge and untyped samples of mf in p.
func (p MetricPage) add(mf *dto.MetricFamily) {
	for _, m := range mf.GetMetric() {
		s := MetricSample{Labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.Labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			s.Value = m.GetCounter().GetValue()
		case m.Gauge != nil:
			s.Value = m.GetGauge().GetValue()
		case m.Untyped != nil:
			s.Value = m.GetUntyped().GetValue()
		default:
			continue
		}
		p[mf.GetName()] = append(p[mf.GetName()], s)
	}
}

// Sum adds the samples of a metric whose labels have the given values
// (name, value pairs).
func (p MetricPage) Sum(name string, match ...string) float64 {
	var total float64
	for _, s := range p[name] {
		if s.matches(match) {
			total += s.Value
		}
	}
	return total
}

// Has reports whether the page holds a sample of a metric whose labels
// have the given values (name, value pairs).
func (p MetricPage) Has(name string, match ...string) bool {
	return slices.ContainsFunc(p[name], func(s MetricSample) bool { return s.matches(match) })
}

// matches reports whether s's labels have the values of match (name,
// value pairs).
func (s MetricSample) matches(match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if s.Labels[match[i]] != match[i+1] {
			return false
		}
	}
	return true
}

// MaxOf returns the largest sample of a metric, and whether there is one.
func (p MetricPage) MaxOf(name string) (float64, bool) {
	v, ok := math.Inf(-1), false
	for _, s := range p[name] {
		v, ok = max(v, s.Value), true
	}
	return v, ok
}

// WaitMetrics polls the /metrics page of the process serving at base
// (see FetchMetrics) until done holds of it, and returns that page. It
// fails the test after bound with what, and with what done last said of
// the page (or why the page could not be read).
func WaitMetrics(t testing.TB, base string, bound time.Duration, what string, done func(MetricPage) (bool, string)) MetricPage {
	t.Helper()
	var page MetricPage
	poll.Until(t, bound, 50*time.Millisecond, what, func() (bool, string) {
		p, err := FetchMetrics(t.Context(), base)
		if err != nil {
			return false, err.Error()
		}
		page = p
		return done(p)
	})
	return page
}
