// Package chunkenc writes Prometheus's chunk encodings: the XOR chunk of
// float samples (XORBuilder) and the histogram chunk of integer native
// histograms (HistogramBuilder), byte for byte as Prometheus's own
// appenders write them, through one bit writer (bitWriter) that fills a
// 64-bit accumulator rather than writing a bit or a byte at a time. The
// layout of each chunk is documented on its builder. Decoding is
// Prometheus's own tsdb/chunkenc, which the tests hold these bytes to.
package chunkenc
