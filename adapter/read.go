package adapter

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/http"
	"slices"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/query"
)

// Content types of remote-read answers. Prometheus's client compares the
// streamed one byte for byte.
const (
	contentTypeSamples  = "application/x-protobuf"
	contentTypeStreamed = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
)

// maxSamplesPerChunk is the number of samples per XOR chunk, as in
// Prometheus's TSDB.
const maxSamplesPerChunk = 120

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

func (h *Handler) serveRead(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("%w: %s on /api/v1/read", errMethod, r.Method)
	}
	// A slot bounds the memory of decoding; the query itself is bounded
	// by --query.max-samples and does not hold the slot.
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
		return fmt.Errorf("%w: read request: %w", errMalformed, err)
	}
	respType, err := negotiate(req.AcceptedResponseTypes)
	if err != nil {
		return err
	}
	// Run every query before answering, so that an error can still become a
	// status code.
	results := make([][]query.Series, len(req.Queries))
	for i, q := range req.Queries {
		ms, err := toMatchers(q.Matchers)
		if err != nil {
			return err
		}
		results[i], err = h.q.Select(r.Context(), q.StartTimestampMs, q.EndTimestampMs, ms...)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		for _, s := range results[i] {
			h.readSamples.Add(float64(len(s.Samples)))
		}
		h.readSeries.Add(float64(len(results[i])))
	}
	if respType == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		return writeStreamed(w, results)
	}
	return writeSamples(w, results)
}

func toLabelPairs(l labels.Labels) []prompb.Label {
	out := make([]prompb.Label, 0, l.Len())
	l.Range(func(l labels.Label) { out = append(out, prompb.Label{Name: l.Name, Value: l.Value}) })
	return out
}

// writeSamples answers with a snappy-compressed ReadResponse, one
// QueryResult per query.
func writeSamples(w http.ResponseWriter, results [][]query.Series) error {
	resp := prompb.ReadResponse{Results: make([]*prompb.QueryResult, len(results))}
	for i, series := range results {
		qr := &prompb.QueryResult{Timeseries: make([]*prompb.TimeSeries, 0, len(series))}
		for _, s := range series {
			if len(s.Histograms) > 0 {
				s = staleAsHistograms(s)
			}
			ts := &prompb.TimeSeries{Labels: toLabelPairs(s.Labels), Samples: make([]prompb.Sample, len(s.Samples))}
			for j, smp := range s.Samples {
				ts.Samples[j] = prompb.Sample{Timestamp: smp.T, Value: smp.V}
			}
			if len(s.Histograms) > 0 {
				ts.Histograms = make([]prompb.Histogram, len(s.Histograms))
				for j, hs := range s.Histograms {
					if hs.FH != nil {
						ts.Histograms[j] = prompb.FromFloatHistogram(hs.T, hs.FH)
					} else {
						ts.Histograms[j] = prompb.FromIntHistogram(hs.T, hs.H)
					}
				}
			}
			qr.Timeseries = append(qr.Timeseries, ts)
		}
		resp.Results[i] = qr
	}
	data, err := proto.Marshal(&resp)
	if err != nil {
		return fmt.Errorf("marshal read response: %w", err)
	}
	w.Header().Set("Content-Type", contentTypeSamples)
	w.Header().Set("Content-Encoding", "snappy")
	_, err = w.Write(snappy.Encode(nil, data))
	return err
}

// staleAsHistograms returns s with its float staleness markers turned into
// histogram staleness markers (of the kind of the histogram before them),
// for SAMPLES answers of a series of native histograms. Prometheus itself
// may store the marker that ends a histogram series as a float (its
// appender converts it only when it can tell the series' type), and its
// SAMPLES client loses a float that follows histograms when it seeks, so
// the series would not end; as a histogram marker it ends as in Prometheus.
// Streamed answers need no such care: chunks keep both kinds in order.
func staleAsHistograms(s query.Series) query.Series {
	stale := 0
	for _, smp := range s.Samples {
		if value.IsStaleNaN(smp.V) {
			stale++
		}
	}
	if stale == 0 {
		return s
	}
	floats := make([]query.Sample, 0, len(s.Samples)-stale)
	hs := make([]query.HistogramSample, 0, len(s.Histograms)+stale)
	j := 0
	for _, smp := range s.Samples {
		for j < len(s.Histograms) && s.Histograms[j].T < smp.T {
			hs = append(hs, s.Histograms[j])
			j++
		}
		if !value.IsStaleNaN(smp.V) {
			floats = append(floats, smp)
			continue
		}
		if j < len(s.Histograms) && s.Histograms[j].T == smp.T {
			continue // a histogram at the same time already
		}
		marker := query.HistogramSample{T: smp.T, H: &histogram.Histogram{Sum: smp.V}}
		if len(hs) > 0 && hs[len(hs)-1].FH != nil {
			marker = query.HistogramSample{T: smp.T, FH: &histogram.FloatHistogram{Sum: smp.V}}
		}
		hs = append(hs, marker)
	}
	hs = append(hs, s.Histograms[j:]...)
	s.Samples, s.Histograms = floats, hs
	return s
}

// writeStreamed answers with ChunkedReadResponse frames: for each series
// exactly one frame holding all its XOR chunks (Prometheus's client does not
// join a series split across frames). A frame is
//
//	uvarint(len(data)) ‖ u32 big-endian CRC32-Castagnoli(data) ‖ data
func writeStreamed(w http.ResponseWriter, results [][]query.Series) error {
	w.Header().Set("Content-Type", contentTypeStreamed)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	table := crc32.MakeTable(crc32.Castagnoli)
	var frame, data []byte
	for qi, series := range results {
		for _, s := range series {
			chunks, err := encodeChunks(s)
			if err != nil {
				return err
			}
			msg := prompb.ChunkedReadResponse{
				ChunkedSeries: []*prompb.ChunkedSeries{{Labels: toLabelPairs(s.Labels), Chunks: chunks}},
				QueryIndex:    int64(qi),
			}
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
			if _, err := w.Write(frame); err != nil {
				return fmt.Errorf("write frame: %w", err)
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	return nil
}

// encodeChunks cuts a series into chunks as Prometheus's own remote read
// server does: floats into XOR chunks of at most maxSamplesPerChunk
// samples, integer and float native histograms into HISTOGRAM and
// FLOAT_HISTOGRAM chunks of about chunkenc.TargetBytesPerHistogramChunk
// bytes (at least chunkenc.MinSamplesPerHistogramChunk samples unless a
// chunk outgrows twice the target), and a new chunk whenever the kind of
// sample changes, so that the chunks are in time order and do not overlap.
// Within a histogram chunk the chunk encoding decides counter resets, as
// in Prometheus's TSDB.
func encodeChunks(s query.Series) ([]prompb.Chunk, error) {
	var cc chunkCutter
	fs, hs := s.Samples, s.Histograms
	for len(fs) > 0 || len(hs) > 0 {
		var err error
		if len(hs) == 0 || (len(fs) > 0 && fs[0].T <= hs[0].T) {
			err = cc.appendFloat(fs[0])
			fs = fs[1:]
		} else {
			err = cc.appendHistogram(hs[0])
			hs = hs[1:]
		}
		if err != nil {
			return nil, err
		}
	}
	cc.finish()
	return cc.chunks, nil
}

// chunkCutter builds the chunks of one series.
type chunkCutter struct {
	chunks     []prompb.Chunk
	cur        chunkenc.Chunk
	app        chunkenc.Appender
	minT, maxT int64
}

// finish closes the current chunk, if any.
func (c *chunkCutter) finish() {
	if c.cur == nil {
		return
	}
	typ := prompb.Chunk_XOR
	switch c.cur.Encoding() {
	case chunkenc.EncHistogram:
		typ = prompb.Chunk_HISTOGRAM
	case chunkenc.EncFloatHistogram:
		typ = prompb.Chunk_FLOAT_HISTOGRAM
	}
	c.chunks = append(c.chunks, prompb.Chunk{MinTimeMs: c.minT, MaxTimeMs: c.maxT, Type: typ, Data: c.cur.Bytes()})
	c.cur, c.app = nil, nil
}

// start opens a new chunk of encoding enc for a first sample at t.
func (c *chunkCutter) start(ch chunkenc.Chunk, t int64) error {
	c.finish()
	app, err := ch.Appender()
	if err != nil {
		return fmt.Errorf("%s appender: %w", ch.Encoding(), err)
	}
	c.cur, c.app, c.minT = ch, app, t
	return nil
}

func (c *chunkCutter) appendFloat(s query.Sample) error {
	if c.cur == nil || c.cur.Encoding() != chunkenc.EncXOR || c.cur.NumSamples() >= maxSamplesPerChunk {
		if err := c.start(chunkenc.NewXORChunk(), s.T); err != nil {
			return err
		}
	}
	c.app.Append(0, s.T, s.V)
	c.maxT = s.T
	return nil
}

func (c *chunkCutter) appendHistogram(s query.HistogramSample) error {
	enc := chunkenc.EncHistogram
	if s.FH != nil {
		enc = chunkenc.EncFloatHistogram
	}
	var prev chunkenc.Appender
	if c.cur != nil && c.cur.Encoding() == enc {
		n, size := c.cur.NumSamples(), len(c.cur.Bytes())
		full := (size >= chunkenc.TargetBytesPerHistogramChunk && n >= chunkenc.MinSamplesPerHistogramChunk) ||
			size >= 2*chunkenc.TargetBytesPerHistogramChunk || n >= math.MaxUint16-1
		if !full {
			return c.appendHist(nil, s)
		}
		prev = c.app
	}
	var ch chunkenc.Chunk = chunkenc.NewHistogramChunk()
	if s.FH != nil {
		ch = chunkenc.NewFloatHistogramChunk()
	}
	if err := c.start(ch, s.T); err != nil {
		return err
	}
	return c.appendHist(prev, s)
}

// appendHist appends s to the current chunk; prev, the appender of the
// chunk before, lets a new chunk's encoding tell a counter reset from
// none. The chunk encoding may answer with a recoded chunk (replacing the
// current one) or a new chunk (after a counter reset or a layout change it
// cannot recode), which then becomes the current one.
func (c *chunkCutter) appendHist(prev chunkenc.Appender, s query.HistogramSample) error {
	var (
		ch      chunkenc.Chunk
		recoded bool
		app     = c.app
		err     error
	)
	if s.FH != nil {
		ch, recoded, app, err = app.AppendFloatHistogram(prev, 0, s.T, s.FH, false)
	} else {
		ch, recoded, app, err = app.AppendHistogram(prev, 0, s.T, s.H, false)
	}
	if err != nil {
		return fmt.Errorf("append histogram at %d: %w", s.T, err)
	}
	if ch != nil {
		if !recoded {
			// A new chunk starts with this sample.
			c.finish()
			c.minT = s.T
		}
		c.cur = ch
	}
	c.app, c.maxT = app, s.T
	return nil
}
