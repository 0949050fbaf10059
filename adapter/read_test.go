package adapter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
)

// newReadHandler is newTestHandler with query and read options.
func newReadHandler(t testing.TB, st store.Store, qopts query.Options, opts Options) *Handler {
	t.Helper()
	m := newTestMapper(t, st)
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = 64 << 20
	}
	return newHandler(t, ingest.New(m, st, ingest.Options{Table: "tsdb"}), query.New(st, m, qopts), opts, prometheus.NewRegistry())
}

// writeFloats writes series name{i="0".."n-1"} with k samples each, one
// every 10 s from t0.
func writeFloats(t testing.TB, h http.Handler, name string, n, k int, extra ...prompb.Label) {
	t.Helper()
	var batch []prompb.TimeSeries
	for i := range n {
		ts := prompb.TimeSeries{Labels: append([]prompb.Label{{Name: "__name__", Value: name}, {Name: "i", Value: fmt.Sprint(i)}}, extra...)}
		for j := range k {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: readT0 + int64(j)*10_000, Value: float64(i*k+j) * 1.1})
		}
		batch = append(batch, ts)
	}
	if rec := post(h, "/api/v1/write", writeBody(t, batch...)); rec.Code != http.StatusNoContent {
		t.Fatalf("write %s: %d %s", name, rec.Code, rec.Body)
	}
}

const readT0 = int64(1_700_002_800_000)

func readBody(t testing.TB, rt prompb.ReadRequest_ResponseType, names ...string) []byte {
	t.Helper()
	rr := &prompb.ReadRequest{AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt}}
	for _, n := range names {
		rr.Queries = append(rr.Queries, &prompb.Query{StartTimestampMs: readT0, EndTimestampMs: readT0 + 7_200_000,
			Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: n}}})
	}
	data, err := proto.Marshal(rr)
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, data)
}

var responseTypes = []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS}

// TestReadByteBudget: a read that needs more memory than
// --query.max-bytes-per-query gets 413 naming the flag, in both response
// types; within the budget it is answered.
func TestReadByteBudget(t *testing.T) {
	st := openEmbedded(t)
	small := newReadHandler(t, st, query.Options{MaxBytes: 64 << 10}, Options{})
	writeFloats(t, small, "m", 100, 200)
	large := newReadHandler(t, st, query.Options{MaxBytes: 64 << 20}, Options{})
	for _, rt := range responseTypes {
		t.Run(rt.String(), func(t *testing.T) {
			rec := post(small, "/api/v1/read", readBody(t, rt, "m"))
			if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "--query.max-bytes-per-query") {
				t.Errorf("64 KiB budget: %d %q, want 413 naming --query.max-bytes-per-query", rec.Code, rec.Body)
			}
			if rec := post(large, "/api/v1/read", readBody(t, rt, "m")); rec.Code != http.StatusOK {
				t.Errorf("64 MiB budget: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// TestReadSampleLimitPerRequest: --query.max-samples counts all the
// queries of a request: two queries that each fit fail together. SAMPLES
// answers 413. A streamed answer that has sent nothing yet when the second
// query fails (its frames still buffered) answers 413 too; one whose first
// query's frames filled the write buffer has begun, so the client gets an
// unfinished stream (an error), never a short one.
func TestReadSampleLimitPerRequest(t *testing.T) {
	st := openEmbedded(t)
	h := newReadHandler(t, st, query.Options{MaxSamples: 1500}, Options{})
	writeFloats(t, h, "a", 10, 100)
	writeFloats(t, h, "b", 10, 100)
	// 400 series of 3 samples with a 200-byte label: well over
	// streamBuffer of frames.
	pad := prompb.Label{Name: "pad", Value: strings.Repeat("x", 200)}
	writeFloats(t, h, "c", 400, 3, pad)
	writeFloats(t, h, "d", 400, 3, pad)
	for _, names := range [][]string{{"a"}, {"b"}, {"c"}, {"d"}} {
		if rec := post(h, "/api/v1/read", readBody(t, prompb.ReadRequest_SAMPLES, names...)); rec.Code != http.StatusOK {
			t.Fatalf("query %v alone: %d %s", names, rec.Code, rec.Body)
		}
	}
	for _, rt := range responseTypes {
		rec := post(h, "/api/v1/read", readBody(t, rt, "a", "b"))
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "more than 1500 in the request") {
			t.Errorf("%s, both queries: %d %q, want 413 for the request's samples", rt, rec.Code, rec.Body)
		}
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/api/v1/read", "application/x-protobuf", bytes.NewReader(readBody(t, prompb.ReadRequest_STREAMED_XOR_CHUNKS, "c", "d")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cr := remote.NewChunkedReader(resp.Body, 1<<20, nil)
	frames := 0
	for {
		var msg prompb.ChunkedReadResponse
		err = cr.NextProto(&msg)
		if err != nil {
			break
		}
		if msg.QueryIndex != 0 {
			t.Errorf("frame %d of query %d: the second query must not be answered", frames, msg.QueryIndex)
		}
		frames++
	}
	if resp.StatusCode != http.StatusOK || frames == 0 || frames > 400 || errors.Is(err, io.EOF) {
		t.Errorf("streamed: status %d, %d frames, then %v; want 200, some of the first query's 400 series, then an error other than EOF", resp.StatusCode, frames, err)
	}
}

// blockingStore holds scans of the data table until release is closed,
// telling started about each.
type blockingStore struct {
	store.Store
	started chan struct{}
	release chan struct{}
}

func (b *blockingStore) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if req.Table == "tsdb" {
		b.started <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return b.Store.Scan(ctx, req)
}

// TestReadConcurrencyLimit: with --storage.remote.read-concurrent-limit=1
// a second read waits for the first and, when it does not end within the
// wait, gets 503; once the first ended, reads are answered again.
func TestReadConcurrencyLimit(t *testing.T) {
	bs := &blockingStore{Store: openEmbedded(t), started: make(chan struct{}, 10), release: make(chan struct{})}
	h := newReadHandler(t, bs, query.Options{}, Options{MaxConcurrentReads: 1, ReadWait: 50 * time.Millisecond})
	writeFloats(t, h, "m", 2, 10)
	var wg sync.WaitGroup
	wg.Add(1)
	var first *httptest.ResponseRecorder
	go func() {
		defer wg.Done()
		first = post(h, "/api/v1/read", readBody(t, prompb.ReadRequest_SAMPLES, "m"))
	}()
	<-bs.started
	rec := post(h, "/api/v1/read", readBody(t, prompb.ReadRequest_SAMPLES, "m"))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "--storage.remote.read-concurrent-limit") {
		t.Errorf("second read: %d %q, want 503 naming --storage.remote.read-concurrent-limit", rec.Code, rec.Body)
	}
	close(bs.release)
	wg.Wait()
	if first.Code != http.StatusOK {
		t.Errorf("first read: %d %s", first.Code, first.Body)
	}
	if rec := post(h, "/api/v1/read", readBody(t, prompb.ReadRequest_SAMPLES, "m")); rec.Code != http.StatusOK {
		t.Errorf("read after the first ended: %d %s", rec.Code, rec.Body)
	}
}

// TestStalledReaderReleased: a client that asks for a streamed answer and
// never reads it does not keep its request (its slot, its memory): the
// frame write fails on --web.response-write-timeout and the next
// read gets the only read slot.
func TestStalledReaderReleased(t *testing.T) {
	st := openEmbedded(t)
	h := newReadHandler(t, st, query.Options{}, Options{MaxConcurrentReads: 1, ReadWait: time.Minute, ResponseWriteTimeout: 200 * time.Millisecond})
	// 10 000 series with a 4 KiB label: an answer of 40 MB, more than the
	// socket buffers hold.
	long := prompb.Label{Name: "pad", Value: strings.Repeat("x", 4096)}
	for range 10 {
		writeFloats(t, h, "big", 1000, 1, long)
		long.Value = long.Value[1:] // other series next time
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := readBody(t, prompb.ReadRequest_STREAMED_XOR_CHUNKS, "big")
	fmt.Fprintf(conn, "POST /api/v1/read HTTP/1.1\r\nHost: x\r\nContent-Encoding: snappy\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	// Read the status line, then nothing more.
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled reader's status: %q %v", status, err)
	}
	// The next read needs the slot the stalled one holds: it is answered
	// only if the stalled request ends (within ReadWait).
	resp, err := http.Post(srv.URL+"/api/v1/read", "application/x-protobuf", bytes.NewReader(readBody(t, prompb.ReadRequest_SAMPLES, "nothing")))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("read while a reader stalls: %d %s, want 200 once the stalled read is cut off", resp.StatusCode, msg)
	}
}

// TestReadGuards: remote read under the query guardrails, both response
// types: a query longer than max_total_query_length gets 400 with
// Mimir's words; the series of all the queries together past
// max_fetched_series_per_query get 422; max_query_lookback clamps each
// query's start, so that the samples before now - lookback are not read
// and a query ending before it answers nothing.
func TestReadGuards(t *testing.T) {
	st := openEmbedded(t)
	h := newReadHandler(t, st, query.Options{}, Options{})
	writeFloats(t, h, "a", 3, 100) // a sample every 10 s from readT0, 990 s
	writeFloats(t, h, "b", 3, 100)
	now := func() time.Time { return time.UnixMilli(readT0 + 500_000) }
	count := func(rec *httptest.ResponseRecorder) (series, samples int) {
		t.Helper()
		var resp prompb.ReadResponse
		b, err := snappy.Decode(nil, rec.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Results {
			for _, ts := range r.Timeseries {
				series++
				samples += len(ts.Samples)
			}
		}
		return series, samples
	}
	for _, tc := range []struct {
		name  string
		g     ReadGuards
		names []string
		code  int
		body  string
	}{
		{name: "too long", g: ReadGuards{MaxTotalQueryLength: time.Hour}, names: []string{"a"}, code: http.StatusBadRequest,
			body: "the total query time range exceeds the limit (query length: 2h0m0s, limit: 1h0m0s) (err-mimir-max-total-query-length)"},
		{name: "too long but for the lookback clamp", g: ReadGuards{MaxTotalQueryLength: time.Hour, MaxQueryLookback: time.Hour, Now: func() time.Time { return time.UnixMilli(readT0 + 7_200_000) }},
			names: []string{"a"}, code: http.StatusOK},
		{name: "too many series", g: ReadGuards{MaxFetchedSeries: 5}, names: []string{"a", "b"}, code: http.StatusUnprocessableEntity,
			body: "the query exceeded the maximum number of series (limit: 5 series) (err-mimir-max-series-per-query)"},
		{name: "series within", g: ReadGuards{MaxFetchedSeries: 6}, names: []string{"a", "b"}, code: http.StatusOK},
	} {
		for _, rt := range responseTypes {
			t.Run(tc.name+"/"+rt.String(), func(t *testing.T) {
				h.SetReadGuards(tc.g)
				rec := post(h, "/api/v1/read", readBody(t, rt, tc.names...))
				if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
					t.Errorf("%d %.300q, want %d with %q", rec.Code, rec.Body, tc.code, tc.body)
				}
			})
		}
	}
	// The lookback: now is readT0+500 s, the lookback 200 s: the samples
	// from readT0+300 s on (70 of 100 a series) are read.
	h.SetReadGuards(ReadGuards{MaxQueryLookback: 200 * time.Second, Now: now})
	if series, samples := count(post(h, "/api/v1/read", readBody(t, prompb.ReadRequest_SAMPLES, "a"))); series != 3 || samples != 3*70 {
		t.Errorf("lookback: %d series, %d samples; want 3 series of 70", series, samples)
	}
	h.SetReadGuards(ReadGuards{MaxQueryLookback: time.Second, Now: func() time.Time { return time.UnixMilli(readT0 + 3*3600_000) }})
	if series, samples := count(post(h, "/api/v1/read", readBody(t, prompb.ReadRequest_SAMPLES, "a"))); series != 0 || samples != 0 {
		t.Errorf("a query ending before the lookback: %d series, %d samples; want none", series, samples)
	}
}
