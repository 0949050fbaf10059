package hbase

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"

	"github.com/promhbase/promhbase/store"
)

// DefaultConnectTimeout is Config.ConnectTimeout's default.
const DefaultConnectTimeout = 30 * time.Second

// DefaultProbeLogInterval is ProbeOptions.LogInterval's default.
const DefaultProbeLogInterval = 5 * time.Second

// probeFirstLog is how long Probe waits before it first logs that it
// waits.
const probeFirstLog = time.Second

// probeRetryPause is how long Probe waits before it asks again after an
// answer that came at once (a znode missing, a refused connection).
const probeRetryPause = 500 * time.Millisecond

// probeSessionTimeout is the ZooKeeper session timeout Probe asks for;
// its session lasts one probe.
const probeSessionTimeout = 10 * time.Second

// ProbeOptions configures Probe.
type ProbeOptions struct {
	// Master also requires the HBase master to be reached: the admin
	// helpers (CreateTables, ListNamespaceTables, ...) need it, data
	// operations do not.
	Master bool
	// Logger takes a warning "waiting for HBase" while the cluster is not
	// reached, naming what Probe waits for and why: the first after a
	// second (or LogInterval, when shorter), then every LogInterval; nil
	// logs nothing.
	Logger *slog.Logger
	// LogInterval is the time between those warnings. Default
	// DefaultProbeLogInterval.
	LogInterval time.Duration
	// OnWait, when set, is told of each failed try as it happens (from
	// another goroutine, one call at a time): the *UnreachableError Probe
	// would return if it gave up then, Timeout zero. It must not block.
	OnWait func(err error)
}

// UnreachableError is Probe's error: what it could not reach, and the
// last failure it met. errors.Is finds store.ErrUnavailable and the
// failure (zk.ErrNoServer, zk.ErrNoNode, a dial's error, ...) in it.
type UnreachableError struct {
	// Quorum is the ZooKeeper quorum, as Config.ZKQuorum names it.
	Quorum string
	// What is what could not be reached or read, e.g. "reach ZooKeeper
	// quorum 127.0.0.1:2181".
	What string
	// Timeout is Config.ConnectTimeout when Probe gave up at it; zero
	// when it was interrupted, or tells of a try (ProbeOptions.OnWait).
	Timeout time.Duration
	// Waited is how long Probe had tried.
	Waited time.Duration
	// Hint, when not empty, says what may be wrong.
	Hint string
	// Err is the last failure.
	Err error
}

func (e *UnreachableError) Error() string {
	var b strings.Builder
	b.WriteString("hbase: cannot ")
	b.WriteString(e.What)
	if e.Timeout > 0 {
		b.WriteString(" within " + e.Timeout.String())
	} else {
		b.WriteString(" (tried for " + e.Waited.Round(100*time.Millisecond).String() + ")")
	}
	b.WriteString(": " + e.Err.Error())
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return b.String()
}

// Unwrap gives errors.Is and errors.As the failure and
// store.ErrUnavailable.
func (e *UnreachableError) Unwrap() []error { return []error{e.Err, store.ErrUnavailable} }

// Probe waits until the cluster cfg names can be reached: a ZooKeeper
// server of cfg.ZKQuorum gives a session, the location of hbase:meta
// (and, with opts.Master, of the active master) can be read from
// cfg.ZKRoot, and that server accepts a TCP connection. It gives up after
// cfg.ConnectTimeout (DefaultConnectTimeout when zero), or when ctx
// ends, with an *UnreachableError naming the quorum, what it could not
// reach and the last failure; it keeps trying until then. It returns nil
// once everything answered.
//
// Probe uses a ZooKeeper connection of its own, closed before it
// returns: no goroutine of it is left behind. It proves the cluster
// reachable, not healthy: a region stuck in transition still fails the
// operations that need it (with their own bounded retries).
func Probe(ctx context.Context, cfg Config, opts ProbeOptions) error {
	cfg = cfg.withDefaults()
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if strings.TrimSpace(cfg.ZKQuorum) == "" {
		return fmt.Errorf("hbase: empty zookeeper quorum: %w", store.ErrInvalid)
	}
	if opts.LogInterval <= 0 {
		opts.LogInterval = DefaultProbeLogInterval
	}
	p := &prober{cfg: cfg, opts: opts, start: time.Now()}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.run(pctx) }()
	tick := time.NewTimer(min(opts.LogInterval, probeFirstLog))
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err == nil {
				return nil
			}
			ue := p.failure()
			if ue == nil {
				ue = &UnreachableError{Quorum: cfg.ZKQuorum, What: "reach ZooKeeper quorum " + cfg.ZKQuorum, Err: err}
				if addr := p.dialedAddr(); addr != "" {
					ue.Err = fmt.Errorf("%s took the connection but gave no ZooKeeper session: %w", addr, err)
				}
			}
			ue.Waited = time.Since(p.start)
			if ctx.Err() == nil {
				ue.Timeout = cfg.ConnectTimeout
			} else if !errors.Is(ue.Err, ctx.Err()) {
				ue.Err = fmt.Errorf("%w (interrupted: %w)", ue.Err, context.Cause(ctx))
			}
			return ue
		case <-tick.C:
			tick.Reset(opts.LogInterval)
			if l := opts.Logger; l != nil {
				args := []any{"quorum", cfg.ZKQuorum, "waited", time.Since(p.start).Round(time.Second), "gives_up_after", cfg.ConnectTimeout}
				if ue := p.failure(); ue != nil {
					args = append(args, "cannot", ue.What, "err", ue.Err)
					if ue.Hint != "" {
						args = append(args, "hint", ue.Hint)
					}
				}
				l.Warn("waiting for HBase", args...)
			}
		}
	}
}

// prober is one Probe's state: the last failure, read by Probe's logs.
type prober struct {
	cfg   Config
	opts  ProbeOptions
	start time.Time

	mu      sync.Mutex
	last    *UnreachableError
	dialErr error      // the last failed dial of a ZooKeeper server
	conns   []net.Conn // the ZooKeeper connections, closed at the end
	dialed  string     // the last ZooKeeper server connected to
	ended   bool       // conns are closed: close new ones at once
	onWait  sync.Mutex // one OnWait call at a time
}

// failure returns a copy of the last failure, nil if none yet.
func (p *prober) failure() *UnreachableError {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		return nil
	}
	ue := *p.last
	return &ue
}

// fail records a failed try and tells OnWait.
func (p *prober) fail(what, hint string, err error) {
	ue := &UnreachableError{Quorum: p.cfg.ZKQuorum, What: what, Hint: hint, Err: err, Waited: time.Since(p.start)}
	p.mu.Lock()
	p.last = ue
	p.mu.Unlock()
	if p.opts.OnWait != nil {
		c := *ue
		p.onWait.Lock()
		p.opts.OnWait(&c)
		p.onWait.Unlock()
	}
}

// zkFail records a failure of ZooKeeper itself, with the last dial's
// error when the client only said that it found no server.
func (p *prober) zkFail(err error) {
	p.mu.Lock()
	dialErr := p.dialErr
	p.mu.Unlock()
	if errors.Is(err, zk.ErrNoServer) && dialErr != nil {
		err = fmt.Errorf("%w: %w", err, dialErr)
	}
	p.fail("reach ZooKeeper quorum "+p.cfg.ZKQuorum, "", err)
}

// dial is the ZooKeeper client's dialer: bounded by ctx as well, its
// failures noted, its connections kept to be closed when ctx ends (a
// server that accepts and never answers would hold the client's reader
// for many seconds).
func (p *prober) dial(ctx context.Context) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			// Not the end cutting it short (its deadline may pass an
			// instant before ctx says so).
			if end, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || time.Now().Before(end)) {
				p.mu.Lock()
				p.dialErr = err
				p.mu.Unlock()
				p.zkFail(zk.ErrNoServer)
			}
			return nil, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ended {
			c.Close()
			return nil, net.ErrClosed
		}
		p.conns = append(p.conns, c)
		p.dialed = addr
		return c, nil
	}
}

// dialedAddr returns the last ZooKeeper server connected to, "" if none.
func (p *prober) dialedAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialed
}

// closeConns closes the ZooKeeper connections and every one dialled
// after.
func (p *prober) closeConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// run tries until everything answered (nil) or ctx ends (its error).
func (p *prober) run(ctx context.Context) error {
	servers := quorumServers(p.cfg.ZKQuorum)
	var conn *zk.Conn
	var events <-chan zk.Event
	for {
		var err error
		conn, events, err = zk.Connect(servers, probeSessionTimeout, zk.WithDialer(p.dial(ctx)),
			zk.WithLogger(zkLogger{p.opts.Logger}), zk.WithLogInfo(false))
		if err == nil {
			break
		}
		p.zkFail(err)
		if !pause(ctx, probeRetryPause) {
			return ctx.Err()
		}
	}
	// shutdown ends the session politely while it has one (ZooKeeper
	// answers the close at once), then closes the sockets, which frees a
	// client waiting for a server that does not answer; a close sent
	// without a session is dropped at once.
	shutdown := func() {
		if conn.State() == zk.StateHasSession {
			conn.Close()
		}
		p.closeConns()
		conn.Close()
	}
	defer func() {
		shutdown()
		// The client's goroutine closes events when it ends.
		wait := time.NewTimer(5 * time.Second)
		defer wait.Stop()
		for {
			select {
			case _, ok := <-events:
				if !ok {
					return
				}
			case <-wait.C:
				return
			}
		}
	}()
	stop := context.AfterFunc(ctx, shutdown)
	defer stop()

	targets := []struct{ znode, what string }{{"meta-region-server", "the region server of hbase:meta"}}
	if p.opts.Master {
		targets = append(targets, struct{ znode, what string }{"master", "the HBase master"})
	}
	for _, t := range targets {
		if err := p.reach(ctx, conn, path.Join(p.cfg.ZKRoot, t.znode), t.what); err != nil {
			return err
		}
	}
	return nil
}

// reach reads the server that znode names and connects to it, again
// and again until that works or ctx ends.
func (p *prober) reach(ctx context.Context, conn *zk.Conn, znode, what string) error {
	for {
		data, _, err := conn.Get(znode)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			p.fail("read "+znode+" from ZooKeeper quorum "+p.cfg.ZKQuorum,
				"is HBase running, with zookeeper.znode.parent "+p.cfg.ZKRoot+"?", err)
		case err != nil:
			p.zkFail(err)
			if errors.Is(err, zk.ErrNoServer) {
				continue // the client waits a second between its rounds
			}
		default:
			addr, perr := parseServer(znode, data)
			if perr != nil {
				p.fail("read "+znode+" from ZooKeeper quorum "+p.cfg.ZKQuorum, "", perr)
				break
			}
			var d net.Dialer
			c, derr := d.DialContext(ctx, "tcp", addr)
			if derr == nil {
				c.Close()
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.fail("reach "+what+" "+addr+" (from "+znode+" in ZooKeeper quorum "+p.cfg.ZKQuorum+")", "", derr)
		}
		if !pause(ctx, probeRetryPause) {
			return ctx.Err()
		}
	}
}

// pause waits d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// quorumServers splits a quorum into its servers, as gohbase does,
// blanks trimmed.
func quorumServers(quorum string) []string {
	var out []string
	for s := range strings.SplitSeq(quorum, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseServer decodes the server a znode of HBase names (the
// meta-region-server or the master): 0xFF, a 4-byte length and that much
// metadata, "PBUF", then the protobuf message (pb.MetaRegionServer, or
// pb.Master for the master), as gohbase's zk package reads it. It returns
// host:port.
func parseServer(znode string, buf []byte) (string, error) {
	const pbufMagic = 1346524486 // "PBUF"
	if len(buf) < 5 || buf[0] != 0xFF {
		return "", fmt.Errorf("znode %s holds %d bytes not in HBase's form: %w", znode, len(buf), store.ErrInvalid)
	}
	n := binary.BigEndian.Uint32(buf[1:5])
	if n < 1 || n > 65000 || uint64(len(buf)) < 5+uint64(n)+4 {
		return "", fmt.Errorf("znode %s: metadata length %d in %d bytes: %w", znode, n, len(buf), store.ErrInvalid)
	}
	buf = buf[5+n:]
	if m := binary.BigEndian.Uint32(buf); m != pbufMagic {
		return "", fmt.Errorf("znode %s: magic %#x, want PBUF: %w", znode, m, store.ErrInvalid)
	}
	buf = buf[4:]
	var server *pb.ServerName
	if path.Base(znode) == "master" {
		var m pb.Master
		if err := proto.Unmarshal(buf, &m); err != nil {
			return "", fmt.Errorf("znode %s: %w: %w", znode, err, store.ErrInvalid)
		}
		server = m.GetMaster()
	} else {
		var m pb.MetaRegionServer
		if err := proto.Unmarshal(buf, &m); err != nil {
			return "", fmt.Errorf("znode %s: %w: %w", znode, err, store.ErrInvalid)
		}
		server = m.GetServer()
	}
	if server.GetHostName() == "" || server.GetPort() == 0 {
		return "", fmt.Errorf("znode %s names no server: %w", znode, store.ErrInvalid)
	}
	return net.JoinHostPort(server.GetHostName(), strconv.FormatUint(uint64(server.GetPort()), 10)), nil
}

// zkLogger sends the ZooKeeper client's logs to slog at debug level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	if z.l != nil {
		z.l.Debug(fmt.Sprintf(format, args...), "component", "zookeeper")
	}
}
