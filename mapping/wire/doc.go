// Package wire decodes and encodes Prometheus's remote-write and
// remote-read protobuf messages without generated code: zero-copy decoders
// for remote write 1.0 (prometheus.WriteRequest) and 2.0
// (io.prometheus.write.v2.Request), their histograms, exemplars and
// metadata; the encoders of remote read's SAMPLES answer (TimeSeries,
// Sample, Histogram); and a bounds check of a snappy block before it is
// decoded. Decoders check every length before slicing and return errors
// wrapping ErrMalformed, never panic; encoders append into caller-supplied
// buffers. It knows nothing of HTTP or of the store.
package wire
