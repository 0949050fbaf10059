package opentsdb

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// recorder is a Writer that keeps what it stored, refuses the metric
// "refused" and fails every write while fail is set.
type recorder struct {
	mu     sync.Mutex
	points []Point
	fail   error
}

func (r *recorder) PutPoints(_ context.Context, pts []Point, errs []*PointError) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	for i, p := range pts {
		if p.Metric == "refused" {
			errs[i] = Refused("series refused: a limit")
			continue
		}
		r.points = append(r.points, p)
	}
	return nil
}

func (r *recorder) stored() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Point(nil), r.points...)
}

// startTestPort serves a Port with w for telnet and a handler that
// answers "http <path>" for HTTP; it returns the address.
func startTestPort(t *testing.T, w Writer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "http "+r.URL.Path) })
	p := NewPort(PortConfig{Telnet: w, HTTP: HTTPHandler(h, "", Version{Version: "v"}), Version: "v", Built: "b", Registerer: prometheus.NewRegistry()})
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = ln.Close()
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// converse sends input on a new connection and reads answers until n
// lines came (or the connection closed).
func converse(t *testing.T, addr, input string, n int) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, input); err != nil {
		t.Fatal(err)
	}
	var lines []string
	br := bufio.NewReader(c)
	for len(lines) < n {
		l, err := br.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, l)
	}
	return lines
}

// TestPortTelnet: put lines are stored, refused or failed with their
// answers in the order of the lines; the other commands answer as a
// TSD's do; exit closes.
func TestPortTelnet(t *testing.T) {
	rec := &recorder{}
	addr := startTestPort(t, rec)
	got := converse(t, addr, "put m 1292148123 1 a=b\nput refused 1292148123 1 a=b\nput m\r\nbogus\nversion\nhelp\ndropcaches\nput m 1292148124 2 a=b\nexit\n", 100)
	want := []string{
		"put: illegal argument: series refused: a limit\n",
		"put: illegal argument: not enough arguments (need least 4, got 1)\n",
		"unknown command: bogus.  Try `help'.\n",
		"net.opentsdb.tools v\n", "Built on b\n",
		"available commands: stats dropcaches version exit help put \n",
		"Caches dropped.\n",
	}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("answers %q\nwant %q", got, want)
	}
	if s := rec.stored(); len(s) != 2 || s[0].Timestamp != 1292148123 || s[1].Value != "2" {
		t.Errorf("stored %+v", s)
	}
	// The store's trouble: each put line of the batch says so.
	rec.mu.Lock()
	rec.fail = errors.New("store unavailable: region server gone")
	rec.mu.Unlock()
	got = converse(t, addr, "put m 1292148125 3 a=b\nput m 1292148126 4 a=b\n", 2)
	if len(got) != 2 || got[0] != "put: HBase error: store unavailable: region server gone\n" || got[1] != got[0] {
		t.Errorf("answers %q", got)
	}
}

// TestPortLongLine: a line over MaxLineBytes closes the connection
// without an answer, as a TSD's frame decoder does; the lines before it
// are stored.
func TestPortLongLine(t *testing.T) {
	rec := &recorder{}
	addr := startTestPort(t, rec)
	got := converse(t, addr, "put m 1292148123 1 a=b\nput m 1292148123 1 a="+strings.Repeat("x", MaxLineBytes)+"\nversion\n", 10)
	if len(got) != 0 {
		t.Errorf("answers %q, want the connection closed", got)
	}
	if s := rec.stored(); len(s) != 1 {
		t.Errorf("stored %d points, want 1", len(s))
	}
}

// TestPortHTTP: a connection whose first byte is an upper-case letter
// speaks HTTP: /api/put (also /api/v1/put) and /api/query go to the
// handler, any other path is a TSD's 404.
func TestPortHTTP(t *testing.T) {
	addr := startTestPort(t, &recorder{})
	for _, tc := range []struct{ path, want string }{
		{"/api/put", "http /api/put"},
		{"/api/v1/put", "http /api/put"},
		{"/API/PUT", "http /api/put"},
		{"/api/query", "http /api/query"},
		{"/api/annotation", `{"error":{"code":404,"message":"Endpoint not found"}}`},
	} {
		resp, err := http.Post("http://"+addr+tc.path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(b) != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, b, tc.want)
		}
	}
}

// TestPortClose: Close ends open telnet connections and returns.
func TestPortClose(t *testing.T) {
	addr := startTestPort(t, &recorder{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "put m 1292148123 1 a=b\n"); err != nil {
		t.Fatal(err)
	}
	// The cleanup's Close must not wait for this connection to end.
}
