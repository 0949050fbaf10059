package adapter

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/query"
)

// testClock is a settable clock for the limits.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

// newLimitedHandler is newTestHandler with the limits of cfg on clock now.
func newLimitedHandler(t testing.TB, cfg limits.Config, now func() time.Time) *Handler {
	t.Helper()
	st := openEmbedded(t)
	m := newTestMapper(t, st)
	reg := prometheus.NewRegistry()
	l, err := limits.New(cfg, m.Layout(), reg, now)
	if err != nil {
		t.Fatal(err)
	}
	w := ingest.New(m, st, ingest.Options{Table: "tsdb", Limits: l})
	return newHandler(t, w, query.New(st, m, query.Options{}), Options{MaxRequestBytes: 8 << 20}, reg)
}

// seriesOf is a series of one sample with labels kv (name, value, ...).
func seriesOf(kv ...string) prompb.TimeSeries {
	s := prompb.TimeSeries{Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 1}}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Labels = append(s.Labels, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return s
}

// wideSeries is a series named metric with n labels, __name__ included.
func wideSeries(metric string, n int) prompb.TimeSeries {
	kv := []string{"__name__", metric}
	for i := 1; i < n; i++ {
		kv = append(kv, fmt.Sprintf("l%05d", i), "v")
	}
	return seriesOf(kv...)
}

// rejected returns the rejected-samples counter of reason.
func (h *Handler) rejected(reason string) float64 {
	return testutil.ToFloat64(h.samplesRejected.WithLabelValues(reason))
}

// TestPerSeriesLimits: each series that breaks a per-series limit gets a
// 400 naming it and the flag, counted by reason; the valid series of the
// same request is written. A series of 10 000 labels is refused before
// any UID is assigned (its time is printed).
func TestPerSeriesLimits(t *testing.T) {
	h := newLimitedHandler(t, limits.DefaultConfig(), nil)
	start := time.Now()
	rec := post(h, "/api/v1/write", writeBody(t,
		seriesOf("__name__", "fine", "job", "a"),
		wideSeries("thirtyone", 31),
		seriesOf("__name__", "longname", strings.Repeat("n", 1025), "v"),
		seriesOf("__name__", "longvalue", "l", strings.Repeat("v", 2049)),
		wideSeries("tenthousand", 10_000),
	))
	t.Logf("answered in %s: %d %s", time.Since(start), rec.Code, rec.Body)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", rec.Code)
	}
	for _, want := range []string{"4 samples or histograms rejected",
		`__name__="thirtyone"`, "--limits.max-label-names-per-series=30",
		`__name__="longname"`, "--limits.max-label-name-length=1024",
		`__name__="longvalue"`, "--limits.max-label-value-length=2048",
		`__name__="tenthousand"`, "60001-byte row key"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("answer lacks %q", want)
		}
	}
	for reason, want := range map[string]float64{limits.ReasonLabelNames: 1, limits.ReasonLabelNameLength: 1, limits.ReasonLabelValueLength: 1, limits.ReasonRowKey: 1} {
		if got := h.rejected(reason); got != want {
			t.Errorf("rejected{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(h.samplesWritten); got != 1 {
		t.Errorf("samples written %v, want 1 (the valid series)", got)
	}
	// With the label limits off, the row key's bound still refuses it (in
	// mapping, before UIDs): 400, not a store error.
	open := newLimitedHandler(t, limits.Config{}, nil)
	start = time.Now()
	rec = post(open, "/api/v1/write", writeBody(t, wideSeries("tenthousand", 10_000)))
	t.Logf("without limits: answered in %s: %d %.300s", time.Since(start), rec.Code, rec.Body)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "more than HBase's 32767") {
		t.Fatalf("without limits: %d %s, want 400 naming the row key bound", rec.Code, rec.Body)
	}
	if got := open.rejected(limits.ReasonRowKey); got != 1 {
		t.Errorf("without limits: rejected{reason=row_key_too_long} = %v", got)
	}
}

// TestSeriesPerRequestLimit: a request of more series than the limit gets
// 413 naming the flag, nothing of it is written, its samples are counted.
func TestSeriesPerRequestLimit(t *testing.T) {
	h := newLimitedHandler(t, limits.Config{MaxSeriesPerRequest: 3}, nil)
	var series []prompb.TimeSeries
	for i := range 4 {
		series = append(series, seriesOf("__name__", "m", "i", fmt.Sprint(i)))
	}
	rec := post(h, "/api/v1/write", writeBody(t, series...))
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "--limits.max-series-per-request=3") {
		t.Fatalf("4 series: %d %s, want 413 naming the flag", rec.Code, rec.Body)
	}
	if got := h.rejected(limits.ReasonSeriesPerRequest); got != 4 {
		t.Errorf("rejected{reason=max_series_per_request} = %v, want 4", got)
	}
	if got := testutil.ToFloat64(h.samplesWritten); got != 0 {
		t.Errorf("samples written %v", got)
	}
	if rec := post(h, "/api/v1/write", writeBody(t, series[:3]...)); rec.Code != http.StatusNoContent {
		t.Fatalf("3 series: %d %s", rec.Code, rec.Body)
	}
}

// TestNewSeriesRateLimit: new series beyond the token bucket get 429 with
// Retry-After, nothing of the request written; known series still pass;
// once the bucket refills the new series pass.
func TestNewSeriesRateLimit(t *testing.T) {
	clk := &testClock{t: time.Unix(1_700_000_000, 0)}
	h := newLimitedHandler(t, limits.Config{NewSeriesRate: 1, NewSeriesBurst: 2}, clk.now)
	known := writeBody(t, seriesOf("__name__", "m", "i", "1"), seriesOf("__name__", "m", "i", "2"), seriesOf("__name__", "m", "i", "3"))
	if rec := post(h, "/api/v1/write", known); rec.Code != http.StatusNoContent {
		t.Fatalf("3 new series with 2 tokens (the bucket goes into debt): %d %s", rec.Code, rec.Body)
	}
	fresh := writeBody(t, seriesOf("__name__", "m", "i", "1"), seriesOf("__name__", "m", "i", "4"))
	rec := post(h, "/api/v1/write", fresh)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), "--limits.new-series-rate") {
		t.Fatalf("a new series with the bucket in debt: %d Retry-After %q %s, want 429, 2", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if got := h.rejected(limits.ReasonNewSeriesRate); got != 2 {
		t.Errorf("rejected{reason=new_series_rate} = %v, want 2 (both samples of the request)", got)
	}
	if got := testutil.ToFloat64(h.samplesWritten); got != 3 {
		t.Errorf("samples written %v, want 3: nothing of the refused request", got)
	}
	if rec := post(h, "/api/v1/write", known); rec.Code != http.StatusNoContent {
		t.Fatalf("known series while limited: %d %s", rec.Code, rec.Body)
	}
	clk.t = clk.t.Add(2 * time.Second)
	if rec := post(h, "/api/v1/write", fresh); rec.Code != http.StatusNoContent {
		t.Fatalf("after Retry-After: %d %s", rec.Code, rec.Body)
	}
}

// TestActiveSeriesLimit: at the active-series limit new series get 400
// naming the flag, known series are still written; two windows later the
// series are no longer active.
func TestActiveSeriesLimit(t *testing.T) {
	clk := &testClock{t: time.Unix(1_700_000_000, 0)}
	h := newLimitedHandler(t, limits.Config{MaxActiveSeries: 3}, clk.now)
	known := writeBody(t, seriesOf("__name__", "m", "i", "1"), seriesOf("__name__", "m", "i", "2"), seriesOf("__name__", "m", "i", "3"))
	if rec := post(h, "/api/v1/write", known); rec.Code != http.StatusNoContent {
		t.Fatalf("3 series: %d %s", rec.Code, rec.Body)
	}
	clk.t = clk.t.Add(2 * time.Second) // past the estimate's cache
	rec := post(h, "/api/v1/write", writeBody(t, seriesOf("__name__", "m", "i", "1"), seriesOf("__name__", "m", "i", "4")))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `i="4"`) || !strings.Contains(rec.Body.String(), "--limits.max-active-series=3") {
		t.Fatalf("a 4th series: %d %s, want 400 naming it and the flag", rec.Code, rec.Body)
	}
	if got := h.rejected(limits.ReasonActiveSeries); got != 1 {
		t.Errorf("rejected{reason=max_active_series} = %v", got)
	}
	if got := testutil.ToFloat64(h.samplesWritten); got != 4 {
		t.Errorf("samples written %v, want 4 (the known series of the second request too)", got)
	}
	clk.t = clk.t.Add(2 * limits.ActiveSeriesWindow)
	if rec := post(h, "/api/v1/write", writeBody(t, seriesOf("__name__", "m", "i", "4"))); rec.Code != http.StatusNoContent {
		t.Fatalf("two windows later: %d %s", rec.Code, rec.Body)
	}
}

// TestPerSeriesLimitsV2: remote write 2.0 series get the same per-series
// limits; the Written headers count only what was stored.
func TestPerSeriesLimitsV2(t *testing.T) {
	h := newLimitedHandler(t, limits.DefaultConfig(), nil)
	smp := []writev2.Sample{{Value: 1, Timestamp: 1_700_000_000_000}}
	wide := []string{"__name__", "wide_v2"}
	for i := 1; i < 31; i++ {
		wide = append(wide, fmt.Sprintf("l%02d", i), "v")
	}
	rec := postCT(h, ctV2, v2Body(t,
		v2Series{lbls: []string{"__name__", "fine_v2", "job", "a"}, smps: smp},
		v2Series{lbls: wide, smps: smp},
		v2Series{lbls: []string{"__name__", "long_v2", "l", strings.Repeat("v", 2049)}, smps: smp},
	))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `__name__="wide_v2"`) || !strings.Contains(rec.Body.String(), `__name__="long_v2"`) {
		t.Fatalf("%d %s, want 400 naming wide_v2 and long_v2", rec.Code, rec.Body)
	}
	if got := written(rec); got != "1/0/0" {
		t.Errorf("written %s, want 1/0/0", got)
	}
	if h.rejected(limits.ReasonLabelNames) != 1 || h.rejected(limits.ReasonLabelValueLength) != 1 {
		t.Errorf("rejected: names %v, value length %v", h.rejected(limits.ReasonLabelNames), h.rejected(limits.ReasonLabelValueLength))
	}
}
