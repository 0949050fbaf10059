package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
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
// that is not zero. The caller defers close.
func (c *config) openJob(timeout time.Duration) (*job, error) {
	reg, logger := prometheus.NewRegistry(), c.logger()
	st, err := c.openStore(reg, logger)
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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

// close releases the context and closes the store.
func (j *job) close() {
	j.stop()
	j.st.Close()
}
