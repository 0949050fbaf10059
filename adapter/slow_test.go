package adapter

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/test/testkit/poll"
)

// newServedHandler serves a Handler over st on a loopback HTTP server
// with serve's header timeout, until the test ends; connState, if given,
// is the server's http.Server.ConnState hook.
func newServedHandler(t *testing.T, opts Options, connState ...func(net.Conn, http.ConnState)) (*Handler, string) {
	t.Helper()
	st := openEmbedded(t)
	m := newTestMapper(t, st)
	h := newHandler(t, ingest.New(m, st, ingest.Options{Table: "tsdb"}), query.New(st, m, query.Options{}), opts, prometheus.NewRegistry())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	if len(connState) > 0 {
		srv.Config.ConnState = connState[0]
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// readBody is a snappy-compressed remote-read request for metric between
// 0 and end ms, answered with SAMPLES.
func readRequestBody(t testing.TB, metric string, end int64) []byte {
	t.Helper()
	data, err := proto.Marshal(&prompb.ReadRequest{Queries: []*prompb.Query{{EndTimestampMs: end,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: metric}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, data)
}

// timedPost posts body and returns the status code and the time taken.
func timedPost(t *testing.T, url string, body []byte) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Errorf("%s: read the answer: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// TestSlowClientsDoNotStarve: 100 clients that send headers and then no
// body, or one byte every quarter second, do not hold the 4 decoding
// slots: a normal writer and reader get their answers while all of them
// are connected, and the slow ones are cut off at the body deadline.
func TestSlowClientsDoNotStarve(t *testing.T) {
	const bodyTimeout = 2 * time.Second
	var active atomic.Int64 // connections whose request has begun
	_, base := newServedHandler(t, Options{MaxConcurrentRequests: 4, BodyTimeout: bodyTimeout}, func(_ net.Conn, s http.ConnState) {
		if s == http.StateActive {
			active.Add(1)
		}
	})
	write := writeBody(t, seriesOf("__name__", "normal", "job", "a"))
	if code, _ := timedPost(t, base+"/api/v1/write", write); code != http.StatusNoContent {
		t.Fatalf("first write: %d", code)
	}
	const slow = 100
	began := time.Now()
	type end struct {
		at     time.Time
		status string
	}
	ended := make(chan end, slow)
	for i := range slow {
		conn, err := net.Dial("tcp", base[len("http://"):])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		path := []string{"/api/v1/write", "/api/v1/read"}[i%2]
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nContent-Length: 100000\r\n\r\n", path)
		if i%4 < 2 { // one byte every quarter second until cut off
			go func() {
				for { // the sleep is the client's pace, not a wait
					time.Sleep(250 * time.Millisecond)
					if _, err := conn.Write([]byte{0}); err != nil {
						return
					}
				}
			}()
		}
		go func() { // the answer or the close ends the client
			all, _ := io.ReadAll(conn)
			status, _, _ := strings.Cut(string(all), "\r\n")
			ended <- end{time.Now(), status}
		}()
	}
	// All in their handlers (the first write's connection is active too).
	poll.Until(t, bodyTimeout/2, 10*time.Millisecond, "every slow client's request begun", func() (bool, string) {
		n := active.Load()
		return n >= slow+1, fmt.Sprintf("%d of %d begun", n-1, slow)
	})
	var lat []time.Duration
	for range 5 {
		code, d := timedPost(t, base+"/api/v1/write", write)
		if code != http.StatusNoContent {
			t.Fatalf("write among slow clients: %d after %s", code, d)
		}
		lat = append(lat, d)
		code, d = timedPost(t, base+"/api/v1/read", readRequestBody(t, "normal", 2_000_000_000_000))
		if code != http.StatusOK {
			t.Fatalf("read among slow clients: %d after %s", code, d)
		}
		lat = append(lat, d)
	}
	normalDone := time.Since(began)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("5 writes and 5 reads among %d slow clients: latency min %s, median %s, max %s; all done %s after the slow clients connected",
		slow, lat[0], lat[len(lat)/2], lat[len(lat)-1], normalDone.Round(time.Millisecond))
	var first, last time.Duration
	statuses := map[string]int{}
	for i := range slow {
		select {
		case e := <-ended:
			statuses[e.status]++
			d := e.at.Sub(began)
			if i == 0 {
				first = d
			}
			last = d
		case <-time.After(bodyTimeout + 20*time.Second):
			t.Fatalf("only %d of %d slow clients cut off %s after they connected", i, slow, time.Since(began).Round(time.Millisecond))
		}
	}
	t.Logf("slow clients cut off between %s and %s after they connected (body timeout %s): %v", first.Round(time.Millisecond), last.Round(time.Millisecond), bodyTimeout, statuses)
	if statuses["HTTP/1.1 503 Service Unavailable"] != slow {
		t.Errorf("answers %v, want %d × 503 (a slow network is retried, not refused)", statuses, slow)
	}
	if normalDone >= first {
		t.Errorf("the normal requests finished %s after the slow clients connected, not before the first was cut off (%s)", normalDone, first)
	}
}

// TestStalledReader: a reader that stops reading its answer is cut off at
// the response write deadline, its handler returns (and lets go of the
// answer's memory); a normal reader meanwhile gets its answers.
func TestStalledReader(t *testing.T) {
	const stall = 2 * time.Second
	h, base := newServedHandler(t, Options{ResponseWriteTimeout: stall, MaxRequestBytes: 32 << 20})
	// 100 series × 5000 random samples: a SAMPLES answer of about 9 MB,
	// more than the socket buffers hold.
	rng := rand.New(rand.NewPCG(1, 2))
	for s := range 100 {
		ts := seriesOf("__name__", "big", "s", fmt.Sprint(s))
		ts.Samples = ts.Samples[:0]
		for i := range 5000 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: 1_700_000_000_000 + int64(i)*1000, Value: rng.Float64()})
		}
		if code, _ := timedPost(t, base+"/api/v1/write", writeBody(t, ts)); code != http.StatusNoContent {
			t.Fatalf("write: %d", code)
		}
	}
	if code, _ := timedPost(t, base+"/api/v1/write", writeBody(t, seriesOf("__name__", "small"))); code != http.StatusNoContent {
		t.Fatal(code)
	}
	conn, err := net.Dial("tcp", base[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	body := readRequestBody(t, "big", 2_000_000_000_000)
	start := time.Now()
	fmt.Fprintf(conn, "POST /api/v1/read HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	// Read the status line only, then stop reading.
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("status line %q, %v", line, err)
	}
	// Normal reads, one a poll, until the stalled reader's handler has
	// returned (counted beside them).
	var lat []time.Duration
	poll.Until(t, stall+30*time.Second, 100*time.Millisecond, "the stalled reader's handler returned", func() (bool, string) {
		code, d := timedPost(t, base+"/api/v1/read", readRequestBody(t, "small", 2_000_000_000_000))
		if code != http.StatusOK {
			t.Fatalf("normal read beside the stalled one: %d", code)
		}
		lat = append(lat, d)
		answered := testutil.ToFloat64(h.http.Requests("read", http.StatusOK))
		return answered >= float64(len(lat)+1), fmt.Sprintf("%v reads answered, %d of them normal", answered, len(lat))
	})
	t.Logf("stalled reader's handler returned %s after its request (write deadline %s); normal reads meanwhile: %d, slowest %s",
		time.Since(start).Round(time.Millisecond), stall, len(lat), slices.Max(lat))
}
