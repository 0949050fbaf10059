package migrate

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/wire"
)

// ChunksToWriteRequests decodes body, a prometheus.ChunkedReadResponse
// (remote read's streamed message; promhbase import sends the blocks'
// chunks so), into remote write 1.0 WriteRequest bodies of at most batch
// samples each (a longer series goes in parts), encoded as Prometheus's
// generated code encodes them: the floats of XOR chunks (ChunkEncoding).
// The whole body is decoded
// before anything is returned. It refuses a body whose chunks claim more
// than maxSamples samples in all (before decoding any), a chunk of another
// encoding, and a chunk that does not decode, holds a sample outside its
// own time range or samples out of order, naming the series and the chunk.
// (A chunk carries no checksum: bytes damaged in a way that still decodes
// give other samples, as a damaged remote-write body would.)
func ChunksToWriteRequests(body []byte, maxSamples, batch int) ([][]byte, int, error) {
	var resp prompb.ChunkedReadResponse
	if err := resp.Unmarshal(body); err != nil {
		return nil, 0, fmt.Errorf("%w: chunks: %w", ErrMalformed, err)
	}
	total := 0
	for i, cs := range resp.ChunkedSeries {
		for j, c := range cs.Chunks {
			if !ChunkEncoding(chunkenc.Encoding(c.Type)) {
				return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: encoding %d", ErrMalformed, i, seriesName(cs.Labels), j, c.Type)
			}
			if len(c.Data) < 2 {
				return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: %d bytes", ErrMalformed, i, seriesName(cs.Labels), j, len(c.Data))
			}
			// The first two bytes of every encoding count its samples,
			// and bound what its iterator reads.
			total += int(c.Data[0])<<8 | int(c.Data[1])
		}
	}
	if total > maxSamples {
		return nil, 0, fmt.Errorf("%w: the chunks hold %d samples, at most %d a request", ErrMalformed, total, maxSamples)
	}
	batch = max(batch, 1)
	var (
		reqs    [][]byte
		req     []byte
		inReq   int // samples in req
		written int
		it      chunkenc.Iterator
	)
	var lb labels.ScratchBuilder
	for i, cs := range resp.ChunkedSeries {
		lb.Reset()
		for _, l := range cs.Labels {
			lb.Add(l.Name, l.Value)
		}
		lbls := lb.Labels()
		open := -1 // where the open TimeSeries' length goes; -1: none
		openSeries := func() {
			if req == nil {
				req = make([]byte, 0, min(total-written, batch)*wire.MaxSampleBytes+1024)
			}
			req = append(req, 0x0a, 0, 0, 0, 0, 0)
			open = len(req) - 5
			req = wire.AppendLabels(req, lbls)
		}
		closeSeries := func() {
			if open >= 0 {
				req = wire.PutLength(req, open, 5)
				open = -1
			}
		}
		for j, c := range cs.Chunks {
			ch, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data)
			if err != nil {
				return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: %w", ErrMalformed, i, seriesName(cs.Labels), j, err)
			}
			it = ch.Iterator(it)
			prev := int64(math.MinInt64)
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				t := it.AtT()
				if t < c.MinTimeMs || t > c.MaxTimeMs {
					return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: sample at %d outside the chunk's %d–%d", ErrMalformed, i, seriesName(cs.Labels), j, t, c.MinTimeMs, c.MaxTimeMs)
				}
				if t <= prev {
					return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: sample at %d not after the one at %d", ErrMalformed, i, seriesName(cs.Labels), j, t, prev)
				}
				prev = t
				if open < 0 {
					openSeries()
				}
				if vt != chunkenc.ValFloat { // cannot happen: XOR chunks only
					return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: a %s sample", ErrMalformed, i, seriesName(cs.Labels), j, vt)
				}
				_, v := it.At()
				req = wire.AppendSample(req, t, v)
				inReq++
				written++
				if inReq == batch {
					closeSeries()
					reqs, req, inReq = append(reqs, req), nil, 0
				}
			}
			if err := it.Err(); err != nil {
				return nil, 0, fmt.Errorf("%w: series %d %s, chunk %d: %w", ErrMalformed, i, seriesName(cs.Labels), j, err)
			}
		}
		closeSeries()
	}
	if inReq > 0 {
		reqs = append(reqs, req)
	}
	return reqs, written, nil
}

// ChunkEncoding reports whether ChunksToWriteRequests takes chunks of
// encoding e: XOR chunks only, whose first two bytes count their samples
// and whose samples take 16 bytes each decoded. A histogram chunk's
// header names bucket spans that its iterator allocates before it reads
// any bucket, and an unchanged bucket costs a bit but decodes to 8 bytes:
// histograms go by remote write, where every bucket is in the body.
func ChunkEncoding(e chunkenc.Encoding) bool { return e == chunkenc.EncXOR }

// seriesName prints a series' labels for an error.
func seriesName(ls []prompb.Label) string {
	b := labels.NewScratchBuilder(len(ls))
	for _, l := range ls {
		b.Add(l.Name, l.Value)
	}
	return b.Labels().String()
}
