package otlp

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// Response returns the body of an export response in format f: empty
// (no partial_success) when rejected is 0 and msg empty, otherwise with
// partial_success saying how many data points were refused and why. An
// OTLP client never retries a partial success.
func Response(f Format, rejected int64, msg string) ([]byte, error) {
	resp := pmetricotlp.NewExportResponse()
	if rejected > 0 || msg != "" {
		ps := resp.PartialSuccess()
		ps.SetRejectedDataPoints(rejected)
		ps.SetErrorMessage(msg)
	}
	var b []byte
	var err error
	if f == JSON {
		b, err = resp.MarshalJSON()
	} else {
		b, err = resp.MarshalProto()
	}
	if err != nil {
		return nil, fmt.Errorf("encode OTLP response: %w", err)
	}
	return b, nil
}
