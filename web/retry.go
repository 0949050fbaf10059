package web

import (
	"net/http"
	"strconv"
)

// RetryAfterSeconds is the Retry-After (in seconds) that RetryUnavailable
// puts on a 503 answer whose handler named none: a 503 is trouble that
// passes (the store unavailable, a tenant's tables not opened yet, every
// slot busy, a timeout), worth trying again soon.
const RetryAfterSeconds = 1

// RetryUnavailable returns h whose 503 answers all carry a Retry-After
// header: the handler's own when it set one, else RetryAfterSeconds. It
// changes nothing else of the answer; its writer unwraps (Unwrap) to w for
// http.ResponseController. Wrapping a handler that is served inside
// another one's wrap adds no second writer.
func RetryUnavailable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(*retryWriter); !ok {
			w = &retryWriter{w}
		}
		h.ServeHTTP(w, r)
	})
}

// retryWriter adds Retry-After to a 503 status as it is written.
type retryWriter struct{ http.ResponseWriter }

func (w *retryWriter) WriteHeader(code int) {
	if code == http.StatusServiceUnavailable {
		if hdr := w.Header(); hdr.Get("Retry-After") == "" {
			hdr.Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the underlying writer, for handlers that look for
// http.Flusher rather than use http.ResponseController.
func (w *retryWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }
