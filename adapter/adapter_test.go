package adapter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/ingest/metadata"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/test/testkit/benchdata"
)

// TestStatusFor is the spec of statusFor, the one mapping of errors to
// HTTP statuses: one case per branch, each error wrapped as the handlers
// wrap it, and the precedence where an error matches more than one branch
// (errors.Join), which decides between "never retry" (4xx) and "retry"
// (5xx).
func TestStatusFor(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("x: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, http.StatusNoContent},
		{"method", wrap(errMethod), http.StatusMethodNotAllowed},
		{"not elected", wrap(hatracker.ErrNotElected), http.StatusAccepted},
		{"rate limited", wrap(&limits.RateLimitError{NewSeries: 1, RetryAfter: time.Second}), http.StatusTooManyRequests},
		{"body too large", wrap(errTooLarge), http.StatusRequestEntityTooLarge},
		{"too many samples", wrap(query.ErrTooManySamples), http.StatusRequestEntityTooLarge},
		{"too many bytes", wrap(query.ErrTooManyBytes), http.StatusRequestEntityTooLarge},
		{"too many series", wrap(limits.ErrTooManySeries), http.StatusRequestEntityTooLarge},
		{"unsupported media", wrap(errUnsupportedMedia), http.StatusUnsupportedMediaType},
		{"rejected", &ingest.RejectError{}, http.StatusBadRequest},
		{"rejected wrapped", wrap(&ingest.RejectError{}), http.StatusBadRequest},
		{"bad request", wrap(errBadRequest), http.StatusBadRequest},
		{"malformed", wrap(wire.ErrMalformed), http.StatusBadRequest},
		{"invalid", wrap(store.ErrInvalid), http.StatusBadRequest},
		{"too many HA clusters", wrap(hatracker.ErrTooManyClusters), http.StatusBadRequest},
		{"busy", wrap(errBusy), http.StatusServiceUnavailable},
		{"body timeout", wrap(errBodyTimeout), http.StatusServiceUnavailable},
		{"unavailable", wrap(store.ErrUnavailable), http.StatusServiceUnavailable},
		{"deadline", wrap(context.DeadlineExceeded), http.StatusServiceUnavailable},
		{"canceled", wrap(context.Canceled), http.StatusServiceUnavailable},
		{"table not found", wrap(store.ErrTableNotFound), http.StatusInternalServerError},
		{"anything else", errors.New("anything else"), http.StatusInternalServerError},
		// Precedence: the first branch that matches wins.
		{"not elected before too many series", errors.Join(limits.ErrTooManySeries, hatracker.ErrNotElected), http.StatusAccepted},
		{"rate limited before too large", errors.Join(errTooLarge, &limits.RateLimitError{}), http.StatusTooManyRequests},
		{"too large before bad request", errors.Join(errBadRequest, query.ErrTooManyBytes), http.StatusRequestEntityTooLarge},
		{"bad request before unavailable", errors.Join(store.ErrUnavailable, wire.ErrMalformed), http.StatusBadRequest},
		{"unavailable before internal", errors.Join(store.ErrTableNotFound, context.Canceled), http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusFor(tc.err); got != tc.want {
				t.Errorf("statusFor(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

// failingStore fails every Put, as a store that is down does.
type failingStore struct {
	store.Store
	mu    sync.Mutex
	fail  bool
	calls int
}

func (f *failingStore) Put(ctx context.Context, table string, puts []store.Put) error {
	f.mu.Lock()
	f.calls++
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return fmt.Errorf("region server gone: %w", store.ErrUnavailable)
	}
	return f.Store.Put(ctx, table, puts)
}

func newTestHandler(t testing.TB, st store.Store) *Handler {
	t.Helper()
	return newTestHandlerPut(t, st, st, nil)
}

// newTestHandlerPut is newTestHandler whose writer puts data and
// exemplars through put, with limits lim (nil: none).
func newTestHandlerPut(t testing.TB, st store.Store, put ingest.Putter, lim *limits.Limits, ha ...ingest.HA) *Handler {
	t.Helper()
	m := newTestMapper(t, st)
	opts := ingest.Options{Table: "tsdb", ExemplarTable: "tsdb-exemplar", ExemplarSlots: ingest.DefaultExemplarSlots,
		Metadata: metadata.NewMetas(m.UIDs(), st, 0), Limits: lim}
	if len(ha) > 0 {
		opts.HA = ha[0]
	}
	w := ingest.New(m, put, opts)
	return newHandler(t, w, query.New(st, m, query.Options{}), Options{MaxRequestBytes: 1 << 20,
		OpenTSDB: OpenTSDBOptions{AutoCreateMetrics: true}}, prometheus.NewRegistry())
}

// swapPutter puts through Putter, which a test may change between
// requests.
type swapPutter struct{ ingest.Putter }

// newTestMapper returns a Mapper over st's tsdb-uid table, default layout.
func newTestMapper(t testing.TB, st store.Store) *series.Mapper {
	t.Helper()
	uids, err := uid.NewUIDs(st, mapping.DefaultLayout(), uid.UIDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return series.NewMapper(uids, mapping.DefaultLayout(), 0)
}

// newHandler is New with a silent logger, failing the test on error.
func newHandler(t testing.TB, w *ingest.Writer, q *query.Querier, opts Options, reg *prometheus.Registry) *Handler {
	t.Helper()
	h, err := New(w, q, opts, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func openEmbedded(t testing.TB) store.Store {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Tables: []string{"tsdb", "tsdb-uid", "tsdb-exemplar", "tsdb-ha"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func writeBody(t testing.TB, series ...prompb.TimeSeries) []byte {
	t.Helper()
	data, err := proto.Marshal(&prompb.WriteRequest{Timeseries: series})
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, data)
}

func post(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// readSamples sends rr to h's /api/v1/read (samples, snappy) and returns
// the answer; a status other than 200 fails the test.
func readSamples(t testing.TB, h http.Handler, rr *prompb.ReadRequest) *prompb.ReadResponse {
	t.Helper()
	data, err := proto.Marshal(rr)
	if err != nil {
		t.Fatal(err)
	}
	rec := post(h, "/api/v1/read", snappy.Encode(nil, data))
	if rec.Code != http.StatusOK {
		t.Fatalf("read: %d %s", rec.Code, rec.Body)
	}
	dec, err := snappy.Decode(nil, rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var resp prompb.ReadResponse
	if err := proto.Unmarshal(dec, &resp); err != nil {
		t.Fatal(err)
	}
	return &resp
}

// TestStoreErrorIs5xx: a write the store did not acknowledge answers 5xx so
// that Prometheus retries, and the retry lands.
func TestStoreErrorIs5xx(t *testing.T) {
	fs := &failingStore{Store: openEmbedded(t)}
	h := newTestHandler(t, fs)
	body := writeBody(t, prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "a", Value: "b"}},
		Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 1}},
	})
	fs.fail = true
	if rec := post(h, "/api/v1/write", body); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("write with the store down: %d (Retry-After %q) %s, want 503 with Retry-After 1", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	fs.fail = false
	if rec := post(h, "/api/v1/write", body); rec.Code != http.StatusNoContent {
		t.Fatalf("retry: %d %s, want 204", rec.Code, rec.Body)
	}
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: 0, EndTimestampMs: 2_000_000_000_000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "m"}}}}}
	resp := readSamples(t, h, rr)
	if len(resp.Results) != 1 || len(resp.Results[0].Timeseries) != 1 || len(resp.Results[0].Timeseries[0].Samples) != 1 {
		t.Fatalf("read after retry = %v, want one series with one sample", resp.Results)
	}
}

func TestReadErrors(t *testing.T) {
	h := newTestHandler(t, openEmbedded(t))
	for _, tc := range []struct {
		name string
		req  *prompb.ReadRequest
		want int
	}{
		{"bad regex", &prompb.ReadRequest{Queries: []*prompb.Query{{Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "a", Value: "("}}}}}, 400},
		{"unknown response type", &prompb.ReadRequest{AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{7}}, 400},
		{"no queries", &prompb.ReadRequest{}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := proto.Marshal(tc.req)
			if rec := post(h, "/api/v1/read", snappy.Encode(nil, data)); rec.Code != tc.want {
				t.Errorf("status %d %s, want %d", rec.Code, rec.Body, tc.want)
			}
		})
	}
	if rec := post(h, "/api/v1/read", []byte("garbage")); rec.Code != 400 {
		t.Errorf("garbage read body: %d, want 400", rec.Code)
	}
}

// nopPutter acknowledges every Put without storing it.
type nopPutter struct{ puts, cells int }

func (n *nopPutter) Put(_ context.Context, _ string, puts []store.Put) error {
	n.puts += len(puts)
	for _, p := range puts {
		n.cells += len(p.Cells)
	}
	return nil
}

// BenchmarkWritePath measures the write path from the snappy HTTP body to
// the store's Puts, the store excluded: a realistic batch of 2000 series
// with one sample and 10 labels each, UID caches warm.

// BenchmarkWritePath: remote write 1.0, 2000 series × 1 sample, 10 labels,
// caches warm, the store a no-op.
func BenchmarkWritePath(b *testing.B) {
	benchWrite(b, writeBody(b, benchdata.Series()...), "application/x-protobuf", 2000, "sample")
}

// BenchmarkWritePathV2: the same series with remote write 2.0, the symbol
// table built as Prometheus builds it.
func BenchmarkWritePathV2(b *testing.B) {
	benchWrite(b, snappy.Encode(nil, benchdata.V2(b)), ctV2, 2000, "sample")
}

// BenchmarkWriteHistograms: 2000 series × 1 native histogram of 20
// buckets (two spans), remote write 2.0.
func BenchmarkWriteHistograms(b *testing.B) {
	h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128, Count: 400, ZeroCount: 3, Sum: 1234.5,
		PositiveSpans: []histogram.Span{{Offset: 5, Length: 12}, {Offset: 4, Length: 8}}}
	var total uint64 = 3
	for i := range 20 {
		d := int64(1 - 2*(i%2)) // counts 1, 2, 1, 2, ...
		if i == 0 {
			d = 1
		}
		h.PositiveBuckets = append(h.PositiveBuckets, d)
	}
	var c int64
	for _, d := range h.PositiveBuckets {
		c += d
		total += uint64(c)
	}
	h.Count = total
	var series []v2Series
	for i, s := range benchdata.Series() {
		var l []string
		for _, lb := range s.Labels {
			l = append(l, lb.Name, lb.Value)
		}
		series = append(series, v2Series{lbls: l, hists: []writev2.Histogram{writev2.FromIntHistogram(0, 1_700_000_000_123+int64(i), h)}})
	}
	benchWrite(b, v2Body(b, series...), ctV2, 2000, "histogram")
}

// benchWrite posts body again and again to /api/v1/write of a handler
// with the default limits whose caches are warm and whose store discards
// the Puts, and reports ns per sample (or histogram).
func benchWrite(b *testing.B, body []byte, ct string, n int, unit string, ha ...func(store.Store) ingest.HA) {
	benchPost(b, "/api/v1/write", http.Header{"Content-Encoding": {"snappy"}, "Content-Type": {ct}}, body, n, unit, ha...)
}

// benchPost is benchWrite for any write endpoint (path) and headers.
func benchPost(b *testing.B, path string, hdr http.Header, body []byte, n int, unit string, ha ...func(store.Store) ingest.HA) {
	st := openEmbedded(b)
	var haOpts []ingest.HA
	for _, f := range ha {
		haOpts = append(haOpts, f(st))
	}
	// With the default limits, as serve runs: every series is marked in
	// the active-series sketch.
	lim, err := limits.New(limits.DefaultConfig(), mapping.DefaultLayout(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	put := &swapPutter{st}
	h := newTestHandlerPut(b, st, put, lim, haOpts...)
	req := httptest.NewRequest(http.MethodPost, path, nil)
	req.Header = hdr
	rd := bytes.NewReader(body)
	rec := &discardWriter{h: http.Header{}}
	post := func() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		req.ContentLength = int64(len(body))
		rec.code = 0
		h.ServeHTTP(rec, req)
		if rec.code != http.StatusNoContent && rec.code != http.StatusOK { // OTLP's answer is 200
			b.Fatalf("status %d", rec.code)
		}
	}
	// Warm the caches through the real store once.
	post()
	np := &nopPutter{}
	put.Putter = np
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		post()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/"+unit)
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), unit+"s/s")
	if np.cells != b.N*n {
		b.Fatalf("%d cells put, want %d", np.cells, b.N*n)
	}
}

// BenchmarkWriteHA: the series of BenchmarkWritePath with an HA pair's
// labels (cluster and __replica__), written by the elected replica, with
// the HA tracker off (stored with both labels) and on (the election
// checked from the cache, the replica label dropped from every series),
// for both protocols: the cost of HA deduplication on the write path.
func BenchmarkWriteHA(b *testing.B) {
	series := benchdata.Series()
	for i := range series {
		// Sorted, as Prometheus sends them (external labels merged in).
		series[i].Labels = append(series[i].Labels, prompb.Label{Name: "__replica__", Value: "replica-a"}, prompb.Label{Name: "cluster", Value: "pair"})
		slices.SortFunc(series[i].Labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	}
	v2, err := benchdata.V2Request(series)
	if err != nil {
		b.Fatal(err)
	}
	tracker := func(st store.Store) ingest.HA {
		tr, err := hatracker.New(st, hatracker.Config{Table: "tsdb-ha", ClusterLabel: "cluster", ReplicaLabel: "__replica__",
			FailoverTimeout: 30 * time.Second, UpdateTimeout: 15 * time.Second, UpdateTimeoutJitterMax: 5 * time.Second}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return ingest.HA{Tracker: tr, ClusterLabel: "cluster", ReplicaLabel: "__replica__", Tenant: hatracker.DefaultTenant}
	}
	for _, p := range []struct {
		name, ct string
		body     []byte
	}{{"v1", "application/x-protobuf", writeBody(b, series...)}, {"v2", ctV2, snappy.Encode(nil, v2)}} {
		b.Run(p.name+"/off", func(b *testing.B) { benchWrite(b, p.body, p.ct, 2000, "sample") })
		b.Run(p.name+"/on", func(b *testing.B) { benchWrite(b, p.body, p.ct, 2000, "sample", tracker) })
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(c int)           { d.code = c }

// blockingPutter holds every Put until released.
type blockingPutter struct {
	entered chan struct{}
	release chan struct{}
}

// It ignores the context, so the first write keeps its slot until the
// test releases it.
func (b *blockingPutter) Put(context.Context, string, []store.Put) error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

// TestConcurrencyBound: with every slot taken, a further write waits for
// one, then answers 503 (so Prometheus retries) instead of decoding. The
// wait is on a synctest bubble's clock.
func TestConcurrencyBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openEmbedded(t)
		m := newTestMapper(t, st)
		bp := &blockingPutter{entered: make(chan struct{}, 4), release: make(chan struct{})}
		h := newHandler(t, ingest.New(m, bp, ingest.Options{Table: "tsdb"}), query.New(st, m, query.Options{}),
			Options{MaxConcurrentRequests: 1, WriteTimeout: 300 * time.Millisecond}, prometheus.NewRegistry())
		body := writeBody(t, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "m"}},
			Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 1}},
		})
		first := make(chan int)
		go func() { first <- post(h, "/api/v1/write", body).Code }()
		<-bp.entered // the first write holds the only slot
		if rec := post(h, "/api/v1/write", body); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "too many requests") {
			t.Errorf("second write while the slot is taken: %d %q, want 503", rec.Code, rec.Body)
		}
		close(bp.release)
		if code := <-first; code != http.StatusNoContent {
			t.Errorf("first write: %d, want 204", code)
		}
		if rec := post(h, "/api/v1/write", body); rec.Code != http.StatusNoContent {
			t.Errorf("write after the slot freed: %d %s, want 204", rec.Code, rec.Body)
		}
	})
}

// TestSnappyClaimBounded: a body whose snappy header claims more than its
// bytes can expand to is refused before anything of that size is
// allocated; the densest real snappy body still passes the bound.
func TestSnappyClaimBounded(t *testing.T) {
	h := newTestHandler(t, openEmbedded(t))
	claim := binary.AppendUvarint(nil, 1000000)      // 1 MB claimed, within --web.max-request-bytes
	body := slices.Concat(claim, []byte{0x00, 0x00}) // then almost nothing
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	rec := post(h, "/api/v1/write", body)
	runtime.ReadMemStats(&ms)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "claims") {
		t.Errorf("5-byte body claiming 1 MB: %d %s, want 400 naming the claim", rec.Code, rec.Body)
	}
	if grown := ms.TotalAlloc - before; grown > 500_000 {
		t.Errorf("the request allocated %d bytes", grown)
	}
	dense := snappy.Encode(nil, make([]byte, 4<<20))
	if n := 4 << 20; n > maxSnappyExpansion(len(dense)) {
		t.Errorf("4 MiB of zeros compress to %d bytes, whose bound %d is below 4 MiB", len(dense), maxSnappyExpansion(len(dense)))
	}
}

// TestHADedup: with the HA tracker on, the first replica of a cluster is
// elected and stored without its replica label (204); the other replica's
// writes are answered 202 and dropped; a write with only one of the two
// labels is stored as it is; a cluster beyond the limit gets 400.
func TestHADedup(t *testing.T) {
	st := openEmbedded(t)
	tr, err := hatracker.New(st, hatracker.Config{Table: "tsdb-ha", ClusterLabel: "cluster", ReplicaLabel: "__replica__",
		FailoverTimeout: 30 * time.Second, UpdateTimeout: 15 * time.Second, MaxClusters: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHandlerPut(t, st, st, nil, ingest.HA{Tracker: tr, ClusterLabel: "cluster", ReplicaLabel: "__replica__", Tenant: hatracker.DefaultTenant})
	write := func(v float64, kv ...string) *httptest.ResponseRecorder {
		var ls []prompb.Label
		for i := 0; i+1 < len(kv); i += 2 {
			ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		return post(h, "/api/v1/write", writeBody(t, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000 + int64(v), Value: v}}}))
	}
	for _, tc := range []struct {
		name string
		v    float64
		kv   []string
		code int
	}{
		{"first replica: elected", 1, []string{"__name__", "m", "__replica__", "a", "cluster", "c", "job", "j"}, 204},
		{"other replica: dropped", 2, []string{"__name__", "m", "__replica__", "b", "cluster", "c", "job", "j"}, 202},
		{"elected again", 3, []string{"__name__", "m", "__replica__", "a", "cluster", "c", "job", "j"}, 204},
		{"replica label only: as it is", 4, []string{"__name__", "m", "__replica__", "b", "job", "j"}, 204},
		{"cluster label only: as it is", 5, []string{"__name__", "m", "cluster", "d", "job", "j"}, 204},
		{"a second cluster: over the limit", 6, []string{"__name__", "m", "__replica__", "a", "cluster", "e", "job", "j"}, 400},
	} {
		rec := write(tc.v, tc.kv...)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
		if tc.code == 202 && !strings.Contains(rec.Body.String(), "replicas did not match") {
			t.Errorf("%s: body %q", tc.name, rec.Body)
		}
	}
	// Remote write 2.0: the elected replica's series (a 1.0 one's label
	// set) is written, the other's answered 202 saying nothing was.
	for _, tc := range []struct {
		replica string
		v       float64
		code    int
		written string
	}{{"a", 7, 204, "1"}, {"b", 8, 202, "0"}} {
		rec := postCT(h, ctV2, v2Body(t, v2Series{lbls: []string{"__name__", "m", "__replica__", tc.replica, "cluster", "c", "job", "j"},
			smps: []writev2.Sample{{Value: tc.v, Timestamp: 1_700_000_000_000 + int64(tc.v)}}}))
		if rec.Code != tc.code || rec.Header().Get("X-Prometheus-Remote-Write-Samples-Written") != tc.written {
			t.Errorf("2.0 from %s: %d (written %q) %s, want %d and %s", tc.replica, rec.Code, rec.Header().Get("X-Prometheus-Remote-Write-Samples-Written"), rec.Body, tc.code, tc.written)
		}
	}
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: 0, EndTimestampMs: 2_000_000_000_000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "m"}}}}}
	resp := readSamples(t, h, rr)
	var got []string
	for _, ts := range resp.Results[0].Timeseries {
		var vs []string
		for _, s := range ts.Samples {
			vs = append(vs, fmt.Sprint(s.Value))
		}
		got = append(got, fmt.Sprintf("%v %v", labelsString(ts.Labels), vs))
	}
	want := []string{
		`{__name__="m", __replica__="b", job="j"} [4]`,
		`{__name__="m", cluster="c", job="j"} [1 3 7]`,
		`{__name__="m", cluster="d", job="j"} [5]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func labelsString(ls []prompb.Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s=%q", l.Name, l.Value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
