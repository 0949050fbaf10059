// Package adapter is promhbase's HTTP face: Prometheus remote write
// (POST /api/v1/write) and remote read (POST /api/v1/read), health
// endpoints and /metrics. It decodes and bounds requests, hands them to the
// write path (mapping + store) or to query, and maps errors to status codes
// in one place (statusFor).
//
// It also holds the concurrency slots, bounds bodies (a size limit,
// snappy's decoded length checked before decoding), negotiates remote
// read's answer (SAMPLES or STREAMED_XOR_CHUNKS) and answers health and
// readiness (/-/healthy, /-/ready) for one server. statusFor gives each
// remote write and read error its status: 4xx, which a sender never
// retries, for data that can never be stored; 5xx, which it retries, for
// store trouble. import.go serves the migration tools' endpoints as
// VictoriaMetrics answers them: /api/v1/import, /api/v1/import/prometheus,
// /api/v1/import/chunks, /api/v1/export and /health.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/hatracker"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/internal/httpmetrics"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
)

// Errors of request decoding, mapped to status codes by statusFor.
var (
	errTooLarge         = errors.New("request too large")
	errBadRequest       = errors.New("bad request")
	errUnsupportedMedia = errors.New("unsupported media type")
	errMethod           = errors.New("method not allowed")
	errBusy             = errors.New("too many requests in flight")
	errBodyTimeout      = errors.New("request body not received in time")
)

// Options configure the Handler.
type Options struct {
	// MaxRequestBytes bounds the decoded (uncompressed) size of a request
	// body; the compressed body may be at most snappy's worst case of it.
	MaxRequestBytes int
	// Ready reports whether the server is ready to serve; nil means always.
	// It is given readyTimeout: a store that does not answer within it
	// makes /-/ready answer 503 saying so, at once.
	Ready func(context.Context) error
	// ReadOnly, when set, reports whether the store refuses writes now
	// and why (a full disk): /-/ready still answers 200, its body saying
	// so.
	ReadOnly func() (bool, string)
	// Gatherer serves /metrics; nil means the Registerer if it gathers.
	Gatherer prometheus.Gatherer
	// MaxConcurrentRequests bounds the remote-write and remote-read
	// requests decoded at once, and so the memory their bodies take
	// (each at most MaxRequestBytes decoded). Further requests wait for a
	// slot up to WriteTimeout and then get 503, which Prometheus retries.
	// Zero means 2 × GOMAXPROCS + 8. A request takes its slot only once
	// its body has arrived (see BodyTimeout).
	MaxConcurrentRequests int
	// BodyTimeout bounds the time a client may take to send the body of a
	// remote write or read; past it the connection is closed. The body is
	// received before the request takes a slot, so slow senders hold
	// only their connection and what they sent. Zero means 30s.
	BodyTimeout time.Duration
	// ResponseWriteTimeout bounds each write of a remote write or read
	// answer to the connection (a streamed read writes its frames up to
	// 32 KiB at a time): a client that stops reading has its connection
	// closed within it (at least 3/4 of it), however long the whole answer
	// takes. Zero means 1m.
	ResponseWriteTimeout time.Duration
	// WriteTimeout bounds the time a write may wait for the store; past it
	// the answer is 503 and Prometheus retries. It should stay below the
	// remote_timeout of the senders (Prometheus's default is 30s). Zero
	// means 25s.
	WriteTimeout time.Duration
	// MaxConcurrentReads bounds the remote-read requests that run at once
	// (--storage.remote.read-concurrent-limit); further ones wait up to
	// ReadWait for one to end, then get 503. Zero means 10.
	MaxConcurrentReads int
	// ReadWait is how long a remote read waits for a read slot; zero
	// means 10s.
	ReadWait time.Duration
	// Slots and ReadSlots, when set, are the decoding and remote-read
	// slots instead of MaxConcurrentRequests' and MaxConcurrentReads'
	// own: handlers given the same channels (one per tenant) share their
	// capacity, and so their bound on memory.
	Slots, ReadSlots chan struct{}
	// OTLP returns how OTLP metrics are translated for this handler's
	// requests (its tenant's settings); nil means otlp.DefaultConfig.
	OTLP func() otlp.Config
	// OpenTSDB configures OpenTSDB's put (/api/put and PutPoints).
	OpenTSDB OpenTSDBOptions
}

// Handler serves promhbase's HTTP endpoints.
type Handler struct {
	w *ingest.Writer
	// imports keeps the memory of finished import requests for the next
	// ones: a few, as a sync.Pool would lose them at every other GC.
	imports chan *importBuf
	// importBatch is the samples of one write of an import
	// (importBatchSamples; tests make it small).
	importBatch int
	// streams holds a token for each import parsing while its body
	// arrives (serveImport).
	streams chan struct{}
	q       *query.Querier
	opts    Options
	// readGuards are remote read's guardrails (SetReadGuards).
	readGuards atomic.Pointer[ReadGuards]
	logger     *slog.Logger
	mux        *http.ServeMux
	bufs       sync.Pool // *bodyBuf
	// answers holds the buffers of SAMPLES answers (*[]byte), the
	// protobuf and its snappy block, for the next read.
	answers sync.Pool
	// streamBufs holds the *bufio.Writer of streamed answers.
	streamBufs sync.Pool
	slots      chan struct{}
	counts     countValues // values of the Written headers
	// readSlots bounds the remote reads that run at once.
	readSlots chan struct{}
	// parser reads the selectors of exports.
	parser parser.Parser
	// otlp translates OTLP requests; zstd decodes their zstd bodies.
	otlp otlpState

	http                                *httpmetrics.Metrics
	samplesWritten                      prometheus.Counter
	histogramsWritten, exemplarsWritten prometheus.Counter
	samplesRejected                     *prometheus.CounterVec
	samplesExpired                      prometheus.Counter
	readSeries                          prometheus.Counter
	readSamples                         prometheus.Counter
	otlpTranslated                      *prometheus.CounterVec
}

// newCounter returns a counter of name with help as its help text.
func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// New returns the Handler. Metrics are registered on reg.
func New(w *ingest.Writer, q *query.Querier, opts Options, reg prometheus.Registerer, logger *slog.Logger) (*Handler, error) {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 32 << 20
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 25 * time.Second
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.ResponseWriteTimeout <= 0 {
		opts.ResponseWriteTimeout = time.Minute
	}
	if opts.MaxConcurrentRequests <= 0 {
		opts.MaxConcurrentRequests = 2*runtime.GOMAXPROCS(0) + 8
	}
	if opts.MaxConcurrentReads <= 0 {
		opts.MaxConcurrentReads = 10
	}
	if opts.ReadWait <= 0 {
		opts.ReadWait = 10 * time.Second
	}
	h := &Handler{
		w: w, q: q, opts: opts, logger: logger, imports: make(chan *importBuf, 2), streams: make(chan struct{}, importStreams), importBatch: importBatchSamples,
		samplesWritten:    newCounter("promhbase_samples_written_total", "Samples acknowledged by the store."),
		histogramsWritten: newCounter("promhbase_histograms_written_total", "Native histogram samples acknowledged by the store."),
		exemplarsWritten:  newCounter("promhbase_exemplars_written_total", "Exemplars acknowledged by the store (one per series, hour and slot)."),
		samplesRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_samples_rejected_total", Help: "Samples and native histograms rejected, by reason: with 400 per series, or with 413 or 429 with their whole request (reasons max_series_per_request, ingestion_rate, new_series_rate).",
		}, []string{"reason"}),
		samplesExpired: newCounter("promhbase_samples_expired_total", "Samples and native histograms older than --storage.retention.time when written: dropped, not stored (their request is answered as written), as the retention cycle would delete them."),
		readSeries:     newCounter("promhbase_read_series_total", "Series returned by remote read."),
		readSamples:    newCounter("promhbase_read_samples_total", "Samples returned by remote read."),
		otlpTranslated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_otlp_requests_translated_total",
			Help: "OTLP requests translated, by path: fast (straight from the protobuf bytes) or general (pdata and Prometheus's converter).",
		}, []string{"path"}),
	}
	h.otlpTranslated.WithLabelValues("fast")
	h.otlpTranslated.WithLabelValues("general")
	for _, r := range ingest.RejectReasons() {
		h.samplesRejected.WithLabelValues(r)
	}
	var err error
	if h.http, err = httpmetrics.Register(reg); err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{h.samplesWritten, h.histogramsWritten, h.exemplarsWritten, h.samplesRejected, h.samplesExpired, h.readSeries, h.readSamples, h.otlpTranslated} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register http metrics: %w", err)
		}
	}
	gatherer := opts.Gatherer
	if gatherer == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			gatherer = g
		}
	}
	h.readGuards.Store(&ReadGuards{})
	h.slots, h.readSlots = opts.Slots, opts.ReadSlots
	if h.slots == nil {
		h.slots = make(chan struct{}, opts.MaxConcurrentRequests)
	}
	if h.readSlots == nil {
		h.readSlots = make(chan struct{}, opts.MaxConcurrentReads)
	}
	h.parser = parser.NewParser(parser.Options{})
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/api/v1/write", h.instrument("write", h.receive(h.serveWrite)))
	h.mux.HandleFunc("/api/v1/read", h.instrument("read", h.receive(h.serveRead)))
	h.mux.HandleFunc("/-/healthy", h.instrument("healthy", func(w http.ResponseWriter, r *http.Request) error {
		_, err := io.WriteString(w, "promhbase is healthy.\n")
		return err
	}))
	h.mux.HandleFunc("/-/ready", h.instrument("ready", h.serveReady))
	for _, p := range OTLPPaths {
		h.mux.HandleFunc(p, h.instrument("otlp", h.receive(h.serveOTLP)))
	}
	h.mux.HandleFunc("/api/v1/import", h.instrument("import", h.serveImport))
	h.mux.HandleFunc("/api/v1/import/prometheus", h.instrument("import_prometheus", h.serveImportText))
	h.mux.HandleFunc("/api/v1/import/chunks", h.instrument("import_chunks", h.serveImportChunks))
	h.mux.HandleFunc("/api/v1/export", h.instrument("export", h.serveExport))
	h.mux.HandleFunc("/health", h.instrument("health", h.serveHealth))
	h.mux.HandleFunc(OpenTSDBPutPath, h.instrument("opentsdb_put", h.receive(h.servePutTSD)))
	h.mux.HandleFunc(OpenTSDBSuggestPath, h.instrument("opentsdb_suggest", h.serveSuggestTSD))
	h.mux.HandleFunc(OpenTSDBQueryPath, h.instrument("opentsdb_query", h.serveQueryTSD))
	h.mux.HandleFunc(OpenTSDBLookupPath, h.instrument("opentsdb_lookup", h.serveLookupTSD))
	if gatherer != nil {
		h.mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	}
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// retryAfterUnavailable is the Retry-After (seconds) of a 503 answer.
const retryAfterUnavailable = 1

// statusFor maps an error to its HTTP status code. It is the one place that
// decides between "never retry" (4xx) and "retry" (5xx).
func statusFor(err error) int {
	var rej *ingest.RejectError
	var rate *limits.RateLimitError
	switch {
	case err == nil:
		return http.StatusNoContent
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed
	case errors.Is(err, hatracker.ErrNotElected):
		// A write of an HA pair's replica that is not the elected one:
		// dropped, and answered as Mimir answers it, so that the sender
		// does not retry it.
		return http.StatusAccepted
	case errors.As(err, &rate):
		return http.StatusTooManyRequests
	case errors.Is(err, errTooLarge), errors.Is(err, query.ErrTooManySamples), errors.Is(err, query.ErrTooManyBytes), errors.Is(err, limits.ErrTooManySeries):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnsupportedMedia):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, query.ErrTooManySeries):
		// As Mimir answers max_fetched_series_per_query.
		return http.StatusUnprocessableEntity
	case errors.As(err, &rej), errors.Is(err, errBadRequest), errors.Is(err, wire.ErrMalformed), errors.Is(err, store.ErrInvalid),
		errors.Is(err, hatracker.ErrTooManyClusters):
		return http.StatusBadRequest
	case errors.Is(err, errBusy), errors.Is(err, errBodyTimeout), errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// instrument wraps a handler that returns an error: the error becomes the
// status code (statusFor) and a plain-text body, the request is counted,
// timed and logged once. An error after the answer has begun (a streamed
// read) cannot change its status: the connection is aborted instead, so
// that the client sees an unfinished answer rather than a short one.
func (h *Handler) instrument(name string, fn func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		if name == "write" || name == "read" {
			sw.stall = h.opts.ResponseWriteTimeout
		}
		err := fn(sw, r)
		var answered answeredError
		begun := sw.code != 0 && !errors.As(err, &answered)
		if err != nil && sw.code == 0 && !errors.As(err, &answered) {
			code := statusFor(err)
			setErrorHeaders(sw.Header(), code, err)
			http.Error(sw, err.Error(), code)
		} else if sw.code == 0 {
			sw.WriteHeader(http.StatusOK)
		}
		d := time.Since(start)
		h.http.Observe(name, sw.code, d)
		switch {
		case err == nil, sw.code == http.StatusAccepted:
			// 202: an HA pair's replica that is not elected, every one of
			// its requests while the other is.
			h.logger.Debug("request", "handler", name, "code", sw.code, "duration", d)
		case sw.code >= 500:
			h.logger.Error("request failed", "handler", name, "code", sw.code, "duration", d, "err", err)
		case begun:
			h.logger.Error("request failed after its answer began", "handler", name, "code", sw.code, "duration", d, "err", err)
		default:
			h.logger.Warn("request rejected", "handler", name, "code", sw.code, "duration", d, "err", err)
		}
		if err != nil && begun {
			panic(http.ErrAbortHandler)
		}
	}
}

// setErrorHeaders sets the headers of an error answer of status code:
// Allow for 405, Retry-After for 429 (the rate limit's wait) and 503.
func setErrorHeaders(hd http.Header, code int, err error) {
	var rate *limits.RateLimitError
	switch {
	case code == http.StatusMethodNotAllowed:
		hd.Set("Allow", http.MethodPost)
	case errors.As(err, &rate):
		hd.Set("Retry-After", strconv.Itoa(int(rate.RetryAfter.Round(time.Second)/time.Second)))
	case code == http.StatusServiceUnavailable:
		// The store, or promhbase, is busy or out of reach for now (a
		// region moving, a region server being replaced): Prometheus's
		// remote write waits this long before it sends the request
		// again, instead of its shortest backoff.
		hd.Set("Retry-After", strconv.Itoa(retryAfterUnavailable))
	}
}

// acquire waits for one of the MaxConcurrentRequests slots, at most
// WriteTimeout; the returned function frees it.
func (h *Handler) acquire(ctx context.Context) (func(), error) {
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	default:
	}
	t := time.NewTimer(h.opts.WriteTimeout)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: %d requests are being decoded; retry later", errBusy, cap(h.slots))
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errBusy, ctx.Err())
	}
}

func (h *Handler) serveWrite(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("%w: %s on /api/v1/write", errMethod, r.Method)
	}
	v2, err := writeProtocol(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	var res ingest.Result
	headersSet := false
	if v2 {
		// Remote write 2.0: every answer, success or not, says what was
		// written (nothing, until the store acknowledged). An error answer
		// is written after this function returns.
		defer func() {
			if !headersSet {
				h.setWritten(w.Header(), res)
			}
		}()
	}
	body, done, err := h.slotAndBody(r, h.readBody)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	defer cancel()
	res, err = h.w.Write(ctx, body, v2)
	h.count(res)
	if err != nil {
		return err
	}
	if v2 {
		h.setWritten(w.Header(), res)
		headersSet = true
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// slotAndBody takes one of the decoding slots (acquire) and then reads
// the request's body with read; done gives both back.
func (h *Handler) slotAndBody(r *http.Request, read func(*http.Request) ([]byte, func(), error)) (body []byte, done func(), err error) {
	free, err := h.acquire(r.Context())
	if err != nil {
		return nil, nil, err
	}
	body, release, err := read(r)
	if err != nil {
		free()
		return nil, nil, err
	}
	return body, func() { release(); free() }, nil
}

// count adds what a write did to the metrics.
func (h *Handler) count(res ingest.Result) {
	h.samplesWritten.Add(float64(res.Samples))
	h.histogramsWritten.Add(float64(res.Histograms))
	h.exemplarsWritten.Add(float64(res.Exemplars))
	h.samplesExpired.Add(float64(res.Expired))
	for reason, n := range res.Rejected {
		h.samplesRejected.WithLabelValues(reason).Add(float64(n))
	}
}

// setWritten sets remote write 2.0's Written headers from res.
func (h *Handler) setWritten(hd http.Header, res ingest.Result) {
	hd["X-Prometheus-Remote-Write-Samples-Written"] = h.counts.value(res.Samples)
	hd["X-Prometheus-Remote-Write-Histograms-Written"] = h.counts.value(res.Histograms)
	hd["X-Prometheus-Remote-Write-Exemplars-Written"] = h.counts.value(res.Exemplars)
}

// countValues hands out header values for counts, each a one-element
// slice of capacity one (so that Header.Add copies rather than appends to
// it), made once per count below maxCountValue and shared by every answer
// after that: the Written headers of a 2.0 answer cost no allocation.
type countValues struct {
	vals [maxCountValue]atomic.Pointer[[]string]
}

// maxCountValue covers the batch sizes senders use (Prometheus's
// max_samples_per_send is 2000 by default).
const maxCountValue = 1 << 14

func (c *countValues) value(n int) []string {
	if n < 0 || n >= maxCountValue {
		return []string{strconv.Itoa(n)}
	}
	if p := c.vals[n].Load(); p != nil {
		return *p
	}
	v := []string{strconv.Itoa(n)}
	c.vals[n].Store(&v)
	return v
}

// Remote-write protobuf messages, as the proto parameter of Content-Type
// names them.
const (
	protoV1 = "prometheus.WriteRequest"
	protoV2 = "io.prometheus.write.v2.Request"
)

// writeProtocol decides the protocol of a remote write from its
// Content-Type, as the 2.0 spec says receivers must: application/x-protobuf
// alone or with proto=prometheus.WriteRequest is 1.0, with
// proto=io.prometheus.write.v2.Request 2.0; anything else is refused with
// 415. A missing Content-Type is taken as 1.0 (old senders).
func writeProtocol(ct string) (v2 bool, err error) {
	switch ct {
	case "", "application/x-protobuf", "application/x-protobuf;proto=" + protoV1:
		return false, nil
	case "application/x-protobuf;proto=" + protoV2:
		return true, nil // what Prometheus sends: no parsing, no allocation
	}
	mt, params, perr := mime.ParseMediaType(ct)
	if perr == nil && mt == "application/x-protobuf" {
		switch params["proto"] {
		case "", protoV1:
			return false, nil
		case protoV2:
			return true, nil
		}
	}
	return false, fmt.Errorf("%w: content type %q; promhbase takes application/x-protobuf with proto=%s (remote write 1.0, the default) or proto=%s (2.0)",
		errUnsupportedMedia, ct, protoV1, protoV2)
}

// readyTimeout bounds /-/ready's probe of the store: a probe that has
// not answered by then (a backend that stopped answering) is answered
// 503 at once, within a second, a load balancer's or kubelet's probe
// timeout. Half a second was too short for a loaded HBase's Get (a CI
// run on 2 cores).
const readyTimeout = ReadyTimeout

// ReadyTimeout is how long /-/ready waits for the store to answer.
const ReadyTimeout = 800 * time.Millisecond

func (h *Handler) serveReady(w http.ResponseWriter, r *http.Request) error {
	if h.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := h.opts.Ready(ctx); err != nil {
			msg := err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				msg = fmt.Sprintf("the store did not answer within %s: %v", readyTimeout, err)
			}
			http.Error(w, "promhbase is not ready: "+msg, http.StatusServiceUnavailable)
			return nil
		}
	}
	if h.opts.ReadOnly != nil {
		if ro, why := h.opts.ReadOnly(); ro {
			_, err := io.WriteString(w, "promhbase is ready, read-only: "+why+"\n")
			return err
		}
	}
	_, err := io.WriteString(w, "promhbase is ready.\n")
	return err
}
