package adapter

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/histogram"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/promhbase/promhbase/ingest/limits"
)

// TestIngestionRateLimit: samples and native histograms beyond the
// ingestion token bucket get 429 with Retry-After naming the flag, nothing
// of the request written (no series created either), all its samples
// counted; a request larger than the burst passes into debt once the
// bucket is full; once the bucket refills the request passes; SetConfig
// raising the rate takes effect at once. Both protocols.
func TestIngestionRateLimit(t *testing.T) {
	const t0 = 1_700_000_000_000
	h1 := writev2.FromIntHistogram(0, t0, &histogram.Histogram{Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}})
	for _, tc := range []struct {
		name string
		// body holds 3 samples (or histograms) of series i (one new series
		// per body for 1.0, fresh each call).
		body func(t *testing.T, i string) []byte
		post func(h *Handler, body []byte) *httptest.ResponseRecorder
	}{
		{"1.0", func(t *testing.T, i string) []byte {
			s := seriesOf("__name__", "m", "i", i)
			s.Samples = append(s.Samples, s.Samples[0], s.Samples[0])
			s.Samples[1].Timestamp++
			s.Samples[2].Timestamp += 2
			return writeBody(t, s)
		}, func(h *Handler, body []byte) *httptest.ResponseRecorder { return post(h, "/api/v1/write", body) }},
		{"2.0 histograms", func(t *testing.T, i string) []byte {
			h2, h3 := h1, h1
			h2.Timestamp, h3.Timestamp = t0+1, t0+2
			return v2Body(t, v2Series{lbls: []string{"__name__", "h", "i", i}, hists: []writev2.Histogram{h1, h2, h3}})
		}, func(h *Handler, body []byte) *httptest.ResponseRecorder { return postCT(h, ctV2, body) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &testClock{t: time.Unix(1_700_000_000, 0)}
			cfg := limits.Config{IngestionRate: 1, IngestionBurst: 2}
			h := newLimitedHandler(t, cfg, clk.now)
			// 3 samples with 2 tokens: into debt (-1).
			if rec := tc.post(h, tc.body(t, "1")); rec.Code != http.StatusNoContent {
				t.Fatalf("3 samples with a full bucket of 2: %d %s", rec.Code, rec.Body)
			}
			rec := tc.post(h, tc.body(t, "2"))
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), "3 samples exceed --limits.ingestion-rate") {
				t.Fatalf("the bucket in debt: %d Retry-After %q %s, want 429, 2", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
			}
			if got := h.rejected(limits.ReasonIngestionRate); got != 3 {
				t.Errorf("rejected{reason=ingestion_rate} = %v, want 3", got)
			}
			if got := testutil.ToFloat64(h.samplesWritten) + testutil.ToFloat64(h.histogramsWritten); got != 3 {
				t.Errorf("written %v, want 3: nothing of the refused request", got)
			}
			clk.t = clk.t.Add(2 * time.Second)
			if rec := tc.post(h, tc.body(t, "2")); rec.Code != http.StatusNoContent {
				t.Fatalf("after Retry-After: %d %s", rec.Code, rec.Body)
			}
		})
	}
}
