// Package otlp turns OpenTelemetry metrics export requests (OTLP/HTTP,
// protobuf or JSON) into the series Prometheus 3.15's own OTLP receiver
// would make of them, as a remote write 1.0 request body that the write
// path (ingest) stores like any other: its limits, HA, series index,
// exemplars and metadata, and every write guarantee.
//
// The translation is Prometheus's own converter
// (storage/remote/otlptranslator/prometheusremotewrite), used as a
// library with Prometheus's settings (config.OTLPConfig): metric and
// label names under the translation strategy, job and instance from
// service.*, target_info, promoted resource attributes, scope labels,
// classic or custom-bucket histograms, exponential histograms as native
// histograms, summaries, exemplars, staleness of points flagged
// no-recorded-value, and metadata. So a user who moves from Prometheus's
// receiver to promhbase, or sends to both, gets the same series.
//
// What promhbase does differently, before the converter sees a request
// (filter.go): data points the converter would refuse (a temporality
// other than cumulative, delta unless Config.NativeDelta; an
// exponential histogram below scale -4; a metric of no type) are taken
// out and counted, so that the rest is stored and the answer says how
// many were refused and why (the OTLP response's partial_success),
// instead of Prometheus's 500 for the whole request, which OTLP clients
// retry forever.
//
// The fast path (fast*.go): a protobuf request of the
// common shapes is translated straight from its bytes into the body the
// converter would make, byte for byte; anything else goes to pdata and
// the converter (Converter.ConvertBody chooses).
//
// Files: decode.go (request bodies), filter.go (the points refused),
// convert.go (the converter and its settings), appender.go (remote
// write 1.0 encoding of the converter's samples), response.go (the
// OTLP response).
package otlp
