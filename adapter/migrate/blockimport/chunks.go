package blockimport

import (
	"cmp"
	"context"
	"fmt"

	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/promhbase/promhbase/adapter/migrate"
)

// ChunkSender is a Sender that also takes the blocks' chunks as they are
// encoded (promhbase's /api/v1/import/chunks), which spares decoding and
// encoding every sample on the importer's side. Import uses it when its
// Sender has it.
type ChunkSender interface {
	Sender
	// SendChunks writes the samples of req's chunks; it returns once the
	// store acknowledged them (retrying what can be retried), or an error.
	SendChunks(ctx context.Context, req *prompb.ChunkedReadResponse) error
}

// importBlockChunks is importBlock sending whole chunks: a chunk that lies
// within the range and after ExpireBefore goes as its bytes; the samples
// of the others (cut by the range or by ExpireBefore, or of an encoding
// the endpoint does not take) go as samples, in a remote-write request
// sent before the chunks of the same batch.
func importBlockChunks(ctx context.Context, s ChunkSender, b *tsdb.Block, opts Options, skip int64, st *Stats, acked func(n, samples int64) error) error {
	mint, maxt := max(opts.MinT, b.Meta().MinTime), min(opts.MaxT, b.Meta().MaxTime)
	if mint > maxt {
		return nil
	}
	// The whole block: a querier of part of it would encode the chunks
	// that the range cuts again, their first histogram losing the counter
	// reset hint it has within its chunk; those are cut here instead.
	q, err := tsdb.NewBlockChunkQuerier(b, b.Meta().MinTime, b.Meta().MaxTime)
	if err != nil {
		return err
	}
	defer q.Close()
	sets := make([]storage.ChunkSeriesSet, 0, len(opts.Matchers))
	for _, ms := range opts.Matchers {
		sets = append(sets, q.Select(ctx, true, nil, ms...))
	}
	// A series several selectors select is the same series of the same
	// block, chunk for chunk: the first is taken whole.
	set := storage.NewMergeChunkSeriesSet(sets, 0, func(ss ...storage.ChunkSeries) storage.ChunkSeries { return ss[0] })
	c := &chunkImport{s: s, p: newPipeline(ctx, cmp.Or(opts.Concurrency, 4), acked), batch: int64(opts.BatchSamples),
		mint: mint, maxt: maxt, expireBefore: expireBeforeOf(opts),
		req: &prompb.ChunkedReadResponse{}, cut: &prompb.WriteRequest{}}
	c.from = max(mint, c.expireBefore)
	defer c.counts.addTo(st)
	for set.Next() {
		if c.index < skip {
			c.index++
			c.counts.skipped++
			continue
		}
		if err := c.series(set.At()); err != nil {
			return err
		}
	}
	return c.p.finish(set.Err(), c.flush, c.index)
}

// chunkImport is importBlockChunks under way: the batch being filled and
// the series being read.
type chunkImport struct {
	s     ChunkSender
	p     *pipeline
	batch int64 // Options.BatchSamples
	// mint and maxt bound the samples sent; from is where whole chunks
	// may start (the range's start, or ExpireBefore when later).
	mint, maxt, from, expireBefore int64

	req          *prompb.ChunkedReadResponse
	cut          *prompb.WriteRequest // samples of chunks cut by the range
	chunkSamples int64                // in req
	cutSamples   int64                // in cut
	index        int64                // series seen
	complete     int64                // series sent whole by the batches sent so far
	counts       blockCounts
	it           chunkenc.Iterator
	cit          chunks.Iterator

	// The series being read: its chunks and cut samples not yet in the
	// batch, and whether a part of it was sent already.
	lbls     []prompb.Label
	cs       *prompb.ChunkedSeries
	ts       prompb.TimeSeries
	partSent bool
}

// series adds the chunks and samples of series to the batch, sending
// the batch (with the series so far) each time it is full.
func (c *chunkImport) series(series storage.ChunkSeries) error {
	c.lbls = prompb.FromLabels(series.Labels(), nil)
	c.cs = &prompb.ChunkedSeries{Labels: c.lbls}
	c.ts = prompb.TimeSeries{Labels: c.lbls}
	c.partSent = false
	c.cit = series.Iterator(c.cit)
	for c.cit.Next() {
		m := c.cit.At()
		if m.MaxTime < c.mint || m.MinTime > c.maxt {
			continue
		}
		if m.MinTime >= c.from && m.MaxTime <= c.maxt && migrate.ChunkEncoding(m.Chunk.Encoding()) {
			if err := c.addChunk(m); err != nil {
				return err
			}
			continue
		}
		if err := c.addSamples(m); err != nil {
			return err
		}
		if err := c.it.Err(); err != nil {
			return c.p.abort(fmt.Errorf("series %s, chunk %d–%d: %w", series.Labels(), m.MinTime, m.MaxTime, err))
		}
	}
	if err := c.cit.Err(); err != nil {
		return c.p.abort(fmt.Errorf("series %s: %w", series.Labels(), err))
	}
	c.index++
	if c.partSent || len(c.cs.Chunks)+len(c.ts.Samples)+len(c.ts.Histograms) > 0 {
		c.counts.sent++
	}
	c.addSeries()
	if c.chunkSamples+c.cutSamples >= c.batch {
		return c.flush(c.index)
	}
	return nil
}

// addChunk adds chunk m as it is, sending the batch when full.
func (c *chunkImport) addChunk(m chunks.Meta) error {
	n := int64(m.Chunk.NumSamples())
	// A copy: the block's memory is released when importBlockChunks
	// returns, maybe before a failed batch's request.
	c.cs.Chunks = append(c.cs.Chunks, prompb.Chunk{MinTimeMs: m.MinTime, MaxTimeMs: m.MaxTime,
		Type: prompb.Chunk_Encoding(m.Chunk.Encoding()), Data: append([]byte(nil), m.Chunk.Bytes()...)})
	c.chunkSamples += n
	if c.chunkSamples+c.cutSamples >= c.batch {
		return c.flushPart()
	}
	return nil
}

// addSamples adds the samples of chunk m within the range and not
// expired, one by one, sending the batch each time it is full; the
// chunk's iterator (c.it) is left for its error.
func (c *chunkImport) addSamples(m chunks.Meta) error {
	c.it = m.Chunk.Iterator(c.it)
	for vt := c.it.Next(); vt != chunkenc.ValNone; vt = c.it.Next() {
		t := c.it.AtT()
		if t < c.mint || t > c.maxt {
			continue
		}
		if t < c.expireBefore {
			c.counts.expired++
			continue
		}
		appendAt(&c.ts, c.it, vt)
		c.cutSamples++
		if c.chunkSamples+c.cutSamples >= c.batch {
			if err := c.flushPart(); err != nil {
				return err
			}
		}
	}
	return nil
}

// addSeries adds what the series has not yet in the batch to it.
func (c *chunkImport) addSeries() {
	if len(c.cs.Chunks) > 0 {
		c.req.ChunkedSeries = append(c.req.ChunkedSeries, c.cs)
	}
	if len(c.ts.Samples)+len(c.ts.Histograms) > 0 {
		c.cut.Timeseries = append(c.cut.Timeseries, c.ts)
	}
}

// flushPart sends what the series has so far: a series longer than a
// batch goes in parts, and counts as sent once its last part is.
func (c *chunkImport) flushPart() error {
	c.addSeries()
	if err := c.flush(c.index); err != nil {
		return err
	}
	c.cs, c.ts, c.partSent = &prompb.ChunkedSeries{Labels: c.lbls}, prompb.TimeSeries{Labels: c.lbls}, true
	return nil
}

// flush sends the batch: its cut samples, then its chunks; through is
// the number of series complete once they are acknowledged.
func (c *chunkImport) flush(through int64) error {
	if c.cutSamples > 0 {
		// Not a series more complete until the chunks are in too.
		cut, n := c.cut, c.cutSamples
		if err := c.p.send(func(ctx context.Context) error { return c.s.Send(ctx, cut) }, n, c.complete); err != nil {
			return err
		}
		c.cut, c.cutSamples = &prompb.WriteRequest{}, 0
	}
	if c.chunkSamples > 0 || through > c.complete {
		r, n := c.req, c.chunkSamples
		if err := c.p.send(func(ctx context.Context) error {
			if len(r.ChunkedSeries) == 0 {
				return nil
			}
			return c.s.SendChunks(ctx, r)
		}, n, through); err != nil {
			return err
		}
		c.req, c.chunkSamples = &prompb.ChunkedReadResponse{ChunkedSeries: make([]*prompb.ChunkedSeries, 0, len(c.req.ChunkedSeries))}, 0
	}
	c.complete = through
	return nil
}
