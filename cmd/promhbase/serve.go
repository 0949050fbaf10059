package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/query"
)

type serveFlags struct {
	listen          string
	maxRequestBytes int
	maxSamples      int
	readTimeout     time.Duration
	writeTimeout    time.Duration
}

var serveOpts serveFlags

func registerServe(app *kingpin.Application, cfg *config) *kingpin.CmdClause {
	cmd := app.Command("serve", "Serve Prometheus remote write and remote read.").Default()
	cmd.Flag("web.listen-address", "Address to listen on.").Default(":9201").StringVar(&serveOpts.listen)
	cmd.Flag("web.max-request-bytes", "Largest decoded (uncompressed) request body; larger ones get 413.").Default("33554432").IntVar(&serveOpts.maxRequestBytes)
	cmd.Flag("query.max-samples", "Most samples one remote-read query may return; more gets 413.").Default("50000000").IntVar(&serveOpts.maxSamples)
	cmd.Flag("web.read-timeout", "Longest time a request may take.").Default("5m").DurationVar(&serveOpts.readTimeout)
	cmd.Flag("web.write-timeout", "Longest time a remote write waits for the store before answering 503 (keep it below Prometheus's remote_timeout, 30s by default).").Default("25s").DurationVar(&serveOpts.writeTimeout)
	return cmd
}

func runServe(cfg *config) error {
	logger := cfg.logger()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	st, mapper, err := cfg.openMapping(reg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	w := adapter.NewWriter(mapper, st, cfg.dataTable)
	q := query.New(st, mapper, query.Options{DataTable: cfg.dataTable, UIDTable: cfg.uidTable, MaxSamples: serveOpts.maxSamples})
	h, err := adapter.New(w, q, adapter.Options{
		MaxRequestBytes: serveOpts.maxRequestBytes,
		WriteTimeout:    serveOpts.writeTimeout,
		Ready: func(ctx context.Context) error {
			_, err := st.Get(ctx, cfg.uidTable, []byte{0}, "id")
			return err
		},
	}, reg, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", serveOpts.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", serveOpts.listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, WriteTimeout: serveOpts.readTimeout}
	logger.Info("promhbase serving", "address", ln.Addr().String(), "backend", cfg.backend, "data_table", cfg.dataTable, "uid_table", cfg.uidTable,
		"salt_width", cfg.layout.SaltWidth, "salt_buckets", cfg.layout.SaltBuckets)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		return err
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
