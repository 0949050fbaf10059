// Package promremote speaks Prometheus's remote-write and remote-read
// protocols to a server under test: Prometheus's own clients, set up as
// the tests use them, and the wire bodies (protobuf, snappy-compressed)
// for the tests that post them by hand. It is for tests only.
package promremote

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
)

// Options are the settings of a client beyond its server; the zero value
// is what most tests want.
type Options struct {
	// Timeout bounds each request; 0 means a minute.
	Timeout time.Duration
	// ChunkedReadLimit bounds a streamed read's frame; 0 means 64 MiB.
	ChunkedReadLimit uint64
	// ReadTypes are the response types a reader accepts, in order of
	// preference; none means Prometheus's default.
	ReadTypes []prompb.ReadRequest_ResponseType
	// Headers are sent with every request (X-Scope-OrgID, say).
	Headers map[string]string
}

// clientConfig is o as Prometheus's client configuration for endpoint.
func (o Options) clientConfig(endpoint string) (*remote.ClientConfig, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", endpoint, err)
	}
	timeout, limit := o.Timeout, o.ChunkedReadLimit
	if timeout == 0 {
		timeout = time.Minute
	}
	if limit == 0 {
		limit = 64 << 20
	}
	return &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(timeout), ChunkedReadLimit: limit,
		AcceptedResponseTypes: o.ReadTypes, Headers: o.Headers, WriteProtoMsg: remoteapi.WriteV1MessageType}, nil
}

// NewWriter returns Prometheus's remote-write client (remote write 1.0),
// named name, of the server at base (http://host:port): it posts to
// base/api/v1/write.
func NewWriter(name, base string, o Options) (remote.WriteClient, error) {
	cfg, err := o.clientConfig(base + "/api/v1/write")
	if err != nil {
		return nil, err
	}
	return remote.NewWriteClient(name, cfg)
}

// NewReader returns Prometheus's remote-read client, named name, of the
// server at base (http://host:port): it posts to base/api/v1/read.
func NewReader(name, base string, o Options) (remote.ReadClient, error) {
	cfg, err := o.clientConfig(base + "/api/v1/read")
	if err != nil {
		return nil, err
	}
	return remote.NewReadClient(name, cfg)
}

// Clients returns both clients of the server at base (NewWriter,
// NewReader), failing t on an error.
func Clients(t testing.TB, name, base string, o Options) (remote.WriteClient, remote.ReadClient) {
	t.Helper()
	wc, werr := NewWriter(name, base, o)
	rc, rerr := NewReader(name, base, o)
	if err := errors.Join(werr, rerr); err != nil {
		t.Fatalf("clients of %s: %v", base, err)
	}
	return wc, rc
}

// Store sends req in one request through wc.
func Store(ctx context.Context, wc remote.WriteClient, req *prompb.WriteRequest) error {
	body, err := Body(req)
	if err != nil {
		return err
	}
	if _, err := wc.Store(ctx, body, 0); err != nil {
		return fmt.Errorf("remote write: %w", err)
	}
	return nil
}

// Body is msg (a WriteRequest, a ReadRequest) as the body of a request:
// marshalled, then snappy-compressed (block format).
func Body(msg proto.Message) ([]byte, error) {
	data, err := proto.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", msg, err)
	}
	return snappy.Encode(nil, data), nil
}

// MustBody is Body failing t on an error.
func MustBody(t testing.TB, msg proto.Message) []byte {
	t.Helper()
	body, err := Body(msg)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// WriteBody is the body of a remote-write 1.0 request of series.
func WriteBody(t testing.TB, series ...prompb.TimeSeries) []byte {
	t.Helper()
	return MustBody(t, &prompb.WriteRequest{Timeseries: series})
}

// Decode reads a request's or answer's body (snappy block format) into
// msg.
func Decode(body []byte, msg proto.Message) error {
	data, err := snappy.Decode(nil, body)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if err := proto.Unmarshal(data, msg); err != nil {
		return fmt.Errorf("unmarshal %T: %w", msg, err)
	}
	return nil
}
