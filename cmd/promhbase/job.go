package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
)

// job is what a one-shot command (scan, uid, compact, reindex, delete,
// rollup, tenants) works with: the configured store, the series mapper
// over it (openMappingJob only), and the context the command runs in.
type job struct {
	ctx    context.Context
	st     store.Store
	mapper *series.Mapper
	reg    *prometheus.Registry // the store's (and the mapper's) metrics
	logger *slog.Logger
	stop   context.CancelFunc
}

// openJob opens the configured store for a one-shot command and the
// context it runs in: it ends on SIGINT or SIGTERM (an interrupted
// command returns, and its deferred close runs), and after timeout when
// that is not zero. On HBase it first waits until the cluster can be
// reached, and fails past --hbase.connect-timeout (hbaseFlags.reach).
// The caller defers close.
func (c *config) openJob(timeout time.Duration) (*job, error) {
	return c.openJobFor(timeout, false)
}

// openAdminJob is openJob for a command that creates or lists tables:
// on HBase the master must be reached too.
func (c *config) openAdminJob(timeout time.Duration) (*job, error) {
	return c.openJobFor(timeout, true)
}

func (c *config) openJobFor(timeout time.Duration, admin bool) (*job, error) {
	reg, logger := prometheus.NewRegistry(), c.logger()
	st, err := c.openStore(reg, logger)
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if c.backend == "hbase" {
		// Before the command's own time limit starts.
		if err := c.hbase.reach(ctx, hbase.ProbeOptions{Master: admin, Logger: logger}); err != nil {
			stop()
			st.Close()
			return nil, err
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		stopSignals := stop
		stop = func() { cancel(); stopSignals() }
	}
	return &job{ctx: ctx, st: st, reg: reg, logger: logger, stop: stop}, nil
}

// openMappingJob is openJob with the series mapper over the store's UID
// table.
func (c *config) openMappingJob(timeout time.Duration) (*job, error) {
	j, err := c.openJob(timeout)
	if err != nil {
		return nil, err
	}
	if j.mapper, err = c.newMapper(j.st, j.reg, j.logger); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

// settle brings what the command wrote into the store's settled form
// (store.Settler: the embedded store's files compacted down, the space of
// replaced cells given back) before the command ends, so that a stopped
// store needs no serve to settle it; stores that settle on their own
// (HBase) are left alone.
func (j *job) settle() error {
	s, ok := store.As[store.Settler](j.st)
	if !ok {
		return nil
	}
	start := time.Now()
	if err := s.Settle(j.ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "store settled in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// close releases the context and closes the store.
func (j *job) close() {
	j.stop()
	j.st.Close()
}
