package query

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	chunkw "github.com/promhbase/promhbase/internal/chunkenc"
)

// MaxSamplesPerChunk is the number of float samples per XOR chunk, as in
// Prometheus's TSDB.
const MaxSamplesPerChunk = 120

// xorChunkCap is the capacity an XOR chunk's buffer starts with, and
// histChunkCap a histogram chunk's: those Prometheus's chunks start with.
const xorChunkCap, histChunkCap = 128, 128

// seriesOverhead is what a series costs besides its labels and chunk
// bytes, charged to the budget: the series, its chunk list and the open
// chunk's appender, the map entry of the scan (an estimate, on the high
// side).
const seriesOverhead = 320

// chunkOverhead is what a chunk costs besides its bytes (the Chunk entry
// and the slice header of its data).
const chunkOverhead = 48

// Chunk is one chunk of a series' samples in a Prometheus chunk encoding
// (XOR, histogram or float histogram), with the times of its first and
// last sample (Unix ms).
type Chunk struct {
	MinT, MaxT int64
	Enc        chunkenc.Encoding
	Data       []byte
}

// ChunkSeries is a series of a query's answer with its samples held as
// chunks, as compactly as Prometheus's TSDB holds them: in time order and
// not overlapping, one sample per timestamp; floats in XOR chunks of at
// most MaxSamplesPerChunk samples, integer and float native histograms in
// histogram chunks of about chunkenc.TargetBytesPerHistogramChunk bytes,
// and a new chunk whenever the kind of sample changes. The chunk data is
// owned by the series.
type ChunkSeries struct {
	Labels labels.Labels
	Chunks []Chunk
	// Floats holds, instead of Chunks, the float samples (in time order,
	// one per timestamp) of a series without native histograms, when the
	// series comes from Querier.StreamFloats. At most one of Chunks and
	// Floats is not empty.
	Floats []Sample
	// rows are, instead of Chunks and Floats, the rows of the series as
	// stored, for a FloatSelection (RowSeries).
	rows []rawRow
	// Samples is the number of samples in Chunks or Floats.
	Samples int
	// Bytes is what the series was charged in its Budget: Release it
	// when the series is dropped.
	Bytes int64
}

// chunkCutter builds the chunks of one series from samples appended in
// time order, cutting them as Prometheus's own remote-read server does;
// within a histogram chunk the chunk encoding decides counter resets, as
// in Prometheus's TSDB.
type chunkCutter struct {
	chunks []Chunk
	// raw keeps float samples in floats instead of XOR chunks, for as
	// long as the series has no native histogram (see
	// Querier.StreamFloats): the first histogram turns them into chunks.
	raw    bool
	floats []Sample
	// xor builds the current chunk when it is an XOR chunk (xorOpen);
	// cur and app, when it is a histogram chunk.
	xor     chunkw.XORBuilder
	xorOpen bool
	// hist builds the current chunk when it is an integer histogram
	// chunk whose samples all kept its layout (histOpen); such a chunk
	// goes to cur and app once a sample does not (handOver).
	hist       chunkw.HistogramBuilder
	histOpen   bool
	cur        chunkenc.Chunk
	app        chunkenc.Appender
	minT, maxT int64
	n          int   // samples appended
	last       int64 // time of the last sample; valid when n > 0
	closed     int64 // bytes of the closed chunks (cap), with chunkOverhead
}

// size is the bytes the cutter's chunks take (the open one by its
// capacity).
func (c *chunkCutter) size() int64 {
	s := c.closed
	if c.cur != nil {
		s += int64(cap(c.cur.Bytes())) + chunkOverhead
	}
	if c.xorOpen {
		s += int64(c.xor.Cap()) + chunkOverhead
	}
	if c.histOpen {
		s += int64(c.hist.Cap()) + chunkOverhead
	}
	return s + int64(cap(c.floats))*sampleBytes
}

// sampleBytes is the size of a Sample.
const sampleBytes = 16

// leaveRaw turns the floats kept raw into XOR chunks, cut as appendFloat
// cuts them, and appends to chunks from then on.
func (c *chunkCutter) leaveRaw() {
	fs := c.floats
	c.raw, c.floats, c.n = false, nil, 0
	for _, f := range fs {
		c.appendFloat(f.T, f.V) // in order: they were appended so
	}
}

// finish closes the current chunk, if any.
func (c *chunkCutter) finish() {
	if c.xorOpen {
		data := c.xor.Bytes()
		c.chunks = append(c.chunks, Chunk{MinT: c.minT, MaxT: c.maxT, Enc: chunkenc.EncXOR, Data: data})
		c.closed += int64(cap(data)) + chunkOverhead
		c.xorOpen = false
		c.xor.Reset(nil)
	}
	if c.histOpen {
		data := c.hist.Bytes()
		c.chunks = append(c.chunks, Chunk{MinT: c.minT, MaxT: c.maxT, Enc: chunkenc.EncHistogram, Data: data})
		c.closed += int64(cap(data)) + chunkOverhead
		c.histOpen = false
	}
	if c.cur == nil {
		return
	}
	data := c.cur.Bytes()
	c.chunks = append(c.chunks, Chunk{MinT: c.minT, MaxT: c.maxT, Enc: c.cur.Encoding(), Data: data})
	c.closed += int64(cap(data)) + chunkOverhead
	c.cur, c.app = nil, nil
}

// start opens a new chunk ch for a first sample at t.
func (c *chunkCutter) start(ch chunkenc.Chunk, t int64) error {
	c.finish()
	app, err := ch.Appender()
	if err != nil {
		return fmt.Errorf("%s appender: %w", ch.Encoding(), err)
	}
	c.cur, c.app, c.minT = ch, app, t
	return nil
}

// inOrder reports whether a sample at t may follow the samples so far: a
// chunk cannot go back in time, so a sample at or before the last one (a
// row with an offset past its hour) is dropped.
func (c *chunkCutter) inOrder(t int64) bool { return c.n == 0 || t > c.last }

func (c *chunkCutter) appendFloat(t int64, v float64) {
	if !c.inOrder(t) {
		return
	}
	if c.raw {
		if c.n == 0 {
			c.minT = t
		}
		c.floats = append(c.floats, Sample{T: t, V: v})
		c.maxT, c.last = t, t
		c.n++
		return
	}
	if !c.xorOpen || c.xor.NumSamples() >= MaxSamplesPerChunk {
		c.finish()
		// The capacity Prometheus's XOR chunks start with.
		c.xor.Reset(make([]byte, 0, xorChunkCap))
		c.xorOpen, c.minT = true, t
	}
	c.xor.Append(t, v)
	c.maxT, c.last = t, t
	c.n++
}

func (c *chunkCutter) appendHistogram(s HistogramSample) error {
	if !c.inOrder(s.T) {
		return nil
	}
	if c.raw {
		c.leaveRaw()
	}
	if c.histOpen && s.FH == nil { // (a float histogram: start closes the chunk)
		if c.hist.Appendable(s.H) {
			if histogramChunkFull(c.hist.NumSamples(), c.hist.Len()) {
				// The next chunk goes on from this one without a reset.
				return c.startHist(chunkw.NotCounterReset, s)
			}
			c.hist.Append(s.T, s.H)
			c.maxT, c.last = s.T, s.T
			c.n++
			return nil
		}
		if header, cut := c.hist.CutHeader(s.H); cut && chunkw.HistogramStartable(s.H) {
			return c.startHist(header, s)
		}
		// Prometheus's appender decides: a new bucket layout, a
		// staleness marker or a gauge.
		if err := c.handOver(); err != nil {
			return err
		}
	}
	enc := chunkenc.EncHistogram
	if s.FH != nil {
		enc = chunkenc.EncFloatHistogram
	}
	var prev chunkenc.Appender
	if c.cur != nil && c.cur.Encoding() == enc {
		if !histogramChunkFull(c.cur.NumSamples(), len(c.cur.Bytes())) {
			return c.appendHist(nil, s)
		}
		prev = c.app
	}
	if s.FH == nil && chunkw.HistogramStartable(s.H) {
		header := chunkw.UnknownCounterReset
		switch {
		case s.H.CounterResetHint == histogram.CounterReset:
			header = chunkw.CounterReset
		case prev != nil:
			var err error
			if header, err = headerAfter(prev, s); err != nil {
				return err
			}
		}
		return c.startHist(header, s)
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

// histogramChunkFull reports whether a histogram chunk of n samples and
// size bytes is full, as Prometheus's head cuts them.
func histogramChunkFull(n, size int) bool {
	return (size >= chunkenc.TargetBytesPerHistogramChunk && n >= chunkenc.MinSamplesPerHistogramChunk) ||
		size >= 2*chunkenc.TargetBytesPerHistogramChunk || n >= math.MaxUint16-1
}

// startHist closes the current chunk and starts one of c.hist with the
// counter reset header and s, an integer histogram that is
// chunkw.HistogramStartable.
func (c *chunkCutter) startHist(header byte, s HistogramSample) error {
	c.finish()
	c.hist.Start(make([]byte, 0, histChunkCap), header, s.T, s.H)
	c.histOpen, c.minT, c.maxT, c.last = true, s.T, s.T, s.T
	c.n++
	return nil
}

// headerAfter returns the counter reset header Prometheus's appender
// gives a chunk that starts with s after the chunk of prev.
func headerAfter(prev chunkenc.Appender, s HistogramSample) (byte, error) {
	ch := chunkenc.NewHistogramChunk()
	app, err := ch.Appender()
	if err != nil {
		return 0, fmt.Errorf("histogram appender: %w", err)
	}
	if _, _, _, err := app.AppendHistogram(prev, 0, s.T, s.H, false); err != nil {
		return 0, fmt.Errorf("append histogram at %d: %w", s.T, err)
	}
	return byte(ch.GetCounterResetHeader()), nil
}

// handOver moves the open chunk of c.hist to Prometheus's appender, which
// then takes the chunk's further samples: it appends the chunk's samples
// again to a new chunk with the same counter reset header, giving the same
// bytes and the appender's state.
func (c *chunkCutter) handOver() error {
	data := c.hist.Bytes()
	c.histOpen = false
	src, err := chunkenc.FromData(chunkenc.EncHistogram, data)
	if err != nil {
		return fmt.Errorf("histogram chunk: %w", err)
	}
	ch := chunkenc.NewHistogramChunk()
	app, err := ch.Appender()
	if err != nil {
		return fmt.Errorf("histogram appender: %w", err)
	}
	var h histogram.Histogram
	iter := src.Iterator(nil)
	for iter.Next() == chunkenc.ValHistogram {
		t, _ := iter.AtHistogram(&h)
		h.CounterResetHint = histogram.UnknownCounterReset
		if _, _, app, err = app.AppendHistogram(nil, 0, t, &h, true); err != nil {
			return fmt.Errorf("hand over histogram at %d: %w", t, err)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("hand over histogram chunk: %w", err)
	}
	b := ch.Bytes()
	b[2] = b[2]&^chunkenc.CounterResetHeaderMask | data[2]&chunkenc.CounterResetHeaderMask
	c.cur, c.app = ch, app
	return nil
}

// appendHist appends s to the current chunk; prev, the appender of the
// chunk before, lets a new chunk's encoding tell a counter reset from
// none. The chunk encoding may answer with a recoded chunk (replacing the
// current one) or a new chunk (after a counter reset or a layout change it
// cannot recode), which then becomes the current one.
func (c *chunkCutter) appendHist(prev chunkenc.Appender, s HistogramSample) error {
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
	c.app, c.maxT, c.last = app, s.T, s.T
	c.n++
	return nil
}

// appendMerged appends floats and histograms of one time span, each sorted
// by time, merged by time. Of a float and a histogram at the same time the
// float is kept, unless it is a staleness marker (the histogram series
// then goes on).
func (c *chunkCutter) appendMerged(fs []Sample, hs []HistogramSample) error {
	if c.raw && len(hs) == 0 && len(fs) > 0 && c.inOrder(fs[0].T) && ascending(fs) {
		// Floats of one row, one per timestamp: as they are.
		if c.n == 0 {
			c.minT = fs[0].T
		}
		c.floats = append(c.floats, fs...)
		c.maxT, c.last = fs[len(fs)-1].T, fs[len(fs)-1].T
		c.n += len(fs)
		return nil
	}
	for len(fs) > 0 || len(hs) > 0 {
		var err error
		switch {
		case len(hs) == 0 || (len(fs) > 0 && fs[0].T < hs[0].T):
			c.appendFloat(fs[0].T, fs[0].V)
			fs = fs[1:]
		case len(fs) > 0 && fs[0].T == hs[0].T:
			if value.IsStaleNaN(fs[0].V) {
				err = c.appendHistogram(hs[0])
			} else {
				c.appendFloat(fs[0].T, fs[0].V)
			}
			fs, hs = fs[1:], hs[1:]
		default:
			err = c.appendHistogram(hs[0])
			hs = hs[1:]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ascending reports whether the times of fs strictly increase.
func ascending(fs []Sample) bool {
	for i := 1; i < len(fs); i++ {
		if fs[i].T <= fs[i-1].T {
			return false
		}
	}
	return true
}

// EncodeChunks cuts samples into the chunks of a ChunkSeries (see there).
// fs and hs must each be sorted by time.
func EncodeChunks(fs []Sample, hs []HistogramSample) ([]Chunk, error) {
	var c chunkCutter
	if err := c.appendMerged(fs, hs); err != nil {
		return nil, err
	}
	c.finish()
	return c.chunks, nil
}

// Iterator returns an iterator over the chunk's samples, reusing it when
// possible.
func (c Chunk) Iterator(it chunkenc.Iterator) (chunkenc.Iterator, error) {
	ch, err := chunkenc.FromData(c.Enc, c.Data)
	if err != nil {
		return nil, fmt.Errorf("chunk [%d, %d]: %w", c.MinT, c.MaxT, err)
	}
	return ch.Iterator(it), nil
}

// DecodeChunks returns the samples of chunks: the floats and the native
// histograms, each sorted by time; every histogram is the caller's.
func DecodeChunks(chunks []Chunk) ([]Sample, []HistogramSample, error) {
	var (
		fs []Sample
		hs []HistogramSample
		it chunkenc.Iterator
	)
	for _, c := range chunks {
		var err error
		if it, err = c.Iterator(it); err != nil {
			return nil, nil, err
		}
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				fs = append(fs, Sample{T: t, V: v})
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				hs = append(hs, HistogramSample{T: t, H: h})
			case chunkenc.ValFloatHistogram:
				t, fh := it.AtFloatHistogram(nil)
				hs = append(hs, HistogramSample{T: t, FH: fh})
			}
		}
		if err := it.Err(); err != nil {
			return nil, nil, fmt.Errorf("chunk [%d, %d]: %w", c.MinT, c.MaxT, err)
		}
	}
	return fs, hs, nil
}
