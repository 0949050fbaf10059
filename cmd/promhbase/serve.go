package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"

	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/promhbase/promhbase/adapter"
	"github.com/promhbase/promhbase/compact"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/promapi"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/web"
)

// splitFeatures splits comma-separated --enable-feature values.
func splitFeatures(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// flagValues is every flag of app with its value, for
// /api/v1/status/flags.
func flagValues(app *kingpin.Application) map[string]string {
	out := map[string]string{}
	var add func(fs []*kingpin.FlagModel)
	add = func(fs []*kingpin.FlagModel) {
		for _, f := range fs {
			out[f.Name] = f.String()
		}
	}
	m := app.Model()
	add(m.Flags)
	for _, c := range m.Commands {
		add(c.Flags)
	}
	return out
}

type serveFlags struct {
	listen          string
	maxRequestBytes int
	maxSamples      int
	readTimeout     time.Duration
	writeTimeout    time.Duration
	maxConcurrent   int
	exemplarSlots   int
	compaction      compactionFlags
	queryTimeout    time.Duration
	lookbackDelta   time.Duration
	queryMaxConc    int
	enablePprof     bool
	features        []string
	scanConc        int
	corsOrigin      string
	externalURL     string
	maxBytes        int64
	readConcurrent  int
	readFrame       time.Duration
}

// compactionFlags are the --storage.compaction.* flags of serve.
type compactionFlags struct {
	enabled        bool
	grace          time.Duration
	maxRowsPerHour int
	concurrency    int
}

var serveOpts serveFlags

func registerServe(app *kingpin.Application, cfg *config) *kingpin.CmdClause {
	cmd := app.Command("serve", "Serve Prometheus remote write and remote read.").Default()
	cmd.Flag("web.listen-address", "Address to listen on.").Default(":9201").StringVar(&serveOpts.listen)
	cmd.Flag("web.max-request-bytes", "Largest decoded (uncompressed) request body; larger ones get 413.").Default("33554432").IntVar(&serveOpts.maxRequestBytes)
	cmd.Flag("query.max-samples", "Most samples one remote-read request (all its queries together) or one PromQL query may load: past it a remote read gets 413, a PromQL query 422, as Prometheus's flag of this name.").Default("50000000").IntVar(&serveOpts.maxSamples)
	cmd.Flag("query.max-bytes-per-query", "Most bytes one remote-read request (all its queries) or PromQL query holds at once: its series' samples as chunks, a SAMPLES answer as it is built. Past it: 413 for remote read, 422 for PromQL.").Default(fmt.Sprint(query.DefaultMaxBytes)).Int64Var(&serveOpts.maxBytes)
	cmd.Flag("storage.remote.read-concurrent-limit", "Remote-read requests answered at once; further ones wait up to 10s for one to end, then get 503. As Prometheus's flag of this name.").Default("10").IntVar(&serveOpts.readConcurrent)
	cmd.Flag("storage.remote.read-frame-timeout", "Longest time the writing of one frame of a streamed remote-read answer may take; a reader that stops reading is cut off then.").Default("1m").DurationVar(&serveOpts.readFrame)
	cmd.Flag("query.timeout", "Longest time a PromQL query may take (then 503).").Default("2m").DurationVar(&serveOpts.queryTimeout)
	cmd.Flag("query.lookback-delta", "How far back PromQL looks for a series' latest sample at an evaluation instant.").Default("5m").DurationVar(&serveOpts.lookbackDelta)
	cmd.Flag("query.max-concurrency", "PromQL queries evaluated at once; the others wait (within --query.timeout).").Default("20").IntVar(&serveOpts.queryMaxConc)
	cmd.Flag("query.scan-concurrency", "Scans (metrics × salt buckets) one query runs at once.").Default("4").IntVar(&serveOpts.scanConc)
	cmd.Flag("web.cors.origin", `Regex of the origins allowed cross-origin query API requests, fully anchored, as Prometheus's flag.`).Default(".*").StringVar(&serveOpts.corsOrigin)
	cmd.Flag("enable-feature", "PromQL features to enable, as Prometheus's flag of this name: "+strings.Join(promapi.Features, ", ")+". Repeat it or separate with commas.").StringsVar(&serveOpts.features)
	cmd.Flag("web.enable-pprof", "Serve Go's profiling endpoints under /debug/pprof/.").Default("false").BoolVar(&serveOpts.enablePprof)
	cmd.Flag("web.external-url", "URL under which clients reach promhbase, for the landing page's config snippets (default: the request's host).").Default("").StringVar(&serveOpts.externalURL)
	cmd.Flag("web.read-timeout", "Longest time a request may take.").Default("5m").DurationVar(&serveOpts.readTimeout)
	cmd.Flag("web.max-concurrent-requests", "Remote write and read requests decoded at once (bounds their memory); further ones wait up to --web.write-timeout, then get 503. 0 means 2×GOMAXPROCS+8.").Default("0").IntVar(&serveOpts.maxConcurrent)
	cmd.Flag("web.write-timeout", "Longest time a remote write waits for the store before answering 503 (keep it below Prometheus's remote_timeout, 30s by default).").Default("25s").DurationVar(&serveOpts.writeTimeout)
	cmd.Flag("storage.exemplars.per-series-hour", "Exemplars kept per series and hour: the hour is cut into this many slots and a slot keeps its latest exemplar (720: one per 5 s). 0 keeps none.").Default(fmt.Sprint(adapter.DefaultExemplarSlots)).IntVar(&serveOpts.exemplarSlots)
	c := &serveOpts.compaction
	cmd.Flag("storage.compaction.enabled", "Rewrite each row this process wrote into OpenTSDB's compacted column once its hour has ended (plus the grace period).").Default("true").BoolVar(&c.enabled)
	cmd.Flag("storage.compaction.grace", "How long after an hour ends its rows are compacted, so that late samples land first.").Default(compact.DefaultGrace.String()).DurationVar(&c.grace)
	cmd.Flag("storage.compaction.max-rows-per-hour", "Rows remembered for compaction per hour (about 135 bytes each); rows beyond it are left for `promhbase compact`.").Default(fmt.Sprint(compact.DefaultMaxRowsPerHour)).IntVar(&c.maxRowsPerHour)
	cmd.Flag("storage.compaction.concurrency", "Rows compacted at once.").Default("4").IntVar(&c.concurrency)
	return cmd
}

func runServe(app *kingpin.Application, cfg *config) error {
	logger := cfg.logger()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	st, mapper, err := cfg.openMapping(reg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	w := adapter.NewWriter(mapper, st, cfg.dataTable)
	if serveOpts.exemplarSlots > 0 {
		if serveOpts.exemplarSlots > mapping.MaxExemplarSlots {
			return fmt.Errorf("--storage.exemplars.per-series-hour=%d: at most %d", serveOpts.exemplarSlots, mapping.MaxExemplarSlots)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := st.Get(ctx, cfg.exemplarTable, []byte{0}, mapping.ExemplarFamily)
		cancel()
		if errors.Is(err, store.ErrTableNotFound) {
			return fmt.Errorf("exemplar table %q does not exist: run `promhbase create-tables` (it leaves existing tables alone) or set --storage.exemplars.per-series-hour=0", cfg.exemplarTable)
		}
		w.SetExemplars(cfg.exemplarTable, serveOpts.exemplarSlots)
	}
	w.SetMetadata(mapping.NewMetas(mapper.UIDs(), 0))
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	compacted := make(chan struct{})
	if c := serveOpts.compaction; c.enabled {
		comp := compact.New(st, compact.Options{DataTable: cfg.dataTable, UIDTable: cfg.uidTable, Layout: cfg.layout, Concurrency: c.concurrency})
		sched, err := compact.NewScheduler(comp, compact.SchedulerOptions{
			Grace: c.grace, MaxRowsPerHour: c.maxRowsPerHour, Registerer: reg, Logger: logger.With("component", "compaction"),
		})
		if err != nil {
			return fmt.Errorf("compaction: %w", err)
		}
		w.SetRowNoter(sched)
		go func() {
			defer close(compacted)
			sched.Run(runCtx)
		}()
		// Stop it, letting the rows in flight finish, before the store
		// closes (that defer was registered first, so it runs last).
		defer func() {
			stop()
			<-compacted
		}()
	}
	qopts := query.Options{DataTable: cfg.dataTable, UIDTable: cfg.uidTable, MaxSamples: serveOpts.maxSamples, MaxBytes: serveOpts.maxBytes, ScanConcurrency: serveOpts.scanConc}
	if serveOpts.exemplarSlots > 0 {
		qopts.ExemplarTable = cfg.exemplarTable
	}
	q := query.New(st, mapper, qopts)
	h, err := adapter.New(w, q, adapter.Options{
		MaxRequestBytes:       serveOpts.maxRequestBytes,
		WriteTimeout:          serveOpts.writeTimeout,
		MaxConcurrentRequests: serveOpts.maxConcurrent,
		MaxConcurrentReads:    serveOpts.readConcurrent,
		ReadFrameTimeout:      serveOpts.readFrame,
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
	cors, err := regexp.Compile("^(?:" + serveOpts.corsOrigin + ")$")
	if err != nil {
		return fmt.Errorf("--web.cors.origin=%q: %w", serveOpts.corsOrigin, err)
	}
	api, err := promapi.New(promapi.Options{CORSOrigin: cors,
		Queryable: q.Storage(), Store: st, UIDTable: cfg.uidTable, MetricWidth: cfg.layout.MetricWidth,
		Timeout: serveOpts.queryTimeout, MaxSamples: serveOpts.maxSamples, LookbackDelta: serveOpts.lookbackDelta, MaxConcurrency: serveOpts.queryMaxConc,
		Flags: flagValues(app), Version: version, Logger: logger, Registerer: reg, Features: splitFeatures(serveOpts.features),
	})
	if err != nil {
		return err
	}
	info := web.Info{
		Version: version, Backend: cfg.backendString(), DataTable: cfg.dataTable, UIDTable: cfg.uidTable,
		SaltWidth: cfg.layout.SaltWidth, SaltBuckets: cfg.layout.SaltBuckets,
		UIDWidths: [3]int{cfg.layout.MetricWidth, cfg.layout.TagKWidth, cfg.layout.TagVWidth}, ExternalURL: serveOpts.externalURL,
	}
	if serveOpts.exemplarSlots > 0 {
		info.ExemplarTable = cfg.exemplarTable
	}
	handler := web.New(web.Options{Remote: h, API: api, Pprof: serveOpts.enablePprof, Info: info})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, WriteTimeout: serveOpts.readTimeout}
	logger.Info("promhbase serving", "address", ln.Addr().String(), "backend", cfg.backend, "data_table", cfg.dataTable, "uid_table", cfg.uidTable, "exemplar_table", cfg.exemplarTable,
		"salt_width", cfg.layout.SaltWidth, "salt_buckets", cfg.layout.SaltBuckets,
		"compaction", serveOpts.compaction.enabled, "compaction_grace", serveOpts.compaction.grace)

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
