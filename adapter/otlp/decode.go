package otlp

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// ErrMalformed marks a request body that does not decode as an OTLP
// metrics export request: the sender must not retry it.
var ErrMalformed = errors.New("malformed OTLP request")

// Format is an OTLP/HTTP body's encoding, from its Content-Type.
type Format int

const (
	// Protobuf is application/x-protobuf.
	Protobuf Format = iota
	// JSON is application/json (OTLP's JSON mapping of the protobuf).
	JSON
)

// FormatOf returns the Format of a Content-Type's media type, and false
// for one OTLP/HTTP does not define.
func FormatOf(mediaType string) (Format, bool) {
	switch mediaType {
	case "application/x-protobuf":
		return Protobuf, true
	case "application/json":
		return JSON, true
	}
	return 0, false
}

// Decode decodes an export request body (already decompressed and
// bounded by the caller) into its metrics.
func Decode(body []byte, f Format) (pmetric.Metrics, error) {
	req := pmetricotlp.NewExportRequest()
	var err error
	if f == JSON {
		err = req.UnmarshalJSON(body)
	} else {
		err = req.UnmarshalProto(body)
	}
	if err != nil {
		return pmetric.Metrics{}, fmt.Errorf("%w: %d bytes of %s: %w", ErrMalformed, len(body), f, err)
	}
	return req.Metrics(), nil
}

func (f Format) String() string {
	if f == JSON {
		return "JSON"
	}
	return "protobuf"
}
