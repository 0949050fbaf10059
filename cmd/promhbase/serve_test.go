package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// closedWithin reports how long conn took to be closed by the server, or
// fails the test when it is still open after limit.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := conn.SetReadDeadline(start.Add(limit)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, conn)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s", limit)
	}
	return time.Since(start)
}

// TestServeTimeouts: `serve` closes connections whose headers do not
// arrive within --web.read-header-timeout and idle keep-alive connections
// after --web.idle-timeout; /debug/pprof is served only with
// --web.enable-pprof.
func TestServeTimeouts(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	createTestTables(t, bin, flags)
	_, base := startServe(t, bin, append([]string{"--web.read-header-timeout=1s", "--web.idle-timeout=1s"}, flags...)...)
	addr := strings.TrimPrefix(base, "http://")

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprint(slow, "POST /api/v1/write HTTP/1.1\r\nHost: x\r\n") // and never the end of the headers
	t.Logf("half-sent headers: closed after %s (--web.read-header-timeout=1s)", closedWithin(t, slow, 20*time.Second).Round(time.Millisecond))

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprint(idle, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("keep-alive request: %v %v", resp, err)
	}
	resp.Body.Close()
	t.Logf("idle keep-alive connection: closed after %s (--web.idle-timeout=1s)", closedWithin(t, idle, 20*time.Second).Round(time.Millisecond))

	resp, err = http.Get(base + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --web.enable-pprof: %d, want 404", resp.StatusCode)
	}
}

// getClosing sends GET path to addr on a connection of its own that asks
// to be closed, and reads to the connection's end: once it returns, the
// server has closed its side (so under --web.max-connections its slot is
// free). It returns the answer's status.
func getClosing(t *testing.T, addr, path string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("GET %s to the connection's end: %v", path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(all)), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeMaxConnections: with --web.max-connections=3 and three
// connections open, a fourth client is not served until one closes.
func TestServeMaxConnections(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	createTestTables(t, bin, flags)
	_, base := startServe(t, bin, append([]string{"--web.max-connections=3", "--web.enable-pprof"}, flags...)...)
	addr := strings.TrimPrefix(base, "http://")
	if code := getClosing(t, addr, "/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ with --web.enable-pprof: %d", code)
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(base + "/-/healthy"); err == nil {
		resp.Body.Close()
		t.Fatalf("a fourth connection was served (%d) while three were open", resp.StatusCode)
	} else {
		t.Logf("fourth client while three connections are open: %v", err)
	}
	held[0].Close()
	client.Timeout = 20 * time.Second
	start := time.Now()
	resp, err := client.Get(base + "/-/healthy")
	if err != nil {
		t.Fatalf("after one of the three closed: %v", err)
	}
	resp.Body.Close()
	t.Logf("after one of the three closed: %d in %s", resp.StatusCode, time.Since(start).Round(time.Millisecond))
}

// TestServeKilled: every write `serve` acknowledged on the embedded store
// is there after the process is killed with SIGKILL (no flush, no clean
// close) and started again: the row buffer's log and Pebble's WAL hold
// them.
func TestServeKilled(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := []string{"--storage.embedded.path=" + t.TempDir()}
	srv, base := startServe(t, bin, flags...)
	const requests, series = 50, 20
	t0 := int64(1292148000000)
	for k := range requests {
		var ts []prompb.TimeSeries
		for i := range series {
			ts = append(ts, prompb.TimeSeries{
				Labels:  []prompb.Label{{Name: "__name__", Value: "kill_test"}, {Name: "i", Value: fmt.Sprint(i)}},
				Samples: []prompb.Sample{{Timestamp: t0 + int64(k)*1000, Value: float64(k)}},
			})
		}
		remoteWrite(t, base, ts)
	}
	if err := syscall.Kill(-srv.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.Exited()
	srv, _ = startServe(t, bin, flags...)
	stopServe(t, srv)
	out, err := run(t, bin, append([]string{"scan", "kill_test", "--start=1292148000", "--end=1292151600"}, flags...)...)
	if err != nil {
		t.Fatalf("scan: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if ts, _, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && len(ts) == 13 && strings.HasPrefix(ts, "129214") {
			n++
		}
	}
	if n != requests*series {
		t.Errorf("%d samples after SIGKILL and restart, want %d\n%s", n, requests*series, testproc.TailLines(out, 20))
	}
}

// TestServeKilledDuringFlushes: with a row buffer so small that it is
// flushed into Pebble again and again while four writers go on, serve is
// killed with SIGKILL once several flushes have run, writes still in
// flight; after a restart every sample a writer had been answered 204 for
// is there (the flush under way at the kill is replayed from the log).
func TestServeKilledDuringFlushes(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := []string{"--storage.embedded.path=" + t.TempDir(), "--storage.embedded.buffer-bytes=65536"}
	srv, base := startServe(t, bin, flags...)
	const writers, series = 4, 50
	t0 := int64(1292148000000)
	acked := make([]int, writers) // requests answered 204, in order, per writer
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for k := 0; !stopped.Load(); k++ {
				var ts []prompb.TimeSeries
				for i := range series {
					ts = append(ts, prompb.TimeSeries{
						Labels:  []prompb.Label{{Name: "__name__", Value: "flush_kill"}, {Name: "i", Value: fmt.Sprint(i)}, {Name: "w", Value: fmt.Sprint(w)}},
						Samples: []prompb.Sample{{Timestamp: t0 + int64(k)*1000, Value: float64(k)}},
					})
				}
				resp, err := http.Post(base+"/api/v1/write", "application/x-protobuf", bytes.NewReader(promremote.WriteBody(t, ts...)))
				if err != nil {
					return // killed
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					return
				}
				acked[w] = k + 1
			}
		})
	}
	poll.Until(t, 2*time.Minute, 20*time.Millisecond, "five row buffer flushes", func() (bool, string) {
		ms, err := testproc.FetchMetrics(t.Context(), base)
		if err != nil {
			return false, err.Error()
		}
		n := ms.Sum("promhbase_embedded_row_buffer_flushes_total")
		return n >= 5, fmt.Sprintf("%v flushes", n)
	})
	if err := syscall.Kill(-srv.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.Exited()
	stopped.Store(true)
	wg.Wait()
	t.Logf("requests acknowledged before the kill, by writer: %v", acked)
	_, base = startServe(t, bin, flags...)
	for w, n := range acked {
		if n == 0 {
			t.Fatalf("writer %d had nothing acknowledged before the kill", w)
		}
		q := url.Values{"query": {fmt.Sprintf(`count_over_time(flush_kill{w="%d"}[1h])`, w)}, "time": {fmt.Sprint(t0/1000 + 3000)}}
		got := countsByLabel(t, base, q, "i")
		if len(got) != series {
			t.Errorf("writer %d: %d series after the restart, want %d", w, len(got), series)
		}
		for i, c := range got {
			if c < float64(n) {
				t.Errorf("writer %d, series %s: %v samples after the restart, %d acknowledged", w, i, c, n)
			}
		}
	}
}

// countsByLabel runs the instant query q on serve at base and returns
// each series' value by its label's value.
func countsByLabel(t *testing.T, base string, q url.Values, label string) map[string]float64 {
	t.Helper()
	_, body, _ := testhttp.Do(t, testhttp.Request{URL: base + "/api/v1/query?" + q.Encode()})
	a, err := promjson.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	vec, err := a.Vector()
	if err != nil {
		t.Fatalf("%s: %v", q.Encode(), err)
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[s.Metric[label]], _ = strconv.ParseFloat(s.ValueString(), 64)
	}
	return out
}

func TestAutoBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, str string
		want    uint64 // or(7)
		err     bool
	}{
		{in: "auto", str: "auto", want: 7},
		{in: "0", str: "0", want: 0},
		{in: "134217728", str: "134217728", want: 134217728},
		{in: "0x8000000", str: "134217728", want: 134217728},
		{in: "18446744073709551615", str: "18446744073709551615", want: 18446744073709551615},
		{in: "18446744073709551616", err: true},
		{in: "-1", err: true},
		{in: "128MiB", err: true},
		{in: "", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var a autoBytes
			a.named("some-bytes")
			err := a.Set(tc.in)
			if tc.err {
				if err == nil {
					t.Fatalf("Set(%q) = nil error, %v", tc.in, a)
				}
				if !strings.Contains(err.Error(), "--some-bytes") || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in)) {
					t.Errorf("Set(%q): %v, want the flag and the value named", tc.in, err)
				}
				if a.String() != "auto" || a.or(7) != 7 {
					t.Errorf("after a failed Set: %q, or(7) = %d, want auto", a.String(), a.or(7))
				}
				return
			}
			if err != nil {
				t.Fatalf("Set(%q): %v", tc.in, err)
			}
			if a.String() != tc.str || a.or(7) != tc.want {
				t.Errorf("Set(%q): String %q, or(7) %d; want %q, %d", tc.in, a.String(), a.or(7), tc.str, tc.want)
			}
			if err := a.Set("auto"); err != nil || a.String() != "auto" || a.or(7) != 7 {
				t.Errorf("Set(auto) after Set(%q): %v, %q, or(7) = %d; want auto", tc.in, err, a.String(), a.or(7))
			}
		})
	}
}
