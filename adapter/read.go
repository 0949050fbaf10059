package adapter

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/query"
)

// Content types of remote-read answers. Prometheus's client compares the
// streamed one byte for byte.
const (
	contentTypeSamples  = "application/x-protobuf"
	contentTypeStreamed = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
)

// negotiate picks the response type as Prometheus's own read handler does:
// the first of the accepted types that the server supports, SAMPLES when
// the list is empty.
func negotiate(accepted []prompb.ReadRequest_ResponseType) (prompb.ReadRequest_ResponseType, error) {
	if len(accepted) == 0 {
		return prompb.ReadRequest_SAMPLES, nil
	}
	for _, t := range accepted {
		if t == prompb.ReadRequest_SAMPLES || t == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: none of the accepted response types %v is supported (SAMPLES, STREAMED_XOR_CHUNKS)", errBadRequest, accepted)
}

// toMatchers converts remote-read matchers.
func toMatchers(ms []*prompb.LabelMatcher) ([]*labels.Matcher, error) {
	out := make([]*labels.Matcher, 0, len(ms))
	for _, m := range ms {
		var t labels.MatchType
		switch m.Type {
		case prompb.LabelMatcher_EQ:
			t = labels.MatchEqual
		case prompb.LabelMatcher_NEQ:
			t = labels.MatchNotEqual
		case prompb.LabelMatcher_RE:
			t = labels.MatchRegexp
		case prompb.LabelMatcher_NRE:
			t = labels.MatchNotRegexp
		default:
			return nil, fmt.Errorf("%w: unknown matcher type %d", errBadRequest, m.Type)
		}
		lm, err := labels.NewMatcher(t, m.Name, m.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: matcher %s%s%q: %w", errBadRequest, m.Name, t, m.Value, err)
		}
		out = append(out, lm)
	}
	return out, nil
}

// readQuery is one query of a remote-read request, its matchers
// converted.
type readQuery struct {
	start, end int64
	matchers   []*labels.Matcher
}

// ReadGuards are remote read's query guardrails (the query API's:
// promapi.Guards), as Grafana Mimir applies them to remote read: the
// lookback clamps each query's start, a query longer than the total
// length gets 400, the series all queries fetch together are bounded
// (422). The zero value: none.
type ReadGuards struct {
	MaxTotalQueryLength time.Duration
	MaxQueryLookback    time.Duration
	MaxFetchedSeries    int
	// Now is the lookback's clock; nil: time.Now.
	Now func() time.Time
}

// SetReadGuards puts g in force for the remote reads that start from
// now on.
func (h *Handler) SetReadGuards(g ReadGuards) { h.readGuards.Store(&g) }

// minTime is the oldest time a read may select (Unix ms), or
// query.NoMinTime.
func (g *ReadGuards) minTime() int64 {
	if g.MaxQueryLookback <= 0 {
		return query.NoMinTime
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	return now().Add(-g.MaxQueryLookback).UnixMilli()
}

// check clamps q's start to minT and refuses it when it is longer than
// the total length.
func (g *ReadGuards) check(q *readQuery, minT int64) error {
	q.start = max(q.start, minT)
	if l := time.Duration(q.end-q.start) * time.Millisecond; g.MaxTotalQueryLength > 0 && l > g.MaxTotalQueryLength {
		return fmt.Errorf("%w: %s", errBadRequest, query.TotalLengthMessage(l, g.MaxTotalQueryLength))
	}
	return nil
}

// serveRead answers a remote-read request. Its queries share one
// query.Budget: --query.max-samples counts the samples of all of them, and
// --query.max-bytes-per-query the bytes the request holds at once. At most
// MaxConcurrentReads requests read at once.
func (h *Handler) serveRead(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("%w: %s on /api/v1/read", errMethod, r.Method)
	}
	done, err := h.acquireRead(r.Context())
	if err != nil {
		return err
	}
	defer done()
	// A slot bounds the memory of decoding; the query itself is bounded
	// by its budget and does not hold the slot.
	free, err := h.acquire(r.Context())
	if err != nil {
		return err
	}
	body, release, err := h.readBody(r)
	if err != nil {
		free()
		return err
	}
	var req prompb.ReadRequest
	err = proto.Unmarshal(body, &req)
	release()
	free()
	if err != nil {
		return fmt.Errorf("%w: read request: %w", wire.ErrMalformed, err)
	}
	respType, err := negotiate(req.AcceptedResponseTypes)
	if err != nil {
		return err
	}
	g := h.readGuards.Load()
	minT := g.minTime()
	queries := make([]readQuery, len(req.Queries))
	for i, q := range req.Queries {
		ms, err := toMatchers(q.Matchers)
		if err != nil {
			return err
		}
		queries[i] = readQuery{start: q.StartTimestampMs, end: q.EndTimestampMs, matchers: ms}
		if err := g.check(&queries[i], minT); err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
	}
	// The lookback bounds every selection, and the series limit counts
	// the series of all the queries together.
	if ctx := query.WithReadLimits(r.Context(), minT, g.MaxFetchedSeries); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	b := h.q.NewBudget()
	if respType == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		return h.writeStreamed(w, r, b, queries)
	}
	return h.writeSamples(w, r, b, queries)
}

// acquireRead waits for one of the MaxConcurrentReads read slots, at most
// ReadWait; the returned function frees it.
func (h *Handler) acquireRead(ctx context.Context) (func(), error) {
	select {
	case h.readSlots <- struct{}{}:
		return func() { <-h.readSlots }, nil
	default:
	}
	t := time.NewTimer(h.opts.ReadWait)
	defer t.Stop()
	select {
	case h.readSlots <- struct{}{}:
		return func() { <-h.readSlots }, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: %d remote reads are running (--storage.remote.read-concurrent-limit), none ended within %s; retry later", errBusy, cap(h.readSlots), h.opts.ReadWait)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errBusy, ctx.Err())
	}
}

// toLabelPairs appends l's labels to dst[:0].
func toLabelPairs(dst []prompb.Label, l labels.Labels) []prompb.Label {
	dst = dst[:0]
	l.Range(func(l labels.Label) { dst = append(dst, prompb.Label{Name: l.Name, Value: l.Value}) })
	return dst
}

// writeSamples answers with a snappy-compressed ReadResponse, one
// QueryResult per query. Every query runs before anything is written, so
// that an error can still become a status code; the series are held
// until then (query.StreamFloats: the floats of a series without native
// histograms as samples, other series as chunks), and each is dropped as
// soon as it is encoded into the
// answer, which is charged to the budget (the protobuf, then its snappy
// block) before it is allocated.
func (h *Handler) writeSamples(w http.ResponseWriter, r *http.Request, b *query.Budget, queries []readQuery) error {
	results := make([][]*query.ChunkSeries, len(queries))
	for i, q := range queries {
		err := h.q.StreamFloats(r.Context(), b, q.start, q.end, q.matchers, func(cs *query.ChunkSeries) error {
			results[i] = append(results[i], cs)
			return nil
		})
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
	}
	// One pass: each series is encoded once, straight into the answer.
	// A QueryResult's length prefix is known only after its series, so
	// 6 bytes are kept for tag and length and the series moved up to the
	// prefix's actual size afterwards.
	ab := &answerBuf{b: b, pool: &h.answers}
	defer ab.release()
	if err := ab.grow(estimateSamplesAnswer(results)); err != nil {
		return err
	}
	var it chunkenc.Iterator
	for _, series := range results {
		if err := ab.grow(6); err != nil {
			return err
		}
		hdr := len(ab.data)
		ab.data = append(ab.data, 0x0a, 0, 0, 0, 0, 0) // ReadResponse.results, field 1
		for j, cs := range series {
			var err error
			if it, err = ab.appendSeries(cs, it); err != nil {
				return err
			}
			h.readSamples.Add(float64(cs.Samples))
			b.Release(cs.Bytes)
			series[j] = nil
		}
		h.readSeries.Add(float64(len(series)))
		ab.data = wire.PutLength(ab.data, hdr+1, 5)
	}
	data := ab.data
	enc := s2.MaxEncodedLen(len(data))
	if err := b.Reserve(int64(enc)); err != nil {
		return fmt.Errorf("snappy block of a %d-byte samples answer: %w", len(data), err)
	}
	defer b.Release(int64(enc))
	cb := getAnswerBuf(&h.answers, enc)
	// s2's snappy-compatible encoder: plain snappy blocks, made faster
	// than golang/snappy's (about 1.4x on a samples answer).
	comp := s2.EncodeSnappy((*cb)[:enc], data)
	ab.release()
	defer putAnswerBuf(&h.answers, cb)
	w.Header().Set("Content-Type", contentTypeSamples)
	w.Header().Set("Content-Encoding", "snappy")
	_, err := w.Write(comp)
	return err
}

// maxPooledAnswer bounds the buffers kept for the next SAMPLES answer.
const maxPooledAnswer = 16 << 20

// getAnswerBuf returns a buffer of at least n bytes' capacity from pool,
// or a new one.
func getAnswerBuf(pool *sync.Pool, n int) *[]byte {
	if p, ok := pool.Get().(*[]byte); ok {
		if cap(*p) >= n {
			return p
		}
		putAnswerBuf(pool, p) // smaller: another answer may fit
	}
	b := make([]byte, 0, n)
	return &b
}

// putAnswerBuf gives p back to pool, unless it is too large to keep.
func putAnswerBuf(pool *sync.Pool, p *[]byte) {
	if cap(*p) <= maxPooledAnswer {
		*p = (*p)[:0]
		pool.Put(p)
	}
}

// answerBuf is a SAMPLES answer being built: its capacity is charged to
// the request's budget before it is allocated.
type answerBuf struct {
	b       *query.Budget
	pool    *sync.Pool // of the buffers, when not nil
	buf     *[]byte    // from pool
	data    []byte
	charged int64
}

// grow makes room for n more bytes: at least doubling, the new buffer
// charged while the old one is still held.
func (a *answerBuf) grow(n int) error {
	if len(a.data)+n <= cap(a.data) {
		return nil
	}
	c := max(2*cap(a.data), len(a.data)+n)
	if err := a.b.Reserve(int64(c)); err != nil {
		return fmt.Errorf("samples answer of %d bytes and more: %w", len(a.data)+n, err)
	}
	var d []byte
	var p *[]byte
	if a.pool != nil {
		p = getAnswerBuf(a.pool, c)
		d = (*p)[:len(a.data):c] // no more than was charged
	} else {
		d = make([]byte, len(a.data), c)
	}
	copy(d, a.data)
	a.b.Release(a.charged)
	a.putBack()
	a.data, a.charged, a.buf = d, int64(c), p
	return nil
}

func (a *answerBuf) putBack() {
	if a.buf != nil {
		putAnswerBuf(a.pool, a.buf)
		a.buf = nil
	}
}

// release drops the buffer and gives its bytes back.
func (a *answerBuf) release() {
	a.b.Release(a.charged)
	a.putBack()
	a.data, a.charged = nil, 0
}

// estimateSamplesAnswer is about the size of the SAMPLES answer of
// results (18 to 20 bytes per float sample, several times the chunk bytes
// of histograms), so that the answer rarely needs to grow.
func estimateSamplesAnswer(results [][]*query.ChunkSeries) int {
	n := 0
	for _, series := range results {
		n += 6
		for _, cs := range series {
			n += int(cs.Labels.ByteSize()) + 8*cs.Labels.Len() + 6 + wire.SamplesBound(cs.Floats)
			for _, c := range cs.Chunks {
				if c.Enc == chunkenc.EncXOR {
					n += wire.MaxSampleBytes * int(binary.BigEndian.Uint16(c.Data)) // as appendSeries bounds it
				} else {
					n += 4 * len(c.Data)
				}
			}
		}
	}
	return n
}

// writeStreamed answers with ChunkedReadResponse frames, the queries one
// after the other: for each series exactly one frame holding all its
// chunks (Prometheus's client does not join a series split across
// frames), encoded as soon as query.Stream hands the series on, and then
// released; frames are written in batches (streamBuffer). A frame is
//
//	uvarint(len(data)) ‖ u32 big-endian CRC32-Castagnoli(data) ‖ data
//
// The status line goes with the first write to the connection, so that an
// error before it (within the first streamBuffer bytes and
// streamFlushEvery) still gets its status code; an error after it ends the
// response unfinished (the handler aborts the connection), which
// Prometheus's client reports as an error. Each write to the connection
// must end within ResponseWriteTimeout: a reader that stops reading is cut
// off then, and the request's memory freed.
func (h *Handler) writeStreamed(w http.ResponseWriter, r *http.Request, b *query.Budget, queries []readQuery) error {
	rc := http.NewResponseController(w)
	// The deadline of the last frame must not outlive the answer: the
	// server sets its own for the connection's next request only when it
	// has a write timeout.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	table := crc32.MakeTable(crc32.Castagnoli)
	started := false
	var flushed time.Time // of the last flush, or of the first frame
	start := func() {
		if !started {
			w.Header().Set("Content-Type", contentTypeStreamed)
			started = true
			flushed = time.Now()
		}
	}
	var (
		frame, data []byte
		chunks      []prompb.Chunk
		lbls        []prompb.Label
		series      [1]*prompb.ChunkedSeries
		cs          prompb.ChunkedSeries
	)
	series[0] = &cs
	// Frames go out in writes of streamBuffer bytes, not one system call
	// each, and at least every streamFlushEvery while they keep coming.
	out, _ := h.streamBufs.Get().(*bufio.Writer)
	if out == nil {
		out = bufio.NewWriterSize(w, streamBuffer)
	}
	out.Reset(w)
	defer func() {
		out.Reset(nil) // drops what was not written: the answer failed
		h.streamBufs.Put(out)
	}()
	flush := func() error {
		flushed = time.Now()
		if err := out.Flush(); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	}
	for qi, q := range queries {
		err := h.q.Stream(r.Context(), b, q.start, q.end, q.matchers, func(s *query.ChunkSeries) error {
			defer b.Release(s.Bytes)
			chunks = chunks[:0]
			for _, c := range s.Chunks {
				chunks = append(chunks, prompb.Chunk{MinTimeMs: c.MinT, MaxTimeMs: c.MaxT, Type: chunkType(c.Enc), Data: c.Data})
			}
			lbls = toLabelPairs(lbls, s.Labels)
			cs = prompb.ChunkedSeries{Labels: lbls, Chunks: chunks}
			msg := prompb.ChunkedReadResponse{ChunkedSeries: series[:], QueryIndex: int64(qi)}
			size := msg.Size()
			data = slices.Grow(data[:0], size)[:size]
			n, err := msg.MarshalToSizedBuffer(data)
			if err != nil {
				return fmt.Errorf("marshal chunked series: %w", err)
			}
			data = data[len(data)-n:]
			frame = binary.AppendUvarint(frame[:0], uint64(len(data)))
			frame = binary.BigEndian.AppendUint32(frame, crc32.Checksum(data, table))
			frame = append(frame, data...)
			start()
			// Each write to the connection keeps the write deadline
			// at least 3/4 ResponseWriteTimeout ahead (statusWriter): a
			// reader that stops reading is cut off then.
			if _, err := out.Write(frame); err != nil {
				return fmt.Errorf("write frame of %s: %w", s.Labels, err)
			}
			if time.Since(flushed) >= streamFlushEvery {
				if err := flush(); err != nil {
					return fmt.Errorf("flush frame of %s: %w", s.Labels, err)
				}
			}
			h.readSamples.Add(float64(s.Samples))
			h.readSeries.Inc()
			return nil
		})
		if err != nil {
			return fmt.Errorf("query %d: %w", qi, err)
		}
	}
	start()
	if err := flush(); err != nil {
		return fmt.Errorf("flush frames: %w", err)
	}
	return nil
}

// A streamed answer's frames are written to the connection streamBuffer
// bytes at a time, and flushed when a frame is added streamFlushEvery or
// more after the first frame or the last flush, and at the end.
const (
	streamBuffer     = 32 << 10
	streamFlushEvery = 100 * time.Millisecond
)

// chunkType is the remote-read chunk type of a chunk encoding.
func chunkType(e chunkenc.Encoding) prompb.Chunk_Encoding {
	switch e {
	case chunkenc.EncHistogram:
		return prompb.Chunk_HISTOGRAM
	case chunkenc.EncFloatHistogram:
		return prompb.Chunk_FLOAT_HISTOGRAM
	}
	return prompb.Chunk_XOR
}
