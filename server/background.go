package server

import (
	"context"
	"sync"
	"time"
)

// uidRefreshInterval is how often a server reads the UID counters, which
// other writers move too.
const uidRefreshInterval = time.Minute

// Run does the server's background work until ctx ends: compaction of
// the rows written, the retention cycle, and reading the UID counters every minute for the
// headroom gauges and the low-headroom warning. It returns once the work
// in flight has finished, so the store may be closed after it.
func (s *Server) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.sched != nil {
		wg.Go(func() { s.sched.Run(ctx) })
	}
	if s.ret != nil {
		wg.Go(func() { s.ret.Run(ctx) })
	}
	if s.rollups != nil {
		wg.Go(func() { s.rollups.Run(ctx) })
	}
	if t := s.cacheTeller; t != nil && t.log != nil && t.c.Enabled() {
		wg.Go(func() { t.run(ctx) })
	}
	wg.Go(func() { s.watchUIDs(ctx) })
	wg.Wait()
}

// Start runs Run in a goroutine of its own until stop is called; stop
// returns once Run has returned.
func (s *Server) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// watchUIDs reads the UID counters now and then every uidRefreshInterval
// until ctx ends.
func (s *Server) watchUIDs(ctx context.Context) {
	t := time.NewTicker(uidRefreshInterval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := s.uids.RefreshCounters(rctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("cannot read the uid counters", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
