package blockimport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// ErrRefused is wrapped by the error of a request the server refused for
// good (a 4xx other than 429): sending it again would not help.
var ErrRefused = errors.New("refused")

// HTTPSender sends requests to a promhbase's remote write 1.0 endpoint,
// retrying network errors, 5xx and 429 (waiting as Retry-After says, else
// backing off from 100ms to 10s) for up to RetryFor.
type HTTPSender struct {
	// URL is the remote-write endpoint (http://host:9201/api/v1/write).
	URL string
	// Tenant, when set, is sent as X-Scope-OrgID.
	Tenant string
	// Client defaults to a client with a one-minute timeout.
	Client *http.Client
	// RetryFor bounds the time one request keeps failing before Send
	// gives up (default 10m).
	RetryFor time.Duration
	// OnRetry, when set, is told of each failure that is retried.
	OnRetry func(err error, wait time.Duration)
}

// Send implements Sender.
func (h *HTTPSender) Send(ctx context.Context, req *prompb.WriteRequest) error {
	data, err := req.Marshal()
	if err != nil {
		return fmt.Errorf("encode a batch: %w", err)
	}
	return h.post(ctx, h.URL, snappy.Encode(nil, data), "0.1.0")
}

// post sends body to url until it is acknowledged, refused for good, or
// has failed for RetryFor.
func (h *HTTPSender) post(ctx context.Context, url string, body []byte, version string) error {
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	retryFor := h.RetryFor
	if retryFor <= 0 {
		retryFor = 10 * time.Minute
	}
	giveUp := time.Now().Add(retryFor)
	backoff := 100 * time.Millisecond
	for {
		wait, err := h.try(ctx, client, url, body, version)
		if err == nil || errors.Is(err, ErrRefused) || ctx.Err() != nil {
			return err
		}
		if wait <= 0 {
			wait, backoff = backoff, min(2*backoff, 10*time.Second)
		}
		if time.Now().Add(wait).After(giveUp) {
			return fmt.Errorf("gave up after failing for %s: %w", retryFor, err)
		}
		if h.OnRetry != nil {
			h.OnRetry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// HTTPChunkSender is an HTTPSender that also sends whole chunks to a
// promhbase's /api/v1/import/chunks (a snappy-compressed
// prometheus.ChunkedReadResponse, remote read's streamed message).
type HTTPChunkSender struct {
	HTTPSender
	// ChunksURL is the chunk import endpoint
	// (http://host:9201/api/v1/import/chunks).
	ChunksURL string
}

// SendChunks implements ChunkSender.
func (h *HTTPChunkSender) SendChunks(ctx context.Context, req *prompb.ChunkedReadResponse) error {
	data, err := req.Marshal()
	if err != nil {
		return fmt.Errorf("encode a batch of chunks: %w", err)
	}
	return h.post(ctx, h.ChunksURL, snappy.Encode(nil, data), "")
}

// try sends body once; wait is the server's Retry-After, if any.
func (h *HTTPSender) try(ctx context.Context, client *http.Client, url string, body []byte, version string) (wait time.Duration, err error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	r.Header.Set("Content-Type", "application/x-protobuf")
	r.Header.Set("Content-Encoding", "snappy")
	if version != "" {
		r.Header.Set("X-Prometheus-Remote-Write-Version", version)
	}
	if h.Tenant != "" {
		r.Header.Set("X-Scope-OrgID", h.Tenant)
	}
	resp, err := client.Do(r)
	if err != nil {
		return 0, fmt.Errorf("send a batch to %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return wait, fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return 0, fmt.Errorf("%w: %s answered %d: %s", ErrRefused, url, resp.StatusCode, bytes.TrimSpace(msg))
}
