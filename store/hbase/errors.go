package hbase

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/region"

	"github.com/promhbase/promhbase/store"
)

// remoteError is an exception that HBase sent back. gohbase renders those
// as "HBase Java exception <class>:\n<stack trace>"; remoteError keeps the
// class and the exception's message and drops the stack trace from the
// text, while Unwrap still reaches gohbase's error (and its type).
type remoteError struct {
	class string // fully qualified Java class name
	msg   string // first line of the exception's message
	err   error
}

func (e *remoteError) Error() string {
	name := e.class[strings.LastIndexByte(e.class, '.')+1:]
	if e.msg == "" {
		return "hbase " + name
	}
	return "hbase " + name + ": " + e.msg
}

func (e *remoteError) Unwrap() error { return e.err }

const javaExceptionPrefix = "HBase Java exception "

// parseRemote returns err as a remoteError when it carries an exception
// that HBase sent back, and nil otherwise.
func parseRemote(err error) *remoteError {
	text := err.Error()
	i := strings.Index(text, javaExceptionPrefix)
	if i < 0 {
		return nil
	}
	rest := text[i+len(javaExceptionPrefix):]
	class, stack, _ := strings.Cut(rest, ":\n")
	class = strings.TrimSuffix(strings.TrimSpace(class), ":")
	first, _, _ := strings.Cut(stack, "\n")
	first = strings.TrimSpace(first)
	// The trace starts with "<class>: <message>" for most exceptions.
	msg := strings.TrimPrefix(strings.TrimPrefix(first, class), ": ")
	if msg == class {
		msg = ""
	}
	// Some messages embed a whole table descriptor; the full text stays
	// reachable through Unwrap.
	const maxMsg = 200
	if len(msg) > maxMsg {
		cut := maxMsg
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return &remoteError{class: class, msg: msg, err: err}
}

// invalidException reports whether an HBase exception (simple class name)
// means that retrying cannot help: the request itself is wrong.
func invalidException(name string) bool {
	switch name {
	case "DoNotRetryIOException",
		"NoSuchColumnFamilyException",
		"FailedSanityCheckException",
		"InvalidFamilyOperationException",
		"DeserializationException",
		"IllegalArgumentException",
		"PatternSyntaxException",
		"WrongRowIOException",
		"InvalidMutationDurabilityException":
		return true
	}
	return false
}

// remoteSentinel classifies an exception HBase sent back. Exceptions not
// known to be the request's fault or a missing table are taken as
// transient: region servers throw IOExceptions of many kinds while regions
// move, split, flush or recover, and scanners expire.
func remoteSentinel(e *remoteError) error {
	name := e.class[strings.LastIndexByte(e.class, '.')+1:]
	switch {
	case name == "TableNotFoundException" || name == "NamespaceNotFoundException":
		return store.ErrTableNotFound
	case invalidException(name):
		// A DoNotRetryIOException may carry an inner cause; a table that
		// went missing is still a missing table.
		if strings.Contains(e.msg, "TableNotFoundException") {
			return store.ErrTableNotFound
		}
		return store.ErrInvalid
	case strings.Contains(e.msg, "PatternSyntaxException"):
		return store.ErrInvalid
	case name == "AccessDeniedException":
		return nil
	}
	return store.ErrUnavailable
}

// classify wraps a gohbase error with the store sentinel that describes
// it. timedOut reports whether the attempt's own deadline had passed when
// the error came back. Errors that already carry a sentinel, and
// cancellations by the caller, are returned as they are.
func classify(err error, timedOut bool) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTableNotFound) || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	if errors.Is(err, gohbase.TableNotFound) {
		return fmt.Errorf("%w (hbase)", store.ErrTableNotFound)
	}
	if re := parseRemote(err); re != nil {
		if sentinel := remoteSentinel(re); sentinel != nil {
			return fmt.Errorf("%w: %w", sentinel, re)
		}
		return re
	}
	var (
		retryable  region.RetryableError
		notServing region.NotServingRegionError
		server     region.ServerError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case timedOut,
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, gohbase.ErrCannotFindRegion),
		errors.Is(err, gohbase.NotExecutedError),
		errors.As(err, &retryable),
		errors.As(err, &notServing),
		errors.As(err, &server),
		errors.As(err, &netErr),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// do runs one attempt of f after another, each under its own deadline of
// Config.RPCTimeout, until one succeeds, an error that will not pass comes
// back, the retries are spent or ctx ends. Non-idempotent operations are
// retried only when the failed attempt cannot have reached a region server.
// A second attempt without an answer ends it too: a cluster silent twice
// in a row has stalled (a process stopped, a network cut), and the caller
// answers 503 within about twice Config.RPCTimeout, inside a sender's
// remote timeout (Prometheus's: 30 s), instead of after every retry.
func (s *Store) do(ctx context.Context, op, table string, idempotent bool, f func(ctx context.Context) error) (err error) {
	defer func() { s.failed(op, err) }()
	silent := 0 // attempts that got no answer within RPCTimeout
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
		err := f(actx)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		err = classify(err, timedOut)
		if timedOut {
			err = fmt.Errorf("no answer within %s: %w", s.cfg.RPCTimeout, err)
			silent++
		}
		if silent >= 2 || !s.shouldRetry(ctx, err, attempt, idempotent) {
			return err
		}
		s.retried(op, table, attempt, err)
		if sleep(ctx, backoff(attempt)) != nil {
			return err
		}
	}
}

func (s *Store) shouldRetry(ctx context.Context, err error, attempt int, idempotent bool) bool {
	if attempt >= s.cfg.Retries || ctx.Err() != nil || !errors.Is(err, store.ErrUnavailable) {
		return false
	}
	return idempotent || errors.Is(err, gohbase.ErrCannotFindRegion)
}

// failed counts an operation that failed in the end (not one its caller
// canceled) in promhbase_hbase_failures_total.
func (s *Store) failed(op string, err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	kind := "other"
	if errors.Is(err, store.ErrUnavailable) {
		kind = "unavailable"
	}
	s.metrics.failures.WithLabelValues(op, kind).Inc()
}

func (s *Store) retried(op, table string, attempt int, err error) {
	s.metrics.retries.WithLabelValues(op).Inc()
	s.logger.Warn("hbase operation failed, retrying", "op", op, "table", table, "attempt", attempt+1, "err", err)
}

// backoff returns the pause before retry number attempt+1: 50 ms doubling
// up to 2 s, with jitter.
func backoff(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt, 6)
	d = min(d, 2*time.Second)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
