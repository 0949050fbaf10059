package blockimport

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/promhbase/promhbase/migrate"
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
	expireBefore := opts.ExpireBefore
	if expireBefore <= 0 {
		expireBefore = math.MinInt64 // none
	}
	from := max(mint, expireBefore)
	var (
		req           = &prompb.ChunkedReadResponse{}
		cut           = &prompb.WriteRequest{} // samples of chunks cut by the range
		chunkSamples  int64                    // in req
		cutSamples    int64                    // in cut
		index         int64                    // series seen
		sent, skipped int64
		expired       int64
		complete      int64 // series sent whole by the batches sent so far
		p             = newPipeline(ctx, cmp.Or(opts.Concurrency, 4), acked)
		it            chunkenc.Iterator
		cit           chunks.Iterator
	)
	defer func() {
		st.Series, st.SeriesSkipped, st.Expired = st.Series+sent, st.SeriesSkipped+skipped, st.Expired+expired
	}()
	flush := func(through int64) error {
		if cutSamples > 0 {
			// Not a series more complete until the chunks are in too.
			c, n := cut, cutSamples
			if err := p.send(func(ctx context.Context) error { return s.Send(ctx, c) }, n, complete); err != nil {
				return err
			}
			cut, cutSamples = &prompb.WriteRequest{}, 0
		}
		if chunkSamples > 0 || through > complete {
			r, n := req, chunkSamples
			if err := p.send(func(ctx context.Context) error {
				if len(r.ChunkedSeries) == 0 {
					return nil
				}
				return s.SendChunks(ctx, r)
			}, n, through); err != nil {
				return err
			}
			req, chunkSamples = &prompb.ChunkedReadResponse{ChunkedSeries: make([]*prompb.ChunkedSeries, 0, len(req.ChunkedSeries))}, 0
		}
		complete = through
		return nil
	}
	for set.Next() {
		if index < skip {
			index++
			skipped++
			continue
		}
		series := set.At()
		lbls := prompb.FromLabels(series.Labels(), nil)
		cs := &prompb.ChunkedSeries{Labels: lbls}
		ts := prompb.TimeSeries{Labels: lbls}
		partSent := false // a part of the series was sent already
		// flushPart sends what the series has so far: a series longer
		// than a batch goes in parts, and counts as sent once its last
		// part is.
		flushPart := func() error {
			if len(cs.Chunks) > 0 {
				req.ChunkedSeries = append(req.ChunkedSeries, cs)
			}
			if len(ts.Samples)+len(ts.Histograms) > 0 {
				cut.Timeseries = append(cut.Timeseries, ts)
			}
			if err := flush(index); err != nil {
				return err
			}
			cs, ts, partSent = &prompb.ChunkedSeries{Labels: lbls}, prompb.TimeSeries{Labels: lbls}, true
			return nil
		}
		cit = series.Iterator(cit)
		for cit.Next() {
			m := cit.At()
			if m.MaxTime < mint || m.MinTime > maxt {
				continue
			}
			if m.MinTime >= from && m.MaxTime <= maxt && migrate.ChunkEncoding(m.Chunk.Encoding()) {
				n := int64(m.Chunk.NumSamples())
				// A copy: the block's memory is released when this
				// function returns, maybe before a failed batch's request.
				cs.Chunks = append(cs.Chunks, prompb.Chunk{MinTimeMs: m.MinTime, MaxTimeMs: m.MaxTime,
					Type: prompb.Chunk_Encoding(m.Chunk.Encoding()), Data: append([]byte(nil), m.Chunk.Bytes()...)})
				chunkSamples += n
				if chunkSamples+cutSamples >= int64(opts.BatchSamples) {
					if err := flushPart(); err != nil {
						return err
					}
				}
				continue
			}
			it = m.Chunk.Iterator(it)
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				t := it.AtT()
				if t < mint || t > maxt {
					continue
				}
				if t < expireBefore {
					expired++
					continue
				}
				appendAt(&ts, it, vt)
				cutSamples++
				if chunkSamples+cutSamples >= int64(opts.BatchSamples) {
					if err := flushPart(); err != nil {
						return err
					}
				}
			}
			if err := it.Err(); err != nil {
				return p.abort(fmt.Errorf("series %s, chunk %d–%d: %w", series.Labels(), m.MinTime, m.MaxTime, err))
			}
		}
		if err := cit.Err(); err != nil {
			return p.abort(fmt.Errorf("series %s: %w", series.Labels(), err))
		}
		index++
		if partSent || len(cs.Chunks)+len(ts.Samples)+len(ts.Histograms) > 0 {
			sent++
		}
		if len(cs.Chunks) > 0 {
			req.ChunkedSeries = append(req.ChunkedSeries, cs)
		}
		if len(ts.Samples)+len(ts.Histograms) > 0 {
			cut.Timeseries = append(cut.Timeseries, ts)
		}
		if chunkSamples+cutSamples >= int64(opts.BatchSamples) {
			if err := flush(index); err != nil {
				return err
			}
		}
	}
	return p.finish(set.Err(), flush, index)
}
