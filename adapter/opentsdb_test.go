package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series/uid"
)

// postPut sends an /api/put body to h.
func postPut(h http.Handler, query, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/api/put"+query, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestOpenTSDBPutRoundTrip: points put in seconds and milliseconds,
// integers and floats, read back by remote read with their values and
// times (the cells' bytes are held to a real TSD's by test/e2e/interop).
func TestOpenTSDBPutRoundTrip(t *testing.T) {
	st := openEmbedded(t)
	h := newTestHandler(t, st)
	body := `[{"metric":"sys.cpu.user","timestamp":1700000000,"value":42,"tags":{"host":"web01","cpu":"0"}},
	{"metric":"sys.cpu.user","timestamp":1700000015500,"value":"0.1","tags":{"host":"web01","cpu":"0"}},
	{"metric":"sys.cpu.user","timestamp":1700000030,"value":-9000000000,"tags":{"cpu":"0","host":"web01"}},
	{"metric":"sys.cpu.user","timestamp":1700000045,"value":1e3,"tags":{"host":"web02","cpu":"0"}}]`
	if rec := postPut(h, "", body); rec.Code != http.StatusNoContent {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	resp := readSamples(t, h, &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: 1699999999000, EndTimestampMs: 1700000100000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "sys.cpu.user"}}}}})
	got := map[string][]prompb.Sample{}
	for _, ts := range resp.Results[0].Timeseries {
		var host string
		for _, l := range ts.Labels {
			if l.Name == "host" {
				host = l.Value
			}
		}
		got[host] = ts.Samples
	}
	want := map[string][]prompb.Sample{
		"web01": {{Timestamp: 1700000000000, Value: 42}, {Timestamp: 1700000015500, Value: 0.1}, {Timestamp: 1700000030000, Value: -9e9}},
		"web02": {{Timestamp: 1700000045000, Value: 1000}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read %v\nwant %v", got, want)
	}
}

// TestOpenTSDBPutUnknownMetric: without auto-created metrics a metric
// without a UID is refused as a TSD refuses it; once it has one (a
// remote write made it), its points are stored.
func TestOpenTSDBPutUnknownMetric(t *testing.T) {
	st := openEmbedded(t)
	m := newTestMapper(t, st)
	w := ingest.New(m, st, ingest.Options{Table: "tsdb"})
	uids := m.UIDs()
	h := newHandler(t, w, query.New(st, m, query.Options{}), Options{MaxRequestBytes: 1 << 20, OpenTSDB: OpenTSDBOptions{
		MetricExists: func(ctx context.Context, metric string) (bool, error) {
			_, err := uids.ID(ctx, uid.KindMetric, metric)
			if errors.Is(err, uid.ErrNoSuchName) {
				return false, nil
			}
			return err == nil, err
		}}}, prometheus.NewRegistry())
	body := `{"metric":"new.metric","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`
	rec := postPut(h, "?details", body)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"error":"Unknown metric"`) {
		t.Fatalf("unknown metric: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h, "/api/v1/write", writeBody(t, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "new.metric"}, {Name: "x", Value: "y"}},
		Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}})); rec.Code != http.StatusNoContent {
		t.Fatalf("remote write: %d %s", rec.Code, rec.Body)
	}
	if rec := postPut(h, "?summary", body); rec.Code != http.StatusOK || rec.Body.String() != `{"success":1,"failed":0}` {
		t.Fatalf("known metric: %d %s", rec.Code, rec.Body)
	}
}

// TestOpenTSDBPutFailures: the store's trouble is a 503 in the TSD's
// error JSON with Retry-After (the sender retries; nothing is lost); a
// series a limit refuses is that point's error, the others stored.
func TestOpenTSDBPutFailures(t *testing.T) {
	st := openEmbedded(t)
	fs := &failingStore{Store: st, fail: true}
	h := newTestHandlerPut(t, st, fs, nil)
	body := `{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`
	rec := postPut(h, "", body)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.HasPrefix(rec.Body.String(), `{"error":{"code":503,"message":"Storage exception: `) {
		t.Fatalf("store down: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	cfg := limits.DefaultConfig()
	cfg.MaxLabelValueLength = 10
	lim, err := limits.New(cfg, mapping.DefaultLayout(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h = newTestHandlerPut(t, st, st, lim)
	rec = postPut(h, "?details", `[`+body+`,{"metric":"m","timestamp":1700000000,"value":2,"tags":{"host":"`+strings.Repeat("v", 11)+`"}}]`)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"success":1,"failed":1`) || !strings.Contains(rec.Body.String(), "--limits.max-label-value-length=10") {
		t.Fatalf("a series over a limit: %d %s", rec.Code, rec.Body)
	}
}

// BenchmarkOpenTSDBPut measures /api/put of 1000 points (100 series ×
// 10, integers and floats, as tcollector's HTTP mode sends them) to the
// store's Puts, the store excluded, caches warm.
func BenchmarkOpenTSDBPut(b *testing.B) {
	const series, per = 100, 10
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range series {
		for j := range per {
			if sb.Len() > 1 {
				sb.WriteByte(',')
			}
			v := fmt.Sprint(i * j)
			if j%2 == 1 {
				v = fmt.Sprint(float64(i*j) + 0.25)
			}
			fmt.Fprintf(&sb, `{"metric":"sys.cpu.user","timestamp":%d,"value":%s,"tags":{"host":"web%03d","cpu":"%d"}}`, 1700000000+j*15, v, i, i%8)
		}
	}
	sb.WriteByte(']')
	benchPost(b, "/api/put", http.Header{"Content-Type": {"application/json"}}, []byte(sb.String()), series*per, "point")
}
