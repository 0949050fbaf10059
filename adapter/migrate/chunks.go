package migrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
)

// ParseChunks decodes body, a prometheus.ChunkedReadResponse (remote
// read's streamed message; promhbase import sends the blocks' chunks so),
// appending its series to b, a series' chunks one after the other: the
// floats of XOR chunks (ChunkEncoding). The whole body is decoded before
// it returns. It refuses a body whose chunks claim more than maxSamples
// samples in all (before decoding any), a chunk of another encoding, and
// a chunk that does not decode, holds a sample outside its own time range
// or samples out of order, naming the series and the chunk; then b is as
// before. (A chunk carries no checksum: bytes damaged in a way that still
// decode give other samples, as a damaged remote-write body would.)
func (b *Batch) ParseChunks(body []byte, maxSamples int) error {
	var resp prompb.ChunkedReadResponse
	if err := resp.Unmarshal(body); err != nil {
		return fmt.Errorf("%w: chunks: %w", ErrMalformed, err)
	}
	total := 0
	for i, cs := range resp.ChunkedSeries {
		for j, c := range cs.Chunks {
			if !ChunkEncoding(chunkenc.Encoding(c.Type)) {
				return fmt.Errorf("%w: series %d %s, chunk %d: encoding %d", ErrMalformed, i, seriesName(cs.Labels), j, c.Type)
			}
			if len(c.Data) < 2 {
				return fmt.Errorf("%w: series %d %s, chunk %d: %d bytes", ErrMalformed, i, seriesName(cs.Labels), j, len(c.Data))
			}
			// The first two bytes of every encoding count its samples,
			// and bound what its iterator reads.
			total += int(c.Data[0])<<8 | int(c.Data[1])
		}
	}
	if total > maxSamples {
		return fmt.Errorf("%w: the chunks hold %d samples, at most %d a request", ErrMalformed, total, maxSamples)
	}
	k0, p0, e0 := len(b.keys), len(b.points), len(b.ends)
	// Room for the samples the chunks claim, up to what the body's
	// bytes can hold (an XOR sample takes at least two bits): a claim
	// alone makes no large allocation.
	b.points = slices.Grow(b.points, min(total, 4*len(body)))
	var it chunkenc.Iterator
	for i, cs := range resp.ChunkedSeries {
		for _, l := range cs.Labels {
			b.keys = wire.AppendLabel(b.keys, l.Name, l.Value)
		}
		for j, c := range cs.Chunks {
			var err error
			if it, err = b.decodeChunk(c, it); err != nil {
				b.keys, b.points, b.ends = b.keys[:k0], b.points[:p0], b.ends[:e0]
				return fmt.Errorf("%w: series %d %s, chunk %d: %w", ErrMalformed, i, seriesName(cs.Labels), j, err)
			}
		}
		b.ends = append(b.ends, seriesEnd{key: len(b.keys), points: len(b.points)})
	}
	return nil
}

// decodeChunk appends the samples of an XOR chunk to b.points, with it
// (returned for the next chunk) as its iterator.
func (b *Batch) decodeChunk(c prompb.Chunk, it chunkenc.Iterator) (chunkenc.Iterator, error) {
	ch, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data)
	if err != nil {
		return it, err
	}
	it = ch.Iterator(it)
	prev := int64(math.MinInt64)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat { // cannot happen: XOR chunks only
			return it, fmt.Errorf("a %s sample", vt)
		}
		t, v := it.At()
		if t < c.MinTimeMs || t > c.MaxTimeMs {
			return it, fmt.Errorf("sample at %d outside the chunk's %d–%d", t, c.MinTimeMs, c.MaxTimeMs)
		}
		if t <= prev {
			return it, fmt.Errorf("sample at %d not after the one at %d", t, prev)
		}
		prev = t
		b.points = append(b.points, mapping.Point{T: t, V: v})
	}
	return it, it.Err()
}

// ChunkEncoding reports whether ParseChunks takes chunks of
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
