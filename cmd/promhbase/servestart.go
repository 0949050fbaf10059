package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/web"
)

// buildFunc wires serve's server over the store: its handler and the
// function that stops its background work. reg takes the server's
// metrics: a registry of the attempt's own when it may be tried again.
type buildFunc func(ctx context.Context, reg *prometheus.Registry) (http.Handler, func(), error)

// startRetryPause is how long serve waits before it tries HBase again
// after a try that failed.
const startRetryPause = time.Second

// startGate is serve's handler while HBase is being reached: /-/healthy
// answers 200, /metrics the process's metrics, and every other path 503
// with the reason it is not ready, how long it has waited and why (with
// Retry-After). Once open it hands every request to the server's
// handler.
type startGate struct {
	handler atomic.Pointer[http.Handler]
	reason  atomic.Pointer[string]
	since   time.Time
	metrics http.Handler
	waiting http.Handler // the answers while closed
}

func newStartGate(reg prometheus.Gatherer, reason string) *startGate {
	g := &startGate{since: time.Now(), metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	g.setReason(reason)
	g.waiting = web.RetryUnavailable(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/-/healthy":
			_, _ = io.WriteString(w, "promhbase is healthy.\n")
		case "/metrics":
			g.metrics.ServeHTTP(w, r)
		default:
			http.Error(w, fmt.Sprintf("promhbase is not ready: waiting for HBase for %s: %s", time.Since(g.since).Round(time.Second), *g.reason.Load()),
				http.StatusServiceUnavailable)
		}
	}))
	return g
}

func (g *startGate) setReason(s string) { g.reason.Store(&s) }

// setFailure makes err the reason: what Probe could not reach and why.
func (g *startGate) setFailure(err error) {
	ue, ok := errors.AsType[*hbase.UnreachableError](err)
	if !ok {
		g.setReason(err.Error())
		return
	}
	r := "cannot " + ue.What + ": " + ue.Err.Error()
	if ue.Hint != "" {
		r += " (" + ue.Hint + ")"
	}
	g.setReason(r)
}

// open hands every request from now on to h.
func (g *startGate) open(h http.Handler) { g.handler.Store(&h) }

func (g *startGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := g.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	g.waiting.ServeHTTP(w, r)
}

// hbaseStarter wires serve's server on HBase in the background (see
// startOnHBase).
type hbaseStarter struct {
	gate   *startGate
	fatal  chan error
	cancel context.CancelFunc
	done   chan struct{}

	mu             sync.Mutex
	stopBackground func() // the built server's; nil until built
}

// startOnHBase returns serve's handler on HBase at once, and in the
// background waits until HBase can be reached (hbase.Probe, each try
// bounded by --hbase.connect-timeout, logged while it waits), then wires
// the server with build. A try that fails, and a build that fails because
// the store is unavailable, are logged and tried again, for as long as
// serve runs; meanwhile the handler answers /-/ready with 503 and the
// reason (startGate). A build that fails otherwise (a table missing, a
// bad setting) is sent on fatal, once: serve then ends with it. stop ends
// the tries and then the built server's background work.
func startOnHBase(h *hbaseFlags, reg *prometheus.Registry, logger *slog.Logger, build buildFunc) (handler http.Handler, fatal <-chan error, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &hbaseStarter{
		gate:   newStartGate(reg, "ZooKeeper quorum "+h.quorum+" not reached yet"),
		fatal:  make(chan error, 1),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go s.run(ctx, h, logger, build)
	return s.gate, s.fatal, s.stop
}

func (s *hbaseStarter) run(ctx context.Context, h *hbaseFlags, logger *slog.Logger, build buildFunc) {
	defer close(s.done)
	start := time.Now()
	for {
		err := h.reach(ctx, hbase.ProbeOptions{Logger: logger, OnWait: s.gate.setFailure})
		if err == nil {
			s.gate.setReason("reached; opening its tables")
			var handler http.Handler
			var stopBackground func()
			handler, stopBackground, err = build(ctx, prometheus.NewRegistry())
			if err == nil {
				s.mu.Lock()
				s.stopBackground = stopBackground
				s.mu.Unlock()
				s.gate.open(handler)
				logger.Info("HBase reached: serving", "quorum", h.quorum, "waited", time.Since(start).Round(time.Millisecond))
				return
			}
			if ctx.Err() == nil && !errors.Is(err, store.ErrUnavailable) {
				s.fatal <- err
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.gate.setFailure(err)
		logger.Warn("HBase not reached: trying again; /-/ready answers 503 meanwhile", "quorum", h.quorum,
			"waited", time.Since(start).Round(time.Second), "err", err)
		t := time.NewTimer(startRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// stop ends the tries, waits for the one in flight, then stops the built
// server's background work.
func (s *hbaseStarter) stop() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopBackground != nil {
		s.stopBackground()
	}
}
