package adapter

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/promhbase/promhbase/adapter/otlp"
	"github.com/promhbase/promhbase/ingest"
)

// OTLPPaths are the paths of OTLP/HTTP metrics, all served alike: Prometheus's
// (/api/v1/otlp/v1/metrics), Mimir's (/otlp/v1/metrics) and
// VictoriaMetrics's (/opentelemetry/v1/metrics), so that an exporter set
// up for any of them needs only promhbase's address.
var OTLPPaths = []string{"/api/v1/otlp/v1/metrics", "/otlp/v1/metrics", "/opentelemetry/v1/metrics"}

// otlpState is the Handler's OTLP translation and its decoders, made on
// first use.
type otlpState struct {
	conv     otlp.Converter
	zstdOnce sync.Once
	zstd     *zstd.Decoder
	zstdErr  error
	gzips    sync.Pool // *gzip.Reader
	bodies   sync.Pool // *[]byte: decompressed bodies, then remote write bodies
}

// answeredError is an error whose answer the handler has written itself
// (an OTLP error's Status message): instrument counts and logs it, and
// writes nothing more.
type answeredError struct{ err error }

func (e answeredError) Error() string { return e.err.Error() }
func (e answeredError) Unwrap() error { return e.err }

// serveOTLP stores an OTLP/HTTP metrics export request. Its phases: the
// body's format and encoding, the body decompressed within
// MaxRequestBytes, decoded, translated as Prometheus's receiver
// translates it (otlp.Converter), written through the remote-write path,
// then answered with an export response (partial_success when points
// were refused) in the request's format. Errors answer a Status message:
// 400 for what can never be stored, 413 for a body too large, 415 for an
// unknown format or encoding, 429 for rate limits, and 503 for
// everything retryable: OTLP clients retry 429, 502, 503 and 504 only.
func (h *Handler) serveOTLP(w http.ResponseWriter, r *http.Request) error {
	format := otlp.Protobuf
	err := h.storeOTLP(w, r, &format)
	if err == nil {
		return nil
	}
	writeOTLPError(w, format, err)
	return answeredError{err}
}

// storeOTLP is serveOTLP's work: it writes the success answer itself and
// returns the error to answer otherwise, having set *format to the
// request's.
func (h *Handler) storeOTLP(w http.ResponseWriter, r *http.Request, format *otlp.Format) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("%w: %s on %s", errMethod, r.Method, r.URL.Path)
	}
	f, err := otlpFormat(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	*format = f
	body, done, err := h.slotAndBody(r, h.readOTLPBody)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.WriteTimeout)
	defer cancel()
	bp := h.otlpBuf()
	defer h.otlp.bodies.Put(bp)
	cfg := h.otlpConfig()
	cfg.MaxBodyBytes = otlpBodyFactor * h.opts.MaxRequestBytes
	res, err := h.otlp.conv.ConvertBody(ctx, body, f, cfg, *bp)
	switch {
	case errors.Is(err, otlp.ErrMalformed):
		return fmt.Errorf("%w: %w", errBadRequest, err)
	case errors.Is(err, otlp.ErrTooLarge):
		return fmt.Errorf("%w: %w", errTooLarge, err)
	}
	if err != nil {
		return err
	}
	*bp = res.Body[:0]
	if res.Fast {
		h.otlpTranslated.WithLabelValues("fast").Inc()
	} else {
		h.otlpTranslated.WithLabelValues("general").Inc()
	}
	if len(res.Warnings) > 0 {
		h.logger.Debug("OTLP translation warnings", "warnings", res.Warnings)
	}
	if res.Body == nil && res.Rejected > 0 {
		return fmt.Errorf("%w: every data point refused: %s", errBadRequest, res.Reason)
	}
	rejected, reason := res.Rejected, res.Reason
	if res.Body != nil {
		wres, err := h.w.WriteTranslated(ctx, res.Body)
		h.count(wres)
		var rej *ingest.RejectError
		switch {
		case errors.As(err, &rej):
			// Series the limits refuse: the rest is stored, and the
			// answer says so (a partial success, never retried).
			for _, n := range wres.Rejected {
				rejected += int64(n)
			}
			reason = joinReasons(reason, err.Error())
			if wres.Samples+wres.Histograms == 0 {
				return fmt.Errorf("%w: nothing stored: %s", errBadRequest, reason)
			}
		case err != nil:
			return err
		}
	}
	return writeOTLPResponse(w, f, rejected, reason)
}

// otlpConfig is the handler's translation settings.
func (h *Handler) otlpConfig() otlp.Config {
	if h.opts.OTLP != nil {
		return h.opts.OTLP()
	}
	return otlp.DefaultConfig()
}

// otlpBodyFactor bounds the remote write body an OTLP request translates
// into, as a multiple of --web.max-request-bytes (otlp.Config.MaxBodyBytes):
// a histogram point's series repeat its labels, bucket after bucket, but
// an exporter's batch comes nowhere near this.
const otlpBodyFactor = 4

// otlpBuf returns a pooled body buffer.
func (h *Handler) otlpBuf() *[]byte {
	if bp, ok := h.otlp.bodies.Get().(*[]byte); ok {
		return bp
	}
	return new([]byte)
}

func joinReasons(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// otlpFormat decides a request's format from its Content-Type: protobuf or
// JSON, anything else 415.
func otlpFormat(ct string) (otlp.Format, error) {
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		if f, ok := otlp.FormatOf(mt); ok {
			return f, nil
		}
	}
	return otlp.Protobuf, fmt.Errorf("%w: content type %q; OTLP/HTTP takes application/x-protobuf or application/json", errUnsupportedMedia, ct)
}

// readOTLPBody returns the request's body decompressed (Content-Encoding
// gzip, zstd, or none; anything else 415), refusing with 413 a body whose
// decompressed size passes MaxRequestBytes before it is expanded further
// (a gzip bomb costs at most that much memory). release gives its buffer
// back.
func (h *Handler) readOTLPBody(r *http.Request) ([]byte, func(), error) {
	max := h.opts.MaxRequestBytes
	var raw []byte
	if rb, ok := r.Body.(*receivedBody); ok {
		raw = rb.bb.comp // receive read it, bounded
	} else {
		var err error
		if raw, err = readLimited(r.Body, nil, h.maxCompressed(), nil); err != nil {
			return nil, nil, err
		}
	}
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
		if len(raw) > max {
			return nil, nil, fmt.Errorf("%w: body of %d bytes exceeds --web.max-request-bytes=%d", errTooLarge, len(raw), max)
		}
		return raw, noRelease, nil
	case "gzip":
		return h.gunzip(raw, max)
	case "zstd":
		return h.unzstd(raw, max)
	default:
		return nil, nil, fmt.Errorf("%w: content encoding %q; OTLP/HTTP takes gzip, zstd or none", errUnsupportedMedia, enc)
	}
}

// gunzip decompresses a gzip body into a pooled buffer, at most max bytes.
func (h *Handler) gunzip(raw []byte, max int) ([]byte, func(), error) {
	zr, _ := h.otlp.gzips.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(raw))
	} else {
		err = zr.Reset(bytes.NewReader(raw))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: gzip body: %w", errBadRequest, err)
	}
	defer h.otlp.gzips.Put(zr)
	bp := h.otlpBuf()
	out, err := readLimited(zr, (*bp)[:0], int64(max), nil)
	if err != nil {
		h.otlp.bodies.Put(bp)
		if errors.Is(err, errTooLarge) {
			return nil, nil, fmt.Errorf("%w: gzip body decompresses past --web.max-request-bytes=%d", errTooLarge, max)
		}
		return nil, nil, fmt.Errorf("%w: gzip body: %w", errBadRequest, err)
	}
	*bp = out
	return out, func() { h.otlp.bodies.Put(bp) }, nil
}

// unzstd decompresses a zstd body, at most max bytes.
func (h *Handler) unzstd(raw []byte, max int) ([]byte, func(), error) {
	h.otlp.zstdOnce.Do(func() {
		h.otlp.zstd, h.otlp.zstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(uint64(max)), zstd.WithDecoderMaxWindow(uint64(max)))
	})
	if h.otlp.zstdErr != nil {
		return nil, nil, fmt.Errorf("zstd decoder: %w", h.otlp.zstdErr)
	}
	bp := h.otlpBuf()
	out, err := h.otlp.zstd.DecodeAll(raw, (*bp)[:0])
	if err == nil && len(out) > max {
		err = zstd.ErrDecoderSizeExceeded
	}
	if err != nil {
		h.otlp.bodies.Put(bp)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, nil, fmt.Errorf("%w: zstd body decompresses past --web.max-request-bytes=%d", errTooLarge, max)
		}
		return nil, nil, fmt.Errorf("%w: zstd body: %w", errBadRequest, err)
	}
	*bp = out
	return out, func() { h.otlp.bodies.Put(bp) }, nil
}

// writeOTLPResponse answers a stored request: 200 and an export response
// in the request's format.
func writeOTLPResponse(w http.ResponseWriter, f otlp.Format, rejected int64, reason string) error {
	body, err := otlp.Response(f, rejected, reason)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", contentTypeOf(f))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}

func contentTypeOf(f otlp.Format) string {
	if f == otlp.JSON {
		return "application/json"
	}
	return "application/x-protobuf"
}

// otlpStatus is the status of an OTLP error: statusFor's, except that
// nothing retryable is a 500 (clients retry only 429, 502, 503 and 504).
func otlpStatus(err error) int {
	code := statusFor(err)
	if code >= 500 && code != http.StatusBadGateway && code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout {
		return http.StatusServiceUnavailable
	}
	return code
}

// writeOTLPError answers err with its status and a google.rpc.Status
// message (code, message) in format f, as OTLP/HTTP asks:
//
//	Status  0x08 uvarint(code) ‖ 0x12 len message
func writeOTLPError(w http.ResponseWriter, f otlp.Format, err error) {
	code := otlpStatus(err)
	setErrorHeaders(w.Header(), code, err)
	grpc := grpcCode(code)
	var body []byte
	if f == otlp.JSON {
		body, _ = json.Marshal(struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{grpc, err.Error()})
	} else {
		body = append(body, 0x08)
		body = binary.AppendUvarint(body, uint64(grpc))
		body = append(body, 0x12)
		body = binary.AppendUvarint(body, uint64(len(err.Error())))
		body = append(body, err.Error()...)
	}
	w.Header().Set("Content-Type", contentTypeOf(f))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// grpcCode is the gRPC status code of an HTTP status, as OTLP/HTTP maps
// them.
func grpcCode(httpCode int) int {
	switch httpCode {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		return 3 // INVALID_ARGUMENT
	case http.StatusRequestEntityTooLarge:
		return 11 // OUT_OF_RANGE
	case http.StatusTooManyRequests:
		return 8 // RESOURCE_EXHAUSTED
	case http.StatusServiceUnavailable:
		return 14 // UNAVAILABLE
	}
	return 2 // UNKNOWN
}
