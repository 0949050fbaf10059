package opentsdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxLineBytes is the longest telnet line a TSD takes (its
// LineBasedFrameDecoder's limit, the line ending not counted): a longer
// one closes the connection without an answer.
const MaxLineBytes = 1024

// maxBatch is the most put lines a telnet connection writes at once: the
// lines it has received, up to this many, go to the store together.
const maxBatch = 4096

// Writer stores the points of a put.
type Writer interface {
	// PutPoints stores pts and sets errs[i] (len(errs) == len(pts)) for
	// point i when it can never be stored (an unknown metric, a limit);
	// the others are stored when it returns nil. An error means that
	// nothing may be assumed stored (the store's trouble): the sender
	// may send them again.
	PutPoints(ctx context.Context, pts []Point, errs []*PointError) error
}

// PortConfig configures a Port.
type PortConfig struct {
	// Telnet stores telnet's put lines (--opentsdb.tenant's).
	Telnet Writer
	// HTTP serves the HTTP requests (with the tenant each names).
	HTTP http.Handler
	// MaxTags is tsd.storage.max_tags (DefaultMaxTags when 0).
	MaxTags int
	// Version and Built are telnet's version answer: "net.opentsdb.tools
	// <Version>" and "Built on <Built>" (promhbase's version and
	// revision; its build date and user), the two lines a TSD answers.
	Version, Built string
	// WriteTimeout bounds each store write of telnet lines.
	WriteTimeout time.Duration
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
}

// Port serves OpenTSDB's port: each connection speaks HTTP when its first
// byte is 'A'..'Z' (as a TSD's PipelineFactory decides), telnet
// otherwise.
type Port struct {
	cfg   PortConfig
	http  *http.Server
	httpL *connListener // the HTTP connections, handed to http

	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	lines       *prometheus.CounterVec
	connections *prometheus.CounterVec
}

// NewPort returns a Port; Serve serves it.
func NewPort(cfg PortConfig) *Port {
	if cfg.MaxTags <= 0 {
		cfg.MaxTags = DefaultMaxTags
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Port{cfg: cfg, httpL: &connListener{conns: make(chan net.Conn), done: make(chan struct{})}, open: map[net.Conn]struct{}{},
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_opentsdb_telnet_lines_total",
			Help: "Telnet lines of the OpenTSDB port by command and outcome (ok, refused: never storable, failed: the store's trouble).",
		}, []string{"command", "outcome"}),
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_opentsdb_connections_total",
			Help: "Connections accepted by the OpenTSDB port, by the protocol their first byte chose.",
		}, []string{"protocol"}),
	}
	for _, c := range telnetCommands {
		p.lines.WithLabelValues(c, "ok")
	}
	for _, outcome := range []string{"refused", "failed"} {
		p.lines.WithLabelValues("put", outcome)
	}
	p.connections.WithLabelValues("telnet")
	p.connections.WithLabelValues("http")
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.lines, p.connections)
	}
	p.http = &http.Server{Handler: cfg.HTTP, ReadHeaderTimeout: time.Minute, ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	return p
}

// Serve accepts connections on l until Close; it returns nil after Close.
func (p *Port) Serve(l net.Listener) error {
	p.httpL.addr = l.Addr()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.http.Serve(p.httpL)
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("opentsdb port: accept on %s: %w", l.Addr(), err)
		}
		if !p.track(c) {
			_ = c.Close()
			return nil
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serveConn(c)
		}()
	}
}

// track notes an open connection; false once the port is closed.
func (p *Port) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Port) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

// Close stops the port: the HTTP server, every telnet connection, and
// waits for their goroutines. The listener passed to Serve is the
// caller's to close (first).
func (p *Port) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.http.Close()
	_ = p.httpL.Close() // also when Serve never ran
	p.wg.Wait()
	return err
}

// serveConn reads the first byte and hands the connection to HTTP or to
// the telnet loop.
func (p *Port) serveConn(c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	first, err := br.Peek(1)
	if err != nil {
		p.untrack(c)
		_ = c.Close()
		return
	}
	if 'A' <= first[0] && first[0] <= 'Z' {
		p.connections.WithLabelValues("http").Inc()
		p.untrack(c) // the HTTP server closes it
		select {
		case p.httpL.conns <- &peekedConn{Conn: c, r: br}:
		case <-p.httpL.done:
			_ = c.Close()
		}
		return
	}
	p.connections.WithLabelValues("telnet").Inc()
	defer func() {
		p.untrack(c)
		_ = c.Close()
	}()
	p.telnet(c, br)
}

// telnet serves a telnet connection: lines read as they come, the put
// lines received together written together, each answered as a TSD
// answers it (nothing for a stored point).
func (p *Port) telnet(c net.Conn, br *bufio.Reader) {
	var batch []Point
	var lineOf []int // the batch's points' lines, for the order of answers
	var out []byte
	answers := map[int]string{}
	n := 0
	flush := func() bool {
		if len(batch) > 0 {
			p.writeBatch(batch, lineOf, answers)
			batch, lineOf = batch[:0], lineOf[:0]
		}
		for i := range n {
			if a, ok := answers[i]; ok {
				out = append(out, a...)
			}
		}
		clear(answers)
		n = 0
		if len(out) == 0 {
			return true
		}
		_, err := c.Write(out)
		out = out[:0]
		return err == nil
	}
	for {
		line, err := readLine(br)
		if err != nil {
			flush()
			return
		}
		words := strings.Split(latin1(line), " ")
		switch words[0] {
		case "put":
			pt, perr := ParseTelnetPut(words, p.cfg.MaxTags)
			if perr != nil {
				answers[n] = perr.Line()
				p.lines.WithLabelValues("put", "refused").Inc()
			} else {
				batch, lineOf = append(batch, pt), append(lineOf, n)
			}
			n++
		case "exit":
			flush()
			return
		default:
			answers[n] = p.command(words)
			n++
		}
		if br.Buffered() == 0 || len(batch) >= maxBatch {
			if !flush() {
				return
			}
		}
	}
}

// readLine reads a line without its "\n" or "\r\n"; a line longer than
// MaxLineBytes is an error (the connection is closed, as a TSD does).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("telnet line over %d bytes", MaxLineBytes)
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) > MaxLineBytes {
		return nil, fmt.Errorf("telnet line of %d bytes, over %d", len(line), MaxLineBytes)
	}
	return line, nil
}

// writeBatch stores a batch of put lines and notes the answer of each
// refused or failed one under its line.
func (p *Port) writeBatch(batch []Point, lineOf []int, answers map[int]string) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.WriteTimeout)
	defer cancel()
	errs := make([]*PointError, len(batch))
	if err := p.cfg.Telnet.PutPoints(ctx, batch, errs); err != nil {
		p.cfg.Logger.Warn("opentsdb telnet put failed", "points", len(batch), "err", err)
		for _, l := range lineOf {
			answers[l] = "put: HBase error: " + err.Error() + "\n"
		}
		p.lines.WithLabelValues("put", "failed").Add(float64(len(batch)))
		return
	}
	for i, e := range errs {
		if e != nil {
			answers[lineOf[i]] = e.Line()
			p.lines.WithLabelValues("put", "refused").Inc()
			continue
		}
		p.lines.WithLabelValues("put", "ok").Inc()
	}
}

// telnetCommands are the commands this port answers, in the order a
// TSD's help lists its own.
var telnetCommands = []string{"stats", "dropcaches", "version", "exit", "help", "put"}

// command answers a telnet command other than put and exit.
func (p *Port) command(words []string) string {
	cmd := words[0]
	outcome := "ok"
	defer func() { p.lines.WithLabelValues(commandLabel(cmd), outcome).Inc() }()
	switch cmd {
	case "version":
		return "net.opentsdb.tools " + p.cfg.Version + "\nBuilt on " + p.cfg.Built + "\n"
	case "help":
		return "available commands: " + strings.Join(telnetCommands, " ") + " \n"
	case "dropcaches":
		return "Caches dropped.\n"
	case "stats":
		return p.stats()
	}
	outcome = "refused"
	return "unknown command: " + cmd + ".  Try `help'.\n"
}

// commandLabel bounds the command label to the known commands.
func commandLabel(cmd string) string {
	for _, c := range telnetCommands {
		if c == cmd {
			return c
		}
	}
	return "unknown"
}

// stats answers telnet's stats as a TSD's lines (tsd.<name> <unix
// seconds> <value> <tags>): the port's own counters.
func (p *Port) stats() string {
	now := strconv.FormatInt(time.Now().Unix(), 10)
	var sb strings.Builder
	for _, proto := range []string{"telnet", "http"} {
		v := counterValue(p.connections.WithLabelValues(proto))
		fmt.Fprintf(&sb, "tsd.connectionmgr.connections %s %d type=%s\n", now, v, proto)
	}
	for _, outcome := range []string{"ok", "refused", "failed"} {
		v := counterValue(p.lines.WithLabelValues("put", outcome))
		fmt.Fprintf(&sb, "tsd.rpc.put %s %d outcome=%s\n", now, v, outcome)
	}
	return sb.String()
}

// connListener is the net.Listener of the HTTP connections the port
// hands over.
type connListener struct {
	conns chan net.Conn
	addr  net.Addr
	once  sync.Once
	done  chan struct{}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// peekedConn is a connection whose first bytes a bufio.Reader holds.
type peekedConn struct {
	net.Conn
	r io.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// PutPath is the path of /api/put.
const PutPath = "/api/put"

// HTTPHandler serves the HTTP requests of OpenTSDB's port, paths in any
// case and /api/v1/... as /api/..., as a TSD routes them: /api/put,
// /api/suggest, /api/query and /api/search/lookup by h, promhbase's handler (with tenant set, a request
// without X-Scope-OrgID is tenant's: a TSD's clients send none);
// /api/aggregators, /api/config/filters and /api/version (v) as a TSD
// answers them; any other path as a TSD answers an unknown endpoint (404
// "Endpoint not found").
func HTTPHandler(h http.Handler, tenant string, v Version) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tenant != "" && r.Header.Get("X-Scope-OrgID") == "" {
			r.Header.Set("X-Scope-OrgID", tenant)
		}
		path := strings.ToLower(r.URL.Path)
		if rest, ok := strings.CutPrefix(path, "/api/v1/"); ok {
			path = "/api/" + rest
		}
		var body []byte
		switch path {
		case PutPath, SuggestPath, QueryPath, LookupPath:
			r.URL.Path = path
			h.ServeHTTP(w, r)
			return
		case "/api/aggregators":
			body = AggregatorsBody()
		case "/api/config/filters":
			body = FiltersBody()
		case "/api/version":
			body = v.Body()
		default:
			WriteJSON(w, http.StatusNotFound, ErrorBody(http.StatusNotFound, "Endpoint not found", ""))
			return
		}
		if !allowGetPost(w, r) {
			WriteJSON(w, http.StatusOK, body)
		}
	})
}
